"""Where the driver puts capture records: one JSON file per write in a run-scoped folder.

The folder is the hand-over point between the Spark driver (client deploy mode) and the operator,
which reads it with :func:`airflow_provider_lineage.lineage.record.read_records` after spark-submit
returns. Every file appears whole or not at all (:func:`atomic_write_text`).

Files and folders follow the process's umask, as any file a program creates (``0644``/``0755`` under the usual
``022``; ``umask 0027`` makes them group-readable for a driver and an Airflow worker that run as different users
of one group on a shared path), not ``tempfile``'s private ``0600``.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from airflow_provider_lineage.lineage.record import CaptureRecord


def process_umask() -> int:
    """The process's umask, read without changing it (Linux's ``/proc/self/status``; elsewhere set and restored)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode a new file gets under the process's umask (``open()``'s ``0666 & ~umask``)."""
    return 0o666 & ~process_umask()


def temp_file(folder: str | os.PathLike[str]) -> tuple[int, str]:
    """``tempfile.mkstemp`` in ``folder`` (a ``.tmp-`` name), with the umask's mode instead of ``0600``."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        os.fchmod(fd, file_mode())
    except OSError:
        pass  # a file system without modes: its own rules apply
    return fd, tmp


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder and ``os.replace``.

    A reader sees the old file or the new one, never a partial one (``read_records`` skips the
    ``.tmp-`` names it might see meanwhile).
    """
    target = Path(path)
    fd, tmp = temp_file(target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


class RecordSink:
    """Writes records as one JSON file each into a run-scoped folder; atomic per record."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def write(self, record: CaptureRecord) -> Path:
        return atomic_write_text(self.directory / f"{record.sequence:06d}-{record.record_id}.json", record.to_json())
