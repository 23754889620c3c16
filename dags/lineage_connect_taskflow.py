"""Example TaskFlow DAG: ``@task.pyspark_lineage`` on a Spark Connect server, with column lineage.

``make_transactions`` writes a deterministic 15-column transactions table; ``customer_totals`` is a TaskFlow
function that gets a remote ``spark`` session from the connection ``spark_connect_default`` and writes a
per-customer mart with the DataFrame API; ``channel_summary`` sums it per channel in SQL (``INSERT OVERWRITE
DIRECTORY``). The session runs on a lineage Connect server
(``python -m airflow_provider_lineage.connect_server``, which ``./dev.sh up`` starts): the server captures each
write, each task reads the record back from the connection's extra ``capture_dir`` and ends like
``SparkLineageSubmitOperator``: column lineage in the log, XCom ``lineage_outputs`` / ``column_lineage``,
OpenLineage events with the task as parent, the Column lineage tab, asset events.

Needs a connection ``spark_connect_default``, e.g. ``AIRFLOW_CONN_SPARK_CONNECT_DEFAULT='{"conn_type":
"spark_connect", "host": "sc://127.0.0.1", "port": 15002, "extra": {"capture_dir": "/srv/lineage-capture"}}'``.
The same function runs on a local session with ``conn_id="spark_default"`` (a ``spark`` connection). Data goes
under the ``data_dir`` param (default ``$LINEAGE_DEMO_DATA_DIR`` or ``$AIRFLOW_HOME/lineage_demo``), which the
Connect server must reach too (here: the same machine).
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pendulum
from airflow.sdk import dag, task

APPS = Path(__file__).resolve().parent / "apps"
DEFAULT_DATA_DIR = os.environ.get("LINEAGE_DEMO_DATA_DIR") or str(
    Path(os.environ.get("AIRFLOW_HOME", os.path.expanduser("~/airflow"))) / "lineage_demo"
)


@dag(
    dag_id="lineage_connect_taskflow",
    description="TaskFlow on Spark Connect: transactions -> per-customer totals, with column lineage",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    params={"data_dir": DEFAULT_DATA_DIR, "rows": 2000, "spark_conn_id": "spark_connect_default"},
    tags=["lineage", "example", "spark-connect"],
)
def lineage_connect_taskflow() -> None:
    @task
    def make_transactions(data_dir: str, rows: int) -> str:
        """Write the input table (pyarrow, deterministic seed)."""
        spec = importlib.util.spec_from_file_location("generate_transactions", APPS / "generate_transactions.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return str(module.generate(Path(data_dir) / "transactions_connect", rows=int(rows)))

    @task.pyspark_lineage(conn_id="{{ params.spark_conn_id }}",
                          config_kwargs={"spark.sql.shuffle.partitions": "2"})
    def customer_totals(transactions: str, data_dir: str, spark: Any = None) -> str:
        """Booked, non-refund amounts per customer and channel: a filter, an aggregate and a rounding."""
        from pyspark.sql import functions as F

        out = f"{data_dir}/mart/customer_totals_connect"
        (
            spark.read.parquet(transactions)
            .where((F.col("status") == "BOOKED") & ~F.col("is_refund"))
            .groupBy("customer_id", "channel")
            .agg(F.round(F.sum(F.col("amount") * F.col("fx_rate")), 2).alias("total_eur"),
                 F.count(F.lit(1)).alias("txns"))
            .write.mode("overwrite").parquet(out)
        )
        return out

    @task.pyspark_lineage(conn_id="{{ params.spark_conn_id }}",
                          config_kwargs={"spark.sql.shuffle.partitions": "2"})
    def channel_summary(mart: str, data_dir: str, spark: Any = None) -> str:
        """The same in SQL: a temp view over the mart and ``INSERT OVERWRITE DIRECTORY``."""
        out = f"{data_dir}/mart/channel_summary_connect"
        spark.read.parquet(mart).createOrReplaceTempView("customer_totals")
        spark.sql(
            f"INSERT OVERWRITE DIRECTORY '{out}' USING parquet "
            "SELECT channel, SUM(total_eur) AS total_eur, SUM(txns) AS txns FROM customer_totals GROUP BY channel"
        )
        return out

    mart = customer_totals(make_transactions("{{ params.data_dir }}", "{{ params.rows }}"), "{{ params.data_dir }}")
    channel_summary(mart, "{{ params.data_dir }}")


lineage_connect_taskflow()
