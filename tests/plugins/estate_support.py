"""Real rows in Airflow's metadata DB for the estate tests: a DAG run, a finished task instance and the
``column_lineage`` XCom the operator would have pushed (as the execution API stores it), no Spark."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow_provider_lineage.lineage import run_record

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NS = "file"


def record(writes: dict[str, list[tuple[str, str]]], reads: list[str] = (), masked: set[str] = frozenset(),
           dataset_edges: list[tuple[str, str, str]] = ()) -> dict[str, Any]:
    """A lineage record: ``writes`` {target: [(target col, "source:col"), ...]} (``NS`` namespace)."""
    names: list[str] = []

    def at(name: str) -> int:
        if name not in names:
            names.append(name)
        return names.index(name)

    edges = []
    for target, cols in writes.items():
        for col, src in cols:
            src_ds, src_col = src.split(":")
            edges.append([at(target), col, at(src_ds), src_col, "DIRECT",
                          "TRANSFORMATION" if col in masked else "IDENTITY", int(col in masked)])
    ds_edges = [[at(t), at(sd), sc, "INDIRECT", "FILTER", 0] for t, sd, sc in dataset_edges]
    inputs = sorted({e[2] for e in edges} | {at(r) for r in reads})
    outputs = sorted({at(t) for t in writes})
    fields: dict[int, list[str]] = {}
    for e in edges:
        fields.setdefault(e[0], []).append(e[1])
        fields.setdefault(e[2], []).append(e[3])
    datasets = [{"namespace": NS, "name": n, "table": None,
                 "fields": [[f, "string"] for f in dict.fromkeys(fields.get(i, []))]} for i, n in enumerate(names)]
    return {"format": run_record.FORMAT, "version": 1, "status": "ok", "job": {"namespace": "default", "name": "j"},
            "run_id": str(uuid.uuid4()), "emission": "test", "datasets": datasets, "inputs": inputs,
            "outputs": outputs, "edges": edges, "dataset_edges": ds_edges, "problems": [], "truncated": None}


def add_run(dag_id: str, task_id: str, rec: Any, *, day: float, state: str = "success", run_id: str | None = None,
            raw: Any = None, pushed: datetime | None = None, sessions: Any = None) -> str:
    """A DAG run of ``dag_id`` ended ``T0 + day`` days with task ``task_id`` in ``state`` and its XCom.

    ``sessions``: a session factory (context manager) for another database than Airflow's configured one."""
    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    end = T0 + timedelta(days=day)
    run_id = run_id or f"manual__{end.isoformat()}"
    with (sessions or create_session)() as session:
        ensure_dag(session, dag_id)
        dr_id = session.scalar(select(DagRun.id).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id))
        if dr_id is None:
            dr_id = session.execute(DagRun.__table__.insert().values(
                dag_id=dag_id, run_id=run_id, run_type="manual", state="success", start_date=end - timedelta(hours=1),
                end_date=end, run_after=end, logical_date=end, clear_number=0)).inserted_primary_key[0]
        session.execute(TaskInstance.__table__.insert().values(
            id=uuid.uuid4(), dag_id=dag_id, task_id=task_id, run_id=run_id, map_index=-1, state=state,
            start_date=end - timedelta(minutes=5), end_date=end, pool="default_pool", try_number=1,
            operator="SparkLineageSubmitOperator"))
        session.execute(XComModel.__table__.insert().values(
            dag_run_id=dr_id, task_id=task_id, map_index=-1, key=run_record.XCOM_KEY, dag_id=dag_id, run_id=run_id,
            value=raw if raw is not None else json.dumps(rec), timestamp=pushed or datetime.now(UTC)))
        if sessions is not None:
            session.commit()
    # the next request sees this run: no 2-second sync throttle left over from an earlier module's requests
    # (a module that ran just before in the same process would otherwise hide its rows)
    from airflow_provider_lineage.plugins.estate import index

    index._last_sync.clear()
    return run_id


def ensure_dag(session: Any, dag_id: str) -> None:
    """A ``dag`` row (the auth manager lists readable DAGs from it), and the bundle row it needs."""
    from airflow.models.dag import DagModel
    from sqlalchemy import select, text

    if session.execute(text("SELECT 1 FROM dag_bundle WHERE name = 'dags-folder'")).first() is None:
        session.execute(text("INSERT INTO dag_bundle (name, active) VALUES ('dags-folder', :yes)"), {"yes": True})
    if session.scalar(select(DagModel.dag_id).where(DagModel.dag_id == dag_id)) is None:
        session.execute(DagModel.__table__.insert().values(
            dag_id=dag_id, bundle_name="dags-folder", max_active_tasks=1, max_consecutive_failed_dag_runs=0,
            has_task_concurrency_limits=False, is_stale=False))


def kill_reindex_at(line_start: str, env: dict[str, str], *, before_kill: Callable[[], None] | None = None) -> None:
    """Run ``python -m airflow_provider_lineage.plugins.estate reindex --batch 1`` (with ``env``) and, at the first
    line of its log starting with ``line_start`` (e.g. ``"indexed 2 of"``), call ``before_kill`` (checks made while
    the reindex is under way) and kill its process group with SIGKILL; asserts that the kill is what ended it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "airflow_provider_lineage.plugins.estate", "reindex", "--batch", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    seen = []
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(line)
        if line.startswith(line_start):
            if before_kill is not None:
                before_kill()
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "".join(seen[-20:])


def wipe_runs(prefix: str) -> None:
    """Delete the DAG runs (and with them their task instances and XComs) whose run id starts with ``prefix``."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    with create_session() as session:
        session.execute(delete(DagRun).where(DagRun.run_id.like(prefix + "%")))
