"""The launcher runs the user's application unchanged and captures every write.

Subprocess tests run ``spark-submit launcher.py app.py ...`` for real (started together, so the three JVMs
overlap); ``test_runtime.py`` drives :class:`~airflow_provider_lineage.capture.runtime.CaptureRuntime` in process.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyspark
import pytest

from airflow_provider_lineage.capture.config import STATUS_FILE
from airflow_provider_lineage.lineage.record import read_records
from airflow_provider_lineage.operators.spark_lineage import launcher_path

APPS = Path(__file__).parent / "apps"


def lineage_engine_available() -> bool:
    try:
        from airflow_provider_lineage.lineage import analyze_record  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    out: Path
    capture: Path
    events: Path


def _submit_env() -> dict[str, str]:
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    for key in [k for k in env if k.startswith("OPENLINEAGE")]:
        del env[key]
    return env


def _start(tmp: Path, name: str, app: str, args: list[str], conf: dict[str, str]) -> tuple[subprocess.Popen[str], Path]:
    out = tmp / name
    out.mkdir(parents=True)
    cmd = ["spark-submit", "--master", "local[1]", "--driver-memory", "512m"]
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    cmd += [launcher_path(), str(APPS / app), str(out), *args]
    proc = subprocess.Popen(cmd, env=_submit_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    tmp = tmp_path_factory.mktemp("launcher")
    blocker = tmp / "not-a-dir"
    blocker.write_text("a file where the capture folder should be")
    specs = {
        # cluster-mode path: records to a folder AND events emitted by the driver to a file
        "exit0_emit": ("writes_then_exit.py", ["0"], {
            "spark.airflow_lineage.captureDir": str(tmp / "cap_exit0"),
            "spark.airflow_lineage.emit": "true",
            "spark.airflow_lineage.openlineageConfig": json.dumps(
                {"transport": {"type": "file", "log_file_path": str(tmp / "events_exit0_emit.jsonl"), "append": True}}
            ),
            "spark.airflow_lineage.jobNamespace": "test-ns",
            "spark.airflow_lineage.jobName": "dag_x.task_y.spark",
            "spark.openlineage.parentJobNamespace": "test-ns",
            "spark.openlineage.parentJobName": "dag_x.task_y",
            "spark.openlineage.parentRunId": "01a1fe21-84fa-7d44-9b7a-f2f04d15cd3f",
            "spark.openlineage.rootParentJobNamespace": "test-ns",
            "spark.openlineage.rootParentJobName": "dag_x",
            "spark.openlineage.rootParentRunId": "01a1fe21-84e3-775d-aaaf-77acf092e177",
        }),
        "exit3": ("writes_then_exit.py", ["3"], {"spark.airflow_lineage.captureDir": str(tmp / "cap_exit3")}),
        # unwritable capture folder + spark.stop() + uncaught exception
        "raise": ("stop_then_raise.py", [], {"spark.airflow_lineage.captureDir": str(blocker / "cap")}),
    }
    procs = {name: (_start(tmp, name, app, args, conf), conf) for name, (app, args, conf) in specs.items()}
    results: dict[str, Run] = {}
    for name, ((proc, out), conf) in procs.items():
        stdout, stderr = proc.communicate(timeout=600)
        results[name] = Run(
            proc.returncode, stdout, stderr, out, Path(conf["spark.airflow_lineage.captureDir"]),
            tmp / f"events_{name}.jsonl",
        )
    yield results


class TestLauncherSubprocess:
    def test_argv_main_and_path_are_the_applications(self, runs: dict[str, Run]) -> None:
        run = runs["exit3"]
        seen = json.loads((run.out / "argv.json").read_text())
        assert seen["argv"] == [str(APPS / "writes_then_exit.py"), str(run.out), "3"]
        assert seen["name"] == "__main__"
        assert seen["path0"] == str(APPS)

    def test_exit_code_preserved(self, runs: dict[str, Run]) -> None:
        assert runs["exit3"].returncode == 3, runs["exit3"].stderr[-3000:]
        assert runs["exit0_emit"].returncode == 0, runs["exit0_emit"].stderr[-3000:]

    def test_plain_exit_loses_no_write(self, runs: dict[str, Run]) -> None:
        for name in ("exit3", "exit0_emit"):
            records = read_records(runs[name].capture)
            ok = [r for r in records if r.status == "success"]
            assert {r.command for r in ok} >= {"InsertIntoHadoopFsRelationCommand", "InsertIntoDataSourceDirCommand"}
            outs = {(r.output.location or "").rstrip("/").removeprefix("file:") for r in ok}
            assert str(runs[name].out / "df_out") in outs
            status = json.loads((runs[name].capture / STATUS_FILE).read_text())
            assert status["captured"] == len(records) and status["problems"] == []
            # what the capture put on the job's critical path, and what it only moved earlier, are timed apart
            # (benchmarks/capture/overhead.py reports them)
            timings = status["timings"]
            for key in ("setup_s", "attach_s", "drain_s", "finish_s", "pyspark_import_s", "session_state_s",
                        "attach_settings_s", "attach_listener_s", "attach_streaming_s", "attach_start_event_s",
                        "analysis_s", "analysis_walk_s", "analysis_relations_s", "analysis_deliver_s"):
                assert isinstance(timings.get(key), float | int) and timings[key] >= 0, (key, timings)

    def test_failed_write_recorded_as_failure(self, runs: dict[str, Run]) -> None:
        failed = [r for r in read_records(runs["exit3"].capture) if r.status == "failure"]
        assert len(failed) == 1
        assert failed[0].output is not None and failed[0].output.location.rstrip("/").endswith("df_out")
        assert failed[0].error and "already exists" in failed[0].error.lower()

    def test_exception_preserved_and_unwritable_capture_dir_harmless(self, runs: dict[str, Run]) -> None:
        run = runs["raise"]
        assert run.returncode == 1
        output = run.stdout + run.stderr  # spark-submit merges the Python driver's stderr into its stdout
        assert "ValueError: boom from the user application" in output
        assert "airflow-provider-lineage" in output and "cannot write capture records" in output
        assert (run.out / "stopped_out").is_dir()  # the job did its work

    def test_driver_emits_events_with_parent(self, runs: dict[str, Run]) -> None:
        events = [json.loads(line) for line in runs["exit0_emit"].events.read_text().splitlines()]
        assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
        assert {e["run"]["runId"] for e in events} == {events[0]["run"]["runId"]}
        for e in events:
            assert e["job"] == {**e["job"], "namespace": "test-ns", "name": "dag_x.task_y.spark"}
            parent = e["run"]["facets"]["parent"]
            assert (parent["job"]["namespace"], parent["job"]["name"]) == ("test-ns", "dag_x.task_y")
            assert parent["run"]["runId"] == "01a1fe21-84fa-7d44-9b7a-f2f04d15cd3f"
            assert parent["root"]["job"]["name"] == "dag_x"
            assert e["run"]["facets"]["processing_engine"]["version"] == pyspark.__version__
        complete = events[1]
        if lineage_engine_available():
            names = {o["name"] for o in complete["outputs"]}
            assert str(runs["exit0_emit"].out / "df_out") in names
        # the failed write shows up as an extraction error, not as an output
        errors = complete["run"]["facets"]["extractionError"]["errors"]
        assert any("write failed" in e["errorMessage"] for e in errors)
