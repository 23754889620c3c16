"""Assertion helpers shared by the lineage tests."""
from __future__ import annotations

import json
import posixpath
from typing import Any

from airflow_provider_lineage.lineage import WriteLineage


def edges(lin: WriteLineage, column: str) -> set[tuple[str, str, str, str]]:
    """``{(dataset basename, field, type, subtype)}`` of one output column."""
    return {(posixpath.basename(e.dataset.name), e.field, e.type, e.subtype) for e in lin.columns[column]}


def direct(lin: WriteLineage, column: str) -> set[tuple[str, str, str]]:
    return {(d, f, s) for d, f, t, s in edges(lin, column) if t == "DIRECT"}


def ds_edges(lin: WriteLineage) -> set[tuple[str, str, str]]:
    """``{(dataset basename, field, subtype)}`` of the dataset-wide influences."""
    return {(posixpath.basename(e.dataset.name), e.field, e.subtype) for e in lin.dataset_edges}


def check_properties(lin: WriteLineage) -> None:
    """Invariants every analysis must satisfy."""
    names = [n for n, _ in lin.output_fields]
    assert set(names) == set(lin.columns), (names, list(lin.columns))
    schemas = {ref.key: {f for f, _ in fields} for ref, fields in lin.inputs}
    for e in [x for es in lin.columns.values() for x in es] + lin.dataset_edges:
        assert e.dataset.key in schemas, f"edge to {e.dataset} which is not an input"
        assert e.field in schemas[e.dataset.key], f"{e.dataset}.{e.field} missing from the input schema"
        assert e.type in ("DIRECT", "INDIRECT")
        ok = {"IDENTITY", "TRANSFORMATION", "AGGREGATION"} if e.type == "DIRECT" else {
            "JOIN", "FILTER", "GROUP_BY", "SORT", "WINDOW", "CONDITIONAL"}
        assert e.subtype in ok, e


def optimized_classes(rec: Any) -> set[str]:
    """Simple class names of every node of a record's optimized plan (nested trees included), whatever
    form the record holds it in (a format-2 DAG or ``toJSON()`` lists)."""
    from airflow_provider_lineage.lineage.engine import plan_trees
    from airflow_provider_lineage.lineage.plan import TreeNode

    root = plan_trees(rec)[0]
    out: set[str] = set()
    trees: list[TreeNode] = [root] if root is not None else []
    seen: set[int] = set()
    while trees:  # each tree's nodes (TreeNode.walk), then the trees nested in their fields, each node once
        for node in trees.pop().walk():
            if id(node) not in seen:
                seen.add(id(node))
                out.add(node.cls)
                trees.extend(tree for _key, tree in node.nested_trees())
    return out


def lineage_summary(rec: Any) -> dict[str, Any]:
    """The engine's whole answer for one capture record as plain JSON data, edges sorted: what a plan
    fixture stores as its expected lineage (dev/record_plan_fixtures.py) and test_plan_fixtures compares."""
    from dataclasses import asdict

    from airflow_provider_lineage.lineage.engine import analyze_record

    lin = asdict(analyze_record(rec))

    def ordered(edges: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(edges, key=lambda e: json.dumps(e, sort_keys=True, default=str))

    lin["columns"] = {col: ordered(es) for col, es in lin["columns"].items()}
    lin["dataset_edges"] = ordered(lin["dataset_edges"])
    return json.loads(json.dumps(lin, default=str))
