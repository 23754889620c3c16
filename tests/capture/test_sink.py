"""RecordSink / atomic_write_text: whole files or none, read back by the lineage side."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from airflow_provider_lineage.capture.sink import RecordSink, atomic_write_text
from airflow_provider_lineage.lineage.record import CaptureRecord, OutputInfo, read_records


def test_atomic_write_replaces_whole_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "status"
    atomic_write_text(target, "one")
    atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["status"]


def test_atomic_write_failure_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "status"
    atomic_write_text(target, "old")

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("airflow_provider_lineage.capture.sink.os.replace", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["status"]


def test_records_round_trip_in_write_order(tmp_path: Path) -> None:
    sink = RecordSink(tmp_path / "run")
    for seq in (2, 1):
        sink.write(
            CaptureRecord(
                command="InsertIntoHadoopFsRelationCommand",
                status="success",
                sequence=seq,
                output=OutputInfo(command="InsertIntoHadoopFsRelationCommand", location=f"file:/t{seq}"),
            )
        )
    records = read_records(tmp_path / "run")
    assert [r.sequence for r in records] == [1, 2]
    assert records[0].output is not None and records[0].output.location == "file:/t1"


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077])
def test_files_and_folders_follow_the_umask(tmp_path: Path, umask: int) -> None:
    """Not tempfile's private 0600: a driver and a worker of one group can share a path (issue 47)."""
    from airflow_provider_lineage.capture.remote import RemoteSink

    old = os.umask(umask)
    try:
        written = atomic_write_text(tmp_path / "status", "x")
        sink = RemoteSink(str(tmp_path / "cap"), "run-" + "0" * 32)
        sink.write_status("{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(written.stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "cap" / ("run-" + "0" * 32) / "_launcher.status.json").stat().st_mode) == \
        0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "cap" / ("run-" + "0" * 32)).stat().st_mode) == 0o777 & ~umask
