"""Many concurrent Spark Connect client sessions against one lineage Connect server, each in its own capture run,
and the check that every write landed in its own run (issue 47): used by the slow-tier load test
(tests/capture/test_connect.py) and the benchmark (benchmarks/connect/load.py).

Each session does what ``PySparkLineageOperator`` does over Connect (:class:`~airflow_provider_lineage.operators.
connect_run.ConnectRun`): tags itself with a fresh ``run-<32 hex>`` token and declares it with ``SET``, writes
``tables`` small Parquet tables (``<data>/s<i>/t<j>``), ends its run with ``SET ...flush=<token>`` and stops. All
sessions start together (a barrier) and their writes interleave on the server.
"""
from __future__ import annotations

import json
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider_lineage.capture.connect import FLUSH_CONF, TASK_RUN_CONF, TOKEN_CONF, TOKEN_TAG_PREFIX
from airflow_provider_lineage.capture.remote import STATUS_NAME

_ENV_LOCK = threading.Lock()


@dataclass
class LoadResult:
    sessions: int
    tables: int
    seconds: float = 0.0
    client_errors: list[str] = field(default_factory=list)
    #: writes whose record is in their own run's folder / in another run's or an untagged folder / nowhere
    attributed: int = 0
    misattributed: int = 0
    lost: int = 0
    statuses: int = 0
    #: runs whose status reports events dropped (Spark's listener queue, or the capture's own), and how many
    runs_reporting_drops: int = 0
    dropped_reported: int = 0
    #: runs with a status that reports no drop, yet a write missing (must be 0: a loss is never silent; a run with
    #: no status at all is reported by the task itself: "no status within capture_drain_timeout")
    silent_losses: int = 0
    untagged_folders: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _one_session(url: str, index: int, tables: int, data: Path, token: str, barrier: threading.Barrier,
                 errors: list[str]) -> None:
    from pyspark.sql import SparkSession

    try:
        with _ENV_LOCK:  # pyspark's remote builder touches os.environ
            spark = SparkSession.builder.remote(f"{url}/;user_id=load{index}").create()
        try:
            spark.conf.set(TASK_RUN_CONF, f"load/s{index}/run")
            spark.addTag(TOKEN_TAG_PREFIX + token)
            spark.sql(f"SET {TOKEN_CONF}={token}")
            barrier.wait(600)
            for j in range(tables):
                spark.range(3).selectExpr(f"id AS s{index}_c{j}").write.mode("overwrite").parquet(
                    str(data / f"s{index}" / f"t{j}"))
            spark.sql(f"SET {FLUSH_CONF}={token}")
        finally:
            spark.stop()
    except Exception as exc:  # noqa: BLE001 - counted and reported by the caller
        errors.append(f"session {index}: {type(exc).__name__}: {str(exc)[:300]}")
        try:
            barrier.abort()
        except Exception:  # noqa: BLE001, S110 - already broken
            pass


def run_sessions(url: str, capture_dir: Path, data: Path, *, sessions: int, tables: int = 3,
                 status_timeout: float = 600) -> LoadResult:
    """``sessions`` concurrent client sessions (threads), then the attribution check of every write."""
    from airflow_provider_lineage.operators.pyspark import _CONNECT_ENV, _restore_environ

    result = LoadResult(sessions, tables)
    tokens = [f"run-{uuid.uuid4().hex}" for _ in range(sessions)]
    barrier = threading.Barrier(sessions)
    saved = {k: os.environ.get(k) for k in _CONNECT_ENV}
    start = time.monotonic()
    threads = [threading.Thread(target=_one_session, args=(url, i, tables, data, tokens[i], barrier,
                                                           result.client_errors), daemon=True)
               for i in range(sessions)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(status_timeout)
    finally:
        _restore_environ(saved)
    deadline = time.monotonic() + status_timeout
    while time.monotonic() < deadline and not all((capture_dir / t / STATUS_NAME).exists() for t in tokens):
        time.sleep(0.5)
    result.seconds = time.monotonic() - start
    check(result, capture_dir, data, tokens)
    return result


def check(result: LoadResult, capture_dir: Path, data: Path, tokens: list[str]) -> None:
    """Fill ``result``'s attribution figures from what the server wrote under ``capture_dir``."""
    where: dict[str, list[str]] = {}  # written table location -> folders holding a record of it
    for folder in capture_dir.iterdir() if capture_dir.exists() else []:
        if folder.name.startswith("connect-"):
            result.untagged_folders += 1
        for path in folder.glob("0*.json"):
            env = json.loads(path.read_text())
            if env.get("kind") == "record":
                location = str(env["payload"]["output"]["location"]).removeprefix("file:")
                where.setdefault(location, []).append(folder.name)
    for i, token in enumerate(tokens):
        missing = 0
        for j in range(result.tables):
            folders = where.get(str(data / f"s{i}" / f"t{j}"), [])
            if not folders:
                result.lost += 1
                missing += 1
            elif folders == [token]:
                result.attributed += 1
            else:
                result.misattributed += 1
        status_path = capture_dir / token / STATUS_NAME
        drops = 0
        if status_path.exists():
            result.statuses += 1
            status = json.loads(status_path.read_text())["payload"]
            for problem in status.get("problems", []):
                if "dropped" in problem:
                    drops += int(problem.split(" ", 1)[0])
        if drops:
            result.runs_reporting_drops += 1
            result.dropped_reported += drops
        elif missing and status_path.exists():  # no status at all: the task reports that itself
            result.silent_losses += 1


def capture_state(log_text: str) -> dict[str, int]:
    """The last ``capture state:`` line of the server's log (``kill -USR1``) as numbers."""
    lines = [line for line in log_text.splitlines() if "capture state: " in line]
    if not lines:
        return {}
    text = lines[-1].split("capture state: ", 1)[1].split(";", 1)[0]
    return {k: int(v) for k, v in (item.split("=", 1) for item in text.split())}
