"""capture/connect_tokens.py: the Connect identity in a SQL execution's job tags, folder names, the token shape the
operators issue and the run folders it maps to (issue 47)."""
from __future__ import annotations

import pytest

from airflow_provider_lineage.capture.connect_tokens import (
    TOKEN_TAG_PREFIX,
    ConnectIdentity,
    folder_inside,
    parse_job_tags,
    valid_token,
)

SESSION = "2e66d13b-ea5c-4397-aadd-c8a1a3b439a7"
OPERATION = "3e99fb45-8448-426c-9b35-f8aabc608123"
T1, T2 = "run-" + "1" * 32, "run-" + "2" * 32


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


def test_token_shape_is_the_operators() -> None:
    from airflow_provider_lineage.operators._lineage.connect_run import ConnectRun

    assert valid_token(ConnectRun(None, "ns/d.t/r").token)
    assert not any(valid_token(t) for t in ("../escaped", "/etc", "run-abc", "run-" + "A" * 32, T1 + "/..", "", None))


def test_run_folders_stay_inside_the_capture_dir(tmp_path) -> None:
    cap = tmp_path / "cap"
    cap.mkdir()
    assert folder_inside(str(cap), T1) == f"{cap}/{T1}"
    assert folder_inside("s3://b/p/", T1) == f"s3://b/p/{T1}"
    for bad in ("..", "a/../../x", "/etc", ""):
        with pytest.raises(ValueError):
            folder_inside(str(cap), bad)
    (tmp_path / "outside").mkdir()
    (cap / T2).symlink_to(tmp_path / "outside")
    with pytest.raises(ValueError, match="outside the capture location"):
        folder_inside(str(cap), T2)
