"""capture/connect.py: the capture's runs and statuses with a sink in memory (identities and tokens:
test_connect_tokens.py); then on a real lineage Connect server (slow tier): tokens are the server's word, not
the client's, a write stays in the run it ran under, a session closed without writes gets its status (issue 47).
The operator's side end to end: tests/operators/test_pyspark_connect.py."""
from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_lineage.capture.connect import (
    FLUSH_CONF,
    TASK_RUN_CONF,
    TOKEN_CONF,
    ConnectCapture,
    ConnectIdentity,
)

SESSION = "2e66d13b-ea5c-4397-aadd-c8a1a3b439a7"
OPERATION = "3e99fb45-8448-426c-9b35-f8aabc608123"


class _Sink:
    def __init__(self, store: dict[str, Any], key: str) -> None:
        self.store, self.key = store, key

    def write(self, record: Any) -> None:
        self.store.setdefault(self.key, []).append(record)

    def write_status(self, status_json: str) -> None:
        self.store.setdefault(self.key + "/status", []).append(json.loads(status_json))


def test_runs_end_with_a_status_and_drops_are_reported(spark) -> None:
    store: dict[str, Any] = {}
    cap = ConnectCapture(spark, "/nowhere", sink_factory=lambda _d, key, _t: _Sink(store, key), queue_size=1)
    try:
        run = cap._run("run-1", "ns/d.t/r", ConnectIdentity(user_id="u", session_id=SESSION))
        assert cap._run("run-1", None, ConnectIdentity()) is run  # one run per token
        cap.dropped = 2  # the bus delivered events the queue had no room for
        cap._finish("run-1", None)
        cap._finish("run-2", None)  # a run that wrote nothing still ends the client's wait
    finally:
        cap.close(5)
    status = store["run-1/status"][0]
    assert status["captured"] == 0 and status["connect"]["session_id"] == SESSION
    assert any("2 Spark event(s) dropped" in p for p in status["problems"])
    assert store["run-2/status"][0]["problems"] == []
    assert "run-1" not in cap._runs


# -- tokens are the server's, not the client's word (issue 47) --------------------------------------------------------
T1, T2 = "run-" + "1" * 32, "run-" + "2" * 32
OTHER = "5f0c7a8e-0000-4000-8000-000000000002"


def test_a_session_is_bound_to_its_first_token(spark) -> None:
    store: dict[str, Any] = {}
    cap = ConnectCapture(spark, "/nowhere", sink_factory=lambda _d, key, _t: _Sink(store, key))
    alice, bob = ConnectIdentity(user_id="alice", session_id=SESSION), ConnectIdentity(user_id="bob", session_id=OTHER)
    try:
        assert cap._claim(alice, "../escaped") is None  # malformed: untagged, never a path
        assert cap._claim(alice, T1) == T1
        assert cap._claim(alice, T2) == T1  # a later token: its writes stay in its first run
        assert cap._claim(bob, T1) is None  # held by a live session: refused
        cap._flush(bob, T1, T1)  # bob may not end alice's run
        assert T1 not in cap._ended
        cap._flush(alice, T2, T1)  # alice ends the run she declared first, though she moved on
        assert T1 in cap._ended and store[T1 + "/status"][0]["captured"] == 0
        assert cap._claim(alice, T1) is None  # an ended run is never reopened
        assert cap._claim(bob, T2) == T2
    finally:
        cap.close(5)
    assert any("not one the Airflow operators issue" in e for e in cap.errors)
    assert any("which live session" in e for e in cap.errors)
    assert any("which is not its own" in e for e in cap.errors)
    assert store[T2 + "/status"][0]["problems"] == ["the Connect server stopped before the client ended its run"]


# -- on a real lineage Connect server (loopback) ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.support.connect import connect_server

    with connect_server(tmp_path_factory.mktemp("connect-capture")) as srv:
        yield srv


@contextlib.contextmanager
def _session(server: Any, user: str) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    from airflow_provider_lineage.operators.pyspark import _CONNECT_ENV, _restore_environ

    saved = {k: os.environ.get(k) for k in _CONNECT_ENV}  # pyspark leaves Connect mode set in os.environ
    spark = SparkSession.builder.remote(f"{server.url}/;user_id={user}").create()
    try:
        yield spark
    finally:
        spark.stop()
        _restore_environ(saved)


