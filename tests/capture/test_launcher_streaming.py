"""``foreachBatch`` under the launcher (what SparkLineageSubmitOperator submits): a real ``spark-submit launcher.py``
of ``apps/streaming_foreach_batch.py``; its run folder, read and collapsed as the operator does, holds one write per
query (``availableNow`` over two micro-batches, ``once``) with column lineage from the streaming source's columns."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from airflow_provider_lineage.lineage.engine import analyze_record
from airflow_provider_lineage.lineage.record import collapse_nested, read_records
from airflow_provider_lineage.operators.spark_lineage import launcher_path
from tests.capture.test_launcher import APPS, _submit_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_foreach_batch_queries_are_one_write_each_from_the_source(tmp_path: Path) -> None:
    out, capture = tmp_path / "out", tmp_path / "capture"
    out.mkdir()
    cmd = ["spark-submit", "--master", "local[1]", "--driver-memory", "512m",
           "--conf", f"spark.airflow_lineage.captureDir={capture}", launcher_path(),
           str(APPS / "streaming_foreach_batch.py"), str(out)]
    proc = subprocess.run(cmd, check=False, env=_submit_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = collapse_nested(sorted(read_records(capture), key=lambda r: r.sequence))
    streamed = {Path(r.output.location).name: r for r in records if r.streaming and r.output and r.output.location}
    assert sorted(streamed) == ["fb_available", "fb_once"]
    assert [r for r in records if r.streaming.get("sink") == "ForeachBatchSink" and r not in streamed.values()] == []
    assert streamed["fb_available"].streaming["batches"] == 2
    assert streamed["fb_available"].streaming["batch_writes"] == 2
    assert streamed["fb_once"].streaming["batches"] == 1
    for rec in streamed.values():
        assert rec.streaming["state"] == "terminated" and rec.status == "success"
        lin = analyze_record(rec)
        edges = {c: {(Path(e.dataset.name).name, e.field) for e in es} for c, es in lin.columns.items()}
        assert edges == {"id": {("src", "id")}, "w10": {("src", "v")}}
