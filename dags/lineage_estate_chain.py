"""Example DAGs ``lineage_estate_scores`` and ``lineage_estate_flags``: lineage across DAGs (the estate page).

``lineage_etl`` writes ``marts/customer_monthly``; ``lineage_estate_scores`` reads it and writes
``reports/customer_scores``; ``lineage_estate_flags`` reads that and writes ``reports/customer_flags``.
Three DAGs chained through tables: the "Column lineage" page in Airflow's navigation follows a column
of ``customer_monthly`` through both, as of now or any earlier instant. Same ``data_dir`` param as
``lineage_etl`` (run that first).
"""
from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import DAG

from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator

APPS = Path(__file__).resolve().parent / "apps"
DEFAULT_DATA_DIR = os.environ.get("LINEAGE_DEMO_DATA_DIR") or str(
    Path(os.environ.get("AIRFLOW_HOME", os.path.expanduser("~/airflow"))) / "lineage_demo"
)
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC"}
STEPS = {
    "lineage_estate_scores": ("marts/customer_monthly", "reports/customer_scores", "scores"),
    "lineage_estate_flags": ("reports/customer_scores", "reports/customer_flags", "flags"),
}

for dag_id, (source, target, step) in STEPS.items():
    with DAG(
        dag_id=dag_id,
        description=f"estate example: {source} -> {target}",
        schedule=None,
        start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
        catchup=False,
        params={"data_dir": DEFAULT_DATA_DIR},
        tags=["lineage", "example"],
    ):
        SparkLineageSubmitOperator(
            task_id=step,
            application=str(APPS / "estate_step.py"),
            application_args=[f"{{{{ params.data_dir }}}}/{source}", f"{{{{ params.data_dir }}}}/{target}", step],
            conn_id="spark_default",
            conf=SPARK_CONF,
            name=f"estate_{step}",
        )
