"""From capture records to OpenLineage run events, and where the events go.

Used by the Airflow operator (client deploy mode: after spark-submit returns, on the worker) and by
the launcher inside the Spark driver (cluster deploy mode). Therefore: no Airflow imports here.

Steps: :func:`analyze` runs every successful write record through the lineage engine
(:func:`airflow_provider_lineage.lineage.analyze_record`) and collects problems instead of raising;
:func:`datasets` turns the result into OpenLineage input/output datasets (schema, columnLineage,
symlinks facets); :func:`run_facets` and :func:`build_event` make the run events;
:func:`client_for` picks the openlineage-python client (explicit config, else the standard
``OPENLINEAGE_*`` settings / ``openlineage.yml``, else the embedded default file
``$AIRFLOW_HOME/lineage/events.jsonl``).
"""
from __future__ import annotations

import datetime as dt
import logging
import os
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_lineage import PRODUCER, __version__
from airflow_provider_lineage.capture.config import ParentRun
from airflow_provider_lineage.capture.records import CaptureRecord, collapse_nested

if TYPE_CHECKING:
    from openlineage.client import OpenLineageClient
    from openlineage.client.event_v2 import InputDataset, OutputDataset, RunEvent

log = logging.getLogger(__name__)

#: XCom key under which the operator pushes the datasets a task wrote.
XCOM_OUTPUTS_KEY = "lineage_outputs"


@dataclass
class Problem:
    """A capture or analysis problem: reported as an ``extractionError`` entry, never raised."""

    message: str
    task: str | None = None
    stack: str | None = None


@dataclass
class LineageResult:
    """The lineage of one application run.

    :param lineages: one ``WriteLineage`` per successful, analysable write (write order).
    :param records: the capture records after :func:`collapse_nested`.
    :param failed_writes: records of writes that raised in Spark.
    :param problems: capture/analysis problems (the job is unaffected; reported as extractionError).
    :param unreadable: capture record files that could not be read (skipped; each is also a problem).
    """

    lineages: list[Any] = field(default_factory=list)
    records: list[CaptureRecord] = field(default_factory=list)
    failed_writes: list[CaptureRecord] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    analysed_pairs: list[tuple[CaptureRecord, Any]] = field(default_factory=list)
    unreadable: int = 0

    @property
    def spark_version(self) -> str | None:
        for rec in self.records:
            if rec.spark_version:
                return rec.spark_version
        return None

    @property
    def total(self) -> int:
        """Writes seen: the records, plus capture files that could not be read."""
        return len(self.records) + self.unreadable


def analyze(records: Iterable[CaptureRecord], problems: Iterable[Problem] = ()) -> LineageResult:
    """Run the lineage engine over ``records``; an engine error on one record becomes a problem."""
    result = LineageResult(problems=list(problems))
    result.records = collapse_nested(sorted(records, key=lambda r: r.sequence))
    try:
        from airflow_provider_lineage.lineage import analyze_record
    except Exception as exc:  # engine missing or broken: never fail the job for it
        result.problems.append(Problem(f"lineage engine unavailable: {exc!r}", stack=traceback.format_exc()))
        analyze_record = None
    for rec in result.records:
        label = f"{rec.command} #{rec.sequence}"
        if rec.capture_error:
            result.problems.append(Problem(f"incomplete capture: {rec.capture_error}", task=label))
        if rec.status != "success":
            result.failed_writes.append(rec)
            continue
        if analyze_record is None:
            continue
        try:
            lineage = analyze_record(rec)
        except Exception as exc:
            result.problems.append(Problem(f"lineage analysis failed: {exc!r}", task=label, stack=traceback.format_exc()))
            continue
        result.lineages.append(lineage)
        result.analysed_pairs.append((rec, lineage))
    return result


def datasets(result: LineageResult) -> tuple[list[InputDataset], list[OutputDataset]]:
    """OpenLineage datasets with schema/columnLineage/symlinks facets (empty when nothing was analysed)."""
    if not result.lineages:
        return [], []
    try:
        from airflow_provider_lineage.lineage.facets import datasets_for

        inputs, outputs = datasets_for(result.lineages)
        return list(inputs), list(outputs)
    except Exception as exc:
        result.problems.append(Problem(f"building OpenLineage datasets failed: {exc!r}", stack=traceback.format_exc()))
        return [], []


