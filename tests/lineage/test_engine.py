"""Engine behaviour on hand-built plans: size (linear cost), unknown nodes, unusable records,
and write commands local Spark cannot produce here (Hive, MERGE, V2 CTAS)."""
from __future__ import annotations

import time

import pytest

from airflow_provider_lineage.lineage import LineageError, analyze_record
from airflow_provider_lineage.lineage.record import CaptureRecord, OutputInfo, RelationInfo
from tests.lineage.helpers import check_properties, direct, ds_edges, edges
from tests.lineage.synthetic import alias, attr, call, lit, node, relation

REL = RelationInfo("LogicalRelation", [1, 2], [{"name": "a", "type": "bigint"}, {"name": "b", "type": "bigint"}],
                   locations=["file:/data/src"], format="parquet")


def record(plan, columns, command="InsertIntoHadoopFsRelationCommand", rels=(REL,), **out) -> CaptureRecord:
    return CaptureRecord(command=command, status="success", optimized_plan=plan, relations=list(rels),
                         output=OutputInfo(command=command, location=out.pop("location", "file:/data/out"),
                                           columns=columns, column_types=["bigint"] * len(columns), **out))


def write(query, **fields):
    return node("InsertIntoHadoopFsRelationCommand", [query], pkg="org.apache.spark.sql.execution.datasources.",
                query=0, **fields)


def test_project_chain_of_2000_nodes_is_linear():
    plan = relation([("a", 1), ("b", 2)])
    prev = 1
    for i in range(2000):  # the un-collapsed shape: one Project per withColumn
        eid = 100 + i
        plan = node(
            "Project",
            [plan],
            projectList=[alias(call("Add", attr("a", prev), attr("b", 2)), "a", eid), attr("b", 2)],
            child=0,
        )
        prev = eid
    t0 = time.perf_counter()
    lin = analyze_record(record(write(plan), ["a", "b"]))
    elapsed = time.perf_counter() - t0
    check_properties(lin)
    assert direct(lin, "a") == {("src", "a", "TRANSFORMATION"), ("src", "b", "TRANSFORMATION")}
    assert elapsed < 30  # generous: a path explosion would take hours, not seconds


def test_expression_2000_levels_deep():
    expr = attr("a", 1)
    for _ in range(2000):
        expr = call("Add", expr, attr("b", 2))
    plan = write(node("Project", [relation([("a", 1), ("b", 2)])], projectList=[alias(expr, "x", 50)], child=0))
    lin = analyze_record(record(plan, ["x"]))
    assert direct(lin, "x") == {("src", "a", "TRANSFORMATION"), ("src", "b", "TRANSFORMATION")}


def test_union_of_500_branches():
    branches = [
        node(
            "Project",
            [relation([("a", 1), ("b", 2)])],
            projectList=[alias(call("Add", attr("a", 1), lit(i)), "a", 1000 + i)],
            child=0,
        )
        for i in range(500)
    ]
    plan = write(node("Union", branches, byName=False, allowMissingCol=False))
    lin = analyze_record(record(plan, ["a"]))
    assert direct(lin, "a") == {("src", "a", "TRANSFORMATION")}


def test_unknown_node_falls_back_to_conservative_rule_and_is_marked_approximate():
    weird = node("SomeFutureNode", [relation([("a", 1), ("b", 2)])], child=0,
                 output=[attr("z", 77)], cond=call("GreaterThan", attr("b", 2), lit(1)))
    lin = analyze_record(record(write(weird), ["z"]))
    check_properties(lin)
    assert lin.approximate and lin.unknown == ["SomeFutureNode"]
    assert direct(lin, "z") == {("src", "a", "TRANSFORMATION"), ("src", "b", "TRANSFORMATION")}
    assert ("src", "b", "FILTER") in ds_edges(lin)


def test_unknown_passthrough_node_keeps_child_columns():
    weird = node("SomeHintNode", [relation([("a", 1), ("b", 2)])], child=0)
    lin = analyze_record(record(write(weird), ["a", "b"]))
    assert lin.approximate
    assert direct(lin, "a") == {("src", "a", "IDENTITY")}


def test_record_without_plan_raises_lineage_error_naming_the_fix():
    rec = CaptureRecord(
        command="InsertIntoHadoopFsRelationCommand", status="failure", capture_error="optimized plan unavailable"
    )
    with pytest.raises(LineageError, match="no plan"):
        analyze_record(rec)


def test_analyzed_plan_is_used_when_the_optimized_plan_is_missing():
    plan = write(node("Project", [relation([("a", 1), ("b", 2)])], projectList=[attr("a", 1)], child=0))
    rec = record(None, ["a"])
    rec.analyzed_plan = plan
    lin = analyze_record(rec)
    assert lin.approximate and direct(lin, "a") == {("src", "a", "IDENTITY")}


HIVE_REL = RelationInfo("HiveTableRelation", [1, 2], [{"name": "a", "type": "bigint"}, {"name": "p", "type": "string"}],
                        locations=["file:/wh/db.db/src"], table="spark_catalog.db.src", format="hive")


def hive_relation():
    return node("HiveTableRelation", [], pkg="org.apache.spark.sql.catalyst.catalog.", tableMeta=None,
                dataCols=[attr("a", 1)], partitionCols=[attr("p", 2, "string")])


