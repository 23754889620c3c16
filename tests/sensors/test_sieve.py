"""SieveMaintenanceSensor: arguments, poke (no Spark), and real ``dag.test()`` runs in poke, reschedule and
deferrable mode (the deferred run executes the trigger inline)."""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pendulum
import pytest

from airflow_provider_lineage.sensors.sieve import SieveMaintenanceSensor
from airflow_provider_lineage.sieve.maintain import maintain
from tests.sieve.helpers import write_file

BUNDLE = "sieve-sensor-tests"
DAG_FILE = '''
from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_provider_lineage.sensors.sieve import SieveMaintenanceSensor

for name, kwargs in {{"poke": dict(mode="poke"), "reschedule": dict(mode="reschedule"),
                     "deferrable": dict(deferrable=True)}}.items():
    with DAG(dag_id=f"sieve_sensor_{{name}}", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
             catchup=False, params={{"table": ""}}) as dag:
        SieveMaintenanceSensor(task_id="wait", table="{{{{ params.table }}}}", columns="k", poke_interval=0.5,
                               timeout=pendulum.duration(minutes=10), **kwargs)
    globals()[f"dag_{{name}}"] = dag
'''


def _table(root: Path, n: int = 4) -> str:
    for i in range(n):
        write_file(f"{root}/part-{i}.parquet", list(range(i * 100, i * 100 + 100)))
    return str(root)


class TestArguments:
    def test_template_fields_and_durations(self) -> None:
        s = SieveMaintenanceSensor(task_id="w", table="/t", columns="k", poke_interval=timedelta(seconds=90),
                                   timeout=pendulum.duration(minutes=5))
        assert s.poke_interval == 90 and s.timeout == 300
        assert {"indexes", "table", "columns", "index_path"} <= set(s.template_fields)

    def test_deferrable_default_follows_airflow_config(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import importlib

        import airflow_provider_lineage.sensors.sieve as mod

        assert SieveMaintenanceSensor(task_id="w", table="/t", columns="k").deferrable is False
        monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", "True")
        try:
            assert importlib.reload(mod).SieveMaintenanceSensor(task_id="w", table="/t", columns="k").deferrable is True
        finally:
            monkeypatch.delenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE")
            importlib.reload(mod)

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({}, "either indexes="),
            ({"table": "/t"}, "needs columns="),
            ({"table": "/t", "columns": "k", "max_deltas": 0}, "max_deltas=0"),
            ({"table": "/t", "columns": "k", "update_strategy": "x"}, "copy_on_write"),
        ],
    )
    def test_bad_arguments_name_the_fix(self, kwargs: dict[str, Any], match: str) -> None:
        with pytest.raises(ValueError, match=match):
            SieveMaintenanceSensor(task_id="w", **kwargs)

    def test_catalog_table_needs_index_path(self) -> None:
        from airflow_provider_lineage._compat import AirflowException

        s = SieveMaintenanceSensor(task_id="w", indexes=[{"table": "db.sales", "column": "day"}])
        with pytest.raises(AirflowException, match="give its index_path"):
            s.poke({})


class TestPoke:
    def test_reports_each_need_and_nothing_when_current(self, tmp_path: Path) -> None:
        a = _table(tmp_path / "a")
        b = _table(tmp_path / "b")
        maintain(None, a, "k")
        maintain(None, b, "k", update_strategy="mor")
        s = SieveMaintenanceSensor(task_id="w", indexes=[{"table": a, "column": "k"}, {"table": b, "column": "k"}],
                                   max_deltas=1)
        assert s.poke({}).is_done is False
        write_file(f"{a}/part-9.parquet", [9000])  # written by someone else
        write_file(f"{b}/part-9.parquet", [9000])
        maintain(None, b, "k", mode="sync")  # b: one merge-on-read delta now
        result = s.poke({})
        assert result.is_done
        assert [(n["table"], n["action"]) for n in result.xcom_value] == [(a, "sync"), (b, "compact")]

    def test_missing_and_corrupt_indexes_need_work(self, tmp_path: Path) -> None:
        a = _table(tmp_path / "a")
        s = SieveMaintenanceSensor(task_id="w", table=a, columns="k", index_path=str(tmp_path / "idx" / "{column}"))
        (need,) = s.poke({}).xcom_value
        assert need["action"] == "build" and need["index_path"] == str(tmp_path / "idx" / "k")
        maintain(None, a, "k", index_path=need["index_path"])
        assert not s.poke({}).is_done
        manifest = max((tmp_path / "idx" / "k").glob("manifest-*.json"))
        manifest.write_text("{not json")
        (need,) = s.poke({}).xcom_value
        assert need["action"] in ("build", "rebuild")

    def test_error_event_fails_with_the_message_and_timeout_follows_soft_fail(self) -> None:
        from airflow_provider_lineage._compat import (
            AirflowException,
            AirflowSensorTimeout,
            AirflowSkipException,
        )

        s = SieveMaintenanceSensor(task_id="w", table="/t", columns="k", deferrable=True)
        with pytest.raises(AirflowException, match="cannot check the Sieve indexes: SieveError: boom"):
            s.execute_complete({}, {"status": "error", "message": "SieveError: boom"})
        with pytest.raises(AirflowSensorTimeout):
            s.execute_complete({}, {"status": "timeout", "message": "no index needed work"})
        soft = SieveMaintenanceSensor(task_id="w", table="/t", columns="k", deferrable=True, soft_fail=True)
        with pytest.raises(AirflowSkipException):
            soft.execute_complete({}, {"status": "timeout", "message": "no index needed work"})
        need = {"table": "/t", "column": "k", "action": "sync", "reason": "r"}
        assert s.execute_complete({}, {"status": "success", "indexes": [need]}) == [need]

    def test_defers_with_a_json_trigger_when_nothing_is_needed_yet(self, tmp_path: Path) -> None:
        from airflow_provider_lineage._compat import TaskDeferred

        a = _table(tmp_path / "a")
        maintain(None, a, "k")
        s = SieveMaintenanceSensor(task_id="w", table=a, columns="k", deferrable=True, poke_interval=7, timeout=60)
        with pytest.raises(TaskDeferred) as info:
            s.execute({})
        classpath, kwargs = info.value.trigger.serialize()
        assert classpath.endswith("SieveMaintenanceTrigger") and kwargs["poke_interval"] == 7
        assert json.loads(json.dumps(kwargs)) == kwargs
        assert info.value.method_name == "execute_complete" and info.value.timeout == timedelta(seconds=60)
        write_file(f"{a}/part-9.parquet", [9000])
        assert s.execute({})[0]["action"] == "sync"  # satisfied already: no deferral


