"""``GET /api/estate/start?limit=``: the estate page's first view, the datasets written most recently and
the DAGs with lineage (:func:`start_view`), named only for readable DAGs.

No ``from __future__ import annotations``: FastAPI reads the route function's annotations at run time.
"""
import logging
from datetime import UTC, datetime
from typing import Any

from airflow.api_fastapi.common.db.common import SessionDep
from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import APIRouter, Query

from airflow_provider_lineage.plugins.estate.api import fresh, readable, run_link

log = logging.getLogger(__name__)
router = APIRouter()

#: ``/api/estate/start``: datasets listed by default / at most; DAGs listed at most; successful task runs
#: read at most (newest first) to find the recently written datasets; datasets named per DAG at most
START_LIMIT = 10
START_MAX = 50
START_DAGS = 50
START_SCAN = 2000
START_WRITES = 8


def start_view(session: Any, readable: set, limit: int = START_LIMIT) -> dict:
    """Where to start on the estate page: the datasets written most recently and the DAGs with lineage.

    Names come only from runs of ``readable`` DAGs; the other DAGs with lineage are a count
    (``hidden_dags``). Bounded: at most ``limit`` (<= :data:`START_MAX`) datasets, found among the
    newest :data:`START_SCAN` successful task runs; at most :data:`START_DAGS` DAGs (newest successful
    lineage run first; ``dags_total`` counts them all), each with up to :data:`START_WRITES` datasets its tasks'
    last successful runs wrote (``writes_total`` counts them all).
    """
    from sqlalchemy import case, func, select

    from airflow_provider_lineage.plugins.estate import asof
    from airflow_provider_lineage.plugins.estate import schema as s

    limit = max(1, min(limit, START_MAX))
    t, io = s.task_run.c, s.io.c
    last_success = func.max(case((t.state == "success", t.end_date)))
    per_dag = session.execute(select(t.dag_id, func.count(func.distinct(t.task_id)), last_success)
                              .where(t.set_ref.is_not(None)).group_by(t.dag_id)).all()
    mine = [r for r in per_dag if r[0] in readable]
    epoch = datetime.min.replace(tzinfo=UTC)
    mine.sort(key=lambda r: (asof.utc(r[2]) or epoch, r[0]), reverse=True)
    answer: dict = {"recent": [], "dags": [], "dags_total": len(mine), "hidden_dags": len(per_dag) - len(mine),
                    "limit": limit}
    if not mine:
        return answer
    who = sorted(readable & {r[0] for r in mine})

    def outputs(refs: set) -> dict:
        out: dict = {}
        ordered = sorted(refs)
        for i in range(0, len(ordered), 500):
            for ref, did in session.execute(select(io.set_ref, io.dataset_id).where(
                    io.set_ref.in_(ordered[i:i + 500]), io.output.is_(True))):
                out.setdefault(ref, set()).add(did)
        return out

    # the datasets written most recently: successful task runs of readable DAGs, newest first, a page at a time
    recent: dict = {}
    offset, page = 0, 200
    while len(recent) < limit and offset < START_SCAN:
        runs = session.execute(select(t.dag_id, t.task_id, t.run_id, t.end_date, t.set_ref).where(
            t.state == "success", t.end_date.is_not(None), t.set_ref.is_not(None), t.dag_id.in_(who))
            .order_by(t.end_date.desc(), t.id.desc()).limit(page).offset(offset)).all()
        written = outputs({r.set_ref for r in runs})
        for r in runs:
            for did in sorted(written.get(r.set_ref, ())):
                if did not in recent and len(recent) < limit:
                    recent[did] = r
        if len(runs) < page:
            break
        offset += page
    # the DAGs: each task's last successful run, and what those runs wrote
    shown = [r[0] for r in mine[:START_DAGS]]
    last = (select(t.dag_id, t.task_id, t.map_index, func.max(t.end_date).label("m"))
            .where(t.dag_id.in_(shown), t.state == "success", t.end_date.is_not(None), t.set_ref.is_not(None))
            .group_by(t.dag_id, t.task_id, t.map_index).subquery())
    heads = session.execute(select(t.dag_id, t.run_id, t.end_date, t.set_ref).join(
        last, (t.dag_id == last.c.dag_id) & (t.task_id == last.c.task_id) & (t.map_index == last.c.map_index)
        & (t.end_date == last.c.m)).where(t.state == "success")).all()
    written = outputs({h.set_ref for h in heads})
    by_dag: dict = {}
    for h in heads:
        entry = by_dag.setdefault(h.dag_id, {"writes": set(), "run": None})
        entry["writes"] |= written.get(h.set_ref, set())
        if entry["run"] is None or asof.utc(h.end_date) > asof.utc(entry["run"].end_date):
            entry["run"] = h
    ids = set(recent) | {d for e in by_dag.values() for d in e["writes"]}
    # labels only from records of readable DAGs
    names = {did: {"namespace": ns, "name": nm, "label": asof.short_label(nm, table)}
             for did, (ns, nm, table) in asof.dataset_keys(session, ids, labels=True, readable=readable).items()}
    for did, r in recent.items():
        end = asof.utc(r.end_date)
        answer["recent"].append({**names[did], "written": end.isoformat() if end else None, "dag_id": r.dag_id,
                                 "task_id": r.task_id, "run_id": r.run_id, "url": run_link(r)})
    for dag_id, tasks, _ in mine[:START_DAGS]:
        entry = by_dag.get(dag_id) or {"writes": set(), "run": None}
        writes = sorted((names[d] for d in entry["writes"]), key=lambda n: (n["label"], n["namespace"], n["name"]))
        run = entry["run"]
        end = asof.utc(run.end_date) if run is not None else None
        answer["dags"].append({
            "dag_id": dag_id, "tasks": tasks, "writes": writes[:START_WRITES], "writes_total": len(writes),
            "last_run": {"run_id": run.run_id, "end": end.isoformat() if end else None, "url": run_link(run)}
            if run is not None else None})
    return answer


@router.get("/api/estate/start")
def estate_start(
    user: GetUserDep, session: SessionDep, limit: int = Query(START_LIMIT, ge=1, le=START_MAX)
) -> dict:
    """Datasets written most recently and DAGs with lineage (names of readable DAGs only; others counted).

    The index catches up first (:func:`.api.fresh`). A display fails soft: an index that cannot answer
    gives empty lists and a ``notice``."""
    who = readable(user)
    notice = fresh(session, who)
    try:
        answer = start_view(session, who, limit=limit)
    except Exception:  # e.g. no index tables yet: the page shows its help, not an error
        log.warning("estate start view: the index could not answer", exc_info=True)
        session.rollback()
        answer = {"recent": [], "dags": [], "dags_total": 0, "hidden_dags": 0, "limit": limit}
        notice = notice or "the estate index could not answer: see the api-server's log"
    return {**answer, "notice": notice}
