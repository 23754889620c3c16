"""Dataset-level INDIRECT edges (the ``columnLineage`` facet's ``dataset`` list: the default form) and the
per-field form read alike by every reader (issue 36, item 4): the facet helpers, impact, the CLI, the run
record, the run view's graph, the guard's diff and tags. No Spark: the engine's result shape is built
directly (``benchmarks/lineage/event_size.py``'s wide output), then turned into events as the operator does.
"""
from __future__ import annotations

import json
from typing import Any

import pytest
from openlineage.client.serde import Serde

from airflow_provider_lineage.lineage import column_facet, diff, run_record, tags
from airflow_provider_lineage.lineage.__main__ import main
from airflow_provider_lineage.lineage.events import LineageResult, build_event
from airflow_provider_lineage.lineage.facets import datasets_for
from airflow_provider_lineage.lineage.impact import LineageGraph
from airflow_provider_lineage.lineage.model import (
    DEFAULT_INDIRECT,
    INDIRECT_PLACEMENTS,
    FieldEdge,
    WriteLineage,
)
from airflow_provider_lineage.lineage.naming import DatasetRef
from airflow_provider_lineage.plugins import graph as graphs
from benchmarks.lineage.event_size import wide_lineage
from tests.support.ol_validate import validate_event

IN = DatasetRef("file", "/in", None)
OUT = DatasetRef("file", "/out", None)


def filter_lineage() -> WriteLineage:
    """``SELECT a FROM /in WHERE b > 0`` written to ``/out``."""
    return WriteLineage(output=OUT, output_fields=[("a", "int")], inputs=[(IN, [("a", "int"), ("b", "int")])],
                        columns={"a": [FieldEdge(IN, "a", "DIRECT", "IDENTITY")]},
                        dataset_edges=[FieldEdge(IN, "b", "INDIRECT", "FILTER")])


def event_dict(
    lineages: list[WriteLineage], indirect: str = DEFAULT_INDIRECT, run_id: str | None = None
) -> dict[str, Any]:
    """The COMPLETE event (JSON form) the operator emits for ``lineages`` with this placement."""
    ins, outs = datasets_for(lineages, indirect=indirect)
    ev = build_event("COMPLETE", job_namespace="airflow", job_name="wide.build",
                     run_id=run_id or "01930000-0000-7000-8000-000000000001", inputs=ins, outputs=outs)
    return json.loads(Serde.to_json(ev))


