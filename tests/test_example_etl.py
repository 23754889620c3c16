"""The example DAGs ``lineage_etl`` (twice: the second run appends a day) and ``sieve_maintenance`` end to end,
with real local Spark under ``dag.test()``.

After the ETL's second run every index matches its table: not stale, candidates contain every file
that holds the key (checked against the data, key by key), and a pruned ``sieve.read`` returns the same
rows as a full read. The maintenance DAG then notices a file written behind the pipeline's back and
syncs the index it affects.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from airflow_provider_lineage import sieve as S
from tests.support.pipelines import load_dag, migrate_db

# slow tier: the example pipelines (several spark-submits, shared with the modules of EXAMPLE_PIPELINE_MODULES)
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DAGS = ROOT / "dags"
INDEXED = [  # (table under data_dir, column)
    ("warehouse/transactions", "txn_date"),
    ("warehouse/transactions", "customer_id"),
    ("marts/transactions_enriched", "txn_date"),
    ("marts/customer_monthly", "customer_id"),
]


def _index_path(data_dir: Path, table: str, column: str) -> str:
    return str(data_dir / "indexes" / table.rsplit("/", 1)[-1] / column)




def _xcom(dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.query(XComModel).filter_by(dag_id=dag_id, run_id=run_id, task_id=task_id, key=key).one()
        return row.value if not isinstance(row.value, str) else json.loads(row.value)


def _states(dag_run: Any) -> dict[str, str]:
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.query(TaskInstance.task_id, TaskInstance.state).filter(
            TaskInstance.dag_id == dag_run.dag_id, TaskInstance.run_id == dag_run.run_id).all()
    return {t: str(s) for t, s in rows}


@pytest.fixture(scope="module")
def airflow_db() -> Path:
    return migrate_db()


@pytest.fixture(scope="module")
def etl_runs(airflow_db: Path, example_etl: dict[str, Any]) -> dict[str, Any]:
    """Two runs of lineage_etl on one data folder (shared with other tests); sieve_maintenance runs in its tests."""
    return example_etl


def _exact(table: str, column: str, value: Any) -> set[str]:
    out = set()
    for f in S.list_table_files(table):
        if value in set(pq.read_table(f.path, columns=[column]).column(column).to_pylist()):
            out.add(f.path)
    return out


def _asset_uris(condition: Any) -> list[str]:
    """Every asset URI in a schedule's condition (``Asset``, or ``AssetAny``/``AssetAll`` of them)."""
    if hasattr(condition, "uri"):
        return [condition.uri]
    return [uri for part in getattr(condition, "objects", []) for uri in _asset_uris(part)]


class TestAssetDrivenMaintenance:
    def test_one_maintenance_event_per_pipeline_run_after_its_sync(self, etl_runs: dict[str, Any]) -> None:
        """sieve_maintenance is scheduled on the one asset lineage_etl.index publishes after its sync
        (not on the tables' events, which each Spark task publishes before the sync)."""
        from tests.support.pipelines import dagbag_class

        DagBag = dagbag_class()
        from airflow.models.asset import AssetEvent, AssetModel
        from airflow.utils.session import create_session

        last = etl_runs["runs"][-1]
        synced = {a.uri for a in load_dag("lineage_etl").get_task("index").outlets}
        dag = DagBag(dag_folder=str(DAGS / "sieve_maintenance.py")).get_dag("sieve_maintenance")
        assert set(_asset_uris(dag.timetable.asset_condition)) == synced
        with create_session() as session:
            events = [(uri, task) for uri, task in session.query(AssetModel.uri, AssetEvent.source_task_id)
                      .join(AssetEvent, AssetEvent.asset_id == AssetModel.id)
                      .filter(AssetEvent.source_dag_id == "lineage_etl", AssetEvent.source_run_id == last.run_id)
                      if uri in synced]
        assert events == [(next(iter(synced)), "index")]


    def test_safe_to_leave_running(self, airflow_db: Path) -> None:
        """Scheduled, it writes nothing into the tables, waits in the triggerer, never longer than its
        hourly interval, maintains one index set at a time, and tries a failed watch or maintenance
        again (apache/airflow#72716 can fail a deferred sensor that just resumed)."""
        dag = load_dag("sieve_maintenance")
        assert dag.params["external_write"] is False
        wait = dag.get_task("wait")
        assert wait.deferrable and wait.soft_fail and wait.timeout < 3600
        assert dag.max_active_runs == 2 and dag.get_task("maintain").max_active_tis_per_dag == 1
        assert dag.get_task("pipeline_idle").mode == "reschedule"
        assert wait.retries == 1 and dag.get_task("maintain").retries == 1
        reader = dag.get_task("read_first_day")  # an ordinary read, pruned through sieve_pruning=True
        assert reader.sieve_pruning and reader.upstream_task_ids == {"maintain"}
        assert reader.trigger_rule == "none_failed"


