"""Example DAG ``lineage_etl``: scenario C2/C3 with column lineage, and Sieve indexes kept in sync.

Each run lands the next day of raw data (``land``), appends it to the warehouse tables ``transactions``
and ``customers`` (``load``), joins them and aggregates into two marts (``build_marts``) -- both Spark
steps with :class:`SparkLineageSubmitOperator`, which publishes their column lineage and pushes the
written tables to XCom (``lineage_outputs``). ``index`` (:class:`SieveIndexOperator`, ``mode="sync"``)
then brings the Sieve indexes of the tables named in ``INDEX_COLUMNS`` in step with what the two
Spark tasks wrote: the first run builds them, later runs add the appended files (and replace the
rewritten marts' files). When ``index`` succeeds it publishes one asset event on ``INDEXES_SYNCED``
(the ``indexes/`` folder), which starts ``sieve_maintenance`` once per pipeline run, after this
run's own sync (see that DAG's docstring).

The Spark tasks retry once: a driver lost mid-write (OOM kill, node loss) fails its attempt --
whose OpenLineage FAIL event says so -- and the retry writes the day again.

Run it (twice: the second run appends a day)::

    ./dev.sh airflow dags test lineage_etl

Needs a Spark connection ``spark_default`` (``./dev.sh airflow`` sets ``local[2]``) and ``spark-submit``
on PATH. Data goes under the ``data_dir`` param (default ``$LINEAGE_DEMO_DATA_DIR`` or
``$AIRFLOW_HOME/lineage_demo``): ``landing/``, ``warehouse/``, ``marts/`` and ``indexes/<table>/<column>``.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pendulum
from airflow.sdk import DAG, Asset, task

from airflow_provider_lineage.operators.sieve import SieveIndexOperator
from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator

APPS = Path(__file__).resolve().parent / "apps"
DEFAULT_DATA_DIR = os.environ.get("LINEAGE_DEMO_DATA_DIR") or str(
    Path(os.environ.get("AIRFLOW_HOME", os.path.expanduser("~/airflow"))) / "lineage_demo"
)
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC"}
#: Which written tables get which Sieve indexes (keys: the table folder's name).
INDEX_COLUMNS = {
    "transactions": ["txn_date", "customer_id"],
    "transactions_enriched": "txn_date",
    "customer_monthly": "customer_id",
}
#: One folder per index, outside the tables (an overwrite of a mart must not delete its index).
INDEX_PATH = "{{ params.data_dir }}/indexes/{table}/{column}"
#: Published by ``index`` after each sync: what ``sieve_maintenance`` is scheduled on (one event per run).
INDEXES_SYNCED = Asset(f"{DEFAULT_DATA_DIR}/indexes" if "://" in DEFAULT_DATA_DIR
                       else f"file://{DEFAULT_DATA_DIR}/indexes")

with DAG(
    dag_id="lineage_etl",
    description="C2/C3: load transactions + customers, join, aggregate into marts; lineage + Sieve indexes in sync",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    params={"data_dir": DEFAULT_DATA_DIR},
    default_args={"retries": 1, "retry_delay": pendulum.duration(seconds=15)},
    tags=["lineage", "sieve", "example"],
) as dag:

    @task
    def land(data_dir: str) -> str:
        """Land the next day of raw files (pyarrow); return the day."""
        spec = importlib.util.spec_from_file_location("etl_landing", APPS / "etl_landing.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.land(data_dir)

    day = land("{{ params.data_dir }}")

    load = SparkLineageSubmitOperator(
        task_id="load",
        application=str(APPS / "etl_load.py"),
        application_args=["{{ params.data_dir }}", "{{ ti.xcom_pull(task_ids='land') }}"],
        conn_id="spark_default",
        conf=SPARK_CONF,
        name="etl_load",
    )

    build_marts = SparkLineageSubmitOperator(
        task_id="build_marts",
        application=str(APPS / "etl_marts.py"),
        application_args=["{{ params.data_dir }}"],
        conn_id="spark_default",
        conf=SPARK_CONF,
        name="etl_marts",
    )

    index = SieveIndexOperator(
        task_id="index",
        lineage_task_ids=["load", "build_marts"],
        index_columns=INDEX_COLUMNS,
        index_path=INDEX_PATH,
        mode="sync",
        conn_id="spark_default",
        conf=SPARK_CONF,
        outlets=[INDEXES_SYNCED],
    )

    day >> load >> build_marts >> index