def _facet(ev: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    out = ev["outputs"][0]["facets"]
    return out["columnLineage"], [f["name"] for f in out["schema"]["fields"]]


@pytest.fixture(scope="module")
def wide() -> WriteLineage:
    return wide_lineage(columns=40, keys=6)


def test_default_form_states_each_dataset_wide_edge_once_and_every_form_validates(wide: WriteLineage) -> None:
    assert DEFAULT_INDIRECT == "dataset"
    for placement in INDIRECT_PLACEMENTS:
        ev = event_dict([wide], placement)
        assert validate_event(ev) == [], placement
        facet, _ = _facet(ev)
        assert column_facet.form(facet) == placement
    facet, _ = _facet(event_dict([wide]))
    assert len(facet["dataset"]) == 5  # 6 edges on 5 input columns (event_date is FILTER and SORT)
    assert {t["subtype"] for d in facet["dataset"] for t in d["transformations"]} == {"JOIN", "FILTER", "SORT"}
    on_fields = [t for spec in facet["fields"].values() for i in spec["inputFields"] for t in i["transformations"]]
    assert on_fields and all(t["type"] == "DIRECT" for t in on_fields)


def test_column_facet_reads_the_same_edges_from_every_form(wide: WriteLineage) -> None:
    got = {}
    for placement in INDIRECT_PLACEMENTS:
        facet, fields = _facet(event_dict([wide], placement))
        edges = list(column_facet.edges(facet, fields))
        got[placement] = {e[:7] for e in edges}
        assert len(edges) == len(got[placement])  # the ``both`` form's copies are not counted twice
        per_field = column_facet.column_inputs(facet, fields)
        assert {
            (c, i["field"], t["subtype"]) for c, ins in per_field.items() for i in ins for t in i["transformations"]
        } == {(e[0], e[3], e[5]) for e in got[placement]}
    assert got["dataset"] == got["fields"] == got["both"]
    assert ("feature_0003", "file", "/data/lake/customers", "customer_id", "INDIRECT", "JOIN", False) in got["dataset"]
    assert len(got["dataset"]) == sum(len(es) for es in wide.columns.values()) + 40 * 6


def test_a_malformed_or_absent_dataset_list_reads_as_none() -> None:
    assert column_facet.dataset_inputs({"dataset": "x"}) == [] and column_facet.form(None) == "empty"
    assert list(
        column_facet.edges({"fields": {"c": {"inputFields": [{"namespace": "n", "name": "d", "field": "f"}]}}})
    ) == [("c", "n", "d", "f", "DIRECT", "", False, False)]


def test_impact_answers_alike_in_every_form(wide: WriteLineage) -> None:
    answers = {}
    for placement in INDIRECT_PLACEMENTS:
        g = LineageGraph.from_events([event_dict([wide], placement)])
        up = g.upstream("file", "/data/lake/features", "feature_0003", include_indirect=True)
        down = g.downstream("file", "/data/lake/events", "customer_id", include_indirect=True)
        direct = g.upstream("file", "/data/lake/features", "feature_0003")
        answers[placement] = ({(h.field, h.via) for h in up}, {h.field for h in down}, {h.field for h in direct})
    assert answers["dataset"] == answers["fields"] == answers["both"]
    up, down, direct = answers["dataset"]
    assert ("customer_id", ("INDIRECT/JOIN",)) in up and direct == {"feature_source_0003", "feature_source_0004"}
    assert down == {name for name, _ in wide.output_fields}


def test_cli_prints_dataset_wide_edges_once(
    wide: WriteLineage, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(event_dict([wide])) + "\n")
    assert main(["analyze", str(path)]) == 0
    text = capsys.readouterr().out
    assert text.count("[all rows]") == 1 and text.count("customer_id (INDIRECT/JOIN)") == 2
    assert main(["explain", str(path), "feature_0003"]) == 0
    text = capsys.readouterr().out
    assert "rows of the output are influenced by:" in text and "status (INDIRECT/FILTER)" in text
    assert main(["impact", str(path), "--downstream", "file:/data/lake/events:status", "--indirect"]) == 0
    assert "40 column(s)" in capsys.readouterr().out


def _record(wide: WriteLineage) -> dict[str, Any]:
    return run_record.build(LineageResult(lineages=[wide]), job_namespace="airflow", job_name="wide.build",
                            run_id="r1", emission="self")


def test_run_record_keeps_dataset_wide_edges_apart_and_whole(wide: WriteLineage) -> None:
    rec = _record(wide)
    assert rec["truncated"] is None and len(rec["dataset_edges"]) == 6
    assert all(e[4] == "DIRECT" for e in rec["edges"])
    assert len(rec["edges"]) == sum(len(es) for es in wide.columns.values())
    big = run_record.build(LineageResult(lineages=[wide_lineage(columns=1200, keys=6)]), job_namespace="a",
                           job_name="b", run_id="r", emission="self")
    assert big["truncated"] is None and len(big["dataset_edges"]) == 6  # 1,200 columns fit the 512 KiB bound


def test_run_view_graph_reads_dataset_level_edges_into_every_column(wide: WriteLineage) -> None:
    g = graphs.stitch([graphs.TaskRecord(task_id="build", map_index=-1, state="success", record=_record(wide))])
    out = "file:/data/lake/features"
    up = graphs.path(g, out, "feature_0003", depth=1)
    reached = {tuple(c) for c in up["columns"]}
    assert ("file:/data/lake/events", "feature_source_0003") in reached
    assert {(g["dataset_edges"][i]["source_field"], g["dataset_edges"][i]["subtype"]) for i in up["dataset_edges"]} == {
        ("customer_id", "JOIN"), ("event_date", "FILTER"), ("status", "FILTER"), ("segment", "FILTER"),
        ("event_date", "SORT")}
    down = graphs.path(g, "file:/data/lake/events", "status", depth=1)
    assert down["datasets"] == [out]  # a filter column reaches the whole output


def test_guard_diff_and_tags_read_dataset_level_edges(wide: WriteLineage) -> None:
    before = _record(wide)
    changed = wide_lineage(columns=40, keys=6)
    changed.dataset_edges = [e for e in changed.dataset_edges if e.field != "status"]
    d = diff.diff(before, _record(changed))
    assert [(e["from"]["column"], e["to"]["column"], e["subtype"]) for e in d["edges_removed"]] == [
        ("status", None, "FILTER")]
    # INDIRECT edges never carry a tag: a tag on the filter column reaches no output column
    got = tags.propagate(before, {("file", "/data/lake/events"): {"status": ["pii"], "feature_source_0003": ["pii"]}})
    tagged = {c[2] for c in got["columns"] if c[1].endswith("features")}
    assert tagged == {"feature_0003"}