# -- dag.test() ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sensor_dags(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A second DAG bundle holding the test DAGs (the checkout's dags/ stays the users' examples)."""
    folder = tmp_path_factory.mktemp("sensor-dags")
    (folder / "sieve_sensor_dags.py").write_text(textwrap.dedent(DAG_FILE.format()))
    key = "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST"
    old = os.environ.get(key)
    os.environ[key] = json.dumps([
        {"name": "dags-folder", "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle", "kwargs": {}},
        {"name": BUNDLE, "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
         "kwargs": {"path": str(folder)}},
    ])
    home = Path(os.environ["AIRFLOW_HOME"])
    marker = home / ".apl-db-migrated"
    if not marker.exists():
        subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, stdout=subprocess.DEVNULL)
        marker.touch()
    from tests.support.pipelines import dagbag_class

    DagBag = dagbag_class()

    bag = DagBag(dag_folder=str(folder / "sieve_sensor_dags.py"))
    assert not bag.import_errors, bag.import_errors
    yield bag.dags
    if old is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = old


def _when(predicate: Callable[[], bool], then: Callable[[], None]) -> threading.Thread:
    """Run ``then`` once ``predicate`` (polled on the DB) holds: a writer reacting to the sensor's state."""

    # Import and configure every ORM model before the thread queries the DB: otherwise its first
    # query configures the mappers (holding SQLAlchemy's mutex, importing Airflow's models) while
    # dag.test() in the main thread imports a model module (holding its import lock, waiting for that
    # mutex) -- a deadlock whenever this test is the first to touch those models in its process.
    from airflow.models import import_all_models
    from sqlalchemy.orm import configure_mappers

    import_all_models()
    for module in ("airflow.models.dagbag", "airflow.api.common.trigger_dag"):  # what dag.test() imports
        importlib.import_module(module)
    configure_mappers()

    def loop() -> None:
        import time

        for _ in range(6000):
            if predicate():
                then()
                return
            time.sleep(0.1)

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return t


def _ti_row(dag_id: str) -> Any:
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        return (
            session.query(TaskInstance.state, TaskInstance.trigger_id, TaskInstance.id)
            .filter(TaskInstance.dag_id == dag_id, TaskInstance.task_id == "wait")
            .order_by(TaskInstance.start_date.desc())
            .first()
        )


def _reschedules(dag_id: str) -> int:
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.taskreschedule import TaskReschedule
    from airflow.utils.session import create_session

    with create_session() as session:
        return session.query(TaskReschedule).join(TaskInstance, TaskReschedule.ti_id == TaskInstance.id).filter(
            TaskInstance.dag_id == dag_id).count()


def _xcom(dag_id: str, run_id: str) -> Any:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.query(XComModel).filter_by(dag_id=dag_id, run_id=run_id, task_id="wait", key="return_value").one()
        return row.value if not isinstance(row.value, str) else json.loads(row.value)


