"""Example DAG ``sieve_maintenance``: keep Sieve indexes healthy whoever writes the tables.

``wait`` (:class:`SieveMaintenanceSensor`) checks the indexes of ``lineage_etl``'s tables from the
file listing and the index manifests only (no Spark) until one needs work: files added, removed or
rewritten since the index version (backfills, other jobs, manual fixes), merge-on-read deltas piling
up, a spent error budget, or a missing / corrupt index. It hands what each index needs to ``maintain``
(:class:`SieveIndexOperator`, ``mode="auto"``), which decides per index (sync / compact / rebuild /
build) and logs why. When nothing needs work within ``timeout``, the sensor is skipped (``soft_fail``)
and so is ``maintain``.

``external_write`` (param, default on for the demo) first plays "someone else": it adds a late file
to ``warehouse/transactions`` behind the pipeline's back, so a test run has something to notice.
Switch it off (``-c '{"external_write": false}'``) to only watch.

Scheduling: hourly (a file written by a job outside Airflow only shows in the listing) **or** as soon
as an Airflow task publishes an asset event for one of the indexed tables: every
``SparkLineageSubmitOperator`` does, for each table it writes (asset URI = OpenLineage dataset,
``file:///<path>``), so a write by any lineage-captured job starts maintenance without polling.

Run it after ``lineage_etl``::

    ./dev.sh airflow dags test sieve_maintenance
"""
from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import DAG, Asset, task
from airflow.timetables.assets import AssetOrTimeSchedule
from airflow.timetables.trigger import CronTriggerTimetable

from airflow_provider_lineage.operators.sieve import SieveIndexOperator
from airflow_provider_lineage.sensors.sieve import SieveMaintenanceSensor

DEFAULT_DATA_DIR = os.environ.get("LINEAGE_DEMO_DATA_DIR") or str(
    Path(os.environ.get("AIRFLOW_HOME", os.path.expanduser("~/airflow"))) / "lineage_demo"
)
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC"}
D = "{{ params.data_dir }}"
#: The indexed tables (same index folders as lineage_etl: <data_dir>/indexes/<table>/<column>).
INDEXES = [
    {"table": f"{D}/warehouse/transactions", "column": "txn_date", "index_path": f"{D}/indexes/transactions/txn_date"},
    {"table": f"{D}/warehouse/transactions", "column": "customer_id",
     "index_path": f"{D}/indexes/transactions/customer_id"},
    {"table": f"{D}/marts/transactions_enriched", "column": "txn_date",
     "index_path": f"{D}/indexes/transactions_enriched/txn_date"},
    {"table": f"{D}/marts/customer_monthly", "column": "customer_id",
     "index_path": f"{D}/indexes/customer_monthly/customer_id"},
]

#: The indexed tables as assets (the URIs SparkLineageSubmitOperator publishes for the tables it writes).
TABLE_ASSETS = [Asset(f"file://{DEFAULT_DATA_DIR}/{rel}") for rel in
                ("warehouse/transactions", "marts/transactions_enriched", "marts/customer_monthly")]

with DAG(
    dag_id="sieve_maintenance",
    description="Sensor -> SieveIndexOperator(mode='auto'): sync/compact/rebuild indexes whoever wrote the tables",
    schedule=AssetOrTimeSchedule(
        timetable=CronTriggerTimetable("0 * * * *", timezone="UTC"),
        assets=TABLE_ASSETS[0] | TABLE_ASSETS[1] | TABLE_ASSETS[2],
    ),
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    params={"data_dir": DEFAULT_DATA_DIR, "external_write": True},
    tags=["sieve", "example"],
) as dag:

    @task
    def external_write(data_dir: str, enabled: str) -> str | None:
        """Demo only: a late file written into the transactions table by 'someone else' (pyarrow)."""
        if str(enabled).strip().lower() not in ("true", "1", "yes"):
            return None
        import datetime as dt

        import pyarrow as pa
        import pyarrow.parquet as pq

        folder = Path(data_dir) / "warehouse" / "transactions"
        folder.mkdir(parents=True, exist_ok=True)
        n = len(list(folder.glob("manual-fix-*.parquet")))
        path = folder / f"manual-fix-{n:04d}.parquet"
        pq.write_table(pa.table({
            "txn_id": pa.array([9_000_000 + n], pa.int64()), "customer_id": pa.array([1], pa.int64()),
            "txn_date": pa.array([dt.date(2023, 12, 31)], pa.date32()), "amount": pa.array([12.5]),
            "currency": pa.array(["EUR"]), "status": pa.array(["BOOKED"]),
        }), path)
        return str(path)

    wait = SieveMaintenanceSensor(
        task_id="wait",
        indexes=INDEXES,
        mode="reschedule",
        poke_interval=pendulum.duration(seconds=30),
        timeout=pendulum.duration(minutes=50),
        soft_fail=True,
    )

    maintain = SieveIndexOperator(
        task_id="maintain",
        indexes=wait.output,
        mode="auto",
        conn_id="spark_default",
        conf=SPARK_CONF,
    )

    external_write(D, "{{ params.external_write }}") >> wait >> maintain
