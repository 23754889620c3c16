"""Example DAGs ``lineage_guard`` and ``lineage_guard_report``: lineage as a guard (docs/guard.md).

``lineage_guard`` writes ``marts/orders_mart`` (:mod:`apps.guard_app`, step ``mart``). Its ``version``
param picks the application's shape (1, or the "refactored" 2); every run compares its column
lineage with the previous successful run of the task (XCom ``lineage_diff``) and reacts as its
``on_change`` param says (``ignore`` / ``warn`` / ``fail``: fail stops ``publish`` from running on
a changed shape). ``require_masked=["pii"]`` with ``on_policy_violation="warn"``: version 2 lets the
customers' email reach the mart unmasked, which the task reports (XCom ``lineage_policy``).

``lineage_guard_report`` (another DAG) reads the mart (``report``: the customer id as it is, the
email hashed; inherits the mart's column tags through the mart's asset event) and writes
``marts/contacts`` from the customers (``contacts``: the email lower-cased, so ``pii`` flows
unmasked and the task fails under ``require_masked=["pii"]``, while ``report`` passes).

Tags are declared in the Airflow Variable ``lineage_column_tags``, e.g.::

    {"datasets": [{"namespace": "file", "name": "<data_dir>/warehouse/customers",
                   "columns": {"email": ["pii"], "id": ["customer-key"]}}]}
"""
from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import DAG, task

from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator

APP = str(Path(__file__).resolve().parent / "apps" / "guard_app.py")
DEFAULT_DATA_DIR = os.environ.get("LINEAGE_GUARD_DATA_DIR") or str(
    Path(os.environ.get("AIRFLOW_HOME", os.path.expanduser("~/airflow"))) / "lineage_guard"
)
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC"}

with DAG(
    dag_id="lineage_guard",
    description="Lineage as a guard: diff with the previous run, pii that must stay masked",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    params={"data_dir": DEFAULT_DATA_DIR, "version": 1, "on_change": "warn"},
    tags=["lineage", "guard", "example"],
) as guard_dag:
    mart = SparkLineageSubmitOperator(
        task_id="mart",
        application=APP,
        application_args=["{{ params.data_dir }}", "mart", "{{ params.version }}"],
        conn_id="spark_default",
        conf=SPARK_CONF,
        name="guard_mart",
        on_lineage_change="{{ params.on_change }}",
        require_masked=["pii"],
        on_policy_violation="warn",
    )

    @task
    def publish() -> str:
        """Stands for whatever consumes the mart: it must not run on a changed shape."""
        return "published"

    mart >> publish()

with DAG(
    dag_id="lineage_guard_report",
    description="Lineage as a guard: tags inherited from another DAG; require_masked fails only the unmasked task",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    params={"data_dir": DEFAULT_DATA_DIR},
    tags=["lineage", "guard", "example"],
) as report_dag:
    for step in ("report", "contacts"):
        SparkLineageSubmitOperator(
            task_id=step,
            application=APP,
            application_args=["{{ params.data_dir }}", step],
            conn_id="spark_default",
            conf=SPARK_CONF,
            name=f"guard_{step}",
            require_masked=["pii"],
        )
