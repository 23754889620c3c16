"""The UDF body data-flow pass on its own (no Spark): tricky bodies, soundness corner cases, never crashing.

The scenarios on real Spark are in ``test_scenarios.py``; these pin the interpreter's rules.
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import io
import re
import sys
import types
from typing import ClassVar

import pandas as pd
import pytest

from airflow_provider_lineage.lineage.udf import ArgFlow, UdfAnalysis, UdfTable, analyse_udf
from airflow_provider_lineage.lineage.udf.source import snapshot

SEEN: set = set()
PATTERN = re.compile(r"\d+")


def flows(fn, nargs: int, eval_type: int = 100) -> list[tuple[str | None, bool, bool]]:
    a = analyse_udf(fn, getattr(fn, "__name__", "f"), nargs, eval_type)
    assert a.analysed, a.reason
    return [(f.direct, f.masking, f.conditional) for f in a.args]


I, T, M, C, N = ("IDENTITY", False, False), ("TRANSFORMATION", False, False), ("TRANSFORMATION", True, False), \
    (None, False, True), (None, False, False)
TC = ("TRANSFORMATION", False, True)


def alias_append(a, b):
    x = []
    y = x
    y.append(b)
    return x


def closure_mutation(a, b):
    out = []

    def add(v):
        out.append(v)

    add(b)
    return out


def global_state(a, b):
    SEEN.add(b)
    return len(SEEN)


def try_except(a, b):
    try:
        return int(a)
    except ValueError:
        return b


def while_loop(a, b):
    n = 0
    while n < a:
        n += 1
    return n


def comprehension(a, b):
    return [c for c in a if c != b]


def walrus(a, b):
    if (n := len(a)) > 3:
        return n
    return 0


def regex(a, b):
    return PATTERN.sub("", a)


def unknown_callee_mutation(a, b):
    buf = []
    _store(buf, b)
    return buf


def _store(target, value):
    target.append(value)


def getattr_on_data(a, b):
    return getattr(a, b)()


def nested_def(a, b):
    def twice(v):
        return v * 2

    return twice(b)


def yield_from(it):
    yield from (s + 1 for s in it)


def masked_hexdigest(a, b):
    return hashlib.md5(a.encode()).hexdigest()


def kw_only(a, *, b=2):
    return a


def match_case(a, b):
    match b:
        case "x":
            return a
        case _:
            return None


def recursive(a, n):
    return a if n <= 0 else recursive(a, n - 1)


def bool_ops(a, b):
    return a or b


def ternary(a, b, c):
    return a if c else b


def returns_constant(a, b):
    if a:
        return "yes"
    return "no"


@pytest.mark.parametrize(
    ("fn", "n", "want"),
    [
        (alias_append, 2, [N, T]),
        (closure_mutation, 2, [N, T]),
        (global_state, 2, [N, T]),
        (try_except, 2, [TC, ("IDENTITY", False, False)]),
        (while_loop, 2, [C, N]),
        (comprehension, 2, [TC, C]),
        (walrus, 2, [TC, N]),
        (regex, 2, [T, N]),
        (unknown_callee_mutation, 2, [N, T]),
        (nested_def, 2, [N, T]),
        (masked_hexdigest, 2, [M, N]),
        (kw_only, 1, [I]),
        (match_case, 2, [I, C]),
        (recursive, 2, [T, TC]),
        (bool_ops, 2, [("IDENTITY", False, True), I]),
        (ternary, 3, [I, I, C]),
        (returns_constant, 2, [C, N]),
    ],
)
def test_flow_rules(fn, n, want) -> None:
    assert flows(fn, n) == want


def test_dynamic_lookup_on_data_is_not_analysed() -> None:
    a = analyse_udf(getattr_on_data, "g", 2, 100)
    assert not a.analysed and a.reason == "dynamic code: getattr() in the body"
    assert [f.direct for f in a.args] == ["TRANSFORMATION", "TRANSFORMATION"]


def test_iterator_yield_from() -> None:
    assert flows(yield_from, 1, 204) == [T]


def test_partial_with_keyword() -> None:
    p = functools.partial(ternary, c=True)
    assert flows(p, 2) == [I, I]


def test_cache_by_code_object() -> None:
    first = analyse_udf(bool_ops, "cached", 2, 100)
    again = analyse_udf(bool_ops, "cached", 2, 100)
    assert again == first  # the cached result (same analysis time: not analysed again)
    renamed = analyse_udf(bool_ops, "other_name", 2, 100)
    assert renamed.name == "other_name" and renamed.args == first.args


def test_engine_steps_round_trip() -> None:
    a = UdfAnalysis("f", 100, "m.f", True, None, [ArgFlow("IDENTITY"), ArgFlow(None, conditional=True), ArgFlow()])
    table = UdfTable([{"result_id": 7, "analysis": a.to_dict()}])
    assert table.by_id[7] == a


def _module_functions(name: str) -> list[types.FunctionType]:
    mod = importlib.import_module(name)
    return [f for _n, f in inspect.getmembers(mod, inspect.isfunction) if f.__module__ == name]


@pytest.mark.parametrize("module", ["textwrap", "posixpath", "json.encoder", "shlex", "csv", "string", "calendar"])
def test_never_crashes_on_real_code(module: str) -> None:
    """Any function of the standard library analyses or falls back with a reason: never an analysis error."""
    for fn in _module_functions(module):
        code = fn.__code__
        a = analyse_udf(fn, fn.__name__, code.co_argcount, 100)
        assert a.analysed or (a.reason and not a.reason.startswith("analysis error")), (fn, a.reason)
        assert len(a.args) == code.co_argcount


# -- property: random bodies never lose an edge the data proves ---------------------------------------
def _expr(rng, depth: int) -> str:
    names = ["a", "b", "c", "x", "y"]
    if depth <= 0 or rng.random() < 0.3:
        return rng.choice([*names, str(rng.randint(0, 5))])
    kind = rng.randrange(8)
    sub = lambda: _expr(rng, depth - 1)
    return [
        f"({sub()} + {sub()})",
        f"({sub()} * {sub()} % 7)",
        f"({sub()} if {sub()} > {rng.randint(0, 5)} else {sub()})",
        f"_helper({sub()}, {sub()})",
        f"len(hashlib.sha256(str({sub()}).encode()).hexdigest()[:{rng.randint(1, 3)}])",
        f"max({sub()}, {sub()})",
        f"sum(lst) + {sub()}",
        f"(_twice({sub()}) - 1)",
    ][kind]


def _stmts(rng, depth: int, indent: str) -> list[str]:
    out = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(5)
        if kind == 0 and depth > 0:
            out.append(f"{indent}if {_expr(rng, 2)} > {rng.randint(0, 6)}:")
            out += _stmts(rng, depth - 1, indent + "    ")
            out.append(f"{indent}else:")
            out += _stmts(rng, depth - 1, indent + "    ")
        elif kind == 1:
            out.append(f"{indent}lst.append({_expr(rng, 2)})")
        elif kind == 2 and depth > 0:
            out.append(f"{indent}for i in range({rng.choice(['2', 'a % 3', 'b % 2'])}):")
            out += _stmts(rng, depth - 1, indent + "    ")
        else:
            out.append(f"{indent}{rng.choice(['x', 'y'])} = {_expr(rng, 2)}")
    return out


def _program(rng, n: int) -> str:
    lines = ["import hashlib", "", "", "def _helper(u, v):", "    return u * 2 if v else u", "", "",
             "def _twice(w):", "    return w + w", "", ""]
    for k in range(n):
        body = ["    x = 0", "    y = 1", "    lst = []", *_stmts(rng, 2, "    ")]
        body.append(f"    return {rng.choice(['x', 'y', 'sum(lst)', _expr(rng, 2)])}")
        lines += [f"def f{k}(a, b, c):", *body, "", ""]
    return "\n".join(lines)


def test_random_bodies_lose_no_edge(tmp_path, monkeypatch) -> None:
    import itertools
    import random

    rng = random.Random(2024)
    n = 120
    (tmp_path / "gen_udfs.py").write_text(_program(rng, n))
    monkeypatch.syspath_prepend(str(tmp_path))
    gen = importlib.import_module("gen_udfs")
    samples = [tuple(rng.randint(-3, 9) for _ in range(3)) for _ in range(30)]
    checked = 0
    for k in range(n):
        fn = getattr(gen, f"f{k}")
        a = analyse_udf(fn, fn.__name__, 3, 100)
        assert a.analysed, (k, a.reason)
        for i, flow in enumerate(a.args):
            if flow.used:
                continue
            for s, v in itertools.product(samples[:10], range(-3, 10)):
                changed = list(s)
                changed[i] = v
                assert fn(*s) == fn(*changed), f"f{k}: argument {i} changes the result but has no edge\n" \
                    + inspect.getsource(fn)
            checked += 1
    assert checked > 20  # enough arguments were judged unused to make the check mean something


class _Store:
    items: ClassVar[list] = []

    @staticmethod
    def add(v):
        _Store.items.append(v)


def hidden_state(a, b):
    _Store.add(b)
    return len(_Store.items) + a


def test_data_handed_to_an_unknown_callee_reaches_mutable_globals() -> None:
    assert flows(hidden_state, 2) == [T, T]
    assert flows(regex, 2) == [T, N]  # a compiled pattern cannot hold it


# -- never less safe than a black box (issue 46): each construct the pass does not model exactly widens or falls back
STATE = None


def alias_bound_method(name, email):
    parts = [name]
    add = parts.append
    add(email)
    return ",".join(parts)


def fillna_inplace(a, b):
    s = pd.Series([a])
    s.fillna(b, inplace=True)
    return s


def rename_inplace(a, b):
    df = pd.DataFrame({"x": [a]})
    df.set_axis([b], axis=1, inplace=True)
    return df


def setdefault_chain(a, b):
    d = {}
    d.setdefault("k", []).append(b)
    return d["k"]


def update_through_alias(a, b):
    d = {"x": a}
    e = d
    e.update(x=b)
    return d["x"]


def extend_through_alias(a, b):
    out = [a]
    o2 = out
    o2.extend([b])
    return out[-1]


def setitem_through_alias(a, b):
    row = [a, None]
    r = row
    r.__setitem__(1, b)
    return row[1]


def index_assignment(a, b):
    row = [a, 0]
    row[1] = b
    return row[1]


def method_writes_into_argument(a, b):
    buf = io.StringIO()
    pd.Series([b]).to_csv(buf)
    return buf.getvalue()


def print_into_buffer(a, b):
    buf = io.StringIO()
    print(b, file=buf)
    return buf.getvalue()


def map_bound_method(a, b):
    seen = []
    list(map(seen.append, [b]))
    return seen


def lambda_handed_to_map(a, b):
    out = []
    list(map(lambda v: out.append(v), [b]))  # noqa: C417 - the shape under test
    return out


def lambda_handed_to_apply(a, b):
    out = []
    pd.Series([b]).apply(lambda v: out.append(v))
    return out


def one_of_two_callables(a, b):
    out = []
    f = (lambda v: out.append(v)) if a else (lambda v: None)
    f(b)
    return out


def callable_from_a_dict(a, b):
    out = []
    handlers = {"add": out.append}
    handlers["add"](b)
    return out


def _read_state():
    return STATE


def global_written_then_read_by_helper(a, b):
    global STATE
    STATE = b
    return _read_state()


def _make_nonlocal():
    box = None

    def put(v):
        nonlocal box
        box = v

    def get():
        return box

    def nonlocal_through_helpers(a, b):
        put(b)
        return get()

    return nonlocal_through_helpers


def _module_global_read(a, b):
    global STATE
    STATE = b
    return sys.modules[__name__].STATE


@pytest.mark.parametrize(
    ("fn", "missed"),
    [
        (alias_bound_method, 1),
        (fillna_inplace, 1),
        (rename_inplace, 1),
        (setdefault_chain, 1),
        (update_through_alias, 1),
        (extend_through_alias, 1),
        (setitem_through_alias, 1),
        (index_assignment, 1),
        (method_writes_into_argument, 1),
        (print_into_buffer, 1),
        (map_bound_method, 1),
        (lambda_handed_to_map, 1),
        (lambda_handed_to_apply, 1),
        (one_of_two_callables, 1),
        (callable_from_a_dict, 1),
        (global_written_then_read_by_helper, 1),
        (_make_nonlocal(), 1),
        (_module_global_read, 1),
    ],
)
def test_constructs_the_pass_does_not_model_exactly_keep_the_input(fn, missed) -> None:
    """Each body returns (or holds in its result) the argument ``missed``: the analysis must never call it unused
    (before issue 46 each of these reported it unused)."""
    a = analyse_udf(fn, fn.__name__, 2, 100)
    assert a.args[missed].direct is not None, (a.analysed, a.reason, a.args)


def frame_locals(a, b):
    return inspect.currentframe().f_locals["b"]


def getframe_imported_in_body(a, b):
    import sys as system

    return system._getframe(0).f_locals["b"]


def getframe_from_import(a, b):
    from sys import _getframe as frame_of

    return frame_of(0)


def argvalues(a, b):
    return inspect.getargvalues(inspect.stack()[0][0])


def locals_call(a, b):
    return locals()["b"]


def globals_alias(a, b):
    g = globals
    return g()["STATE"]


def vars_call(a, b):
    return vars()["b"]


def eval_in_body(a, b):
    return eval("b")


def exec_in_body(a, b):
    out = {}
    exec("r = b", {"b": b}, out)  # noqa: S102 - the construct under test (never run)
    return out["r"]


def traceback_frames(a, b):
    try:
        raise ValueError
    except ValueError as exc:
        return exc.__traceback__.tb_frame.f_locals["b"]


@pytest.mark.parametrize(
    ("fn", "why"),
    [
        (frame_locals, "frame introspection"),
        (getframe_imported_in_body, "frame introspection"),
        (getframe_from_import, "frame introspection"),
        (argvalues, "frame introspection"),
        (locals_call, "dynamic code: locals()"),
        (globals_alias, "dynamic code: globals()"),
        (vars_call, "dynamic code: vars()"),
        (eval_in_body, "dynamic code: eval()"),
        (exec_in_body, "dynamic code: exec()"),
        (traceback_frames, "frame introspection"),
    ],
)
def test_frame_introspection_and_dynamic_code_fall_back(fn, why) -> None:
    a = analyse_udf(fn, fn.__name__, 2, 100)
    assert not a.analysed and a.reason.startswith(why), a.reason
    assert [f.direct for f in a.args] == ["TRANSFORMATION", "TRANSFORMATION"]


def _helper_built(x):
    return x


def uses_a_helper(a, b):
    return _helper_built(b)


def test_a_helper_redefined_after_the_udf_was_built_is_not_what_is_analysed(monkeypatch) -> None:
    """PySpark pickles the UDF (and, by value, the helpers it reaches) when it builds it: the executors run that
    copy. The analysis resolves names in the snapshot taken then, not in the module as it is at write time."""
    built = snapshot(uses_a_helper)
    monkeypatch.setitem(globals(), "_helper_built", lambda x: "redacted")  # the driver redefines it later
    live = analyse_udf(uses_a_helper, "u", 2, 100)
    # this module is importable: the rebound name is an unknown callee in the live read (never "unused")
    assert live.args[1].direct == "TRANSFORMATION"
    pickled = analyse_udf(uses_a_helper, "u", 2, 100, snap=built)  # the body the executors run: exact
    assert pickled.analysed and pickled.args[1].direct == "IDENTITY"


def builtin_hash(a, b):
    return hash(a)


def base64_encoded(a, b):
    import base64

    return base64.b64encode(a.encode()).decode()


def test_only_one_way_functions_mask() -> None:
    """``hash(42) == 42`` and base64 decodes: neither is masking (a guard would pass the value in clear)."""
    assert hash(42) == 42
    assert flows(builtin_hash, 2) == [T, N]
    assert flows(base64_encoded, 2) == [T, N]
    assert flows(masked_hexdigest, 2) == [M, N]


def _remember(x, _acc=[]):  # noqa: B006 - state kept between calls is the construct under test
    _acc.append(x)
    return _acc[0]


def mutable_default_state(a, b):
    _remember(b)
    return _remember(a)


def test_state_kept_between_calls_comes_back(tmp_path, monkeypatch) -> None:
    """A helper with a mutable default, or a function of another module keeping module state, may return data an
    earlier call handed it: the later call's result carries it."""
    assert mutable_default_state(1, 2) == 2
    assert analyse_udf(mutable_default_state, "m", 2, 100).args[1].direct is not None
    (tmp_path / "statelib.py").write_text("_LOG = []\n\n\ndef record(x):\n    _LOG.append(x)\n\n\n"
                                          "def last():\n    return _LOG[-1]\n")
    (tmp_path / "stateudf.py").write_text("import statelib\n\n\ndef f(a, b):\n    statelib.record(b)\n"
                                          "    return statelib.last()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    fn = importlib.import_module("stateudf").f
    assert fn(1, 2) == 2
    a = analyse_udf(fn, "f", 2, 100)
    assert a.analysed and a.args[1].direct is not None, a.args


def _log_it(x):
    SEEN.add(x)


def alias_of_a_helper(a, b):
    f = _log_it
    f(b)
    return len(SEEN)


def helper_handed_to_map(a, b):
    list(map(_log_it, [b]))
    return len(SEEN)


def test_a_helper_held_in_a_variable_or_handed_on_is_followed() -> None:
    assert flows(alias_of_a_helper, 2)[1][0] is not None
    assert flows(helper_handed_to_map, 2)[1][0] is not None


def frame_column_through_alias(pdf):
    other = pdf
    other["name"] = pdf["email"]
    return pdf[["id", "name"]]


def frame_copy_keeps_columns_apart(pdf):
    out = pdf.copy()
    out["name"] = out["email"].str.upper()
    return out[["id", "name"]]


def test_a_frame_column_set_through_an_alias_reaches_the_original() -> None:
    a = analyse_udf(frame_column_through_alias, "g", 3, 201, columns=["id", "name", "email"])
    assert a.analysed and "email" in a.columns["name"], a.columns
    b = analyse_udf(frame_copy_keeps_columns_apart, "g", 3, 201, columns=["id", "name", "email"])
    assert "email" in b.columns["name"] and set(b.columns["id"]) == {"id"}, b.columns  # a copy: id stays apart


def test_a_monkeypatched_helper_of_an_importable_module_is_an_unknown_callee(tmp_path, monkeypatch) -> None:
    """A UDF from an importable module is pickled by reference: the executors import the module afresh and run its
    own ``_h``, not the function the driver rebound ``_h`` to before building the UDF. The analysis cannot know the
    executors' body from the driver's state, so the call is an unknown callee (every argument flows)."""
    (tmp_path / "patched_udfs.py").write_text("def _h(x):\n    return x\n\n\ndef _constant(x):\n    return 'k'\n\n\n"
                                              "def f(a, b):\n    return _h(b)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("patched_udfs")
    monkeypatch.setattr(mod, "_h", mod._constant)  # the driver patches the helper, then builds the UDF
    assert mod.f(1, 2) == "k"  # in the driver; a fresh import (the executors) returns 2
    a = analyse_udf(mod.f, "f", 2, 100)
    assert a.analysed and a.args[1].direct is not None, a.args


class _Repo:
    def save(self, v):
        _SAVED.append(v)


_SAVED: list = []
_REPO = _Repo()


def _load():
    return _SAVED[-1]


def method_stores_elsewhere(a, b):
    _REPO.save(b)
    return _load()


def test_a_method_of_unknown_effect_may_store_its_arguments_anywhere() -> None:
    assert method_stores_elsewhere(1, 2) == 2
    assert flows(method_stores_elsewhere, 2)[1][0] is not None


# -- issue 46: a body the pass widened (but analysed) says why ---------------------------------------------------
def _with_mutable_default(x, acc=[]):  # noqa: B006 - the shape under test: state kept between calls
    acc.append(x)
    return acc[-1]


def helper_with_mutable_default(a, b):
    return _with_mutable_default(b)


def exact_body(a, b):
    return a.upper() if b else a.lower()


@pytest.mark.parametrize(
    ("fn", "why"),
    [
        (alias_bound_method, "`add(...)` calls a value of unknown behaviour"),
        (callable_from_a_dict, "`handlers['add'](...)` calls a value of unknown behaviour"),
        (fillna_inplace, "`.fillna(..., inplace=True)` changes its receiver in place"),
        (rename_inplace, "`.set_axis(..., inplace=True)` changes its receiver in place"),
        (method_writes_into_argument, "`.to_csv()` is a method of unknown effect"),
        (print_into_buffer, "`print(...)` is not followed: it may store one argument into another"),
        (global_written_then_read_by_helper, "`global STATE` is written by the body"),
        (_make_nonlocal(), "`nonlocal box` is written by the body"),
        (global_state, "module-level `SEEN` is changed by the body"),
        (method_stores_elsewhere, "`_SAVED` may hold data handed to `.save()` (not followed)"),
        (recursive, "recursive call of `recursive`"),
        (helper_with_mutable_default, "helper `_with_mutable_default` not followed (a mutable default"),
    ],
)
def test_a_widened_body_says_why(fn, why) -> None:
    """Analysed, but a construct the pass does not model exactly widened it: the reason travels with the analysis
    (``UdfAnalysis.widened``, through the capture record's JSON) to the write's approximate columns."""
    a = analyse_udf(fn, fn.__name__, 2, 100)
    assert a.analysed, a.reason
    assert any(w.startswith(why) or why in w for w in a.widened), a.widened
    assert UdfAnalysis.from_dict(a.to_dict()).widened == a.widened


def test_a_monkeypatched_helper_is_a_widening_with_its_reason(tmp_path, monkeypatch) -> None:
    (tmp_path / "patched_udfs2.py").write_text("def _h(x):\n    return x\n\n\ndef _constant(x):\n    return 'k'\n\n\n"
                                               "def f(a, b):\n    return _h(b)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("patched_udfs2")
    monkeypatch.setattr(mod, "_h", mod._constant)
    a = analyse_udf(mod.f, "f", 2, 100)
    assert any("`_h` was bound to another function after the UDF was pickled" in w for w in a.widened), a.widened


@pytest.mark.parametrize("fn", [exact_body, alias_append, closure_mutation, comprehension, masked_hexdigest, regex,
                                match_case])
def test_an_exactly_modelled_body_has_no_widening(fn) -> None:
    nargs = len(inspect.signature(fn).parameters)
    a = analyse_udf(fn, fn.__name__, nargs, 100)
    assert a.analysed and a.widened == [], a.widened


def test_united_candidates_keep_every_widening() -> None:
    from airflow_provider_lineage.capture.udfs import unite

    a, b = analyse_udf(fillna_inplace, "f", 2, 100), analyse_udf(global_state, "f", 2, 100)
    both = unite([a, b])
    assert set(both.widened) == set(a.widened) | set(b.widened) and a.widened and b.widened


def test_widening_reasons_reach_the_approximate_columns_the_run_record_and_analyze(env, tmp_path, capsys) -> None:
    """On a real captured plan: the widened UDF's column carries ``UDF `f` widened: <why>`` in
    ``approximate_columns`` (the single filler ``run_record.approximate_columns`` then makes the record's status
    "approximate"), ``analyze`` shows it; a column of an exactly analysed UDF carries nothing."""
    from pyspark.sql import functions as F

    from airflow_provider_lineage.capture.udfs import UdfRegistry
    from airflow_provider_lineage.lineage import analyze_record, run_record
    from airflow_provider_lineage.lineage.__main__ import main
    from airflow_provider_lineage.lineage.events import LineageResult
    from airflow_provider_lineage.lineage.record import CaptureRecord

    reg = UdfRegistry()
    reg.add("alias_bound_method", alias_bound_method, 100, "string")
    reg.add("exact_body", exact_body, 100, "string")
    c = env.spark.read.parquet(env.customers)
    df = c.select(F.udf(alias_bound_method, "string")("name", "email").alias("joined"),
                  F.udf(exact_body, "string")("name", "email").alias("plain"))
    rec = env.write_parquet(df)
    reg.enrich(rec)
    path = tmp_path / "record.json"
    path.write_text(rec.to_json())
    lin = analyze_record(CaptureRecord.from_json(path.read_text()))
    reasons = lin.approximate_columns.get("joined", [])
    assert any(r.startswith("UDF `alias_bound_method` widened: `add(...)` calls a value of unknown behaviour")
               for r in reasons), lin.approximate_columns
    assert "plain" not in lin.approximate_columns
    assert any(line.startswith("UDF `alias_bound_method`: widened — ") for line in lin.udfs), lin.udfs
    built = run_record.build(LineageResult(lineages=[lin]), job_namespace="ns", job_name="j", run_id="r",
                             emission="test")
    assert built["status"] == "approximate"
    assert [col for _o, col, _r in built["approximate"]] == ["joined"]
    assert main(["analyze", str(path)]) == 0
    assert "[approximate] joined: UDF `alias_bound_method` widened: `add(...)`" in capsys.readouterr().out
