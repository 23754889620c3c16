"""DAG ``pyspark_lineage_pair`` for tests/operators/test_pyspark_connect.py: one PySparkLineageOperator task.

Two runs of it (``side`` "a" and "b", two processes) share one lineage Connect server at the same time: each
writes ``<data_dir>/<side>_1``, says so in ``<data_dir>/barrier/<side>``, waits for the other side's file
(bounded), then writes ``<data_dir>/<side>_2`` from its first table: the two sessions' writes interleave on
the server, and each task must get exactly its own.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pendulum
from airflow.sdk import DAG

from airflow_provider_lineage.operators.pyspark import PySparkLineageOperator


def both_sides(side: str, data_dir: str, spark: Any = None) -> str:
    from pyspark.sql import functions as F

    base = Path(data_dir)
    spark.range(20).select(F.col("id").alias(f"{side}_key"), (F.col("id") * 3).alias(f"{side}_value")) \
        .write.mode("overwrite").parquet(str(base / f"{side}_1"))
    (base / "barrier").mkdir(parents=True, exist_ok=True)
    (base / "barrier" / side).touch()
    other = "b" if side == "a" else "a"
    deadline = time.monotonic() + 300
    while not (base / "barrier" / other).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    spark.read.parquet(str(base / f"{side}_1")).where(F.col(f"{side}_key") > 2).select(
        (F.col(f"{side}_value") + 1).alias(f"{side}_total")
    ).write.mode("overwrite").parquet(str(base / f"{side}_2"))
    return side


with DAG(dag_id="pyspark_lineage_pair", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
         catchup=False, params={"side": "a", "data_dir": "/tmp"}, tags=["test"]):
    PySparkLineageOperator(
        task_id="write_side",
        python_callable=both_sides,
        op_kwargs={"side": "{{ params.side }}", "data_dir": "{{ params.data_dir }}"},
        conn_id="spark_connect_default",
        config_kwargs={"spark.sql.shuffle.partitions": "2"},
        lineage_emission="self",
    )
