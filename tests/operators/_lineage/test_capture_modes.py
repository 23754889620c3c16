"""The capture mode of a spark-submit run, chosen once (``capture_modes.choose``), and what each one sets and removes.

The end-to-end runs of each mode are tests/operators/test_spark_lineage.py (local folder),
tests/operators/test_capture_dir.py and test_remote_capture.py (shared location, driver emits)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_lineage.capture.config import STATUS_FILE, LauncherConfig
from airflow_provider_lineage.lineage.model import ParentRun
from airflow_provider_lineage.operators._lineage import capture_modes as cm
from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator

RUN = ParentRun("default", "d.t", "0190a0a0-0000-7000-8000-000000000000")


def _op(**kwargs: object) -> SparkLineageSubmitOperator:
    return SparkLineageSubmitOperator(task_id="t", application="app.py", **kwargs)  # type: ignore[arg-type]


def test_client_mode_without_capture_dir_uses_a_temporary_folder_removed_after() -> None:
    mode = cm.choose(_op(), RUN, "client", "self")
    assert type(mode) is cm.LocalFolderCapture and not mode.ships_capture_code
    cfg = LauncherConfig()
    mode.configure(cfg)
    folder = Path(cfg.capture_dir or "")
    assert folder.is_dir() and folder.name.startswith("apl-capture-")
    (folder / STATUS_FILE).write_text(json.dumps({"problems": []}), encoding="utf-8")
    result = mode.collect(None)
    assert result.lineages == [] and not result.problems  # an empty run: nothing written, nothing wrong
    mode.cleanup()
    assert not folder.exists()


def test_client_mode_keeps_a_given_folder(tmp_path: Path) -> None:
    mode = cm.choose(_op(capture_dir=str(tmp_path / "cap")), RUN, "client", "self")
    cfg = LauncherConfig()
    (tmp_path / "cap").mkdir()
    mode.configure(cfg)
    assert cfg.capture_dir == str((tmp_path / "cap").resolve())
    result = mode.collect(None)
    assert any("no status file" in p.message for p in result.problems)  # the launcher never ran
    mode.cleanup()
    assert (tmp_path / "cap").is_dir()


@pytest.mark.parametrize(("emission", "emit"), [("self", True), ("off", False)])
def test_cluster_mode_without_a_shared_location_lets_the_driver_emit(emission: str, emit: bool) -> None:
    mode = cm.choose(_op(), RUN, "cluster", emission)
    assert type(mode) is cm.DriverEmitsCapture and mode.ships_capture_code
    cfg = LauncherConfig()
    mode.configure(cfg)
    assert (cfg.emit, cfg.capture_dir, cfg.job_name, cfg.parent) == (emit, None, "d.t.spark", RUN)
    assert mode.collect(None).lineages == []


def test_a_shared_location_gets_this_attempts_token(tmp_path: Path) -> None:
    op = _op(capture_dir=str(tmp_path / "shared"), capture_record_limit=4096)
    mode = cm.choose(op, RUN, "cluster", "self")
    assert type(mode) is cm.SharedDirCapture and mode.ships_capture_code
    cfg = LauncherConfig()
    mode.configure(cfg)
    assert cfg.capture_dir == str(tmp_path / "shared") and cfg.capture_token == mode.capture.token
    assert cfg.capture_token.startswith("run-") and cfg.max_record_bytes == 4096 and not cfg.emit
    result = mode.collect(None)
    assert any("left no status" in p.message for p in result.problems)
    mode.cleanup()
    assert mode.local is not None and not Path(mode.local).exists()


def test_an_unreachable_shared_location_in_client_mode_falls_back_to_a_local_folder() -> None:
    op = _op(capture_dir="s3://no-such-bucket-apl/prefix", capture_conn_id=None)
    mode = cm.choose(op, RUN, "client", "self")
    assert type(mode) is cm.LocalFolderCapture and op.capture_dir is None
