"""The column-lineage view's FastAPI app: a JSON API and the static page, mounted by the plugin.

Every endpoint goes through Airflow's auth manager: the page needs a signed-in user, each run or
task endpoint needs read access to its DAG and to the DAG's XComs (what Airflow's own XCom endpoints
need, ``requires_access_dag("GET", DagAccessEntity.XCOM)``: no token -> 401, no access -> 403), and
the searches only read records of the DAGs whose XComs the user may read (:mod:`.access`). The API's
own description (``/openapi.json``) needs a signed-in user and ``[api] enable_swagger_ui`` on; no
interactive docs page (``/docs``, ``/redoc``) is served: FastAPI's load their JavaScript from a CDN. Routes (under the
plugin's prefix, :data:`URL_PREFIX`)::

    GET /                                                        the page (static, no data in it)
    GET /api/dags/{dag_id}/runs/{run_id}/graph                   the run's stitched graph
    GET /api/dags/{dag_id}/runs/{run_id}/tasks/{task_id}/graph   one task's graph (?map_index=)
    GET /api/dags/{dag_id}/runs/{run_id}/column                  ?dataset=&column=&depth= (&task_id=)
    GET /api/dags/{dag_id}/runs/{run_id}/indexes                 Sieve index badges of the run
    GET /api/search?q=&limit=                                    datasets/columns of recent runs
    GET /api/tags/unmasked?tag=                                  where tags reach unmasked (estate index, else records)
    GET /estate, /api/impact, /api/estate/...                    the estate page and API (estate/api.py)
    GET /openapi.json                                            this API's OpenAPI description (signed in)

No ``from __future__ import annotations`` here: FastAPI reads the route functions' annotations at run
time, and they name types imported inside :func:`create_app` (kept there so that importing the plugin
in a scheduler or worker never loads the API stack).
"""
from pathlib import Path
from typing import Any, Optional

URL_PREFIX = "/column-lineage"
STATIC = Path(__file__).resolve().parent / "static"
MAX_DEPTH = 20


class LazyApp:
    """An ASGI app that builds :func:`create_app` on its first request (only the api-server pays for it)."""

    def __init__(self) -> None:
        self.app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.app is None:
            self.app = create_app()
        await self.app(scope, receive, send)


