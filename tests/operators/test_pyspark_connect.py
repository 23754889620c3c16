"""``@task.pyspark_lineage`` / PySparkLineageOperator over Spark Connect, on a real lineage Connect server on loopback
(``python -m airflow_provider_lineage.connect_server``, tests/support/connect.py).

* the example TaskFlow DAG (``dags/lineage_connect_taskflow.py``) by ``dag.test()`` on ``spark_connect_default``:
  the server captures the remote session's write, the task reads it back from the connection's ``capture_dir``
  and ends with XCom ``lineage_outputs`` / ``column_lineage``, events with the task as parent, an asset event;
* two tasks at once (two processes, ``tests/operators/dags/connect_pair.py``) on the one server, their writes
  interleaved: each task gets exactly its own writes;
* a client that is not an Airflow task (no capture token): still recorded, under ``connect-<user>-<session>``;
* the server requires a token (as ``./dev.sh up`` starts it): the tasks pass the connection's password;
* SIGTERM stops the server cleanly (exit 0, its runs ended).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.connect import ConnectServer, connect_server
from tests.support.pipelines import env_for_spark, load_dag, migrate_db, read_events

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
DAG_ID = "lineage_connect_taskflow"
TASK = "customer_totals"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """A server that requires a token, as ``./dev.sh up`` starts it: every task below reaches it through the
    ``spark_connect`` connection whose password is the token (issue 47)."""
    with connect_server(tmp_path_factory.mktemp("connect"), token=True) as srv:
        yield srv


def _conn(server: ConnectServer, capture_dir: Path | None = None) -> str:
    return json.dumps({"conn_type": "spark_connect", "host": "sc://127.0.0.1", "port": server.port,
                       "password": server.token, "extra": {"capture_dir": str(capture_dir or server.capture_dir)}})


def _xcom(dag_id: str, run_id: str, task_id: str, key: str) -> Any:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.query(XComModel).filter_by(dag_id=dag_id, run_id=run_id, task_id=task_id, key=key).one()
        value = row.value
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


@pytest.fixture(scope="module")
def connect_run(server: ConnectServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    migrate_db()
    env_for_spark()
    from airflow_provider_lineage.lineage import transport

    data_dir = tmp_path_factory.mktemp("connect-taskflow")
    mp = pytest.MonkeyPatch()
    mp.setenv("AIRFLOW_CONN_SPARK_CONNECT_DEFAULT", _conn(server))
    try:
        path = transport.default_events_path()
        before = len(read_events(path))
        run = load_dag(DAG_ID).test(run_conf={"data_dir": str(data_dir), "rows": 400})
    finally:
        mp.undo()
    return {"dag_run": run, "data_dir": data_dir, "events": read_events(path)[before:]}


class TestTaskFlowOverSparkConnect:
    def test_run_succeeds(self, connect_run: dict[str, Any]) -> None:
        assert "success" in str(connect_run["dag_run"].state)
        assert (connect_run["data_dir"] / "mart" / "customer_totals_connect").is_dir()

    def test_the_process_is_left_out_of_spark_connect_mode(self, connect_run: dict[str, Any]) -> None:
        # pyspark's remote builder sets these for the whole process; left set, the next spark-submit of the
        # same process (the next task of a dag.test()) fails with CONNECT_URL_NOT_SET
        assert not {"SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE"} & set(os.environ)

    def test_written_dataset_in_xcom(self, connect_run: dict[str, Any]) -> None:
        mart = str(connect_run["data_dir"] / "mart" / "customer_totals_connect")
        assert _xcom(DAG_ID, connect_run["dag_run"].run_id, TASK, "lineage_outputs") == [
            {"namespace": "file", "name": mart, "table": None, "location": f"file:{mart}", "format": "parquet",
             "columns": ["customer_id", "channel", "total_eur", "txns"], "mode": "Overwrite"}]

    def test_column_lineage_from_the_server(self, connect_run: dict[str, Any]) -> None:
        record = _xcom(DAG_ID, connect_run["dag_run"].run_id, TASK, "column_lineage")
        assert record["status"] == "ok", record["problems"]
        assert record["problems"] == []
        names = [d["name"] for d in record["datasets"]]
        edges = {(names[o], oc, names[i], ic, t, s) for o, oc, i, ic, t, s, _m in record["edges"]}
        src = str(connect_run["data_dir"] / "transactions_connect")
        mart = str(connect_run["data_dir"] / "mart" / "customer_totals_connect")
        assert {(mart, "total_eur", src, "amount", "DIRECT", "AGGREGATION"),
                (mart, "total_eur", src, "fx_rate", "DIRECT", "AGGREGATION"),
                (mart, "channel", src, "channel", "DIRECT", "IDENTITY")} <= edges

    def test_events_with_the_task_as_parent(self, connect_run: dict[str, Any]) -> None:
        mine = [e for e in connect_run["events"] if e["job"]["name"] == f"{DAG_ID}.{TASK}"]
        assert [e["eventType"] for e in mine] == ["START", "COMPLETE"]
        assert mine[-1]["run"]["facets"]["parent"]["job"]["name"] == DAG_ID
        assert "extractionError" not in mine[-1]["run"]["facets"]
        assert [o["name"] for o in mine[-1]["outputs"]] == [
            str(connect_run["data_dir"] / "mart" / "customer_totals_connect")
        ]

    def test_sql_write_of_the_second_task(self, connect_run: dict[str, Any]) -> None:
        """``channel_summary`` over Connect: a session temp view and ``INSERT OVERWRITE DIRECTORY``."""
        from tests.operators.test_pyspark import assert_sql_task

        assert_sql_task(connect_run)

    def test_records_removed_from_the_capture_location(
        self, connect_run: dict[str, Any], server: ConnectServer
    ) -> None:
        assert not [p for p in server.capture_dir.glob("run-*") if any(p.iterdir())]


PAIR_SCRIPT = """
import json, os, sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
assert not bag.import_errors, bag.import_errors
run = bag.get_dag("pyspark_lineage_pair").test(run_conf={"side": sys.argv[2], "data_dir": sys.argv[3]})
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session
out = {"state": str(run.state)}
with create_session() as session:
    for row in session.query(XComModel).filter_by(
        dag_id="pyspark_lineage_pair", run_id=run.run_id, task_id="write_side"
    ):
        try:
            out[row.key] = row.value if not isinstance(row.value, str) else json.loads(row.value)
        except ValueError:  # a plain string return value
            out[row.key] = row.value
