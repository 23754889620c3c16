"""Kafka datasets (naming spec: namespace ``kafka://{bootstrap server host}:{port}``, name = topic) from what the
capture records of a Kafka source or sink. No Kafka jar here (no Maven), so no Kafka query can run: the records are
built in the shape the capture gives them (a micro-batch's ``StreamingDataSourceV2ScanRelation`` leaf with the
source's options; the ``WriteToMicroBatchDataSource`` sink's write options; a batch ``SaveIntoDataSourceCommand``)."""
from __future__ import annotations

import pytest

from airflow_provider_lineage.lineage.engine import analyze_record
from airflow_provider_lineage.lineage.naming import (
    DatasetRef,
    datasets_for_kafka,
    kafka_namespace,
    kafka_topics,
)
from airflow_provider_lineage.lineage.record import CaptureRecord, OutputInfo, RelationInfo
from airflow_provider_lineage.lineage.sources import dataset_for_output, relation_sources

SERVERS = "Broker-1.example.com:9093,broker-2.example.com:9093"


@pytest.mark.parametrize(("servers", "namespace"), [
    (SERVERS, "kafka://broker-1.example.com:9093"),
    ("SASL_SSL://b1:9094", "kafka://b1:9094"),
    ("localhost", "kafka://localhost:9092"),
    (" b1:9092 , b2:9092", "kafka://b1:9092"),
])
def test_namespace_is_the_first_bootstrap_server(servers: str, namespace: str) -> None:
    assert kafka_namespace(servers) == namespace


def test_topics_of_subscribe_assign_topic_and_pattern() -> None:
    assert kafka_topics({"subscribe": "orders, payments"}) == ["orders", "payments"]
    assert kafka_topics({"assign": '{"orders": [0, 1], "refunds": [0]}'}) == ["orders", "refunds"]
    assert kafka_topics({"topic": "out"}) == ["out"]
    assert kafka_topics({"subscribePattern": "ord.*"}) == []
    assert datasets_for_kafka({"subscribe": "orders"}) == []  # no brokers: no identity


def _source(options: dict[str, str]) -> RelationInfo:
    columns = [("key", "binary"), ("value", "binary"), ("topic", "string"), ("partition", "int")]
    return RelationInfo(node_class="StreamingDataSourceV2ScanRelation", expr_ids=[10, 11, 12, 13],
                        columns=[{"name": n, "type": t} for n, t in columns], format="kafka", options=options)


def test_source_relation_one_dataset_per_topic() -> None:
    found = relation_sources(_source({"kafka.bootstrap.servers": SERVERS, "subscribe": "orders,payments"}))
    ns = "kafka://broker-1.example.com:9093"
    assert found.datasets == [DatasetRef(ns, "orders"), DatasetRef(ns, "payments")]
    pattern = relation_sources(_source({"kafka.bootstrap.servers": SERVERS, "subscribePattern": "o.*"}))
    assert pattern.datasets == [] and pattern.note and "topics unknown" in pattern.note


@pytest.mark.parametrize("command", ["WriteToMicroBatchDataSource", "SaveIntoDataSourceCommand"])
def test_sink_is_its_topic(command: str) -> None:
    out = OutputInfo(command=command, format="kafka", mode="Append", columns=["value"],
                     options={"kafka.bootstrap.servers": SERVERS, "topic": "enriched"})
    assert dataset_for_output(out) == DatasetRef("kafka://broker-1.example.com:9093", "enriched")
    per_row = OutputInfo(command=command, format="kafka", options={"kafka.bootstrap.servers": SERVERS})
    assert dataset_for_output(per_row) is None  # the topic is a column of each row: not named


def _attr(name: str, expr_id: int, typ: str) -> dict[str, object]:
    return {"class": "org.apache.spark.sql.catalyst.expressions.AttributeReference", "num-children": 0,
            "name": name, "dataType": typ, "nullable": True, "metadata": {}, "exprId": {"id": expr_id, "jvmId": "j"},
            "qualifier": []}


def test_kafka_to_kafka_query_record_column_lineage() -> None:
    """A micro-batch plan of ``readStream.format("kafka")`` -> ``select(value)`` -> ``writeStream.format("kafka")``,
    as the capture's plan DAG holds it: the value column comes from the source topic's value column."""
    nodes = [
        {"class": "org.apache.spark.sql.execution.streaming.sources.WriteToMicroBatchDataSource", "num-children": 1,
         "$c": [1], "query": 0},
        {"class": "org.apache.spark.sql.catalyst.plans.logical.Project", "num-children": 1, "$c": [2],
         "projectList": [{"$t": 4}]},
        {"class": "org.apache.spark.sql.execution.datasources.v2.StreamingDataSourceV2ScanRelation",
         "num-children": 0, "$c": [], "output": [{"$t": 3}, {"$t": 4}, {"$t": 5}, {"$t": 6}]},
        _attr("key", 10, "binary"), _attr("value", 11, "binary"), _attr("topic", 12, "string"),
        _attr("partition", 13, "integer"),
    ]
    record = CaptureRecord(
        command="WriteToMicroBatchDataSource", status="success", func_name="writeStream",
        plans={"format": "dag-1", "nodes": nodes, "roots": [0, 0]},
        relations=[_source({"kafka.bootstrap.servers": SERVERS, "subscribe": "orders"})],
        output=OutputInfo(command="WriteToMicroBatchDataSource", format="kafka", mode="Append", columns=["value"],
                          options={"kafka.bootstrap.servers": SERVERS, "topic": "enriched"}),
        streaming={"state": "terminated", "sink": "WriteToMicroBatchDataSource"},
    )
    lin = analyze_record(record)
    ns = "kafka://broker-1.example.com:9093"
    assert lin.output == DatasetRef(ns, "enriched")
    assert {(e.dataset, e.field) for e in lin.columns["value"]} == {(DatasetRef(ns, "orders"), "value")}
