"""Smoke test of the lineage benchmark: the scorer on its own, then a handful of scenarios on real Spark."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.lineage.reference import A, Expect, I, T
from benchmarks.lineage.scoring import dataset_key, engine_edges, score_outputs

SMOKE = ["C1", "C3", "multi_distinct_sql", "write_insert_into_df"]


def _lineage_like(exp: Expect, drop: int = 0, extra: bool = False, subtype: str | None = None) -> SimpleNamespace:
    """A WriteLineage-shaped object built from a reference (optionally damaged)."""

    def ds(name: str) -> SimpleNamespace:
        return SimpleNamespace(namespace="file", name=f"/data/{name}", table=None)

    columns: dict[str, list[SimpleNamespace]] = {}
    edges = [(col, e) for col, es in exp.direct.items() for e in es]
    for col, e in edges[drop:]:
        d, f = e.input.split(".")
        columns.setdefault(col, []).append(
            SimpleNamespace(dataset=ds(d), field=f, type="DIRECT", subtype=subtype or e.subtype, masking=e.masked)
        )
    dataset_edges = [
        SimpleNamespace(dataset=ds(c.split(".")[0]), field=c.split(".")[1], type="INDIRECT", subtype=sub, masking=False)
        for sub, cs in exp.indirect.items()
        for c in cs
    ]
    if extra:
        dataset_edges.append(
            SimpleNamespace(dataset=ds("t"), field="zzz", type="INDIRECT", subtype="SORT", masking=False)
        )
    return SimpleNamespace(output=ds(exp.output), columns=columns, dataset_edges=dataset_edges, approximate=False)


EXP = Expect(
    "mart",
    {"a": [I("t.a")], "s": [A("t.x"), A("t.y")], "h": [T("u.e", masked=True)]},
    {"FILTER": ["t.d"], "JOIN": ["t.k", "u.k"]},
)


def test_scorer_perfect_and_damaged() -> None:
    perfect = score_outputs([EXP], [engine_edges(_lineage_like(EXP))])
    assert perfect.perfect and perfect.direct.tp == 4 and perfect.indirect.tp == 3
    assert perfect.direct.subtype_agreement == 1.0 and perfect.direct.masking_agreement == 1.0

    damaged = score_outputs([EXP], [engine_edges(_lineage_like(EXP, drop=1, extra=True))])
    assert damaged.direct.recall == pytest.approx(3 / 4) and damaged.direct.precision == 1.0
    assert damaged.indirect.precision == pytest.approx(3 / 4) and damaged.indirect.recall == 1.0
    assert any("missing DIRECT t.a -> mart.a" in m for m in damaged.direct.misses)

    wrong_sub = score_outputs([EXP], [engine_edges(_lineage_like(EXP, subtype="IDENTITY"))])
    assert wrong_sub.direct.precision == wrong_sub.direct.recall == 1.0  # subtype is scored apart
    assert wrong_sub.direct.subtype_agreement == pytest.approx(1 / 4)


def test_per_field_indirect_counts_as_dataset_wide() -> None:
    lin = _lineage_like(EXP)
    moved = lin.dataset_edges.pop()  # attach one dataset-wide edge to a field instead
    lin.columns["a"].append(moved)
    assert score_outputs([EXP], [engine_edges(lin)]).perfect


@pytest.mark.parametrize("indirect", ["both", "fields", "dataset"])
def test_emitted_facet_scores_like_the_engine_result_whatever_the_placement(indirect: str) -> None:
    import json

    from openlineage.client.serde import Serde

    from airflow_provider_lineage.lineage import analyze_record
    from airflow_provider_lineage.lineage.facets import datasets_for
    from benchmarks.lineage.scoring import facet_edges
    from tests.lineage.synthetic import attr, call, lit, node, relation
    from tests.lineage.test_engine import record, write

    q = node("Filter", [relation([("a", 1), ("b", 2)])], condition=call("GreaterThan", attr("b", 2), lit(0)), child=0)
    proj = node("Project", [q], projectList=[attr("a", 1)], child=0)
    lin = analyze_record(record(write(proj), ["a"]))
    _, [out] = datasets_for([lin], indirect=indirect)
    from_facet = facet_edges(json.loads(Serde.to_json(out)))
    from_engine = engine_edges(lin)
    assert (from_facet.output, from_facet.direct, from_facet.indirect) == (
        from_engine.output, from_engine.direct, from_engine.indirect)
    assert any(sub == {"FILTER"} for sub in from_facet.indirect.values())


def test_dataset_key() -> None:
    assert dataset_key(SimpleNamespace(namespace="file", name="/w/out/c1_mart/", table=None)) == "c1_mart"
    assert dataset_key(SimpleNamespace(namespace="file", name="/w/wh/x", table="spark_catalog.default.T1")) == "t1"


def test_smoke_scenarios_score_perfectly(spark, tmp_path: Path) -> None:
    from benchmarks.lineage.harness import load_analyzer, prepare, run_scenario
    from benchmarks.lineage.run import all_scenarios

    analyze, why = load_analyzer()
    if analyze is None:
        pytest.skip(f"lineage engine not available yet: {why}")
    from benchmarks.lineage.data import DATASETS

    ctx = prepare(spark, tmp_path)
    by_id = {s.sid: s for s in all_scenarios()}
    try:
        for sid in SMOKE:
            res = run_scenario(ctx, by_id[sid], analyze)
            s = res.score
            detail = s.problems + s.direct.misses + s.indirect.misses
            assert (s.direct.precision, s.direct.recall, s.indirect.precision, s.indirect.recall) == (
                1, 1, 1, 1), (sid, detail)
    finally:  # the temp views live in the worker's shared session: leave no `customers` behind
        for name in DATASETS:
            spark.catalog.dropTempView(name)
