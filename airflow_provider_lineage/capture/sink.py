"""Where the driver puts capture records: one JSON file per write in a run-scoped folder.

The folder is the hand-over point between the Spark driver (client deploy mode) and the operator,
which reads it with :func:`airflow_provider_lineage.lineage.record.read_records` after spark-submit
returns. Every file appears whole or not at all (:func:`atomic_write_text`).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from airflow_provider_lineage.lineage.record import CaptureRecord


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder and ``os.replace``.

    A reader sees the old file or the new one, never a partial one (``read_records`` skips the
    ``.tmp-`` names it might see meanwhile).
    """
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
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