class TestLineageEtl:
    def test_both_runs_succeed_and_append_a_day(self, etl_runs: dict[str, Any]) -> None:
        for dr in etl_runs["runs"]:
            assert "success" in str(dr.state), _states(dr)
        days = sorted(p.name for p in (etl_runs["data_dir"] / "landing" / "transactions").iterdir())
        assert days == ["day=2024-01-01", "day=2024-01-02"]

    def test_index_results_in_xcom(self, etl_runs: dict[str, Any]) -> None:
        data_dir = etl_runs["data_dir"]
        first, second = (_xcom("lineage_etl", dr.run_id, "index") for dr in etl_runs["runs"])
        expected = {(str(data_dir / t), c) for t, c in INDEXED}
        assert {(r["table"], r["column"]) for r in first} == expected
        assert {r["action"] for r in first} == {"build"}
        by_key = {(r["table"], r["column"]): r for r in second}
        txn = by_key[(str(data_dir / "warehouse/transactions"), "txn_date")]
        assert (txn["action"], txn["files_added"], txn["files_removed"], txn["version"]) == ("sync", 2, 0, 2)
        mart = by_key[(str(data_dir / "marts/customer_monthly"), "customer_id")]
        assert mart["action"] == "sync" and mart["files_removed"] > 0  # the overwrite replaced its files
        for r in second:
            assert r["status"] == "ok" and r["index_path"] == _index_path(
                data_dir, r["table"].split(str(data_dir) + "/")[1], r["column"]
            )
            assert r["index_bytes"] > 0 and r["bytes_per_key"] > 0

    def test_every_index_matches_its_table(self, etl_runs: dict[str, Any]) -> None:
        data_dir = etl_runs["data_dir"]
        for table, column in INDEXED:
            root = str(data_dir / table)
            idx = S.open_index(root, column, index_path=_index_path(data_dir, table, column))
            assert not idx.is_stale(), (table, column)
            values = set()
            for f in S.list_table_files(root):
                values |= set(pq.read_table(f.path, columns=[column]).column(column).to_pylist())
            for v in sorted(values)[:: max(1, len(values) // 15)]:
                exact = _exact(root, column, v)
                got = set(idx.candidates(S.Eq(v)))
                assert exact <= got, (table, column, v)

    def test_pruned_read_equals_full_read(self, etl_runs: dict[str, Any], spark: Any) -> None:
        import datetime as dt

        data_dir = etl_runs["data_dir"]
        cases = [("warehouse/transactions", "txn_date", S.Eq(dt.date(2024, 1, 2))),
                 ("warehouse/transactions", "customer_id", S.Range(5, 25)),
                 ("marts/transactions_enriched", "txn_date", S.Eq(dt.date(2024, 1, 1))),
                 ("marts/customer_monthly", "customer_id", S.In([3, 30, 39]))]
        for table, column, pred in cases:
            root = str(data_dir / table)
            pruned = S.read(spark, root, column, pred, index_path=_index_path(data_dir, table, column))
            full = spark.read.parquet(root)
            cond = S.reader.spark_condition(column, pred, S.open_index(
                root, column, index_path=_index_path(data_dir, table, column)).key_type)
            a, b = sorted(map(tuple, pruned.collect())), sorted(map(tuple, full.filter(cond).collect()))
            assert a == b and a, (table, column)

    def test_index_datasets_in_the_lineage_events(self, etl_runs: dict[str, Any]) -> None:
        events = etl_runs["events"]  # what the two runs emitted (other tests' runs append to the same file)
        complete = [e for e in events if e["eventType"] == "COMPLETE" and e["job"]["name"] == "lineage_etl.index"]
        assert len(complete) == 2
        data_dir = etl_runs["data_dir"]
        outputs = {o["name"] for o in complete[-1]["outputs"]}
        inputs = {i["name"] for i in complete[-1]["inputs"]}
        assert outputs == {_index_path(data_dir, t, c) for t, c in INDEXED}
        assert inputs == {str(data_dir / t) for t, _ in INDEXED}


def rows_of_first_day(table: str) -> int:
    """The transactions of 2024-01-01, counted without Spark or Sieve."""
    import datetime as dt

    return sum(pq.read_table(f.path, columns=["txn_date"]).column("txn_date").to_pylist().count(dt.date(2024, 1, 1))
               for f in S.list_table_files(table))


class TestSieveMaintenance:
    def test_notices_an_external_write_and_syncs(self, etl_runs: dict[str, Any]) -> None:
        data_dir = etl_runs["data_dir"]
        dr = load_dag("sieve_maintenance").test(run_conf={"data_dir": str(data_dir), "external_write": True})
        assert "success" in str(dr.state), _states(dr)
        needs = _xcom("sieve_maintenance", dr.run_id, "wait")
        txn = str(data_dir / "warehouse/transactions")
        assert {(n["table"], n["column"], n["action"]) for n in needs} == {
            (txn, "txn_date", "sync"), (txn, "customer_id", "sync")}
        done = _xcom("sieve_maintenance", dr.run_id, "maintain")
        assert {(r["column"], r["action"], r["files_added"]) for r in done} == {
            ("txn_date", "sync", 1),
            ("customer_id", "sync", 1),
        }
        for table, column in INDEXED:
            idx = S.open_index(str(data_dir / table), column, index_path=_index_path(data_dir, table, column))
            assert not idx.is_stale()
        import datetime as dt

        idx = S.open_index(txn, "txn_date", index_path=_index_path(data_dir, "warehouse/transactions", "txn_date"))
        assert [Path(p).name for p in idx.candidates(S.Eq(dt.date(2023, 12, 31)))] == ["manual-fix-0000.parquet"]
        # the ordinary reader after it (sieve_pruning=True) read only the txn_date index's candidates
        read = _xcom("sieve_maintenance", dr.run_id, "read_first_day")
        assert read["files_read"] == len(idx.candidates(S.Eq(dt.date(2024, 1, 1)))) < read["files"]
        assert read["rows"] == rows_of_first_day(txn)