print("RESULT " + json.dumps(out))
"""


def test_two_concurrent_tasks_get_their_own_writes(server: ConnectServer, tmp_path: Path) -> None:
    """Two task runs at once on one server, writes interleaved (a barrier between each one's two writes)."""
    home = migrate_db()
    data_dir = tmp_path / "data"
    procs = {}
    for side in ("a", "b"):
        side_home = tmp_path / f"home-{side}"
        side_home.mkdir()
        shutil.copy(home / "airflow.db", side_home / "airflow.db")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "PYTEST_"))}
        env.update(AIRFLOW_HOME=str(side_home), AIRFLOW__CORE__DAGS_FOLDER=str(ROOT / "tests" / "operators" / "dags"),
                   AIRFLOW__CORE__LOAD_EXAMPLES="False", AIRFLOW_CONN_SPARK_CONNECT_DEFAULT=_conn(server),
                   SPARK_LOCAL_IP="127.0.0.1")
        procs[side] = subprocess.Popen(
            [sys.executable, "-c", PAIR_SCRIPT, str(ROOT / "tests" / "operators" / "dags" / "connect_pair.py"), side,
             str(data_dir)], env=env, cwd=side_home, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    results = {}
    for side, proc in procs.items():
        output, _ = proc.communicate(timeout=1200)
        assert proc.returncode == 0, output[-6000:]
        lines = [line for line in output.splitlines() if line.startswith("RESULT ")]
        assert lines, output[-6000:]
        results[side] = json.loads(lines[-1][len("RESULT "):])
    for side, other in (("a", "b"), ("b", "a")):
        res = results[side]
        assert "success" in res["state"]
        assert [d["name"] for d in res["lineage_outputs"]] == [str(data_dir / f"{side}_1"), str(data_dir / f"{side}_2")]
        record = res["column_lineage"]
        assert record["status"] == "ok", record["problems"]
        names = {d["name"] for d in record["datasets"]}
        assert names == {str(data_dir / f"{side}_1"), str(data_dir / f"{side}_2")}
        assert not any(f"/{other}_" in n for n in names)
        fields = {f[0] for d in record["datasets"] for f in d["fields"]}
        assert not any(f.startswith(f"{other}_") for f in fields)
    # both sides wrote their first table before either wrote its second: the sessions overlapped on the server
    assert (data_dir / "barrier" / "a").exists() and (data_dir / "barrier" / "b").exists()


def test_a_client_without_tags_is_still_recorded(server: ConnectServer, tmp_path: Path) -> None:
    from pyspark.sql import SparkSession

    from airflow_provider_lineage.operators.pyspark import _CONNECT_ENV, _restore_environ

    saved = {k: os.environ.get(k) for k in _CONNECT_ENV}  # pyspark leaves Connect mode set in os.environ
    spark = SparkSession.builder.remote(f"{server.url};user_id=carol").create()
    try:
        session_id = spark.client._session_id
        spark.range(3).selectExpr("id AS k", "id * 10 AS v").write.mode("overwrite").parquet(str(tmp_path / "plain"))
        assert spark.range(3).count() == 3  # a query, not a write: no record
    finally:
        spark.stop()
        _restore_environ(saved)
    folder = server.capture_dir / f"connect-carol-{session_id}"
    deadline = time.monotonic() + 120
    while not (folder / "_launcher.status.json").exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    envelopes = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    records = [e for e in envelopes if e["kind"] == "record"]
    assert [e["kind"] for e in envelopes if e["kind"] == "status"] == ["status"], server.log_text()[-3000:]
    assert len(records) == 1
    assert records[0]["task_run"] == f"spark_connect/carol/{session_id}"
    payload = records[0]["payload"]
    assert payload["output"]["location"] == f"file:{tmp_path / 'plain'}"
    assert payload["environment"]["connect_user"] == "carol"


def test_sigterm_stops_the_server_cleanly(server: ConnectServer) -> None:
    """SIGTERM to the server's whole process group (driver and JVM, as ``kill -- -PGID`` or systemd): exit 0,
    the capture drained and its runs ended before Spark stopped."""
    assert server.stop() == 0, server.log_text()[-3000:]
    assert "stopped (" in server.log_text()
    assert "could not drain" not in server.log_text()
