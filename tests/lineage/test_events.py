"""Run events from capture records: problems instead of exceptions, facets the spec accepts."""
from __future__ import annotations

import json

from openlineage.client.serde import Serde

from airflow_provider_lineage import PRODUCER
from airflow_provider_lineage.lineage import events
from airflow_provider_lineage.lineage.model import ParentRun
from airflow_provider_lineage.lineage.record import CaptureRecord, OutputInfo
from tests.operators.ol_schema import validate_or_skip


def test_a_record_without_a_plan_is_a_problem_not_an_error() -> None:
    rec = CaptureRecord(command="InsertIntoHadoopFsRelationCommand", status="success", sequence=1,
                        output=OutputInfo(command="InsertIntoHadoopFsRelationCommand", location="file:/t"),
                        capture_error="optimizedPlan().toJSON() failed")
    failed = CaptureRecord(command="InsertIntoHadoopFsRelationCommand", status="failure", sequence=2,
                           error="path file:/t already exists")
    result = events.analyze([failed, rec])
    assert result.lineages == [] and [r.sequence for r in result.failed_writes] == [2]
    assert any("incomplete capture" in p.message for p in result.problems)
    assert any("lineage analysis failed" in p.message for p in result.problems)
    assert events.datasets(result) == ([], [])
    assert "FAILED write" in events.summaries(result)


def test_events_carry_parent_errors_and_one_producer() -> None:
    rec = CaptureRecord(command="InsertIntoHadoopFsRelationCommand", status="failure", sequence=1, error="boom")
    result = events.analyze([rec])
    parent = ParentRun("ns", "dag.task", "01a1fe21-84fa-7d44-9b7a-f2f04d15cd3f", "ns", "dag",
                       "01a1fe21-84e3-775d-aaaf-77acf092e177")
    event = events.build_event(
        "FAIL", job_namespace="ns", job_name="dag.task.spark", run_id=events.new_run_id(),
        run_facets=events.run_facets(result, parent=parent, error=RuntimeError("job failed"), spark_version="4.1.3"),
        job_facets=events.job_facets(),
    )
    doc = json.loads(Serde.to_json(event))
    facets = doc["run"]["facets"]
    assert facets["parent"]["run"]["runId"] == parent.run_id and facets["parent"]["root"]["job"]["name"] == "dag"
    assert facets["errorMessage"]["message"] == "RuntimeError: job failed"
    assert facets["extractionError"]["failedTasks"] == 1
    assert doc["producer"] == PRODUCER and all(f["_producer"] == PRODUCER for f in facets.values())
    validate_or_skip([doc])
