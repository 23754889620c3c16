"""Real Spark (local, in the worker) for tests/operators/test_guard_policy.py's slow tier: ``customers`` is written
first; each other task copies the customers' email out through a pattern whose lineage the engine marks
approximate today, with ``require_masked=["pii"]``. Add a pattern: a function in :data:`SPARK_PATTERNS` (and its
expectation in the test)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pendulum
from airflow.sdk import dag, task

DAG_ID = "guard_policy_spark"


def _checkpoint(spark: Any, data: str, local: bool) -> None:
    spark.sparkContext.setCheckpointDir(f"{data}/checkpoints")
    df = spark.read.parquet(f"{data}/customers").selectExpr("id", "email AS contact")
    cut = df.localCheckpoint() if local else df.checkpoint()
    cut.write.mode("overwrite").parquet(f"{data}/out_{'local_' if local else ''}checkpoint")


def _control(spark: Any, data: str) -> None:
    """The same email through a CTE and a join: exact lineage, a plain violation."""
    spark.read.parquet(f"{data}/customers").createOrReplaceTempView("c")
    spark.sql("WITH e AS (SELECT id, email FROM c) SELECT c.id, e.email AS contact FROM c JOIN e ON c.id = e.id") \
        .write.mode("overwrite").parquet(f"{data}/out_control")


SPARK_PATTERNS: dict[str, Callable[[Any, str], None]] = {
    "checkpoint": lambda spark, data: _checkpoint(spark, data, local=False),
    "local_checkpoint": lambda spark, data: _checkpoint(spark, data, local=True),
    "control": _control,
}


@dag(dag_id=DAG_ID, schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC"), catchup=False,
     params={"data_dir": "/tmp/guard_policy_spark"})
def guard_policy_spark() -> None:
    @task.pyspark_lineage(conn_id="spark_default", lineage_emission="off")
    def customers(data_dir: str, spark: Any = None) -> None:
        spark.createDataFrame([(1, "a@example.com"), (2, "b@example.com")], "id INT, email STRING") \
            .write.mode("overwrite").parquet(f"{data_dir}/customers")

    first = customers("{{ params.data_dir }}")
    for name, fn in SPARK_PATTERNS.items():
        @task.pyspark_lineage(task_id=name, conn_id="spark_default", lineage_emission="off",
                              require_masked=["pii"])
        def write(data_dir: str, spark: Any = None, _fn: Callable[[Any, str], None] = fn) -> None:
            _fn(spark, data_dir)

        first >> write("{{ params.data_dir }}")


guard_policy_spark()
