"""Structured Streaming through a lineage Spark Connect server (``python -m airflow_provider_lineage.connect_server``
on loopback): ``@task.pyspark_lineage`` on ``spark_connect_default`` runs the streaming queries of
``tests/operators/dags/pyspark_streaming.py`` on the server, which captures them (one record per query, the
``foreachBatch`` writes folded into one, the query left running reported at the client's end of run); a client
without tags gets its availableNow file-sink query in ``connect-<user>-<session>/``.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.operators.test_pyspark_streaming import assert_streaming_task, run_streaming_dag, write_source
from tests.support.connect import ConnectServer, connect_server
from tests.support.pipelines import env_for_spark, migrate_db

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    with connect_server(tmp_path_factory.mktemp("connect-streaming")) as srv:
        yield srv


def test_streaming_queries_of_a_connect_task(server: ConnectServer, tmp_path: Path) -> None:
    migrate_db()
    env_for_spark()
    data_dir = tmp_path / "data"
    write_source(data_dir / "src")
    mp = pytest.MonkeyPatch()
    mp.setenv("AIRFLOW_CONN_SPARK_CONNECT_DEFAULT", json.dumps(
        {"conn_type": "spark_connect", "host": "sc://127.0.0.1", "port": server.port,
         "extra": {"capture_dir": str(server.capture_dir)}}))
    try:
        run = run_streaming_dag(data_dir, "spark_connect_default")
    finally:
        mp.undo()
    assert_streaming_task(run, data_dir)


def test_untagged_client_streaming_query(server: ConnectServer, tmp_path: Path) -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from airflow_provider_lineage.operators.pyspark import _CONNECT_ENV, _restore_environ

    write_source(tmp_path / "src")
    saved = {k: os.environ.get(k) for k in _CONNECT_ENV}  # pyspark leaves Connect mode set in os.environ
    spark = SparkSession.builder.remote(f"{server.url}/;user_id=dora").create()
    try:
        session_id = spark.client._session_id
        (spark.readStream.schema("id long, v long").option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "src"))
         .select((F.col("v") + 1).alias("w")).writeStream.format("parquet")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start(str(tmp_path / "out"))
         .awaitTermination())
    finally:
        spark.stop()
        _restore_environ(saved)
    folder = server.capture_dir / f"connect-dora-{session_id}"
    deadline = time.monotonic() + 120
    while not (folder / "_launcher.status.json").exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    records = [e for e in (json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))) if e["kind"] == "record"]
    assert len(records) == 1, server.log_text()[-3000:]
    payload = records[0]["payload"]
    assert payload["command"] == "WriteToMicroBatchDataSourceV1"
    assert payload["output"]["location"].endswith(str(tmp_path / "out"))
    assert payload["streaming"]["state"] == "terminated" and payload["streaming"]["batches"] == 2
    assert payload["environment"]["connect_user"] == "dora"
