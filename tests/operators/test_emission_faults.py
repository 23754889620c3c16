"""A lineage endpoint that is down, answers 5xx or hangs never hurts the task, nor the driver in cluster mode.

Real spark-submit runs; a local HTTP server on 127.0.0.1 stands in for Marquez (which cannot run here).
Checked: the task/application succeeds, the failure is logged exactly once with its cause, and
emission finished (it is bounded by the transport's timeout; no timed assertions).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator, launcher_path
from tests.lineage.test_transport_faults import FakeMarquez, http_config

APP = Path(__file__).parents[1] / "capture" / "apps" / "writes_then_exit.py"


@pytest.fixture
def hanging_marquez():
    server = FakeMarquez("hang")
    yield server
    server.close()


@pytest.fixture
def failing_marquez():
    server = FakeMarquez("5xx")
    yield server
    server.close()


@pytest.mark.slow  # spark-submit end to end: the slow tier (issue 40)
def test_client_mode_task_succeeds_and_logs_the_failure_once(
    tmp_path: Path, hanging_marquez: FakeMarquez, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[1]"}))
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    out = tmp_path / "out"
    out.mkdir()
    op = SparkLineageSubmitOperator(
        task_id="to_a_hanging_marquez",
        application=str(APP),
        application_args=[str(out), "0"],
        conf={"spark.ui.enabled": "false"},
        lineage_emission="self",
        openlineage_config=http_config(hanging_marquez.url),
    )
    pushed: dict[str, object] = {}
    ti = SimpleNamespace(dag_id="adhoc_dag", task_id="t", run_id="manual__1", try_number=1, map_index=-1,
                         xcom_push=lambda key, value: pushed.__setitem__(key, value))
    op.execute({"ti": ti})  # type: ignore[arg-type]  # returns: the task succeeds
    assert (out / "df_out").is_dir()
    assert pushed["lineage_outputs"]  # lineage itself still computed and pushed
    log = capfd.readouterr()  # Airflow 3's task log (structlog) goes to the process streams
    warnings = [line for line in (log.out + log.err).splitlines() if "not delivered" in line]
    assert len(warnings) == 1, warnings
    assert hanging_marquez.url in warnings[0] and "timeout" in warnings[0]
    assert hanging_marquez.requests == 1  # START tried once; COMPLETE not sent to the dead endpoint
    assert "events written to" not in log.out + log.err


@pytest.mark.slow  # spark-submit end to end: the slow tier (issue 40)
def test_cluster_mode_driver_emission_to_a_failing_endpoint(tmp_path: Path, failing_marquez: FakeMarquez) -> None:
    """The launcher as the operator submits it in cluster deploy mode (the driver emits), run locally."""
    out = tmp_path / "out"
    out.mkdir()
    conf = {
        "spark.airflow_lineage.emit": "true",
        "spark.airflow_lineage.openlineageConfig": json.dumps(http_config(failing_marquez.url)),
        "spark.airflow_lineage.jobNamespace": "test-ns",
        "spark.airflow_lineage.jobName": "dag_x.task_y.spark",
    }
    cmd = ["spark-submit", "--master", "local[1]", "--driver-memory", "512m"]
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    cmd += [launcher_path(), str(APP), str(out), "0"]
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    for key in [k for k in env if k.startswith("OPENLINEAGE")]:
        del env[key]
    proc = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "df_out").is_dir()
    output = (proc.stdout + proc.stderr).splitlines()  # with Airflow importable, its logging config may pick stdout
    lines = [line for line in output if "not delivered" in line]
    assert len(lines) == 1, [line for line in output if "provider-lineage" in line]
    assert "503" in lines[0] and failing_marquez.url in lines[0]
    assert not any("event of test-ns" in line and "sent to" in line for line in output)
    assert failing_marquez.requests == 3  # START: first try + 2 retries (fit to the timeout); nothing after
