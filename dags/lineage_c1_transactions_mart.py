"""Example DAG: scenario C1 with column-level lineage (copy this folder into your DAGs folder).

``make_transactions`` writes a deterministic 15-column transactions table; ``build_mart`` runs the
PySpark application ``apps/c1_transactions_mart.py`` with :class:`SparkLineageSubmitOperator`: filter
by period, projection, computed fields, write the mart. The operator captures the write's optimized
plan, logs the mart's column lineage, pushes the written dataset to XCom (``lineage_outputs``) and
publishes OpenLineage events: through Airflow's OpenLineage provider when it is configured, else to
``$AIRFLOW_HOME/lineage/events.jsonl``.

Needs a Spark connection ``spark_default`` (e.g. ``AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark",
"host": "local[2]"}'``) and ``spark-submit`` on PATH. Data goes under the ``data_dir`` param (default:
``$LINEAGE_DEMO_DATA_DIR`` or ``$AIRFLOW_HOME/lineage_demo``).
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pendulum
from airflow.sdk import DAG, task

from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator

APPS = Path(__file__).resolve().parent / "apps"
DEFAULT_DATA_DIR = os.environ.get("LINEAGE_DEMO_DATA_DIR") or str(
    Path(os.environ.get("AIRFLOW_HOME", os.path.expanduser("~/airflow"))) / "lineage_demo"
)

with DAG(
    dag_id="lineage_c1_transactions_mart",
    description="C1: transactions -> filter by period -> projection + computed fields -> mart, with column lineage",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    params={"data_dir": DEFAULT_DATA_DIR, "period_start": "2024-04-01", "period_end": "2024-06-30", "rows": 5000},
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

    build_mart = SparkLineageSubmitOperator(
        task_id="build_mart",
        application=str(APPS / "c1_transactions_mart.py"),
        application_args=[
            "{{ params.data_dir }}/transactions",
            "{{ params.data_dir }}/mart/transactions_c1",
            "{{ params.period_start }}",
            "{{ params.period_end }}",
        ],
        conn_id="spark_default",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},
        name="c1_transactions_mart",
    )

    transactions >> build_mart
