"""Format-2 records: the plans as one DAG (issue 36). The engine reads it like ``toJSON()`` lists, visits a
shared node once, and still reads format-1 records."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from airflow_provider_lineage.lineage import analyze_record
from airflow_provider_lineage.lineage.plan import load_dag, ref_ids
from airflow_provider_lineage.lineage.record import CaptureRecord, OutputInfo, RelationInfo

E = "org.apache.spark.sql.catalyst.expressions."
P = "org.apache.spark.sql.catalyst.plans.logical."


def _attr(name: str, eid: int) -> dict:
    return {"class": E + "AttributeReference", "num-children": 0, "name": name, "dataType": "long", "nullable": True,
            "metadata": {}, "exprId": {"product-class": E + "ExprId", "id": eid, "jvmId": "x"}, "qualifier": []}


def _chain_record(steps: int) -> CaptureRecord:
    """``out = If(e > 0, e, 0)`` nested ``steps`` times, each level using the previous one twice (2^steps as a tree)."""
    nodes: list[dict] = []

    def add(node: dict, children: list[int] = ()) -> int:
        nodes.append({**node, "$c": list(children)})
        return len(nodes) - 1

    write = add({"class": "org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand",
                 "num-children": 1, "query": 0, "outputColumnNames": "[out]"}, [1])
    assert write == 0
    project = add({"class": P + "Project", "num-children": 1, "child": 0, "projectList": [{"$t": 3}]}, [2])
    rel = add({"class": "org.apache.spark.sql.execution.datasources.LogicalRelation", "num-children": 0,
               "output": [{"$t": 4}]})
    alias = add({"class": E + "Alias", "num-children": 1, "child": 0, "name": "out",
                 "exprId": {"product-class": E + "ExprId", "id": 99, "jvmId": "x"}}, [])
    prev = add(_attr("id", 1))
    zero = add({"class": E + "Literal", "num-children": 0, "value": "0", "dataType": "long"})
    for _ in range(steps):
        gt = add({"class": E + "GreaterThan", "num-children": 2, "left": 0, "right": 1}, [prev, zero])
        prev = add(
            {"class": E + "If", "num-children": 3, "predicate": 0, "trueValue": 1, "falseValue": 2}, [gt, prev, zero]
        )
    nodes[alias]["$c"] = [prev]
    assert (project, rel) == (1, 2)
    dag = {"format": "dag-1", "nodes": nodes, "roots": [0, -1]}
    return CaptureRecord(
        command="InsertIntoHadoopFsRelationCommand",
        status="success",
        plans=dag,
        relations=[
            RelationInfo(
                "LogicalRelation",
                [1],
                [{"name": "id", "type": "bigint"}],
                locations=["file:/data/src"],
                format="parquet",
            )
        ],
        output=OutputInfo(command="InsertIntoHadoopFsRelationCommand", location="file:/data/out", columns=["out"]),
    )


def test_a_200_step_shared_chain_is_analysed_once_per_node():
    rec = CaptureRecord.from_json(_chain_record(200).to_json())
    assert len(rec.to_json()) < 100_000  # 2^200 nodes as a tree
    lin = analyze_record(rec)
    got = {(e.field, e.type, e.subtype) for e in lin.columns["out"]}
    assert got == {("id", "DIRECT", "TRANSFORMATION"), ("id", "INDIRECT", "CONDITIONAL")}
    assert not lin.approximate


def test_shared_nodes_stay_shared():
    rec = _chain_record(3)
    root = load_dag(rec.plans)[0]
    alias = root.children[0].trees_field("projectList")[0]
    top = alias.children[0]  # If
    assert top.children[1] is top.children[0].children[0]  # the previous level, one object for both uses
    assert len(list(alias.walk())) == 1 + 2 * 3 + 2  # alias, (If, >) per step, the attribute, the literal


def test_format_1_records_are_still_read_and_unknown_versions_refused():
    data = json.loads(_chain_record(1).to_json())
    assert data["format_version"] == 2
    data["format_version"] = 1
    assert CaptureRecord.from_dict(data).plans is not None
    data["format_version"] = 9
    with pytest.raises(ValueError, match="format_version 9 is not supported"):
        CaptureRecord.from_dict(data)


def test_load_dag_names_what_is_wrong():
    with pytest.raises(ValueError, match="not a plan DAG of format .dag-1. or .dag-2."):
        load_dag({"nodes": []})


def test_a_list_of_nested_trees_reads_as_its_nodes_runs_included():
    """``dag-2`` writes a list of nested trees (a Project's projectList) as ``{"$ts": [...]}``, a run of consecutive
    ids as ``[first, last]``; ``dag-1`` records (one ``{"$t": id}`` per item) read the same."""
    rec = _chain_record(2)
    nodes = rec.plans["nodes"]
    alias, attr = 3, 4
    nodes[1]["projectList"] = {"$ts": [alias]}
    nodes[2]["output"] = {"$ts": [[attr, attr]]}
    root = load_dag({**rec.plans, "format": "dag-2"})[0]
    assert [a.cls for a in root.children[0].trees_field("projectList")] == ["Alias"]
    assert [a.cls for a in root.children[0].children[0].trees_field("output")] == ["AttributeReference"]
    assert ref_ids({"$ts": [1, [3, 6], 9]}, 10) == [1, 3, 4, 5, 6, 9]
    assert ref_ids({"$t": 1}, 10) is None and ref_ids([1], 10) is None
    for bad in (["x"], [[3, 10**12]], [[6, 3]], [[-1, 2]]):  # never expanded past the DAG's nodes
        with pytest.raises(ValueError, match="run .first, last. of the DAG's 10 nodes"):
            ref_ids({"$ts": bad}, 10)
    broken = {**rec.plans, "format": "dag-2", "nodes": [dict(n) for n in nodes]}
    broken["nodes"][1]["projectList"] = {"$ts": [[0, 10**9]]}
    with pytest.raises(ValueError, match="of the DAG's"):
        load_dag(broken)
    lin = analyze_record(CaptureRecord.from_json(replace(rec, plans={**rec.plans, "format": "dag-2"}).to_json()))
    assert {e.field for e in lin.columns["out"]} == {"id"}


def test_the_streaming_splice_shifts_a_ts_list_and_leaves_a_bad_item_for_load_dag_to_name():
    from airflow_provider_lineage.lineage.record import _shifted

    assert _shifted({"$ts": [1, [3, 6]]}, 10) == {"$ts": [11, [13, 16]]}
    assert _shifted({"$ts": [1, "x", [2]]}, 10) == {"$ts": [11, "x", [2]]}