def test_insert_into_hive_table_from_hive_table_relation():
    q = node(
        "Project",
        [hive_relation()],
        projectList=[alias(call("Multiply", attr("a", 1), lit(2)), "a2", 10), attr("p", 2, "string")],
        child=0,
    )
    plan = node("InsertIntoHiveTable", [q], pkg="org.apache.spark.sql.hive.execution.", table=None, partition=None,
                query=0, overwrite=True, ifPartitionNotExists=False, outputColumnNames=["a2", "p"])
    lin = analyze_record(record(plan, ["a2", "p"], command="InsertIntoHiveTable", rels=(HIVE_REL,),
                                location="file:/wh/db.db/dst", table="spark_catalog.db.dst"))
    check_properties(lin)
    assert direct(lin, "a2") == {("src", "a", "TRANSFORMATION")}
    assert direct(lin, "p") == {("src", "p", "IDENTITY")}
    assert lin.output.table == "spark_catalog.db.dst" and lin.inputs[0][0].table == "spark_catalog.db.src"


def test_create_hive_table_as_select():
    plan = node("CreateHiveTableAsSelectCommand", [hive_relation()], pkg="org.apache.spark.sql.hive.execution.",
                tableDesc=None, query=0, outputColumnNames=["a", "p"], mode=None)
    lin = analyze_record(record(plan, ["a", "p"], command="CreateHiveTableAsSelectCommand", rels=(HIVE_REL,),
                                location="file:/wh/db.db/dst", table="spark_catalog.db.dst"))
    assert direct(lin, "a") == {("src", "a", "IDENTITY")}


def test_v2_create_table_as_select_reads_the_query_child():
    ident = node("ResolvedIdentifier", [], pkg="org.apache.spark.sql.catalyst.analysis.", catalog=None, identifier=None)
    q = node("Filter", [relation([("a", 1), ("b", 2)])], condition=call("GreaterThan", attr("b", 2), lit(0)), child=0)
    plan = node("CreateTableAsSelect", [ident, q], name=0, partitioning=[], query=1, tableSpec=None)
    lin = analyze_record(record(plan, ["a", "b"], command="CreateTableAsSelect", location=None, table="cat.db.t"))
    check_properties(lin)
    assert direct(lin, "a") == {("src", "a", "IDENTITY")}
    assert ds_edges(lin) == {("src", "b", "FILTER")}
    assert lin.output.namespace == "cat" and lin.output.name == "db.t"


def test_merge_into_table_assignments_and_conditions():
    tgt_rel = RelationInfo(
        "DataSourceV2Relation",
        [1, 2],
        [{"name": "id", "type": "bigint"}, {"name": "v", "type": "bigint"}],
        table="cat.db.tgt",
        format="v2",
    )
    src_rel = RelationInfo(
        "LogicalRelation",
        [11, 12],
        [{"name": "id", "type": "bigint"}, {"name": "nv", "type": "bigint"}],
        locations=["file:/data/updates"],
        format="parquet",
    )
    target = node(
        "DataSourceV2Relation",
        [],
        pkg="org.apache.spark.sql.execution.datasources.v2.",
        output=[attr("id", 1), attr("v", 2)],
    )
    source = relation([("id", 11), ("nv", 12)])
    upd = call("UpdateAction", call("GreaterThan", attr("nv", 12), lit(0)),
               call("Assignment", attr("v", 2), call("Add", attr("nv", 12), lit(1))), condition=0)
    ins = call(
        "InsertAction",
        call("Assignment", attr("id", 1), attr("id", 11)),
        call("Assignment", attr("v", 2), attr("nv", 12)),
    )
    plan = node("MergeIntoTable", [target, source], targetTable=0, sourceTable=1,
                mergeCondition=call("EqualTo", attr("id", 1), attr("id", 11)),
                matchedActions=[upd], notMatchedActions=[ins], notMatchedBySourceActions=[])
    rec = CaptureRecord(command="MergeIntoTable", status="success", optimized_plan=plan, relations=[tgt_rel, src_rel],
                        output=OutputInfo(command="MergeIntoTable", table="cat.db.tgt", mode="Merge"))
    lin = analyze_record(rec)
    check_properties(lin)
    assert [n for n, _ in lin.output_fields] == ["id", "v"]
    assert edges(lin, "v") == {("db.tgt", "v", "DIRECT", "IDENTITY"), ("updates", "nv", "DIRECT", "TRANSFORMATION"),
                               ("updates", "nv", "DIRECT", "IDENTITY"), ("updates", "nv", "INDIRECT", "CONDITIONAL")}
    assert direct(lin, "id") == {("db.tgt", "id", "IDENTITY"), ("updates", "id", "IDENTITY")}
    assert {("db.tgt", "id", "JOIN"), ("updates", "id", "JOIN")} == ds_edges(lin)


def test_cte_kept_by_the_optimizer_is_followed_from_reference_to_definition():
    cte_def = node("CTERelationDef", [node("Project", [relation([("a", 1), ("b", 2)])],
                                           projectList=[alias(call("Add", attr("a", 1), lit(1)), "x", 30)], child=0)],
                   child=0, id=7, originalPlanWithPredicates=None, underSubquery=False)
    ref = node("CTERelationRef", [], cteId=7, _resolved=True, output=[attr("x", 31)], isStreaming=False)
    plan = write(
        node("WithCTE", [cte_def, node("Project", [ref], projectList=[attr("x", 31)], child=0)], plan=1, cteDefs=[0])
    )
    lin = analyze_record(record(plan, ["x"]))
    assert not lin.approximate
    assert direct(lin, "x") == {("src", "a", "TRANSFORMATION")}
