"""Stitching, column paths and search of the column-lineage view, on records in the operator's format
(the benchmark's synthetic chain; the real runs are in test_api.py), and the record's size bound."""
from __future__ import annotations

import json

from airflow_provider_lineage.lineage import run_record
from airflow_provider_lineage.plugins.graph import TaskRecord, path, search, stitch
from airflow_provider_lineage.plugins.indexes import state_of
from airflow_provider_lineage.plugins.store import decode
from benchmarks.ui.synthetic import records


def _graph(tasks: int = 3, columns: int = 40, edges: int = 60) -> dict:
    return stitch(
        [TaskRecord(f"t{i}", record=r, state="success") for i, r in enumerate(records(tasks, columns, edges))]
    )


def test_a_dataset_written_by_one_task_and_read_by_the_next_is_one_node() -> None:
    g = _graph()
    assert len(g["datasets"]) == 4  # a chain of 3 tasks over 4 tables
    middle = next(d for d in g["datasets"] if d["name"].endswith("table_01"))
    assert middle["written_by"] == ["t0"] and "t1" in middle["read_by"]
    total = sum(len(r["edges"]) for r in records(3, 40, 60))
    assert len(g["edges"]) == total and len(g["dataset_edges"]) == sum(
        len(r["dataset_edges"]) for r in records(3, 40, 60)
    )


def test_the_same_edge_from_two_tasks_is_one_edge_naming_both() -> None:
    rec = records(1, 10, 8)[0]
    g = stitch([TaskRecord("a", record=rec), TaskRecord("b", record=json.loads(json.dumps(rec)))])
    assert len(g["edges"]) == len(rec["edges"]) and all(e["tasks"] == ["a", "b"] for e in g["edges"])


def test_path_follows_edges_to_the_depth_and_dataset_edges_into_the_dataset() -> None:
    g = _graph()
    e = g["edges"][-1]  # into the last table
    up = path(g, e["target"], e["target_field"], depth=1)
    assert g["edges"].index(e) in up["edges"]
    assert all(g["edges"][i]["target"] == e["target"] for i in up["edges"] if g["edges"][i]["target_field"] ==
               e["target_field"])
    into = {i for i, d in enumerate(g["dataset_edges"]) if d["target"] == e["target"]}
    assert into <= set(up["dataset_edges"])
    deep = path(g, e["target"], e["target_field"], depth=10)
    assert set(up["edges"]) <= set(deep["edges"]) and len(deep["columns"]) >= len(up["columns"])
    assert path(g, e["target"], e["target_field"], depth=0)["edges"] == []


def test_empty_run_says_why() -> None:
    g = stitch([TaskRecord("spark", state="success", operator="SparkLineageSubmitOperator"),
                TaskRecord("cluster", record={**records(1, 4, 2)[0], "status": "cluster_mode", "datasets": [],
                                              "inputs": [], "outputs": [], "edges": [], "dataset_edges": []})])
    assert g["datasets"] == [] and "no lineage record" in g["empty"] and "cluster deploy mode" in g["empty"]
    assert "no SparkLineageSubmitOperator task" in stitch([])["empty"]


def test_search_matches_datasets_and_columns() -> None:
    recs = [({"dag_id": "d", "run_id": "r", "task_id": f"t{i}"}, r) for i, r in enumerate(records(3, 40, 60))]
    hits = search(recs, "COL_01_0003")
    assert hits and all(h["column"] == "col_01_0003" for h in hits)
    assert {h["label"] for h in search(recs, "table_02") if h["column"] is None} == {"bench/table_02"}
    assert search(recs, "nothing-like-this") == [] and search(recs, "  ") == []


def test_record_cut_keeps_the_limit_and_says_so() -> None:
    rec = records(1, 200, 400)[0]
    small = run_record.cut(json.loads(json.dumps(rec)), 4000)
    assert run_record.size(small) <= 4000 and small["truncated"]["edges_total"] == len(rec["edges"])
    tiny = run_record.cut(json.loads(json.dumps(rec)), 1500)
    assert run_record.size(tiny) <= 1500 and tiny["edges"] == [] and tiny["truncated"]["fields_kept"] == 0
    assert run_record.cut(rec, 10**7) is rec and rec["truncated"] is None


def test_xcom_values_are_read_as_plain_json_only() -> None:
    assert decode('{"a": 1}') == {"a": 1} and decode(b"[1]") == [1] and decode({"a": 1}) == {"a": 1}
    assert decode("gASVCAAAAAAAAACMBGV2aWyULg==") is None  # not JSON (e.g. a pickle): never decoded otherwise


def test_badge_states() -> None:
    assert state_of("none", "index is current") == "fresh"
    assert state_of("sync", "2 added, 0 removed, 0 rewritten files since v3") == "stale"
    assert state_of("build", "no manifest") == "missing"
    assert state_of("rebuild", "the index is unusable, every read is a full read (checksum mismatch)") == "corrupt"
    assert state_of("rebuild", "error budget 60% used") == "rebuild"
