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
    GET /estate, /api/impact, /api/estate/...                    the estate page and API (estate/api.py, start.py)
    GET /openapi.json                                            this API's OpenAPI description (signed in)

Each group of routes is one ``APIRouter`` in a file of its own (:mod:`.routes`: ``runs``, ``search``,
``tags``, ``pages``; :mod:`.estate.api`, :mod:`.estate.start`); :func:`create_app` includes them. Those
modules load the API stack at their top, so they are imported inside :func:`create_app` only: importing
the plugin in a scheduler or worker never loads it.
"""
from typing import Any

from airflow_provider_lineage.plugins.routes import STATIC

__all__ = ["STATIC", "URL_PREFIX", "LazyApp", "create_app"]

URL_PREFIX = "/column-lineage"


class LazyApp:
    """An ASGI app that builds :func:`create_app` on its first request (only the api-server pays for it)."""

    def __init__(self) -> None:
        self.app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.app is None:
            self.app = create_app()
        await self.app(scope, receive, send)


def create_app() -> Any:
    """The FastAPI app (built when Airflow's api-server loads the plugin): the routers, the static files,
    and a signed-out page instead of a JSON 401/403 for the two pages."""
    from fastapi import FastAPI, HTTPException, Request
    from fastapi.responses import HTMLResponse, JSONResponse
    from fastapi.staticfiles import StaticFiles

    from airflow_provider_lineage.plugins.estate import api as estate_api
    from airflow_provider_lineage.plugins.estate import start as estate_start
    from airflow_provider_lineage.plugins.routes import pages, runs, search, tags

    app = FastAPI(
        title="Column lineage (airflow-provider-lineage)",
        description="Column-level lineage of SparkLineageSubmitOperator tasks, kept in Airflow's metadata DB.",
        # no interactive docs (FastAPI's load JavaScript from a CDN) and no unauthenticated description:
        # /openapi.json is a route of its own (routes/pages.py), behind a login
        docs_url=None, redoc_url=None, openapi_url=None,
    )
    for module in (runs, tags, search, pages, estate_api, estate_start):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(HTTPException)
    async def _errors(request: Request, exc: HTTPException) -> Any:
        path = request.url.path.rstrip("/")
        if path.endswith((URL_PREFIX, URL_PREFIX + "/estate")) and exc.status_code in (401, 403):
            return HTMLResponse(_signed_out_page(exc.status_code), status_code=exc.status_code)
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)

    return app


def _signed_out_page(status: int) -> str:
    what = "You are not signed in to Airflow" if status == 401 else "Your Airflow session is not valid"
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Column lineage</title></head>"
        f"<body style='font-family:sans-serif;padding:2em'><h2>Column lineage</h2><p>{what} ({status}). "
        "<a href='/' target='_top'>Open Airflow and sign in</a>, then come back to this page.</p></body></html>"
    )
