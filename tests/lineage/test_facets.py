"""OpenLineage datasets built from lineages: schema-valid, Marquez-safe, merged per output."""
from __future__ import annotations

import datetime as dt
import json
import uuid

import pytest
from openlineage.client.event_v2 import Job, Run, RunEvent, RunState
from openlineage.client.serde import Serde
from pyspark.sql import functions as F

from airflow_provider_lineage import PRODUCER
from airflow_provider_lineage.lineage import analyze_record
from airflow_provider_lineage.lineage.facets import datasets_for
from tests.lineage.synthetic import alias, attr, call, lit, node, relation
from tests.lineage.test_engine import record, write
from tests.support.ol_validate import find_spec_dir, validate_event


def event(ins, outs) -> dict:
    ev = RunEvent(eventType=RunState.COMPLETE, eventTime=dt.datetime.now(dt.UTC).isoformat(),
                  run=Run(runId=str(uuid.uuid4())), job=Job(namespace="test", name="job"), producer=PRODUCER,
                  inputs=ins, outputs=outs)
    return json.loads(Serde.to_json(ev))


def assert_marquez_safe(ev: dict) -> None:
    """Every edge's input field is in the schema of an input of the same event; outputs list their fields."""
    schemas = {(d["namespace"], d["name"]): {f["name"] for f in d["facets"]["schema"]["fields"]} for d in ev["inputs"]}
    for out in ev["outputs"]:
        out_fields = {f["name"] for f in out["facets"]["schema"]["fields"]}
        cl = out["facets"]["columnLineage"]
        assert set(cl["fields"]) <= out_fields
        for inp in [i for f in cl["fields"].values() for i in f["inputFields"]] + cl.get("dataset", []):
            assert inp["field"] in schemas[(inp["namespace"], inp["name"])], inp


def spec_or_skip() -> None:
    if find_spec_dir() is None:
        pytest.fail("OpenLineage spec folder not found: tests/support/openlineage_spec is missing from the checkout")


def test_real_writes_give_schema_valid_marquez_safe_events(env):
    spec_or_skip()
    o, c = env.spark.read.parquet(env.orders), env.spark.read.parquet(env.customers)
    env.spark.sql("DROP TABLE IF EXISTS lin_facets")
    df = (
        o.join(c, "cust_id")
        .where("amount > 2")
        .groupBy("name")
        .agg(F.sum("amount").alias("total"), F.count("*").alias("n"))
    )
    lins = [analyze_record(env.capture(lambda: df.write.mode("overwrite").saveAsTable("lin_facets"))),
            analyze_record(env.write_parquet(o.select(F.md5("note").alias("h"))))]
    ins, outs = datasets_for(lins)
    ev = event(ins, outs)
    assert validate_event(ev) == []
    assert_marquez_safe(ev)
    table_out = next(d for d in ev["outputs"] if d["name"].endswith("lin_facets"))
    assert table_out["facets"]["symlinks"]["identifiers"][0]["name"] == "default.lin_facets"
    assert table_out["facets"]["lifecycleStateChange"]["lifecycleStateChange"] == "OVERWRITE"
    kinds = {t["subtype"] for i in table_out["facets"]["columnLineage"]["dataset"] for t in i["transformations"]}
    assert kinds == {"JOIN", "FILTER", "GROUP_BY"}


def test_two_writes_of_one_output_are_merged():
    p1 = write(node("Project", [relation([("a", 1), ("b", 2)])], projectList=[attr("a", 1)], child=0))
    p2 = write(
        node(
            "Project",
            [relation([("a", 1), ("b", 2)])],
            projectList=[alias(call("Add", attr("b", 2), lit(1)), "a", 9)],
            child=0,
        )
    )
    lins = [analyze_record(record(p1, ["a"], mode="Append")), analyze_record(record(p2, ["a"], mode="Append"))]
    ins, outs = datasets_for(lins)
    assert len(outs) == 1 and len(ins) == 1
    fields = outs[0].facets["columnLineage"].fields["a"].inputFields
    assert sorted(f.field for f in fields) == ["a", "b"]
    assert "lifecycleStateChange" not in outs[0].facets


