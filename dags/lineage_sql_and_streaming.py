"""Example DAG: column lineage from Spark SQL statements and from a Structured Streaming incremental load.

* ``sql_mart``: :class:`SparkSqlLineageOperator`, the drop-in for ``SparkSqlOperator``: the same ``sql``
  (statements or a ``.sql`` file), ``conf`` and connection; every write the statements make is captured.
* ``stream_increment``: :class:`SparkLineageSubmitOperator` running ``apps/streaming_increment.py``, a
  ``readStream`` -> ``writeStream`` query with ``trigger(availableNow=True)``: one lineage record for the
  query (not one per micro-batch), with the column lineage from the streaming source.

Needs ``spark_default`` (e.g. ``AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[2]"}'``)
and ``spark-submit`` on PATH. Data goes under the ``data_dir`` param.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pendulum
from airflow.sdk import DAG, task

from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator
from airflow_provider_lineage.operators.spark_sql import SparkSqlLineageOperator

APPS = Path(__file__).resolve().parent / "apps"
DEFAULT_DATA_DIR = os.environ.get("LINEAGE_DEMO_DATA_DIR") or str(
    Path(os.environ.get("AIRFLOW_HOME", os.path.expanduser("~/airflow"))) / "lineage_demo"
)
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}

SQL = """
-- the landing folder as a view, then one mart per statement
CREATE OR REPLACE TEMPORARY VIEW transactions USING parquet OPTIONS (path '{{ params.data_dir }}/transactions');
INSERT OVERWRITE DIRECTORY '{{ params.data_dir }}/mart/channel_totals' USING parquet
SELECT channel, count(*) AS txns, round(sum(amount * fx_rate), 2) AS amount_eur
FROM transactions WHERE status = 'BOOKED' GROUP BY channel;
"""

with DAG(
    dag_id="lineage_sql_and_streaming",
    description="Spark SQL statements and a Structured Streaming incremental load, with column lineage",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    params={"data_dir": DEFAULT_DATA_DIR, "rows": 2000},
    tags=["lineage", "example"],
) as dag:

    @task
    def make_transactions(data_dir: str, rows: int) -> str:
        """Write the input table (pyarrow, deterministic seed)."""
        spec = importlib.util.spec_from_file_location("generate_transactions", APPS / "generate_transactions.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return str(module.generate(Path(data_dir) / "transactions", rows=int(rows)))

    transactions = make_transactions("{{ params.data_dir }}", "{{ params.rows }}")

    sql_mart = SparkSqlLineageOperator(
        task_id="sql_mart",
        sql=SQL,
        conn_id="spark_default",  # any connection whose host is the master (SparkSqlOperator's rule)
        # spark-sql keeps tables in a Hive metastore (Derby in the working folder): these statements need none
        conf={**SPARK_CONF, "spark.sql.catalogImplementation": "in-memory"},
        name="sql_mart",
    )

    stream_increment = SparkLineageSubmitOperator(
        task_id="stream_increment",
        application=str(APPS / "streaming_increment.py"),
        application_args=[
            "{{ params.data_dir }}/transactions",
            "{{ params.data_dir }}/mart/stream_increment",
            "{{ params.data_dir }}/checkpoints/stream_increment",
        ],
        conn_id="spark_default",
        conf=SPARK_CONF,
        name="stream_increment",
    )

    transactions >> [sql_mart, stream_increment]
