"""Lineage through Python UDF bodies (issue 24), on real Spark through the launcher.

One application (``apps/udf_app.py``) performs every scenario's write under ``spark-submit launcher.py``
(one JVM for all scenarios: CI time). Each scenario is checked edge by
edge (field, type, subtype, masking), and a soundness property check runs every analysed function on
the scenario's input rows: changing an input the lineage says does not reach a column never changes
that column, and changing one that does changes it for some row.
"""
from __future__ import annotations

import json
import posixpath
import random
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from airflow_provider_lineage.capture.config import LauncherConfig
from airflow_provider_lineage.capture.udfs import UdfRegistry
from airflow_provider_lineage.lineage import WriteLineage, analyze_record
from airflow_provider_lineage.lineage.explain import explain
from airflow_provider_lineage.lineage.facets import datasets_for
from airflow_provider_lineage.lineage.record import CaptureRecord, collapse_nested, read_records
from airflow_provider_lineage.lineage.summary import summarize
from airflow_provider_lineage.operators.spark_lineage import launcher_path
from tests.capture.test_launcher import _submit_env

# one spark-submit runs every scenario (~2 min of a worker): the slow tier; the engine's UDF rules are in the fast
# tier in process (tests/lineage/udf/test_analysis.py)
pytestmark = pytest.mark.slow

APPS = Path(__file__).parent.parent / "apps"
sys.path.insert(0, str(APPS))
import udf_bodies as b
from udf_labels import DATASET_EDGES, EXPECTED, FALLBACKS, T, e

COLUMNS = [c.split()[0] for c in b.SCHEMA.split(", ")]


@dataclass
class Runs:
    records: dict[str, CaptureRecord]
    status: dict[str, Any]


