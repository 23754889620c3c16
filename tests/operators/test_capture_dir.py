"""The operator's reading of a run folder (issue 7, point 4): an unreadable capture record is skipped and
reported, the other records still give lineage, and every event and facet carries one producer URI."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openlineage.client.serde import Serde

from airflow_provider_lineage import PRODUCER
from airflow_provider_lineage.capture.listener import CaptureSession
from airflow_provider_lineage.capture.sink import RecordSink
from airflow_provider_lineage.lineage import events
from airflow_provider_lineage.lineage.model import ParentRun
from airflow_provider_lineage.lineage.record import read_records
from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator
from tests.operators.ol_schema import validate_or_skip


def _producers(obj: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("producer", "_producer"):
                out.add(v)
            else:
                out |= _producers(v)
    elif isinstance(obj, list):
        for v in obj:
            out |= _producers(v)
    return out


def _run_folder(spark, tmp_path: Path) -> tuple[Path, list[Path]]:
    from pyspark.sql import functions as F

    src = tmp_path / "src"
    spark.range(5).withColumn("v", F.col("id") * 2).write.mode("overwrite").parquet(str(src))
    with CaptureSession(spark) as cap:
        for name in ("a", "b"):
            spark.read.parquet(str(src)).select((F.col("v") + 1).alias("w")).write.mode("overwrite").parquet(
                str(tmp_path / name))
    folder = tmp_path / "cap"
    sink = RecordSink(folder)
    for i, rec in enumerate(cap.records, 1):
        rec.sequence = i
        sink.write(rec)
    return folder, sorted(folder.glob("*.json"))


def test_one_unreadable_record_is_skipped_and_reported(spark, tmp_path: Path) -> None:
    folder, files = _run_folder(spark, tmp_path)
    files[0].write_text(files[0].read_text()[:100])  # truncated mid-write
    (folder / "000099-other-version.json").write_text(json.dumps({"format_version": 99, "command": "X"}))
    errors: list[str] = []
    assert [r.sequence for r in read_records(folder, errors)] == [2]
    assert len(errors) == 2 and str(files[0]) in errors[0] and "format_version 99" in errors[1]

    op = SparkLineageSubmitOperator(task_id="t", application="a.py")
    result = op.process_capture_dir(str(folder))
    assert [o.name for o in op.get_openlineage_facets_on_complete(None).outputs] == [str(tmp_path / "b")]
    facet = op.get_openlineage_facets_on_complete(None).run_facets["extractionError"]
    bad = [e for e in facet.errors if "unreadable capture record" in e.errorMessage]
    assert len(bad) == 2 and bad[0].task == str(files[0])
    assert facet.totalTasks == 3 and facet.failedTasks >= 2
    assert result.total == 3


def test_every_event_and_facet_has_the_one_producer(spark, tmp_path: Path) -> None:
    folder, files = _run_folder(spark, tmp_path)
    files[0].write_text("{")  # an extractionError facet too
    op = SparkLineageSubmitOperator(task_id="t", application="a.py")
    result = op.process_capture_dir(str(folder))
    ins, outs = events.datasets(result)
    parent = ParentRun(
        "ns", "dag.task", "01a1fe21-84fa-7d44-9b7a-f2f04d15cd3f", "ns", "dag", "01a1fe21-84fa-7d44-9b7a-f2f04d15cd40"
    )
    emitted = [
        json.loads(Serde.to_json(events.build_event(
            kind, job_namespace="ns", job_name="dag.task", run_id=parent.run_id, inputs=ins, outputs=outs,
            run_facets=events.run_facets(result, parent=parent, error=RuntimeError("boom") if kind == "FAIL" else None,
                                       spark_version="4.1.3"),
            job_facets=events.job_facets())))
        for kind in ("START", "COMPLETE", "FAIL")
    ]
    validate_or_skip(emitted)
    assert all({"extractionError", "processing_engine", "parent"} <= set(e["run"]["facets"]) for e in emitted)
    assert _producers(emitted) == {PRODUCER}
