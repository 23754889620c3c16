"""The view data of "lineage as a guard" on a stitched run graph (pure Python, hand-written records)."""
from __future__ import annotations

import copy

from airflow_provider_lineage.lineage import diff as diffs
from airflow_provider_lineage.lineage import tags as tagging
from airflow_provider_lineage.plugins import graph as graphs
from airflow_provider_lineage.plugins.guard import view as guard_view
from tests.lineage.test_guard_core import DECL, TAGREC, V1, V2


def _task(record: dict, task_id: str = "t") -> graphs.TaskRecord:
    return graphs.TaskRecord(task_id, -1, "success", "SparkLineageSubmitOperator", record)


def test_changes_are_marked_and_removed_edges_kept_apart() -> None:
    rec = copy.deepcopy(V2)
    rec["diff"] = diffs.diff(V1, V2, "run1")
    tasks = [_task(rec)]
    g = guard_view.annotate(graphs.stitch(tasks), tasks)
    assert g["changed"] is True
    (change,) = g["changes"]
    assert change["task"] == "t" and change["columns_added"] == 1 and change["edges_removed"] == 1
    marks = {(e["target_field"], e["source_field"]): e.get("change") for e in g["edges"]}
    assert marks[("segment", "id")] == "added" and marks[("email_h", "email")] == "changed"
    assert marks[("id", "id")] is None
    (removed,) = g["removed_edges"]
    assert removed["source_field"] == "email" and removed["target_field"] is None and removed["subtype"] == "JOIN"
    mart = next(d for d in g["datasets"] if d["name"] == "/w/mart")
    assert next(f for f in mart["fields"] if f["name"] == "segment")["change"] == "added"
    # the stitched edge lists keep their meaning (the removed edge is not one of them)
    assert len(g["dataset_edges"]) == 2


def test_unchanged_and_first_runs_are_not_changed() -> None:
    rec = copy.deepcopy(V1)
    rec["diff"] = diffs.empty(None)
    tasks = [_task(rec)]
    g = guard_view.annotate(graphs.stitch(tasks), tasks)
    assert g["changed"] is False and g["removed_edges"] == [] and g["tasks"][0]["diff"]["previous_run_id"] is None


def test_tag_chips_and_where_tags_reach_unmasked() -> None:
    rec = copy.deepcopy(TAGREC)
    res = tagging.propagate(rec, tagging.parse_declaration(DECL))
    rec["tags"] = tagging.for_record(res, rec)
    rec["guard_problems"] = ["Variable 'lineage_column_tags' is not valid JSON"]
    tasks = [_task(rec, "contacts")]
    g = guard_view.annotate(graphs.stitch(tasks), tasks)
    fields = {(d["name"], f["name"]): f for d in g["datasets"] for f in d["fields"]}
    assert [(t["tag"], t["source"]) for t in fields[("/w/customers", "email")]["tags"]] == [("pii", "declared")]
    assert [(t["tag"], t["source"]) for t in fields[("/w/mart", "email_lower")]["tags"]] == [("pii", "inherited")]
    assert "tags" not in fields[("/w/mart", "email_hash")] and "tags" not in fields[("/w/mart", "n")]
    (u,) = g["unmasked"]
    assert (u["tag"], u["column"], u["task"]) == ("pii", "email_lower", "contacts") and len(u["path"]) == 2
    assert g["tasks"][0]["guard_problems"] == rec["guard_problems"]
    assert guard_view.unmasked_from_records([({"dag_id": "d", "task_id": "contacts", "map_index": -1}, rec)], "pii")[0][
        "dag_id"] == "d"
    assert guard_view.unmasked_from_records([({"dag_id": "d", "task_id": "c", "map_index": -1}, rec)], "secret") == []


def test_access_redact_keeps_the_path_shape_with_counts_only() -> None:
    from airflow_provider_lineage.plugins.guard import access

    hops = [{"namespace": "file", "name": f"/d{i}", "column": "c"} for i in range(6)]
    shown = {"/d0", "/d3", "/d5"}
    path, n = access.redact(hops, access.hops_visible(hops, lambda k: k[1] in shown,
                                                      lambda h: (h["namespace"], h["name"], h["column"])))
    assert n == 3 and [p.get("hidden") or p["name"] for p in path] == ["/d0", 2, "/d3", 1, "/d5"]
    assert all("/d1" not in str(p) and "/d2" not in str(p) for p in path)
    marker = {"namespace": "", "name": "...", "column": "4 more"}  # a shortened path's middle stays
    assert access.redact([marker], access.hops_visible([marker], lambda k: False, lambda h: ("", "", "")))[0] == [
        marker
    ]
    assert access.filter_problems([("variable", "a"), ("setting", "b")], {"setting"}) == (["b"], 1)


def test_the_run_tab_counts_the_approximate_columns_and_fails_soft() -> None:
    """Issue 46 item 7: the tab says "approximate" with the count of such columns (and why); a malformed list
    shows what it can."""
    rec = copy.deepcopy(TAGREC)
    rec["approximate"] = [[2, "n", ["unknown input: Python data source 'custfile'"]], [2, "email_lower", ["driver"]],
                          [99, "bad", ["x"]], "junk"]
    tasks = [_task(rec, "contacts")]
    g = guard_view.annotate(graphs.stitch(tasks), tasks)
    (st,) = g["tasks"]
    assert st["approximate"] == 2
    assert [(a["column"], a["reasons"]) for a in st["approximate_columns"]] == [
        ("n", ["unknown input: Python data source 'custfile'"]), ("email_lower", ["driver"])]
    exact = guard_view.annotate(graphs.stitch([_task(copy.deepcopy(TAGREC))]), [_task(copy.deepcopy(TAGREC))])
    assert "approximate" not in exact["tasks"][0]