def _by_output(capture: Path) -> dict[str, CaptureRecord]:
    out = {}
    for r in collapse_nested(read_records(capture)):
        if r.output and r.output.location:
            out[posixpath.basename(r.output.location.rstrip("/"))] = r
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    tmp = tmp_path_factory.mktemp("udf")
    cmd = ["spark-submit", "--master", "local[2]", "--driver-memory", "768m",
           "--conf", f"spark.airflow_lineage.captureDir={tmp / 'cap'}",
           launcher_path(), str(APPS / "udf_app.py"), str(tmp / "out")]
    proc = subprocess.run(cmd, env=_submit_env(), capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    status = json.loads((tmp / "cap" / "_launcher.status").read_text())
    return Runs(_by_output(tmp / "cap"), status)


def lin(runs: Runs, sid: str) -> WriteLineage:
    return analyze_record(runs.records[sid])


def col(lin_: WriteLineage, column: str) -> set[tuple[str, str, str, bool]]:
    return {(e.field, e.type, e.subtype, e.masking) for e in lin_.columns[column]}


def test_every_scenario_was_captured(runs: Runs) -> None:
    assert set(EXPECTED) <= set(runs.records), sorted(set(EXPECTED) - set(runs.records))
    assert len(EXPECTED) >= 25
    assert runs.status["problems"] == []


@pytest.mark.parametrize("sid", sorted(EXPECTED))
def test_edges_exact(runs: Runs, sid: str) -> None:
    result = lin(runs, sid)
    for column, want in EXPECTED[sid].items():
        assert col(result, column) == want, (sid, column, result.udfs)
    assert {(x.field, x.subtype) for x in result.dataset_edges} == DATASET_EDGES.get(sid, set())
    assert not result.approximate, result.unknown


@pytest.mark.parametrize("sid", sorted(FALLBACKS))
def test_fallback_is_marked(runs: Runs, sid: str) -> None:
    name, reason = FALLBACKS[sid]
    result = lin(runs, sid)
    note = f"UDF `{name}` not analysed ({reason})"
    assert any(note in n for n in result.udf_columns["r"]), result.udf_columns
    # the black box's edges are a superset of what the body reads: the column is approximate, with the reason
    assert any(note in n for n in result.approximate_columns["r"]), result.approximate_columns
    assert f"UDF `{name}`: not analysed — {reason}" in summarize(result)
    assert f"UDF `{name}`: not analysed — {reason}" in explain(runs.records[sid], "r")
    _ins, outs = datasets_for([result])
    facet = outs[0].facets["columnLineage"].fields["r"]
    assert all(f"conservative: UDF `{name}` not analysed" in t.description
               for f in facet.inputFields for t in f.transformations)


def test_analysed_columns_carry_no_fallback_marker(runs: Runs) -> None:
    result = lin(runs, "hash")
    assert result.udf_columns == {} and result.approximate_columns == {}
    _ins, outs = datasets_for([result])
    assert all(not t.description for f in outs[0].facets["columnLineage"].fields["r"].inputFields
               for t in f.transformations)


def test_explain_shows_the_flow(runs: Runs) -> None:
    text = explain(runs.records["hash"], "r")
    assert "`r` ← UDF `hash_email`: sha256(`email`) [transformation, masking], `country` unused" in text
    text = explain(runs.records["mask_branch"], "r")
    assert "`email` [transformation], `country` [conditional]" in text
    assert "[udf] `r` ← UDF `band`" in summarize(lin(runs, "condition_only"))


def test_switch_off_keeps_black_box_edges(runs: Runs) -> None:
    """``udfAnalysis=false`` (operator ``udf_analysis=False``) reaches the driver's registry, which then
    hands over nothing: the engine keeps the black-box edges."""
    conf = LauncherConfig(udf_analysis=False).to_spark_conf()
    assert conf["spark.airflow_lineage.udfAnalysis"] == "false"
    assert LauncherConfig.resolve(conf.get, {}).udf_analysis is False
    assert LauncherConfig.resolve(lambda k: None, {"AIRFLOW_LINEAGE_UDF_ANALYSIS": "false"}).udf_analysis is False
    assert LauncherConfig.resolve(lambda k: None, {}).udf_analysis is True
    registry = UdfRegistry()
    registry.add("upper_first", b.upper_first, 100, "string")
    registry.enabled = False
    rec = replace(runs.records["used_unused"], udfs=[])
    registry.enrich(rec)
    assert rec.udfs == []
    result = analyze_record(rec)
    assert col(result, "r") == {e("email", T), e("country", T)}
    assert result.udfs == []
    registry.enabled = True
    registry.enrich(rec)  # the same registry switched on finds the function by its plan name
    assert col(analyze_record(rec), "r") == {e("email", T)}


def test_capture_cost_is_recorded(runs: Runs) -> None:
    assert runs.status["timings"]["udf_s"] >= 0
    for rec in runs.records.values():
        for entry in rec.udfs:
            assert entry["analysis"]["ms"] >= 0


# -- soundness: the data agrees with the lineage -----------------------------------------------------
def _scalar(fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn


def _pandas(fn: Callable[..., Any]) -> Callable[..., Any]:
    return lambda *args: fn(*(pd.Series([a]) for a in args)).tolist()


def _pandas_iter(fn: Callable[..., Any]) -> Callable[..., Any]:
    return lambda *args: [s.tolist() for s in fn(iter([tuple(pd.Series([a]) for a in args)]))]


#: scenario -> [(output column, callable over one row's argument values, the argument columns)]
FUNCTIONS: dict[str, list[tuple[str, Callable[..., Any], list[str]]]] = {
    "used_unused": [("r", b.upper_first, ["email", "country"])],
    "identity": [("r", b.pick, ["email", "country"])],
    "condition_only": [("r", b.band, ["score", "country"])],
    "mask_branch": [("r", b.mask_email, ["email", "country"])],
    "hash": [("r", b.hash_email, ["email", "country"])],
    "hmac": [("r", b.sign_email, ["email", "age"])],
    "helper": [("r", b.normalize, ["name", "country"])],
    "helper_drops_arg": [("r", b.via_helper, ["email", "country"])],
    "closure": [("r", b.make_prefixer("p-"), ["name", "country"])],
    "lambda": [("r", b.lower_lambda, ["email", "country"])],
    "partial": [("r", b.scaled, ["score", "age"])],
    "star_args": [("r", b.star, ["email", "country", "name"])],
    "default_arg": [("r", b.with_default, ["score", "age"])],
    "kwargs": [("r", b.kwargs_pick, ["email", "country"])],
    "named_args": [("r", lambda n, s: b.price_band(note=n, score=s), ["name", "score"])],
    "hash_update": [("r", b.hash_update, ["email", "country"])],
    "struct_fields": [("rx", lambda m, c, n: b.to_pair(m, c, n)["x"], ["email", "country", "name"]),
                      ("ry", lambda m, c, n: b.to_pair(m, c, n)["y"], ["email", "country", "name"])],
    "nested": [("r", lambda m, c: b.outer_join(b.inner_mark(m), c), ["email", "country"])],
    "multi_column_expr": [("r", lambda n, c: b.concat_udf(n + c), ["name", "country"])],
    "struct": [("r", b.to_struct, ["email", "country", "name"])],
    "loop_condition": [("r", b.digits, ["code", "age"])],
    "mutation": [("r", b.collect, ["email", "country"])],
    "arrow_python_udf": [("r", b.pick, ["email", "country"])],
    "sql_registered": [("r", b.pick, ["email", "country"]), ("s", b.band, ["score", "country"])],
    "pandas_scalar": [("r", _pandas(b.pd_twice), ["score", "age"])],
    "pandas_iterator": [("r", _pandas_iter(b.pd_iter), ["score", "age"])],
    "filter": [("*", b.is_adult, ["age", "name"])],
    "aggregate_input": [("s", b.double_it, ["score", "age"])],
    "fallback_builtin": [("r", len, ["email"])],
    "fallback_dynamic": [("r", b.dynamic, ["email", "country"])],
    "bound_method_alias": [("r", b.alias_add, ["name", "email"])],
    "global_helper": [("r", b.stash_then_read, ["email", "country"])],
    "redefined_helper": [("r", b.via_fmt, ["email", "country"])],
    "pandas_inplace": [("r", _pandas(b.pd_fill_inplace), ["score", "age"])],
    "fallback_introspection": [("r", b.peek_frame, ["email", "country"])],
}

EXTRA = {"email": ["", "q@z.org", "user3@y.org"], "country": ["DE", "US", "XX"], "age": [0, 17, 18, 99],
         "score": [0.0, 50.0, 51.0, -3.5], "name": ["", "  Zed ", "Name1"], "code": ["", "z9", "123"], "id": [0, 99]}


def _pool(column: str) -> list[Any]:
    i = COLUMNS.index(column)
    return sorted({r[i] for r in b.ROWS} | set(EXTRA[column]), key=repr)


def _reaches(result: WriteLineage, column: str, field: str) -> bool:
    edges = result.dataset_edges if column == "*" else result.columns[column]
    return any(x.field == field for x in edges)


def _changes(fn: Callable[..., Any], args_cols: list[str], i: int, rng: random.Random) -> bool:
    rows = [[r[COLUMNS.index(c)] for c in args_cols] for r in b.ROWS]
    for row in rows:
        base = fn(*row)
        for v in _pool(args_cols[i]):
            if v == row[i]:
                continue
            new = list(row)
            new[i] = v
            try:
                if fn(*new) != base:
                    return True
            except Exception:  # noqa: BLE001, S112 - an input the function rejects proves nothing
                continue
    return False


@pytest.mark.parametrize("sid", sorted(FUNCTIONS))
def test_soundness_on_the_rows(runs: Runs, sid: str) -> None:
    """No edge the data proves is missing; every analysed edge is proved by some row."""
    result = lin(runs, sid)
    analysed = not result.udf_columns
    rng = random.Random(24)
    for column, fn, args_cols in FUNCTIONS[sid]:
        for i, field in enumerate(args_cols):
            changes = _changes(fn, args_cols, i, rng)
            reaches = _reaches(result, column, field)
            if changes:
                assert reaches, f"{sid}.{column}: changing {field} changes the output, but the lineage has no edge"
            if analysed and reaches:
                assert changes, f"{sid}.{column}: the lineage says {field} reaches it, but no row shows it"


def test_grouped_map_soundness(runs: Runs) -> None:
    result = lin(runs, "grouped_map")
    frame = pd.DataFrame(b.ROWS, columns=COLUMNS)
    base = b.grouped_total(frame)
    for field in ("id", "email", "age", "name", "code", "score", "country"):
        changed = frame.copy()
        changed[field] = changed[field].iloc[::-1].to_numpy() if field != "score" else changed[field] + 1
        out = b.grouped_total(changed)
        for column in ("country", "total"):
            differs = not out[column].equals(base[column])
            if differs:
                assert _reaches(result, column, field), (column, field)
            elif field not in ("country",):
                assert not any(x.field == field and x.type == "DIRECT" for x in result.columns[column]), (column, field)
