"""capture/connect.py without a server: the Connect identity in a SQL execution's job tags, folder names, and the
capture's runs and statuses with a sink in memory (the server itself: tests/operators/test_pyspark_connect.py)."""
from __future__ import annotations

import json
from typing import Any

from airflow_provider_lineage.capture.connect import (
    TOKEN_TAG_PREFIX,
    ConnectCapture,
    ConnectIdentity,
    parse_job_tags,
)

SESSION = "2e66d13b-ea5c-4397-aadd-c8a1a3b439a7"
OPERATION = "3e99fb45-8448-426c-9b35-f8aabc608123"


def test_identity_from_spark_4_job_tags() -> None:
    """The tags Spark 4.1.3 put on a Connect write (read from a real server's SQLExecutionStart)."""
    ident = parse_job_tags([
        f"SparkConnect_OperationTag_User_alice_Session_{SESSION}_Operation_{OPERATION}",
        f"SparkConnect_SessionTag_User_alice_Session_{SESSION}_Tag_airflow-task-xyz",
        f"SparkConnect_SessionTag_User_alice_Session_{SESSION}_Tag_{TOKEN_TAG_PREFIX}run-abc",
        "spark-session-4709b138-6234-428b-a4b0-1f2acd1e2afb-execution-root-id-0",
    ])
    assert (ident.user_id, ident.session_id, ident.operation_id) == ("alice", SESSION, OPERATION)
    assert ident.tags == ["airflow-task-xyz", f"{TOKEN_TAG_PREFIX}run-abc"]
    assert ident.token == "run-abc"


def test_user_names_with_underscores_and_no_tags() -> None:
    ident = parse_job_tags([f"SparkConnect_OperationTag_User_svc_etl_Session_{SESSION}_Operation_{OPERATION}"])
    assert ident.user_id == "svc_etl" and ident.token is None
    assert parse_job_tags(["spark-session-x"]).session_id is None


def test_untagged_folder_and_job_name() -> None:
    ident = ConnectIdentity(user_id="a/b c", session_id=SESSION)
    assert ident.folder_key() == f"connect-a_b_c-{SESSION}"
    assert ident.task_run() == f"spark_connect/a/b c/{SESSION}"


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
