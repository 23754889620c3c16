"""The UDF body data-flow pass on its own (no Spark): tricky bodies, soundness corner cases, never crashing.

The scenarios on real Spark are in ``test_udf_scenarios.py``; these pin the interpreter's rules.
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import re
import types
from typing import ClassVar

import pytest

from airflow_provider_lineage.lineage.udf import ArgFlow, UdfAnalysis, UdfTable, analyse_udf

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
