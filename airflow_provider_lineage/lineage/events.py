"""From capture records to OpenLineage run events (no Airflow imports).

Used by the Airflow operator (client deploy mode: after spark-submit returns, on the worker) and by
the launcher inside the Spark driver (cluster deploy mode).

Steps: :func:`analyze` runs every successful write record through the engine
(:func:`~airflow_provider_lineage.lineage.engine.analyze_record`) and collects problems instead of
raising; :func:`datasets` turns the result into OpenLineage input/output datasets (schema,
columnLineage, symlinks facets); :func:`run_facets` and :func:`build_event` make the run events.
Where they go is :mod:`.transport`'s business.
"""
from __future__ import annotations

import datetime as dt
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_lineage import PRODUCER, __version__
from airflow_provider_lineage.lineage.engine import analyze_record
from airflow_provider_lineage.lineage.facets import datasets_for
from airflow_provider_lineage.lineage.model import DEFAULT_INDIRECT, ParentRun, WriteLineage
from airflow_provider_lineage.lineage.naming import identity_problem
from airflow_provider_lineage.lineage.record import CaptureRecord, collapse_nested
from airflow_provider_lineage.lineage.summary import summarize

if TYPE_CHECKING:
    from openlineage.client.event_v2 import InputDataset, OutputDataset, RunEvent


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

    lineages: list[WriteLineage] = field(default_factory=list)
    records: list[CaptureRecord] = field(default_factory=list)
    failed_writes: list[CaptureRecord] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    analysed_pairs: list[tuple[CaptureRecord, WriteLineage]] = field(default_factory=list)
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
    for rec in result.records:
        label = f"{rec.command} #{rec.sequence}"
        if rec.capture_error:
            result.problems.append(Problem(f"incomplete capture: {rec.capture_error}", task=label))
        if rec.status != "success":
            result.failed_writes.append(rec)
            continue
        try:
            lineage = analyze_record(rec)
        except Exception as exc:  # noqa: BLE001 - one write's analysis never costs the others or the job
            result.problems.append(
                Problem(f"lineage analysis failed: {exc!r}", task=label, stack=traceback.format_exc())
            )
            continue
        _guard_identities(lineage, label, result.problems)
        result.lineages.append(lineage)
        result.analysed_pairs.append((rec, lineage))
    return result


def _guard_identities(lineage: WriteLineage, label: str, problems: list[Problem]) -> None:
    """Refuse dataset names that are not identities (plan text, JVM object hashes, newlines, Java class
    names): such a name differs at every run and makes an orphan dataset. The write stays captured (its
    record, summary and the other datasets); the bad dataset is left out of the events, with a problem."""
    out = lineage.output
    if out is not None:
        why = identity_problem(out.namespace, out.name)
        if why:
            problems.append(Problem(f"output dataset left out of the lineage events: {why}", task=label))
            lineage.output = None
    kept = []
    for ref, fields in lineage.inputs:
        why = identity_problem(ref.namespace, ref.name)
        if why:
            problems.append(Problem(f"input dataset left out of the lineage events: {why}", task=label))
            continue
        kept.append((ref, fields))
    if len(kept) != len(lineage.inputs):
        bad = {ref for ref, _ in lineage.inputs} - {ref for ref, _ in kept}
        lineage.inputs = kept
        lineage.columns = {c: [e for e in es if e.dataset not in bad] for c, es in lineage.columns.items()}
        lineage.dataset_edges = [e for e in lineage.dataset_edges if e.dataset not in bad]


def datasets(result: LineageResult, indirect: str = DEFAULT_INDIRECT) -> tuple[list[InputDataset], list[OutputDataset]]:
    """OpenLineage datasets with schema/columnLineage/symlinks facets (empty when nothing was analysed).

    :param indirect: where dataset-wide INDIRECT edges go (see :func:`.facets.datasets_for`).
    """
    if not result.lineages:
        return [], []
    try:
        inputs, outputs = datasets_for(result.lineages, indirect=indirect)
        return list(inputs), list(outputs)
    except Exception as exc:  # noqa: BLE001 - facets are reported as a problem, never fail the job
        result.problems.append(Problem(f"building OpenLineage datasets failed: {exc!r}", stack=traceback.format_exc()))
        return [], []


def summaries(result: LineageResult) -> str:
    """A short human-readable column-lineage summary of every write, for the task log."""
    lines: list[str] = []
    for rec, lineage in result.analysed_pairs:
        try:
            lines.append(summarize(lineage) + _streaming_note(rec))
        except Exception as exc:  # noqa: BLE001 - a log summary never fails the job
            lines.append(f"(summary of {rec.command} failed: {exc!r}) {rec.command} -> {_describe_output(rec)}")
    for rec in result.failed_writes:
        lines.append(f"FAILED write {rec.command} -> {_describe_output(rec)}: {rec.error}")
    for problem in result.problems:
        lines.append(f"capture problem{f' ({problem.task})' if problem.task else ''}: {problem.message}")
    if not lines:
        lines.append("no writes captured")
    return "\n".join(lines)


