"""Real Spark (local, in the worker) for tests/operators/test_guard_policy.py's slow tier: ``customers`` is written
first; each other task copies the customers' email out through a pattern the capture once missed (issue 46: a
checkpoint, values that went through the driver, RDD and JSON round trips, a Python data source, a session variable
set from a query, a UDF that keeps the value through a bound-method alias, ``mask()`` with NULL replacements), with
``require_masked=["pii"]``. Add a pattern: a function in :data:`SPARK_PATTERNS` (and its expectation in the test)."""
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


def _customers(spark: Any, data: str) -> Any:
    return spark.read.parquet(f"{data}/customers")


def _driver_lookup(spark: Any, data: str) -> None:
    """The usual enrichment: a dict filled from collect(), looked up in a UDF."""
    from pyspark.sql import functions as F

    emails = {r.id: r.email for r in _customers(spark, data).collect()}
    lookup = F.udf(lambda i: emails.get(i), "string")
    spark.createDataFrame([(1,), (2,)], "id INT").select("id", lookup("id").alias("contact")) \
        .write.mode("overwrite").parquet(f"{data}/out_driver_lookup")


def _create_from_collect(spark: Any, data: str) -> None:
    rows = _customers(spark, data).collect()
    spark.createDataFrame(rows).selectExpr("id", "email AS contact").write.mode("overwrite") \
        .parquet(f"{data}/out_create_from_collect")


def _lit_first(spark: Any, data: str) -> None:
    from pyspark.sql import functions as F

    first = _customers(spark, data).first()["email"]
    spark.range(1).select(F.lit(first).alias("contact")).write.mode("overwrite").parquet(f"{data}/out_lit_first")


def _rdd_round_trip(spark: Any, data: str) -> None:
    _customers(spark, data).rdd.map(lambda r: (r.id, r.email)).toDF(["id", "contact"]) \
        .write.mode("overwrite").parquet(f"{data}/out_rdd_round_trip")


def _json_round_trip(spark: Any, data: str) -> None:
    spark.read.json(_customers(spark, data).selectExpr("id", "email AS contact").toJSON()) \
        .write.mode("overwrite").parquet(f"{data}/out_json_round_trip")


def _python_data_source(spark: Any, data: str) -> None:
    """A Python data source (``pyspark.sql.datasource``) whose reader opens the tagged table's files itself."""
    from pyspark.sql.datasource import DataSource, DataSourceReader

    class Reader(DataSourceReader):
        def __init__(self, options: Any) -> None:
            self.path = options.get("path")

        def read(self, partition: Any) -> Any:
            import pyarrow.parquet as pq

            table = pq.read_table(self.path, columns=["id", "email"])
            yield from zip(table.column("id").to_pylist(), table.column("email").to_pylist())

    class Source(DataSource):
        @classmethod
        def name(cls) -> str:
            return "guard_customer_files"

        def schema(self) -> str:
            return "id INT, email STRING"

        def reader(self, schema: Any) -> Any:
            return Reader(self.options)

    spark.dataSource.register(Source)
    spark.read.format("guard_customer_files").load(f"{data}/customers").selectExpr("id", "email AS contact") \
        .write.mode("overwrite").parquet(f"{data}/out_python_data_source")


def _session_variable(spark: Any, data: str) -> None:
    """A SQL session variable set from a query over the table, then written (the value went through the session)."""
    _customers(spark, data).createOrReplaceTempView("guard_customers")
    spark.sql("DECLARE OR REPLACE VARIABLE guard_contact STRING")
    spark.sql("SET VAR guard_contact = (SELECT max(email) FROM guard_customers)")
    spark.sql("SELECT 1 AS id, guard_contact AS contact").write.mode("overwrite") \
        .parquet(f"{data}/out_session_variable")


def _udf_bound_method_alias(spark: Any, data: str) -> None:
    """A Python UDF that keeps the email through a local alias of a bound method (``add = parts.append``)."""
    from pyspark.sql import functions as F

    def joined(i: int, email: str) -> str:
        parts = [str(i)]
        add = parts.append
        add(email)
        return ",".join(parts)

    _customers(spark, data).select("id", F.udf(joined, "string")("id", "email").alias("contact")) \
        .write.mode("overwrite").parquet(f"{data}/out_udf_bound_method_alias")


def _mask_nulls(spark: Any, data: str) -> None:
    """``mask()`` whose replacements are all NULL returns its input unchanged: no masking."""
    _customers(spark, data).selectExpr("id", "mask(email, NULL, NULL, NULL, NULL) AS contact") \
        .write.mode("overwrite").parquet(f"{data}/out_mask_nulls")


SPARK_PATTERNS: dict[str, Callable[[Any, str], None]] = {
    "checkpoint": lambda spark, data: _checkpoint(spark, data, local=False),
    "local_checkpoint": lambda spark, data: _checkpoint(spark, data, local=True),
    "driver_lookup": _driver_lookup,
    "create_from_collect": _create_from_collect,
    "lit_first": _lit_first,
    "rdd_round_trip": _rdd_round_trip,
    "json_round_trip": _json_round_trip,
    "python_data_source": _python_data_source,
    "session_variable": _session_variable,
    "udf_bound_method_alias": _udf_bound_method_alias,
    "mask_nulls": _mask_nulls,
    "control": _control,
}


@dag(dag_id=DAG_ID, schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC"), catchup=False,
     params={"data_dir": "/tmp/guard_policy_spark"})
def guard_policy_spark() -> None:
    @task.pyspark_lineage(conn_id="spark_default", lineage_emission="off")
    def customers(data_dir: str, spark: Any = None) -> None:
        # the emails are built, not written out: a value that is a constant of the application's code is not driver
        # data (docs/engine.md), and the lit_first pattern must write a value only the table holds
        emails = [f"{user}@example.com" for user in ("a", "b")]
        spark.createDataFrame(list(zip([1, 2], emails)), "id INT, email STRING") \
            .write.mode("overwrite").parquet(f"{data_dir}/customers")

    first = customers("{{ params.data_dir }}")
    for name, fn in SPARK_PATTERNS.items():
        @task.pyspark_lineage(task_id=name, conn_id="spark_default", lineage_emission="off",
                              require_masked=["pii"])
        def write(data_dir: str, spark: Any = None, _fn: Callable[[Any, str], None] = fn) -> None:
            _fn(spark, data_dir)

        first >> write("{{ params.data_dir }}")


guard_policy_spark()
