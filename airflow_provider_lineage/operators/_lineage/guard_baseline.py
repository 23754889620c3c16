"""The lineage diff's baseline: the last successful run of the same task (and map index) before this one.

Airflow 3 allows DAG runs without a logical date (manual runs triggered with ``logical_date: null``,
asset-triggered runs), so the task SDK's ``ti.get_previous_ti(state="success")`` -- "the previous task
instance by the runs' logical date" -- cannot be the baseline: a run without a logical date is never
*before* anything (``NULL < date`` is false), and when the current run has none the query is not bounded
at all (the newest logical date wins, or on PostgreSQL a run without one: ``NULLS FIRST``).

What every DAG run has is ``run_after`` (the instant it was due to run: the trigger time of a manual or
asset-triggered run, the end of the data interval of a scheduled one). So the baseline is, among the
runs where this task (this map index) *succeeded*, the one with the greatest ``run_after`` before the
current run's (ties: the later ``start_date``, then the run id), the current run excluded. A worker has
no metadata-DB access; it asks the task SDK:

1. ``ti.get_task_states(dag_id, task_ids=[task_id], map_index=...)``: every run's state of this task (one call);
2. ``GetDagRun`` for each successful candidate (``run_after``, ``start_date``): one small call each, at most
   :data:`MAX_CANDIDATES` (the ones whose run id names the newest instant first, see :func:`_hint`).

Where the task SDK lacks those calls (``GetDagRun`` is newer than Airflow 3.0), the baseline falls back
to ``get_previous_ti`` (by logical date) and says so when the current run has no logical date.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

#: Successful runs of the task whose DAG run is read to order them (beyond: the newest by run id).
MAX_CANDIDATES = 1000
_ISO = re.compile(r"__(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[+-]\d{2}:\d{2}|Z)?)")


@dataclass(frozen=True)
class Baseline:
    """The previous successful run (``run_id`` ``None``: there is none) and a note for the record/log."""

    run_id: str | None
    note: str | None = None
    how: str = "run_after"


def _state(value: Any) -> str:
    return str(getattr(value, "value", value)).rsplit(".", 1)[-1].lower()


def _hint(run_id: str) -> datetime | None:
    """The instant an Airflow-made run id names (``manual__2026-01-31T12:00:00+00:00[_suffix]``), if any."""
    m = _ISO.search(run_id)
    if not m:
        return None
    try:
        return datetime.fromisoformat(m.group(1))
    except ValueError:
        return None


def _newest_first(run_id: str) -> float:
    """Sort key: run ids naming no instant first (they could be the newest), then the newest instant."""
    hint = _aware(_hint(run_id))
    return float("-inf") if hint is None else -hint.timestamp()


def _aware(ts: datetime | None) -> datetime | None:
    from datetime import UTC

    if ts is None:
        return None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts


def choose(current_run_id: str, current_after: datetime,
           runs: list[tuple[str, datetime | None, datetime | None]]) -> str | None:
    """The baseline among ``(run_id, run_after, start_date)`` of successful runs (pure; see the module doc)."""
    now = _aware(current_after)
    best: tuple[Any, ...] | None = None
    for run_id, after, start in runs:
        after = _aware(after)
        if run_id == current_run_id or after is None or now is None or after >= now:
            continue
        key = (after, _aware(start) or after, run_id)
        if best is None or key > best:
            best = key
    return None if best is None else best[2]


def _dag_run_calls() -> tuple[Any, Any] | None:
    """``(GetDagRun, comms)`` of this task SDK, ``None`` when it has no ``GetDagRun`` (Airflow 3.0)."""
    try:
        from airflow.sdk.execution_time import task_runner
        from airflow.sdk.execution_time.comms import GetDagRun
    except ImportError:
        return None
    comms = getattr(task_runner, "SUPERVISOR_COMMS", None)
    return None if comms is None else (GetDagRun, comms)


def previous_success(ti: Any, map_index: int = -1) -> Baseline:
    """The last successful run of ``ti``'s task and ``map_index`` before ``ti``'s run (see the module doc)."""
    dag_run = None
    try:
        dag_run = ti.get_template_context().get("dag_run")
    except Exception:  # noqa: BLE001 - a stand-in TI without a context: the logical-date fallback
        dag_run = None
    run_after = getattr(dag_run, "run_after", None)
    calls = _dag_run_calls()
    get_states = getattr(ti, "get_task_states", None)
    if calls is None or get_states is None or run_after is None:
        return _by_logical_date(ti, map_index, getattr(dag_run, "logical_date", None) if dag_run else None)
    GetDagRun, comms = calls
    states = get_states(dag_id=ti.dag_id, task_ids=[ti.task_id], map_index=map_index)
    key = ti.task_id if map_index is None or map_index < 0 else f"{ti.task_id}_{map_index}"
    found = [run_id for run_id, by_task in (states or {}).items()
             if run_id != ti.run_id and _state((by_task or {}).get(key)) == "success"]
    if not found:
        return Baseline(None)
    note = None
    if len(found) > MAX_CANDIDATES:
        found.sort(key=_newest_first)
        note = (f"{len(found)} successful runs of this task: the baseline is looked for among the "
                f"{MAX_CANDIDATES} whose run id names the newest instant")
        found = found[:MAX_CANDIDATES]
    runs: list[tuple[str, datetime | None, datetime | None]] = []
    for run_id in found:
        got = comms.send(GetDagRun(dag_id=ti.dag_id, run_id=run_id))
        after = getattr(got, "run_after", None)
        if after is None:  # an error answer (the run was deleted meanwhile): not a candidate
            continue
        runs.append((run_id, after, getattr(got, "start_date", None)))
    return Baseline(choose(ti.run_id, run_after, runs), note)


def _by_logical_date(ti: Any, map_index: int, logical_date: Any) -> Baseline:
    get_previous_ti = getattr(ti, "get_previous_ti", None)
    if get_previous_ti is None:
        return Baseline(None, "this Airflow's task SDK can find no previous run (Airflow 3.1+): no diff", "none")
    prev = get_previous_ti(state="success", map_index=map_index)
    note = None
    if logical_date is None:
        note = ("this run has no logical date and this Airflow's task SDK orders previous runs only by logical "
                "date (no GetDagRun): the baseline may not be the run just before this one")
    return Baseline(None if prev is None else prev.run_id, note, "logical_date")