def _streaming_note(rec: CaptureRecord) -> str:
    """What a summary says of a Structured Streaming query's write (one record per query)."""
    info = getattr(rec, "streaming", None)
    if not info:
        return ""
    name = info.get("name") or info.get("query_id")
    state = info.get("state")
    if state == "running":
        return f"\n  (streaming query {name}: still running when the application ended; lineage of its plan so far)"
    return f"\n  (streaming query {name}: {state} after {info.get('batches', '?')} micro-batch(es))"


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
        entry = {
            "namespace": getattr(ref, "namespace", None),
            "name": getattr(ref, "name", None),
            "table": getattr(ref, "table", None) or (info.table if info else None),
            "location": info.location if info else None,
            "format": info.format if info else None,
            "columns": columns,
            "mode": info.mode if info else None,
        }
        if rec.streaming:  # a Structured Streaming query: its state (``running``: the job left it running)
            entry["streaming"] = {k: rec.streaming[k] for k in ("state", "query_id", "name", "batches")
                                  if k in rec.streaming}
        out.append(entry)
    return out


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
                errorMessage=f"write failed: {rec.error}"[:10_000],
                task=f"{rec.command} #{rec.sequence}",
                taskNumber=rec.sequence,
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




def split_event(event: RunEvent, size_of: Callable[[RunEvent], int], limit: int) -> list[RunEvent]:
    """``event`` as several events of the same run, each at most ``limit`` bytes when possible, no edge dropped.

    Outputs are packed greedily, in order, into parts; each part carries the inputs its outputs' column
    lineage names (Marquez keeps an edge only when its input is an input of the same run) and the
    ``parent`` run facet. Every part but the last is a ``RUNNING`` event; the last keeps the event's type,
    its other run facets and every input. An output too big alone is sent in several parts, each with its
    whole ``schema`` facet and a share of its ``columnLineage`` fields (the ``dataset`` list in the first):
    the same output of the same run (Marquez derives an output's version from its schema and run, so the
    parts add to one version). What still does not fit (one field's lineage, or the inputs) is sent as is.
    """
    import attr

    outputs = list(event.outputs or [])
    if not outputs or size_of(event) <= limit:
        return [event]
    from openlineage.client.event_v2 import RunState

    inputs = list(event.inputs or [])
    by_key = {(d.namespace, d.name): d for d in inputs}
    run_facets = dict(event.run.facets or {})
    parent_only = {k: v for k, v in run_facets.items() if k == "parent"}

    def named_inputs(outs: list[Any]) -> list[Any]:
        keys: dict[tuple[str, str], None] = {}
        for o in outs:
            facet = (o.facets or {}).get("columnLineage")
            if facet is None:
                continue
            for spec in (facet.fields or {}).values():
                for i in spec.inputFields or []:
                    keys.setdefault((i.namespace, i.name))
            for i in facet.dataset or []:
                keys.setdefault((i.namespace, i.name))
        return [by_key[k] for k in keys if k in by_key]

    def part(outs: list[Any], last: bool) -> RunEvent:
        run = attr.evolve(event.run, facets=run_facets if last else parent_only)
        return attr.evolve(event, eventType=event.eventType if last else RunState.RUNNING, run=run,
                           inputs=inputs if last else named_inputs(outs), outputs=outs)

    pieces: list[Any] = []
    for o in outputs:
        pieces += [o] if size_of(part([o], False)) <= limit else _field_chunks(o, lambda x: size_of(part([x], False)),
                                                                               limit)
    groups: list[list[Any]] = []
    for o in pieces:
        names = {(x.namespace, x.name) for x in groups[-1]} if groups else set()
        if groups and (o.namespace, o.name) not in names and size_of(part([*groups[-1], o], False)) <= limit:
            groups[-1].append(o)
        else:
            groups.append([o])
    if len(groups) == 1 and size_of(part(groups[0], True)) > limit and len(pieces) == len(outputs) == 1:
        return [event]  # one output, one field set: nothing to split
    parts = [part(g, False) for g in groups[:-1]]
    last = part(groups[-1], True)
    if size_of(last) > limit:  # with every input it overflows: its outputs go ahead as RUNNING
        parts.append(part(groups[-1], False))
        last = part([], True)
    return [*parts, last]


def _field_chunks(output: Any, size_alone: Callable[[Any], int], limit: int) -> list[Any]:
    """``output`` as several copies with the whole ``schema`` facet and a share of its columnLineage ``fields``
    each (the ``dataset`` list in the first), each alone within ``limit`` by the estimate of its entries'
    JSON sizes (checked; a share of one field that still does not fit is kept whole)."""
    import json

    import attr
    from openlineage.client.serde import Serde

    facets = dict(output.facets or {})
    facet = facets.get("columnLineage")
    fields = dict(getattr(facet, "fields", None) or {})
    if facet is None or len(fields) < 2:
        return [output]

    def copy(chunk: dict[str, Any], first: bool) -> Any:
        cl = attr.evolve(facet, fields=chunk, dataset=list(facet.dataset or []) if first else [])
        return attr.evolve(output, facets={**facets, "columnLineage": cl})

    costs = {name: len(json.dumps({name: Serde.to_dict(spec)}).encode()) for name, spec in fields.items()}
    base = size_alone(output) - sum(costs.values())  # the part without fields, with the inputs they name
    room = max(limit - base, 1) * 0.97
    chunks: list[dict[str, Any]] = [{}]
    used = 0.0
    for name, spec in fields.items():
        cost = costs[name]
        if chunks[-1] and used + cost > room:
            chunks.append({})
            used = 0.0
        chunks[-1][name] = spec
        used += cost
    return [copy(c, i == 0) for i, c in enumerate(chunks)]