class TestUnderDagTest:
    def test_poke_mode_returns_the_needs(self, sensor_dags: dict[str, Any], tmp_path: Path) -> None:
        table = _table(tmp_path / "t")
        dr = sensor_dags["sieve_sensor_poke"].test(run_conf={"table": table})
        assert "success" in str(dr.state)
        (need,) = _xcom("sieve_sensor_poke", dr.run_id)
        assert (need["table"], need["action"]) == (table, "build")

    def test_reschedule_mode_waits_for_a_change(self, sensor_dags: dict[str, Any], tmp_path: Path) -> None:
        table = _table(tmp_path / "t")
        maintain(None, table, "k")
        writer = _when(lambda: _reschedules("sieve_sensor_reschedule") > 0,
                       lambda: write_file(f"{table}/part-9.parquet", [9000]))
        dr = sensor_dags["sieve_sensor_reschedule"].test(run_conf={"table": table})
        writer.join(5)
        assert "success" in str(dr.state)
        assert _reschedules("sieve_sensor_reschedule") > 0
        (need,) = _xcom("sieve_sensor_reschedule", dr.run_id)
        assert (need["action"], need["files_added"]) == ("sync", 1)

    def test_deferred_run_fires_from_the_trigger(self, sensor_dags: dict[str, Any], tmp_path: Path) -> None:
        table = _table(tmp_path / "t")
        maintain(None, table, "k")  # current: the first poke is negative, the sensor defers

        def deferred() -> bool:
            row = _ti_row("sieve_sensor_deferrable")
            return row is not None and row.trigger_id is not None

        writer = _when(deferred, lambda: os.remove(f"{table}/part-0.parquet"))
        dr = sensor_dags["sieve_sensor_deferrable"].test(run_conf={"table": table})
        writer.join(5)
        assert "success" in str(dr.state)
        (need,) = _xcom("sieve_sensor_deferrable", dr.run_id)
        assert (need["action"], need["files_removed"]) == ("sync", 1)


class TestHashedKeys:
    def test_sensor_sees_appends_structures_and_corruption_of_a_hashed_index(self, tmp_path: Path) -> None:
        from airflow_provider_lineage import sieve as S

        a = _table(tmp_path / "a")
        maintain(None, a, "k", structure="hashed")
        s = SieveMaintenanceSensor(task_id="w", table=a, columns="k", max_deltas=2)
        assert s.poke({}).is_done is False
        for j in range(2):
            write_file(f"{a}/new-{j}.parquet", [5000 + j])
            assert [n["action"] for n in s.poke({}).xcom_value] == ["sync"]
            maintain(None, a, "k", mode="sync")
        assert [n["action"] for n in s.poke({}).xcom_value] == ["compact"]  # two structures added by syncs
        maintain(None, a, "k", mode="compact")
        assert s.poke({}).is_done is False
        assert S.open_index(a, "k").candidates(S.Eq(5001)) == [f"{a}/new-1.parquet"]
        hk = Path(a) / "_sieve" / "k" / S.open_index(a, "k").manifest.hashed[0].name
        data = bytearray(hk.read_bytes())
        data[-10] ^= 0xFF  # the last page: every poke checks it
        hk.write_bytes(bytes(data))
        assert [n["action"] for n in s.poke({}).xcom_value] == ["rebuild"]

    def test_sensor_sees_appends_and_corruption_of_a_retrieval_structure(self, tmp_path: Path) -> None:
        from airflow_provider_lineage import sieve as S

        a = _table(tmp_path / "a")
        maintain(None, a, "k", structure="fuse")
        assert S.open_index(a, "k").manifest.fuse is not None
        s = SieveMaintenanceSensor(task_id="w", table=a, columns="k")
        assert s.poke({}).is_done is False
        write_file(f"{a}/new-0.parquet", [5000])
        assert [n["action"] for n in s.poke({}).xcom_value] == ["sync"]
        maintain(None, a, "k", mode="sync")
        assert s.poke({}).is_done is False
        assert S.open_index(a, "k").candidates(S.Eq(5000)) == [f"{a}/new-0.parquet"]
        rt = Path(a) / "_sieve" / "k" / S.open_index(a, "k").manifest.fuse.name
        data = bytearray(rt.read_bytes())
        data[-10] ^= 0xFF  # the last segment: every poke checks it
        rt.write_bytes(bytes(data))
        assert [n["action"] for n in s.poke({}).xcom_value] == ["rebuild"]

    def test_first_poke_verifies_every_page_later_ones_the_last(self, tmp_path: Path) -> None:
        from airflow_provider_lineage import sieve as S

        b = str(tmp_path / "b")
        for i in range(4):  # 12,000 keys: a structure of several pages
            write_file(f"{b}/part-{i}.parquet", list(range(i * 7, 84_000, 28)))
        maintain(None, b, "k", structure="hashed")
        s = SieveMaintenanceSensor(task_id="w", table=b, columns="k")
        assert s.poke({}).is_done is False
        idx = S.open_index(b, "k")
        starts = idx.hashed.header(idx.manifest.hashed[0]).page_start
        assert len(starts) > 2
        hk = Path(b) / "_sieve" / "k" / idx.manifest.hashed[0].name
        data = bytearray(hk.read_bytes())
        data[(int(starts[0]) + int(starts[1])) // 2] ^= 0xFF  # the first page, not the last
        hk.write_bytes(bytes(data))
        assert s.poke({}).is_done is False  # a repeated poke checks the header and the last page only
        fresh = SieveMaintenanceSensor(task_id="w2", table=b, columns="k")
        assert [n["action"] for n in fresh.poke({}).xcom_value] == ["rebuild"]  # a first poke checks every page