def _declare(spark: Any, token: str) -> None:
    """What ConnectRun.begin does."""
    spark.conf.set(TASK_RUN_CONF, "ns/dag.task/run")
    spark.addTag("airflow_lineage_token:" + token)
    spark.sql(f"SET {TOKEN_CONF}={token}")


def _write(spark: Any, path: Path) -> None:
    spark.range(2).selectExpr("id AS k").write.mode("overwrite").parquet(str(path))


def _wait_status(folder: Path, timeout: float = 180) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    status = folder / "_launcher.status.json"
    while not status.exists():
        assert time.monotonic() < deadline, f"no status in {folder}"
        time.sleep(0.2)
    return json.loads(status.read_text())["payload"]


def _outputs(folder: Path) -> list[str]:
    envelopes = [json.loads(p.read_text()) for p in sorted(folder.glob("0*.json"))]
    return sorted(e["payload"]["output"]["location"].rsplit("/", 1)[-1] for e in envelopes if e["kind"] == "record")


def _token() -> str:
    return f"run-{uuid.uuid4().hex}"


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.timeout(1200)
class TestOnARealServer:
    def test_path_escaping_malformed_and_symlinked_tokens_write_nothing_outside(self, server: Any,
                                                                                  tmp_path: Path) -> None:
        outside = tmp_path / "outside"
        outside.mkdir()
        linked = _token()
        (server.capture_dir).mkdir(parents=True, exist_ok=True)
        (server.capture_dir / linked).symlink_to(outside)  # a run folder someone pointed out of the capture dir
        sessions = {}
        for name, token in (("dots", "../escaped"), ("abs", str(tmp_path / "abs")), ("link", linked)):
            with _session(server, f"mallory_{name}") as spark:
                sessions[name] = spark.client._session_id
                spark.conf.set(TOKEN_CONF, token)
                spark.sql(f"SET {TOKEN_CONF}={token}")
                _write(spark, tmp_path / f"data_{name}")
                spark.sql(f"SET {FLUSH_CONF}={token}")
        for name in ("dots", "abs"):  # malformed: recorded as an untagged session's, in the capture dir
            folder = server.capture_dir / f"connect-mallory_{name}-{sessions[name]}"
            assert _wait_status(folder)["captured"] == 1
            assert _outputs(folder) == [f"data_{name}"]
        assert not (server.capture_dir.parent / "escaped").exists() and not (tmp_path / "abs").exists()
        assert list(outside.iterdir()) == []
        log = server.log_text()
        assert "'../escaped', which is not one the Airflow operators issue" in log
        assert "outside the capture location" in log
        assert "airflow-provider-lineage: airflow-provider-lineage:" not in log  # the capture's lines: prefix once

    def test_a_foreign_token_is_refused_and_cannot_end_the_run(self, server: Any, tmp_path: Path) -> None:
        token = _token()
        with _session(server, "alice") as alice:
            _declare(alice, token)
            _write(alice, tmp_path / "a1")
            with _session(server, "bob") as bob:
                bob_session = bob.client._session_id
                _declare(bob, token)
                _write(bob, tmp_path / "b1")
                bob.sql(f"SET {FLUSH_CONF}={token}")
            _write(alice, tmp_path / "a2")
            alice.sql(f"SET {FLUSH_CONF}={token}")
        status = _wait_status(server.capture_dir / token)
        assert status["captured"] == 2 and status["problems"] == [], status
        assert _outputs(server.capture_dir / token) == ["a1", "a2"]
        bobs = server.capture_dir / f"connect-bob-{bob_session}"
        assert _outputs(bobs) == ["b1"]
        assert "which live session" in server.log_text() and "which is not its own" in server.log_text()

    def test_a_write_followed_by_a_token_change_stays_in_its_run(self, server: Any, tmp_path: Path) -> None:
        first, second = _token(), _token()
        with _session(server, "carol") as spark:
            _declare(spark, first)
            _write(spark, tmp_path / "before")
            spark.conf.set(TOKEN_CONF, second)  # right after the write, before the server handles it
            spark.sql(f"SET {TOKEN_CONF}={second}")
            _write(spark, tmp_path / "after")
            spark.sql(f"SET {FLUSH_CONF}={second}")  # not its run
            spark.sql(f"SET {FLUSH_CONF}={first}")  # ends the run it declared first, though it moved on
            status = _wait_status(server.capture_dir / first)
        assert status["captured"] == 2 and status["problems"] == []
        assert _outputs(server.capture_dir / first) == ["after", "before"]
        assert not (server.capture_dir / second).exists()

    def test_a_conf_only_clients_write_stays_in_the_run_it_ran_under(self, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
        """A client that sets its token only with ``spark.conf.set`` (no tag, no SQL ``SET``), then changes it: the
        write belongs to the token its execution ran under, though the capture thread, held up by an earlier write
        (the test hook makes each write's analysis slow), handles it only after the change."""
        from airflow_provider_lineage.capture.listener import TEST_HOOK_ENV
        from tests.support.connect import connect_server

        monkeypatch.setenv(TEST_HOOK_ENV, "sleep:12")
        first, second = _token(), _token()
        with connect_server(tmp_path / "server") as srv, _session(srv, "erin") as spark:
            _write(spark, tmp_path / "warm")  # untagged: keeps the capture thread busy for the next steps
            spark.conf.set(TASK_RUN_CONF, "ns/dag.task/run")
            spark.conf.set(TOKEN_CONF, first)
            _write(spark, tmp_path / "before")
            spark.conf.set(TOKEN_CONF, second)  # long before the capture thread reaches "before"
            _write(spark, tmp_path / "after")
            spark.sql(f"SET {FLUSH_CONF}={first}")
            status = _wait_status(srv.capture_dir / first, timeout=300)
        assert status["captured"] == 2 and status["problems"] == [], status
        # "after" ran under the second token, but the session is bound to the run it declared first
        assert _outputs(srv.capture_dir / first) == ["after", "before"]
        assert not (srv.capture_dir / second).exists()

    def test_a_clients_driver_round_trips_give_its_later_writes_their_inputs(self, server: Any,
                                                                               tmp_path: Path) -> None:
        """collect/first/toPandas from a Connect client (``collectArrow`` executions on the server): a literal of
        the returned value, written back, keeps its input column; another session's writes get nothing of it."""
        from pyspark.sql import functions as F

        from airflow_provider_lineage.lineage import analyze_record
        from airflow_provider_lineage.lineage.record import CaptureRecord

        source = tmp_path / "customers"
        with _session(server, "frank") as setup:
            setup.range(3).selectExpr("id AS cust_id", "CONCAT('n', id) AS name",
                                      "CONCAT('q', id, '@z') AS email").write.parquet(str(source))
        token, other = _token(), _token()
        with _session(server, "grace") as spark, _session(server, "heidi") as bystander:
            _declare(spark, token)
            _declare(bystander, other)
            customers = spark.read.parquet(str(source)).select("cust_id", "email")
            values = {
                "collect": customers.orderBy("cust_id").collect()[0]["email"],
                "first": customers.orderBy("cust_id").first()["email"],
                "pandas": customers.orderBy("cust_id").toPandas()["email"][1],
            }
            for how, value in values.items():
                spark.range(2).select("id", F.lit(value).alias("e")).write.mode("overwrite").parquet(
                    str(tmp_path / f"with_{how}"))
            bystander.range(2).select("id", F.lit("q0@z").alias("e")).write.mode("overwrite").parquet(
                str(tmp_path / "bystander"))
            spark.sql(f"SET {FLUSH_CONF}={token}")
            bystander.sql(f"SET {FLUSH_CONF}={other}")
            _wait_status(server.capture_dir / token)
            _wait_status(server.capture_dir / other)

        def records(folder: Path) -> dict[str, CaptureRecord]:
            envelopes = [json.loads(p.read_text()) for p in sorted(folder.glob("0*.json"))]
            recs = [CaptureRecord.from_dict(e["payload"]) for e in envelopes if e["kind"] == "record"]
            return {r.output.location.rsplit("/", 1)[-1]: r for r in recs if r.output}

        mine = records(server.capture_dir / token)
        assert sorted(mine) == ["with_collect", "with_first", "with_pandas"]
        for name, rec in mine.items():
            lin = analyze_record(rec)
            got = {(e.dataset.name.rsplit("/", 1)[-1], e.field) for e in lin.columns["e"]}
            # the columns the session returned (cust_id, email), not the table's name
            assert got == {("customers", "cust_id"), ("customers", "email")}, (name, lin.columns["e"])
            assert lin.approximate_columns["e"][0].startswith("driver round trip"), lin.approximate_columns
            assert "collectArrow" in lin.approximate_columns["e"][0]
            assert lin.columns["id"] == []  # range(): no input
        theirs = analyze_record(records(server.capture_dir / other)["bystander"])
        assert theirs.columns["e"] == [] and theirs.approximate_columns == {}

    def test_a_session_closed_without_writes_gets_its_status(self, server: Any) -> None:
        """The task's function stops its session before writing: the run's status comes at once (the task does not
        wait capture_drain_timeout), captured 0, no problems, through the operator's own ConnectRun."""
        import logging
        from types import SimpleNamespace

        from airflow_provider_lineage.lineage.logs import get_logger
        from airflow_provider_lineage.operators._lineage.connect_run import ConnectRun

        op = SimpleNamespace(capture_conn_id=None, capture_record_limit=32 << 20, keep_capture_records=True,
                             capture_drain_timeout=300, lineage_log=get_logger("test"), log=logging.getLogger("t"))
        run = ConnectRun(op, "ns/dag.task/run")
        with _session(server, "dave") as spark:
            assert run.begin(spark, str(server.capture_dir), server.url)
        run.end(spark)  # the session is gone: the server ended the run when it closed
        assert run.wait_status()
        fetched = run.fetch()
        assert fetched is not None and fetched.status_found and fetched.records == 0
        assert fetched.problems == []
        from airflow_provider_lineage.capture.config import STATUS_FILE

        status = json.loads((Path(fetched.folder) / STATUS_FILE).read_text())
        assert status["captured"] == 0 and status["problems"] == []


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.timeout(2400)
class TestLoad:
    """The benchmark's load (benchmarks/connect/load.py: 100 sessions), smaller: correctness, never time."""

    def test_concurrent_sessions_each_get_exactly_their_writes(self, server: Any, tmp_path: Path) -> None:
        import signal

        from tests.support.connect_load import capture_state, run_sessions

        res = run_sessions(server.url, server.capture_dir, tmp_path / "data", sessions=8, tables=3)
        assert res.client_errors == []
        assert (res.attributed, res.misattributed, res.lost) == (24, 0, 0), res
        assert res.statuses == 8 and res.silent_losses == 0
        mark = server.log_text().count("capture state: ")
        deadline = time.monotonic() + 120
        state: dict[str, int] = {}
        while time.monotonic() < deadline:  # the last sessions' close events reach the capture
            os.kill(server.proc.pid, signal.SIGUSR1)
            while server.log_text().count("capture state: ") == mark and time.monotonic() < deadline:
                time.sleep(0.2)
            mark = server.log_text().count("capture state: ")
            state = capture_state(server.log_text())
            if state.get("runs") == 0 and state.get("sessions") == 0:
                break
            time.sleep(1)
        assert state and {k: v for k, v in state.items() if v} == {}, state  # nothing held once they closed

    def test_events_spark_drops_are_counted_in_the_runs_status(self, tmp_path: Path) -> None:
        """A capture queue in Spark's listener bus of 1 event: Spark drops events, and a run that misses a write
        says so in its status (no silent loss)."""
        from tests.support.connect import connect_server
        from tests.support.connect_load import run_sessions

        queue = "spark.scheduler.listenerbus.eventqueue.airflowLineage.capacity"
        with connect_server(tmp_path / "server", conf={queue: "1"}) as srv:
            res = run_sessions(srv.url, srv.capture_dir, tmp_path / "data", sessions=4, tables=3, status_timeout=180)
            log = srv.log_text()
        assert "Dropping event from queue airflowLineage" in log  # the case happened
        assert res.misattributed == 0
        assert res.silent_losses == 0, res
        assert res.statuses == 0 or res.runs_reporting_drops > 0 or res.lost == 0, res