def summaries(result: LineageResult) -> str:
    """A short human-readable column-lineage summary of every write, for the task log."""
    lines: list[str] = []
    try:
        from airflow_provider_lineage.lineage.summary import summarize
    except Exception:
        summarize = None
    for rec, lineage in result.analysed_pairs:
        if summarize is not None:
            try:
                lines.append(summarize(lineage))
                continue
            except Exception as exc:
                lines.append(f"(summary of {rec.command} failed: {exc!r})")
        lines.append(f"{rec.command} -> {_describe_output(rec)}")
    for rec in result.failed_writes:
        lines.append(f"FAILED write {rec.command} -> {_describe_output(rec)}: {rec.error}")
    for problem in result.problems:
        lines.append(f"capture problem{f' ({problem.task})' if problem.task else ''}: {problem.message}")
    if not lines:
        lines.append("no writes captured")
    return "\n".join(lines)


def _describe_output(rec: CaptureRecord) -> str:
    out = rec.output
    if out is None:
        return "?"
    return out.table or out.location or out.format or out.command


def written_datasets(result: LineageResult) -> list[dict[str, Any]]:
    """The datasets the run wrote, as plain JSON for XCom (consumed by the Sieve operator).

    Each: ``{namespace, name, table, location, format, columns, mode}``.
    """
    out: list[dict[str, Any]] = []
    for rec, lineage in result.analysed_pairs:
        ref = getattr(lineage, "output", None)
        info = rec.output
        if ref is None:  # a write that persists nothing (noop format)
            continue
        fields = getattr(lineage, "output_fields", None) or (info.columns if info else [])
        columns = [c if isinstance(c, str) else c[0] if isinstance(c, (tuple, list)) else str(c) for c in fields]
        out.append(
            {
                "namespace": getattr(ref, "namespace", None),
                "name": getattr(ref, "name", None),
                "table": getattr(ref, "table", None) or (info.table if info else None),
                "location": info.location if info else None,
                "format": info.format if info else None,
                "columns": columns,
                "mode": info.mode if info else None,
            }
        )
    return out


# -- events -----------------------------------------------------------------------------------
def run_facets(
    result: LineageResult | None,
    *,
    parent: ParentRun | None = None,
    error: BaseException | str | None = None,
    spark_version: str | None = None,
) -> dict[str, Any]:
    """Run facets: parent, processing_engine, errorMessage (job failure), extractionError (capture problems)."""
    from openlineage.client.generated import (
        error_message_run,
        extraction_error_run,
        parent_run,
        processing_engine_run,
    )

    facets: dict[str, Any] = {}
    if parent is not None:
        root = None
        if parent.root_run_id and parent.root_name:
            root = parent_run.Root(
                run=parent_run.RootRun(runId=parent.root_run_id),
                job=parent_run.RootJob(namespace=parent.root_namespace or parent.namespace, name=parent.root_name),
            )
        facets["parent"] = parent_run.ParentRunFacet(
            run=parent_run.Run(runId=parent.run_id),
            job=parent_run.Job(namespace=parent.namespace, name=parent.name),
            root=root,
            producer=PRODUCER,
        )
    version = spark_version or (result.spark_version if result else None)
    if version:
        facets["processing_engine"] = processing_engine_run.ProcessingEngineRunFacet(
            version=version, name="spark", openlineageAdapterVersion=__version__, producer=PRODUCER
        )
    if error is not None:
        if isinstance(error, BaseException):
            message = f"{type(error).__name__}: {error}"
            stack = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        else:
            message, stack = str(error), None
        facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=message[:10_000], programmingLanguage="python", stackTrace=stack, producer=PRODUCER
        )
    if result is not None and (result.problems or result.failed_writes):
        errors = [
            extraction_error_run.Error(errorMessage=p.message[:10_000], stackTrace=p.stack, task=p.task)
            for p in result.problems
        ]
        errors += [
            extraction_error_run.Error(
                errorMessage=f"write failed: {rec.error}"[:10_000], task=f"{rec.command} #{rec.sequence}", taskNumber=rec.sequence
            )
            for rec in result.failed_writes
        ]
        failed = len({p.task for p in result.problems if p.task}) + len(result.failed_writes)
        if any(p.task is None for p in result.problems):
            failed = max(failed, 1)
        facets["extractionError"] = extraction_error_run.ExtractionErrorRunFacet(
            totalTasks=max(result.total, failed), failedTasks=failed, errors=errors, producer=PRODUCER
        )
    return facets


