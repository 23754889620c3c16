"""Example DAG ``sieve_maintenance``: keep Sieve indexes healthy whoever writes the tables.

``wait`` (:class:`SieveMaintenanceSensor`) checks the indexes of ``lineage_etl``'s tables from the
file listing and the index manifests only (no Spark) until one needs work: files added, removed or
rewritten since the index version (backfills, other jobs, manual fixes behind Airflow's back),
merge-on-read deltas piling up, a spent error budget, or a missing / corrupt index. It hands what each
index needs to ``maintain`` (:class:`SieveIndexOperator`, ``mode="auto"``), which decides again per
index when it runs (sync / compact / rebuild / build, or nothing if someone else already did it) and
logs why. When nothing needs work within ``timeout``, the sensor is skipped (``soft_fail``) and so is
``maintain``.

Safe to leave running: by default it writes nothing into the tables, only the indexes. The
``external_write`` param (default off) is a demo: it first plays "someone else" and adds a late file
to ``warehouse/transactions`` behind the pipeline's back, so a manual run has something to notice
(``./dev.sh airflow dags test sieve_maintenance -c '{"external_write": true}'``). Never switch it on
for scheduled runs: every run would add a row to the table and to the marts built from it.

Waiting costs no worker slot: the sensor is deferrable (its first check runs in the worker, then the
waiting moves to the triggerer, :class:`~airflow_provider_lineage.triggers.sieve.SieveMaintenanceTrigger`,
which lists files in a thread and never blocks the triggerer's event loop).

Scheduling -- why these Airflow 3 mechanisms:

* **Asset: one run per pipeline run, after its own sync.** The DAG is scheduled on ``INDEXES_SYNCED``,
  the one asset event ``lineage_etl.index`` publishes when it has synced the indexes -- not on the
  tables' own asset events, which every Spark task publishes (two or more per pipeline run, and
  before ``index`` ran: each would start a run whose first check finds the pipeline's own files
  not yet indexed and syncs them again, racing ``lineage_etl.index``). So a pipeline run starts one
  maintenance run, whose first check finds the indexes current and then watches for writes the
  pipeline did not index (other jobs, manual fixes).
* **Hourly as well** (``AssetOrTimeSchedule``): files written outside Airflow publish no asset
  event; an hourly run checks for them even when no pipeline runs.
* **Events never wait behind a long sensor.** The sensor watches for at most ``WATCH`` (25 min) and
  ``max_active_runs=2``: an asset-triggered run starts at once even while the hourly run's sensor
  waits. Should two runs already be watching, a new event's run waits at most until one of them ends
  (Airflow creates one run for all the events queued meanwhile) -- and the two watchers check the
  same indexes every 30 s, so the write behind that event is maintained by them in the meantime.
* **The pipeline indexes its own writes.** A sensor that is watching while ``lineage_etl`` runs sees
  the pipeline's fresh files before ``lineage_etl.index`` has synced them; ``pipeline_idle`` (a
  reschedule-mode sensor: no slot held between checks) holds ``maintain`` back while a
  ``lineage_etl`` run is queued or running, and ``maintain`` then decides again -- usually nothing
  is left to do.
* **A failed attempt is tried again** (``retries=1`` on ``maintain``): the retry decides again what
  each index needs, so it neither repeats finished work nor leaves half of it (commits are atomic).
* **A failed watch is tried again** (``retries=1`` on ``wait``): Airflow 3.3 can fail a deferrable
  task that has just resumed, when the trigger fires within seconds of deferring -- the executor's
  late "success" for the attempt that deferred reaches the scheduler after the resumed attempt is
  already running, and the scheduler takes it for a task killed externally ("state mismatch" in the
  audit log; apache/airflow#72716, open). The retry checks the indexes again at once and hands the
  work on; a sensor that times out is skipped (``soft_fail``), never retried.
* **Never two maintainers at once** (``max_active_tis_per_dag=1`` on ``maintain``): when both
  watchers fire on one write, the second ``maintain`` waits for the first and then finds nothing to
  do (``auto`` decides when it runs). A maintainer outside this DAG (``lineage_etl.index``) is safe
  too: index commits are atomic; a concurrent loser fails with ``CommitConflict`` and leaves the
  winner's version intact.

``read_first_day`` is an ordinary reader (``spark.read.parquet(...).where("txn_date = DATE'2024-01-01'")``) run
with ``sieve_pruning=True``: Sieve's planner rule is enabled in its driver, so the scan reads only the files the
``txn_date`` index (kept in ``indexes/``, named by ``spark.airflow_lineage.sieveIndexPaths``) cannot exclude; the
read itself is unchanged.

Run it after ``lineage_etl``::

    ./dev.sh airflow dags test sieve_maintenance
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pendulum
from airflow.sdk import DAG, Asset, PokeReturnValue, task
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

#: Where the reader finds the indexes kept outside the tables' own ``_sieve/`` folders (Spark conf
#: ``spark.airflow_lineage.sieveIndexPaths``: table root -> column -> index folder).
INDEX_PATHS_CONF = "spark.airflow_lineage.sieveIndexPaths"
INDEX_PATHS = json.dumps({f"{D}/warehouse/transactions": {"customer_id": f"{D}/indexes/transactions/customer_id",
                                                          "txn_date": f"{D}/indexes/transactions/txn_date"}})

#: The asset ``lineage_etl.index`` publishes after each sync (same URI as ``lineage_etl.INDEXES_SYNCED``).
INDEXES_SYNCED = Asset(f"{DEFAULT_DATA_DIR}/indexes" if "://" in DEFAULT_DATA_DIR
                       else f"file://{DEFAULT_DATA_DIR}/indexes")
#: How long one run's sensor watches for work (less than the hourly interval: see "Scheduling").
WATCH = pendulum.duration(minutes=25)
#: The pipeline that maintains these indexes itself (its ``index`` task).
PIPELINE = "lineage_etl"

with DAG(
    dag_id="sieve_maintenance",
    description="Sensor -> SieveIndexOperator(mode='auto'): sync/compact/rebuild indexes whoever wrote the tables",
    schedule=AssetOrTimeSchedule(timetable=CronTriggerTimetable("0 * * * *", timezone="UTC"), assets=INDEXES_SYNCED),
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=2,
    params={"data_dir": DEFAULT_DATA_DIR, "external_write": False},
    tags=["sieve", "example"],
) as dag:

    @task
    def external_write(data_dir: str, enabled: str) -> str | None:
        """Demo only (param ``external_write``, default off): a late file written into the transactions
        table by 'someone else' (pyarrow). Off, it writes nothing."""
        if str(enabled).strip().lower() not in ("true", "1", "yes"):
            return None
        import datetime as dt

        import pyarrow as pa
        import pyarrow.fs as pafs
        import pyarrow.parquet as pq

        from airflow_provider_lineage.sieve.fs import resolve

        table = f"{str(data_dir).rstrip('/')}/warehouse/transactions"  # a folder or an object-store URI
        fs, folder = resolve(table)
        if fs.type_name == "local":
            fs.create_dir(folder, recursive=True)
        found = fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
        n = sum(1 for f in found if f.base_name.startswith("manual-fix-") and f.base_name.endswith(".parquet"))
        name = f"manual-fix-{n:04d}.parquet"
        pq.write_table(pa.table({
            "txn_id": pa.array([9_000_000 + n], pa.int64()), "customer_id": pa.array([1], pa.int64()),
            "txn_date": pa.array([dt.date(2023, 12, 31)], pa.date32()), "amount": pa.array([12.5]),
            "currency": pa.array(["EUR"]), "status": pa.array(["BOOKED"]),
        }), f"{folder}/{name}", filesystem=fs)
        return f"{folder}/{name}" if fs.type_name == "local" else f"{table}/{name}"

    wait = SieveMaintenanceSensor(
        task_id="wait",
        indexes=INDEXES,
        deferrable=True,
        poke_interval=pendulum.duration(seconds=30),
        timeout=WATCH,
        soft_fail=True,
        retries=1,  # apache/airflow#72716: a stale executor event can fail a just-resumed deferred attempt
        retry_delay=pendulum.duration(seconds=10),
    )

    @task.sensor(poke_interval=15, timeout=pendulum.duration(hours=1), mode="reschedule")
    def pipeline_idle(ti: Any = None) -> PokeReturnValue:
        """Wait (no slot held between checks) while a lineage_etl run is queued or running: its own
        ``index`` task indexes what it writes, so ``maintain`` neither repeats nor races that work."""
        busy = ti.get_dr_count(dag_id=PIPELINE, states=["queued", "running"])
        return PokeReturnValue(is_done=busy == 0)

    maintain = SieveIndexOperator(
        task_id="maintain",
        indexes=wait.output,
        mode="auto",
        conn_id="spark_default",
        conf=SPARK_CONF,
        max_active_tis_per_dag=1,
        retries=1,  # a failed Spark submission (a lost executor, a full disk) is tried again; auto decides anew
        retry_delay=pendulum.duration(seconds=30),
    )

    @task.pyspark_lineage(
        conn_id="spark_default",
        sieve_pruning=True,  # enable once: the unchanged read below is pruned by the indexes maintain keeps
        config_kwargs={**SPARK_CONF, INDEX_PATHS_CONF: INDEX_PATHS},
        trigger_rule="none_failed",  # also when there was nothing to maintain (wait/maintain skipped)
    )
    def read_first_day(data_dir: str, spark: Any = None) -> dict[str, int]:
        """An ordinary reader, written as any team writes one: ``spark.read.parquet`` and a filter. With
        ``sieve_pruning=True`` its scan reads only the files the ``txn_date`` index cannot exclude."""
        table = f"{str(data_dir).rstrip('/')}/warehouse/transactions"
        df = spark.read.parquet(table).where("txn_date = DATE'2024-01-01'")
        files, total = len(df.inputFiles()), len(spark.read.parquet(table).inputFiles())
        rows = df.count()
        print(f"2024-01-01: {rows} transactions, read from {files} of {total} files")
        return {"rows": rows, "files_read": files, "files": total}

    external_write(D, "{{ params.external_write }}") >> wait >> pipeline_idle() >> maintain >> read_first_day(D)
