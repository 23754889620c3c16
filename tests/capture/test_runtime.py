""":class:`CaptureRuntime` in process, on the shared ``spark`` fixture: what the launcher attaches to the driver."""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from airflow_provider_lineage.capture.config import STATUS_FILE
from airflow_provider_lineage.capture.runtime import CaptureRuntime
from airflow_provider_lineage.lineage.record import collapse_nested, read_records


def _one_write(runtime: CaptureRuntime, spark: Any, out: Path) -> None:
    """Attach ``runtime`` to the session, write two rows to ``out``, finish the run and detach."""
    try:
        runtime.on_session(spark)
        spark.range(2).write.mode("overwrite").parquet(str(out))
        runtime.finish(None, 0)
    finally:
        runtime.detach()


class TestCaptureRuntimeInProcess:
    def test_records_dataframe_and_sql_writes_and_status(self, spark, tmp_path: Path) -> None:
        runtime = CaptureRuntime(environ={"AIRFLOW_LINEAGE_CAPTURE_DIR": str(tmp_path / "cap")})
        try:
            runtime.on_session(spark)
            runtime.on_session(spark)  # idempotent per JVM session
            assert len(runtime.listeners) == 1
            spark.range(3).write.mode("overwrite").parquet(str(tmp_path / "a"))
            spark.sql(f"INSERT OVERWRITE DIRECTORY '{tmp_path}/b' USING parquet SELECT 1 AS one")
            runtime.finish(None, 0)
        finally:
            runtime.detach()
        records = read_records(tmp_path / "cap")
        merged = collapse_nested(records)  # INSERT OVERWRITE DIRECTORY = wrapper + inner file write
        assert [(r.command, r.status) for r in merged] == [("InsertIntoHadoopFsRelationCommand", "success")] * 2
        status = json.loads((tmp_path / "cap" / STATUS_FILE).read_text())
        assert status["captured"] == len(records) and status["exit_code"] == 0

    def test_callbacks_not_ready_in_time_attach_nothing_and_say_so(self, spark, tmp_path: Path, monkeypatch) -> None:
        """The early thread still starting py4j's callback server after CALLBACKS_WAIT_S: no listener is installed
        (a second callback server would start beside the first), the job runs, the problem is reported once."""
        from airflow_provider_lineage.capture import runtime as runtime_module

        monkeypatch.setattr(runtime_module, "CALLBACKS_WAIT_S", 0.2)
        release = threading.Event()
        runtime = CaptureRuntime(environ={"AIRFLOW_LINEAGE_CAPTURE_DIR": str(tmp_path / "cap")})
        runtime._callbacks = threading.Thread(target=release.wait, daemon=True)
        runtime._callbacks.start()
        try:
            runtime.on_session(spark)
            spark.range(2).write.mode("overwrite").parquet(str(tmp_path / "e"))
            runtime._sessions.clear()
            runtime.on_session(spark)  # a later session: not waited for again, not reported twice
            runtime.finish(None, 0)
        finally:
            release.set()
            runtime.detach()
        assert (tmp_path / "e").is_dir()
        assert runtime.listeners == [] and runtime.records == []
        late = [p for p in runtime.problems if "callback server was not ready" in p]
        assert len(late) == 1

    def test_unwritable_capture_dir_is_a_problem_not_an_error(self, spark, tmp_path: Path) -> None:
        blocker = tmp_path / "file"
        blocker.write_text("x")
        runtime = CaptureRuntime(environ={"AIRFLOW_LINEAGE_CAPTURE_DIR": str(blocker / "cap")})
        _one_write(runtime, spark, tmp_path / "c")
        assert (tmp_path / "c").is_dir()
        assert any("cannot write capture records" in p for p in runtime.problems)
        assert len(runtime.records) == 1  # kept in memory even though the folder is unusable

    def test_invalid_configuration_turns_capture_off(self, spark, tmp_path: Path) -> None:
        runtime = CaptureRuntime(
            environ={"AIRFLOW_LINEAGE_EMIT": "true", "AIRFLOW_LINEAGE_OPENLINEAGE_CONFIG": "{not json"}
        )
        _one_write(runtime, spark, tmp_path / "d")
        assert runtime.listeners == [] and any("openlineageConfig is not valid JSON" in p for p in runtime.problems)
