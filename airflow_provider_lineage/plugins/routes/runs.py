"""One DAG run's lineage: the run's stitched graph, one task's graph, a column's path, the Sieve badges.

Each route needs read access to the DAG and to its XComs (what Airflow's own XCom endpoints need: no
token -> 401, no access -> 403). No ``from __future__ import annotations``: FastAPI reads the route
functions' annotations at run time.
"""
import dataclasses
from typing import Any, Optional

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.common.db.common import SessionDep
from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_dag
from fastapi import APIRouter, Depends, HTTPException, Query

from airflow_provider_lineage.plugins import access, indexes, store
from airflow_provider_lineage.plugins import graph as graphs
from airflow_provider_lineage.plugins.guard import estate as guard_estate
from airflow_provider_lineage.plugins.guard import view as guard_view

#: Hops a column's path follows each way at most.
MAX_DEPTH = 20

# the lineage is read from XComs: the DAG and its XComs, as Airflow's own XCom endpoints ask
router = APIRouter(dependencies=[Depends(requires_access_dag("GET")),
                                 Depends(requires_access_dag("GET", DagAccessEntity.XCOM))])


def _run_exists(session: Any, dag_id: str, run_id: str) -> None:
    from airflow.models.dagrun import DagRun
    from sqlalchemy import select

    found = session.scalar(select(DagRun.id).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id))
    if found is None:
        raise HTTPException(404, f"no DAG run {run_id!r} of DAG {dag_id!r}")


def _graph(session: Any, user: Any, dag_id: str, run_id: str, task_id: Optional[str] = None,  # noqa: UP045
           map_index: Optional[int] = None) -> dict[str, Any]:  # noqa: UP045
    _run_exists(session, dag_id, run_id)
    tasks = store.run_tasks(session, dag_id, run_id, task_id, map_index)
    g = _stitch(tasks)
    try:
        guard_view.annotate(g, tasks)
    except Exception as exc:  # noqa: BLE001 - the guard's view data never costs the graph
        g["guard_error"] = f"lineage guard data not shown: {exc!r}"
    try:  # tag paths through other DAGs' datasets: a hop the user cannot read is a count (docs/guard.md)
        guard_view.redact(g, guard_estate.run_view_access(session, g, lambda: access.readable_dag_ids(user)))
    except Exception as exc:  # noqa: BLE001 - fail soft, never with a name: drop the paths' data
        g["guard_error"] = f"lineage guard data not shown: {exc!r}"
        for d in g.get("datasets") or []:
            for f in d.get("fields") or []:
                f.pop("tags", None)
        g["unmasked"] = []
        for t in g.get("tasks") or []:
            t.pop("policy", None)
    g.update(dag_id=dag_id, run_id=run_id, task_id=task_id, map_index=map_index)
    if task_id is not None and not tasks:
        g["empty"] = (f"task {task_id!r} of this run kept no lineage record: it is not a "
                      "SparkLineageSubmitOperator task, or it has not run")
    return g


def _stitch(tasks: list[Any]) -> dict[str, Any]:
    """The run's graph; a record that cannot be drawn (malformed content behind the right format
    marker) is left out with the reason on its task, never a 500 for the whole run."""
    try:
        return graphs.stitch(tasks)
    except Exception:  # noqa: BLE001 - find the bad records, draw the others
        kept = []
        for t in tasks:
            if t.record is not None:
                try:
                    graphs.stitch([t])
                except Exception as exc:  # noqa: BLE001 - a display fails soft
                    t = dataclasses.replace(
                        t, record=None, note=f"the lineage record could not be read: {exc!r}"[:500]
                    )
            kept.append(t)
        return graphs.stitch(kept)


def _with(session: Any, g: dict[str, Any], dag_id: str, run_id: str, include: str) -> dict[str, Any]:
    # ``include=indexes``: the Sieve badges in the same response, so an open page costs one request
    if "indexes" in include.split(","):
        g["indexes"] = indexes.badges(store.sieve_results(session, dag_id, run_id))
    return g


@router.get("/api/dags/{dag_id}/runs/{run_id}/graph")
def run_graph(dag_id: str, run_id: str, session: SessionDep, user: GetUserDep, include: str = "") -> dict[str, Any]:
    """The lineage of every task of the run, as one graph (a dataset shared by tasks is one node)."""
    return _with(session, _graph(session, user, dag_id, run_id), dag_id, run_id, include)


@router.get("/api/dags/{dag_id}/runs/{run_id}/tasks/{task_id}/graph")
def task_graph(dag_id: str, run_id: str, task_id: str, session: SessionDep, user: GetUserDep,
               map_index: int = -1, include: str = "") -> dict[str, Any]:
    """The lineage of one task instance."""
    return _with(session, _graph(session, user, dag_id, run_id, task_id, map_index), dag_id, run_id, include)


@router.get("/api/dags/{dag_id}/runs/{run_id}/column")
def column_path(dag_id: str, run_id: str, session: SessionDep, user: GetUserDep, dataset: str = Query(...),
                column: str = Query(...), depth: int = Query(3, ge=0, le=MAX_DEPTH),
                task_id: Optional[str] = None, map_index: int = -1) -> dict[str, Any]:  # noqa: UP045
    """One column's upstream and downstream, ``depth`` hops each way (indexes into the graph's edges)."""
    g = _graph(session, user, dag_id, run_id, task_id, map_index if task_id else None)
    if not any(d["id"] == dataset for d in g["datasets"]):
        raise HTTPException(404, f"dataset {dataset!r} is not in the lineage of this run")
    return graphs.path(g, dataset, column, depth)


@router.get("/api/dags/{dag_id}/runs/{run_id}/indexes")
def sieve_indexes(dag_id: str, run_id: str, session: SessionDep) -> dict[str, Any]:
    """State of the Sieve indexes the run's index tasks maintained (the sensor's checks)."""
    _run_exists(session, dag_id, run_id)
    return {"indexes": indexes.badges(store.sieve_results(session, dag_id, run_id))}