def test_approximate_lineage_says_so_in_transformation_descriptions():
    spec_or_skip()
    weird = node("SomeFutureNode", [relation([("a", 1), ("b", 2)])], child=0, output=[attr("z", 77)])
    ins, outs = datasets_for([analyze_record(record(write(weird), ["z"]))])
    ev = event(ins, outs)
    assert validate_event(ev) == []
    [t] = ev["outputs"][0]["facets"]["columnLineage"]["fields"]["z"]["inputFields"][0]["transformations"][:1]
    assert t["description"].startswith("approximate: conservative rule for SomeFutureNode")


def test_validator_reports_a_broken_facet():
    spec_or_skip()
    ev = event([], [])
    ev["outputs"] = [{"namespace": "a", "name": "b", "facets": {"columnLineage": {
        "_producer": PRODUCER, "_schemaURL": "https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json",
        "fields": {"c": {"inputFields": [{"namespace": "a", "name": "b"}]}}}}}]
    problems = validate_event(ev)
    assert problems and "'field' is a required property" in problems[0]


def _filter_lineage():
    q = node("Filter", [relation([("a", 1), ("b", 2)])], condition=call("GreaterThan", attr("b", 2), lit(0)), child=0)
    return analyze_record(record(write(node("Project", [q], projectList=[attr("a", 1)], child=0)), ["a"]))


def _placement(out) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    facet = out.facets["columnLineage"]
    in_field = {(f.field, t.subtype) for f in facet.fields["a"].inputFields for t in f.transformations}
    in_dataset = {(f.field, t.subtype) for f in facet.dataset for t in f.transformations}
    return in_field, in_dataset


def test_dataset_wide_influences_go_once_to_the_dataset_list_by_default():
    _, [out] = datasets_for([_filter_lineage()])
    assert _placement(out) == ({("a", "IDENTITY")}, {("b", "FILTER")})


@pytest.mark.parametrize(("indirect", "expected"), [
    ("fields", ({("a", "IDENTITY"), ("b", "FILTER")}, set())),
    ("dataset", ({("a", "IDENTITY")}, {("b", "FILTER")})),
    ("both", ({("a", "IDENTITY"), ("b", "FILTER")}, {("b", "FILTER")})),
])
def test_indirect_placement_options(indirect, expected):
    _, [out] = datasets_for([_filter_lineage()], indirect=indirect)
    assert _placement(out) == expected
    with pytest.raises(ValueError, match="indirect="):
        datasets_for([_filter_lineage()], indirect="columns")


def test_deprecated_field_level_type_and_description_and_typed_schemas():
    _, [out] = datasets_for([_filter_lineage()], indirect="fields")
    f = out.facets["columnLineage"].fields["a"]
    assert (f.transformationType, f.transformationDescription) == ("IDENTITY", "DIRECT/IDENTITY: a; INDIRECT/FILTER: b")
    assert all(x.type for x in out.facets["schema"].fields)


def test_field_summary_kinds():
    from airflow_provider_lineage.lineage.facets import field_summary
    from airflow_provider_lineage.lineage.model import FieldEdge
    from airflow_provider_lineage.lineage.naming import DatasetRef

    t, u = DatasetRef("file", "/w/t"), DatasetRef("file", "/w/u")
    agg = {FieldEdge(t, "x", "DIRECT", "AGGREGATION"), FieldEdge(t, "y", "DIRECT", "TRANSFORMATION")}
    assert field_summary(agg)[0] == "AGGREGATION"
    assert field_summary({FieldEdge(t, "x", "DIRECT", "TRANSFORMATION", True)})[0] == "MASKED"
    kind, text = field_summary(
        {FieldEdge(t, "k", "INDIRECT", "JOIN"), FieldEdge(u, "k", "INDIRECT", "JOIN")}, "approximate: x"
    )
    assert kind == "INDIRECT" and text == "approximate: x; INDIRECT/JOIN: t.k, u.k"