def create_app() -> Any:
    """The FastAPI app (built when Airflow's api-server loads the plugin)."""
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.common.db.common import SessionDep
    from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_dag, requires_authenticated
    from fastapi import Depends, FastAPI, HTTPException, Query, Request
    from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
    from fastapi.staticfiles import StaticFiles

    from airflow_provider_lineage.plugins import access, indexes, store
    from airflow_provider_lineage.plugins import graph as graphs
    from airflow_provider_lineage.plugins.guard import estate as guard_estate
    from airflow_provider_lineage.plugins.guard import view as guard_view

    app = FastAPI(
        title="Column lineage (airflow-provider-lineage)",
        description="Column-level lineage of SparkLineageSubmitOperator tasks, kept in Airflow's metadata DB.",
        # no interactive docs (FastAPI's load JavaScript from a CDN) and no unauthenticated description:
        # /openapi.json is a route of its own below, behind a login
        docs_url=None, redoc_url=None, openapi_url=None,
    )
    # the lineage is read from XComs: the DAG and its XComs, as Airflow's own XCom endpoints ask
    read_dag = [Depends(requires_access_dag("GET")), Depends(requires_access_dag("GET", DagAccessEntity.XCOM))]

    def _run_exists(session: Any, dag_id: str, run_id: str) -> None:
        from airflow.models.dagrun import DagRun
        from sqlalchemy import select

        found = session.scalar(select(DagRun.id).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id))
        if found is None:
            raise HTTPException(404, f"no DAG run {run_id!r} of DAG {dag_id!r}")

    def _readable(user: Any) -> set[str]:
        return access.readable_dag_ids(user)

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
            guard_view.redact(g, guard_estate.run_view_access(session, g, lambda: _readable(user)))
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
            import dataclasses

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

    @app.get("/api/dags/{dag_id}/runs/{run_id}/graph", dependencies=read_dag)
    def run_graph(dag_id: str, run_id: str, session: SessionDep, user: GetUserDep, include: str = "") -> dict[str, Any]:
        """The lineage of every task of the run, as one graph (a dataset shared by tasks is one node)."""
        return _with(session, _graph(session, user, dag_id, run_id), dag_id, run_id, include)

    @app.get("/api/dags/{dag_id}/runs/{run_id}/tasks/{task_id}/graph", dependencies=read_dag)
    def task_graph(dag_id: str, run_id: str, task_id: str, session: SessionDep, user: GetUserDep,
                   map_index: int = -1, include: str = "") -> dict[str, Any]:
        """The lineage of one task instance."""
        return _with(session, _graph(session, user, dag_id, run_id, task_id, map_index), dag_id, run_id, include)

    @app.get("/api/dags/{dag_id}/runs/{run_id}/column", dependencies=read_dag)
    def column_path(dag_id: str, run_id: str, session: SessionDep, user: GetUserDep, dataset: str = Query(...),
                    column: str = Query(...), depth: int = Query(3, ge=0, le=MAX_DEPTH),
                    task_id: Optional[str] = None, map_index: int = -1) -> dict[str, Any]:  # noqa: UP045
        """One column's upstream and downstream, ``depth`` hops each way (indexes into the graph's edges)."""
        g = _graph(session, user, dag_id, run_id, task_id, map_index if task_id else None)
        if not any(d["id"] == dataset for d in g["datasets"]):
            raise HTTPException(404, f"dataset {dataset!r} is not in the lineage of this run")
        return graphs.path(g, dataset, column, depth)

    @app.get("/api/dags/{dag_id}/runs/{run_id}/indexes", dependencies=read_dag)
    def sieve_indexes(dag_id: str, run_id: str, session: SessionDep) -> dict[str, Any]:
        """State of the Sieve indexes the run's index tasks maintained (the sensor's checks)."""
        _run_exists(session, dag_id, run_id)
        return {"indexes": indexes.badges(store.sieve_results(session, dag_id, run_id))}

    @app.get("/api/tags/unmasked")
    def tags_unmasked(user: GetUserDep, session: SessionDep, tag: Optional[str] = Query(None, max_length=200),  # noqa: UP045
                      limit: int = Query(500, ge=1, le=5000)) -> dict[str, Any]:
        """Where tags reach unmasked: columns that inherited a tag through no masking step, along the estate
        index's edges (else the newest records of the DAGs the user may read), with the path. Computed once per
        index sync; what the user cannot read is a count (``hidden``, ``hidden_hops``, ``problems_hidden``)."""
        from airflow_provider_lineage.plugins.estate import index

        readable = _readable(user)
        try:
            index.sync(session)
        except Exception:  # noqa: BLE001 - an index that cannot sync: answered as it is, else from the records
            session.rollback()
        return guard_estate.answer(session, set(readable), tag, limit, _declaration_sources(user))

    def _declaration_sources(user: Any) -> set[str]:
        """The declaration sources whose problems (they name declared datasets) the user may read: the Variable
        for a user who may read Variables, the setting and file for one who may read the configuration."""
        from airflow.api_fastapi.app import get_auth_manager
        from airflow.api_fastapi.auth.managers.models.resource_details import (
            ConfigurationDetails,
            VariableDetails,
        )

        from airflow_provider_lineage import _compat
        from airflow_provider_lineage.lineage import tags as tagging
        from airflow_provider_lineage.operators._lineage import guard

        manager = get_auth_manager()
        out: set[str] = set()
        try:
            key = guard.variable_name() or tagging.VARIABLE
            if manager.is_authorized_variable(method="GET", user=user, details=VariableDetails(key=key)):
                out.add("variable")
            exposed = str(_compat.airflow_conf().get("api", "expose_config", fallback="False")).strip().lower()
            if exposed not in ("", "false", "0") and manager.is_authorized_configuration(
                    method="GET", user=user, details=ConfigurationDetails(section=guard.SECTION)):
                out |= {"setting", "file"}
        except Exception:  # noqa: BLE001 - in doubt, counts only
            return set()
        return out

    @app.get("/api/search")
    def search(user: GetUserDep, session: SessionDep, q: str = Query("", max_length=200),
               limit: int = Query(50, ge=1, le=500)) -> dict[str, Any]:
        """Datasets and columns of the newest lineage records of the DAGs (and XComs) the user may read.

        Only hits: no count of the records read (a record's raw JSON may hold what its hits do not show)."""
        if "\x00" in q:
            raise HTTPException(400, "q contains a NUL byte (\\x00), which no dataset or column name holds: remove it")
        readable = _readable(user)
        records = store.recent_records(session, readable, q) if q.strip() else []
        try:
            hits = graphs.search(records, q, limit)
        except Exception:  # noqa: BLE001 - a malformed record is skipped, never a 500 for every search
            ok = [rec for rec in records if _searchable(rec, q)]
            hits = graphs.search(ok, q, limit)
        return {"query": q, "hits": hits}

    @app.get("/openapi.json", dependencies=[Depends(requires_authenticated())], include_in_schema=False)
    def openapi() -> JSONResponse:
        """This API's OpenAPI description, for a signed-in user, when ``[api] enable_swagger_ui`` is on (404 off)."""
        from airflow_provider_lineage import _compat

        on = str(_compat.airflow_conf().get("api", "enable_swagger_ui", fallback="True")).strip().lower()
        if on in ("false", "0", "no", "off", ""):
            raise HTTPException(404, "the API description is off: [api] enable_swagger_ui = False")
        return JSONResponse(app.openapi())

    @app.get("/", dependencies=[Depends(requires_authenticated())], include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    @app.get("/estate", dependencies=[Depends(requires_authenticated())], include_in_schema=False)
    def estate_page() -> FileResponse:
        return FileResponse(STATIC / "estate.html", media_type="text/html")

    from airflow_provider_lineage.plugins.estate import api as estate_api

    estate_api.register(app)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(HTTPException)
    async def _errors(request: Request, exc: HTTPException) -> Any:
        path = request.url.path.rstrip("/")
        if path.endswith((URL_PREFIX, URL_PREFIX + "/estate")) and exc.status_code in (401, 403):
            return HTMLResponse(_signed_out_page(exc.status_code), status_code=exc.status_code)
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)

    return app


def _searchable(rec: Any, q: str) -> bool:
    """Whether the run view's search can read the record (a malformed one is left out, with a log line)."""
    from airflow_provider_lineage.plugins import graph as graphs

    try:
        graphs.search([rec], q, 1)
    except Exception:
        import logging

        logging.getLogger(__name__).info("search: a malformed lineage record left out (%s)", rec[0], exc_info=True)
        return False
    return True


def _signed_out_page(status: int) -> str:
    what = "You are not signed in to Airflow" if status == 401 else "Your Airflow session is not valid"
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Column lineage</title></head>"
        f"<body style='font-family:sans-serif;padding:2em'><h2>Column lineage</h2><p>{what} ({status}). "
        "<a href='/' target='_top'>Open Airflow and sign in</a>, then come back to this page.</p></body></html>"
    )
