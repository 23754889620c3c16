"""Structured Streaming capture (capture/streaming.py) on the real local[2] session: one record per query.

Each test registers a :class:`StreamingCapture` on the shared session's SparkContext, runs real streaming
queries (file source -> file sink, ``toTable``, memory sink, ``foreachBatch``, a query left running) and reads
the records it handed over, then the column lineage the engine computes from them.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_lineage.capture.listener import CaptureSession, drain
from airflow_provider_lineage.capture.streaming import StreamingCapture, install
from airflow_provider_lineage.lineage.engine import analyze_record
from airflow_provider_lineage.lineage.record import CaptureRecord, collapse_nested


@pytest.fixture
def captured(spark: Any) -> Iterator[tuple[StreamingCapture, list[CaptureRecord]]]:
    drain(spark)  # earlier tests' events never reach this capture
    records: list[CaptureRecord] = []
    cap = install(spark, records.append)
    cap.other_sessions = False  # the tests' own batch writes (the source files) are not under test here
    yield cap, records
    drain(spark)
    cap.unregister()


@pytest.fixture
def source(spark: Any, tmp_path: Path) -> tuple[str, Any]:
    """Three Parquet files of (id, v) and a streaming DataFrame w = v + 1 over them."""
    from pyspark.sql import functions as F

    src = str(tmp_path / "src")
    spark.range(6).withColumn("v", F.col("id") * 2).repartition(3).write.mode("overwrite").parquet(src)
    stream = (spark.readStream.schema("id long, v long").option("maxFilesPerTrigger", 1).parquet(src)
              .select((F.col("v") + 1).alias("w"), "id"))
    return src, stream


def _edges(record: CaptureRecord) -> dict[str, set[tuple[str, str]]]:
    lin = analyze_record(record)
    return {col: {(Path(e.dataset.name).name, e.field) for e in edges} for col, edges in lin.columns.items()}


def test_file_sink_available_now_is_one_record_with_column_lineage(spark: Any, captured: Any, source: Any,
                                                                   tmp_path: Path) -> None:
    cap, records = captured
    _src, stream = source
    out = str(tmp_path / "out")
    query = (stream.writeStream.format("parquet").option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start(out))
    query.awaitTermination()
    drain(spark)
    assert len(records) == 1, [r.streaming for r in records]
    [rec] = records
    assert rec.command == "WriteToMicroBatchDataSourceV1" and rec.func_name == "writeStream"
    assert rec.streaming["state"] == "terminated" and rec.streaming["batches"] == 3  # one record, three batches
    assert rec.streaming["sink"] == "FileStreamSink" and rec.status == "success"
    assert rec.output is not None and rec.output.format == "parquet" and rec.output.mode == "Append"
    assert rec.output.location.endswith("/out") and rec.output.columns == ["w", "id"]
    assert _edges(rec) == {"w": {("src", "v")}, "id": {("src", "id")}}
    assert analyze_record(rec).output.name == out
    assert cap.finish() == []  # nothing left running


def test_once_trigger_to_table_names_the_table(spark: Any, captured: Any, source: Any, tmp_path: Path) -> None:
    _cap, records = captured
    _src, stream = source
    spark.sql("DROP TABLE IF EXISTS stream_target")
    query = (stream.writeStream.option("checkpointLocation", str(tmp_path / "ck")).trigger(once=True)
             .toTable("stream_target"))
    query.awaitTermination()
    drain(spark)
    [rec] = records
    assert rec.output is not None and rec.output.table == "spark_catalog.default.stream_target"
    assert _edges(rec)["w"] == {("src", "v")}
    spark.sql("DROP TABLE IF EXISTS stream_target")


def test_v2_sink_memory(spark: Any, captured: Any, source: Any, tmp_path: Path) -> None:
    _cap, records = captured
    _src, stream = source
    query = (stream.writeStream.format("memory").queryName("apl_mem").option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    drain(spark)
    [rec] = records
    assert rec.command == "WriteToMicroBatchDataSource" and rec.streaming["name"] == "apl_mem"
    assert rec.output is not None and rec.output.columns == ["w", "id"]
    assert _edges(rec)["w"] == {("src", "v")}


def test_foreach_batch_is_one_record_per_query_with_lineage_from_the_source(spark: Any, tmp_path: Path) -> None:
    """availableNow over two Parquet files, one per micro-batch: the function's two batch writes become one
    record whose columns come from the source's columns (not from the micro-batch's LogicalRDD)."""
    from pyspark.sql import functions as F

    src = tmp_path / "src"
    for part in range(2):
        spark.range(part * 3, part * 3 + 3).withColumn("v", F.col("id") * 2).coalesce(1).write.mode("append") \
            .parquet(str(src))
    assert len(list(src.glob("*.parquet"))) == 2
    stream = (spark.readStream.schema("id long, v long").option("maxFilesPerTrigger", 1).parquet(str(src))
              .select((F.col("v") + 1).alias("w"), "id"))
    target = str(tmp_path / "fb")

    def write(df: Any, batch_id: int) -> None:  # reorders, derives and adds a literal: the plan above the batch
        df.select("id", (F.col("w") * 10).alias("w10"), F.lit(batch_id).alias("batch")).write.mode("append") \
            .parquet(target)

    drain(spark)
    with CaptureSession(spark) as session:
        cap = install(spark, session._on_record, session.listener)
        cap.other_sessions = False
        try:
            query = (stream.writeStream.foreachBatch(write).option("checkpointLocation", str(tmp_path / "ck"))
                     .trigger(availableNow=True).start())
            query.awaitTermination()
        finally:
            drain(spark)
            cap.unregister()
    assert len(session.records) == 3  # as captured: two batch writes and the query's own record
    [rec] = collapse_nested(session.events)
    assert rec.command == "InsertIntoHadoopFsRelationCommand" and rec.output is not None
    assert rec.output.location == f"file:{target}" and rec.status == "success"
    assert rec.streaming["sink"] == "ForeachBatchSink" and rec.streaming["state"] == "terminated"
    assert rec.streaming["batches"] == 2 and rec.streaming["batch_writes"] == 2
    assert [r.node_class for r in rec.relations] == ["LogicalRelation"]  # no LogicalRDD left
    assert _edges(rec) == {"id": {("src", "id")}, "w10": {("src", "v")}, "batch": set()}
    assert collapse_nested([rec]) == [rec]  # idempotent


def test_query_left_running_is_reported_as_running(spark: Any, captured: Any, source: Any, tmp_path: Path) -> None:
    cap, records = captured
    _src, stream = source
    query = (stream.writeStream.format("parquet").option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="1 second").start(str(tmp_path / "out")))
    try:
        query.processAllAvailable()
        drain(spark)
        left = cap.finish([spark._jsparkSession])
        assert [r.streaming["state"] for r in left] == ["running"]
        assert records == left and _edges(left[0])["w"] == {("src", "v")}
    finally:
        query.stop()
    drain(spark)
    assert len(records) == 1  # the later termination hands nothing over twice


def test_writes_of_a_session_without_our_listener(spark: Any, tmp_path: Path) -> None:
    """A session the launcher never saw (a Connect session, a JVM-made one) is captured on the context;
    a session with the listener is not captured twice."""
    drain(spark)
    records: list[CaptureRecord] = []
    cap = install(spark, records.append)
    try:
        other = spark._jsparkSession.newSession()  # JVM-only: no Python SparkSession, no listener
        out = tmp_path / "other"
        other.sql(f"INSERT OVERWRITE DIRECTORY '{out}' USING parquet SELECT id, id * 3 AS x FROM range(2)")
        with CaptureSession(spark) as session:
            spark.range(2).write.mode("overwrite").parquet(str(tmp_path / "mine"))
        drain(spark)
        assert [r.output.location for r in collapse_nested(records) if r.output] == [f"file:{out}"]
        assert len(session.records) == 1
    finally:
        cap.unregister()