def job_facets(integration: str = "SPARK", job_type: str = "TASK") -> dict[str, Any]:
    from openlineage.client.generated import job_type_job

    return {
        "jobType": job_type_job.JobTypeJobFacet(
            processingType="BATCH", integration=integration, jobType=job_type, producer=PRODUCER
        )
    }


def build_event(
    event_type: str,
    *,
    job_namespace: str,
    job_name: str,
    run_id: str,
    inputs: Sequence[Any] = (),
    outputs: Sequence[Any] = (),
    run_facets: dict[str, Any] | None = None,
    job_facets: dict[str, Any] | None = None,
    event_time: dt.datetime | None = None,
) -> RunEvent:
    """One OpenLineage ``RunEvent`` (``START``, ``COMPLETE``, ``FAIL`` ...)."""
    from openlineage.client.event_v2 import Job, Run, RunEvent, RunState

    return RunEvent(
        eventType=RunState[event_type],
        eventTime=(event_time or dt.datetime.now(dt.UTC)).isoformat(),
        run=Run(runId=run_id, facets=run_facets or {}),
        job=Job(namespace=job_namespace, name=job_name, facets=job_facets or {}),
        inputs=list(inputs),
        outputs=list(outputs),
        producer=PRODUCER,
    )


def new_run_id() -> str:
    from openlineage.client.uuid import generate_new_uuid

    return str(generate_new_uuid())


# -- where events go ----------------------------------------------------------------------------
def default_events_path(airflow_home: str | None = None) -> Path:
    """The embedded default destination: ``$AIRFLOW_HOME/lineage/events.jsonl`` (``~/airflow`` if unset)."""
    home = airflow_home or os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
    return Path(home) / "lineage" / "events.jsonl"


def default_file_config(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """openlineage-python config writing JSON lines to one file (appending)."""
    target = Path(path) if path is not None else default_events_path()
    return {"transport": {"type": "file", "log_file_path": str(target), "append": True}}


def environment_configured() -> bool:
    """Whether openlineage-python finds a transport in the standard places (``OPENLINEAGE_*``, openlineage.yml)."""
    from openlineage.client import OpenLineageClient

    if os.environ.get("OPENLINEAGE_URL") or os.environ.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return True
    if any(k.startswith("OPENLINEAGE__TRANSPORT") and v for k, v in os.environ.items()):
        return True
    return OpenLineageClient._find_yaml_config_path() is not None


def client_for(config: dict[str, Any] | None = None) -> tuple[OpenLineageClient, str]:
    """The client to emit with, and a description of where the events go.

    ``config`` (an openlineage-python config dict) wins; else the standard environment/yaml
    configuration; else the embedded default file.
    """
    from openlineage.client import OpenLineageClient

    if config is None and not environment_configured():
        config = default_file_config()
    if config is not None:
        transport = config.get("transport") or {}
        if transport.get("type") == "file":
            Path(transport["log_file_path"]).parent.mkdir(parents=True, exist_ok=True)
        client = OpenLineageClient(config=config)
    else:
        client = OpenLineageClient()
    return client, describe_transport(client)


def describe_transport(client: OpenLineageClient) -> str:
    transport = client.transport
    kind = getattr(transport, "kind", type(transport).__name__)
    cfg = getattr(transport, "config", None)
    if kind == "file" and cfg is not None:
        return f"file {cfg.log_file_path}" + ("" if cfg.append else " (one file per event)")
    if kind == "http" and cfg is not None:
        return f"http {getattr(cfg, 'url', '')}{'/' + cfg.endpoint if getattr(cfg, 'endpoint', None) else ''}"
    return str(kind)


def emit_all(client: OpenLineageClient, events: Iterable[RunEvent]) -> list[str]:
    """Emit events; a transport error is returned (and logged), never raised."""
    problems: list[str] = []
    for event in events:
        try:
            client.emit(event)
        except Exception as exc:
            msg = f"emitting the {event.eventType.value} event failed: {exc!r}"
            log.warning("airflow-provider-lineage: %s", msg)
            problems.append(msg)
    try:
        client.close(timeout=30)
    except Exception:
        pass
    return problems
