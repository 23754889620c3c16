"""The estate endpoints, added to the plugin's FastAPI app by :func:`register` (see ``docs/ui.md``)::

    GET /api/impact?namespace=&name=&column=&direction=downstream|upstream&depth=&as_of=&format=json|csv
    GET /api/estate/search?q=&limit=
    GET /api/estate/graph?namespace=&name=&column=[&namespace=&name=&column=...]&depth=&as_of=
    GET /api/estate/diff?namespace=&name=&column=&depth=&before=&after=
    GET /api/estate/runs?dag_id=

Every one needs a signed-in user (401 without a token) and reads only the DAGs the auth manager lets
the user read; what is reachable only through other DAGs is a count (``hidden``), never a name.
Before answering, the index catches up with XCom (:func:`.index.sync`, throttled).
No ``from __future__ import annotations``: FastAPI reads the annotations at run time.
"""
import csv
import io
from datetime import UTC, datetime
from typing import Any, Optional
from urllib.parse import quote

IMPACT_MAX_DEPTH = 20


def parse_instant(text: Optional[str], what: str = "as_of") -> Optional[datetime]:  # noqa: UP045
    """An ISO 8601 instant (naive = UTC); ``None``/empty = now. Raises ``ValueError`` naming the fix."""
    if text is None or not text.strip():
        return None
    try:
        ts = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{what}={text!r} is not an ISO 8601 instant: use e.g. 2026-01-31T12:00:00Z") from None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def run_link(run: Any) -> str:
    """The Airflow UI address of the run's Column lineage tab."""
    return f"/dags/{quote(run.dag_id, safe='')}/runs/{quote(run.run_id, safe='')}/plugin/column-lineage-run"


def impact_csv(answer: dict) -> str:
    from airflow_provider_lineage.plugins.estate.query import IMPACT_COLUMNS

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(IMPACT_COLUMNS)
    for row in answer["rows"]:
        w.writerow([("true" if row[c] else "false") if c == "masked" else row[c] for c in IMPACT_COLUMNS])
    return buf.getvalue()


def register(app: Any) -> None:
    """Add the estate routes to the plugin's FastAPI ``app``."""
    from airflow.api_fastapi.common.db.common import SessionDep
    from airflow.api_fastapi.core_api.security import GetUserDep
    from fastapi import HTTPException, Query
    from fastapi.responses import Response

    from airflow_provider_lineage.plugins.estate import index, query

    def readable(user: Any) -> set:
        from airflow.api_fastapi.app import get_auth_manager

        return set(get_auth_manager().get_authorized_dag_ids(user=user, method="GET"))

    def instant(text: Optional[str], what: str = "as_of") -> Optional[datetime]:  # noqa: UP045
        try:
            return parse_instant(text, what)
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from None

    def fresh(session: Any) -> None:
        index.sync(session)

    @app.get("/api/impact")
    def impact(user: GetUserDep, session: SessionDep, namespace: str = Query(..., max_length=500),
               name: str = Query(..., max_length=1000), column: str = Query("", max_length=500),
               direction: str = Query("downstream", pattern="^(downstream|upstream)$"),
               depth: int = Query(5, ge=1, le=IMPACT_MAX_DEPTH), as_of: Optional[str] = None,  # noqa: UP045
               format: str = Query("json", pattern="^(json|csv)$")) -> Any:
        """Columns downstream (or upstream) of a column (``column`` empty: the dataset) to ``depth``, as of ``as_of``."""
        at = instant(as_of)
        fresh(session)
        answer = query.impact(session, namespace, name, column, direction=direction, depth=depth, as_of=at,
                              readable=readable(user))
        if format == "csv":
            return Response(impact_csv(answer), media_type="text/csv; charset=utf-8",
                            headers={"Content-Disposition": 'attachment; filename="impact.csv"'})
        return answer

    @app.get("/api/estate/search")
    def estate_search(user: GetUserDep, session: SessionDep, q: str = Query("", max_length=200),
                      limit: int = Query(50, ge=1, le=500)) -> dict:
        """Datasets and columns of the estate whose name contains ``q``."""
        fresh(session)
        return {"query": q, "hits": query.search(session, q, limit=limit, readable=readable(user))}

    @app.get("/api/estate/graph")
    def estate_graph(user: GetUserDep, session: SessionDep, namespace: list[str] = Query(...),  # noqa: B008
                     name: list[str] = Query(...), column: list[str] = Query([]),  # noqa: B008
                     depth: int = Query(1, ge=0, le=IMPACT_MAX_DEPTH), as_of: Optional[str] = None) -> dict:  # noqa: UP045
        """The graph around one or more starts (expanding a node = one more start), ``depth`` hops each way."""
        if len(namespace) != len(name) or len(column) > len(name):
            raise HTTPException(400, "give namespace, name (and column) once per start node, in the same order")
        at = instant(as_of)
        fresh(session)
        cols = column + [""] * (len(name) - len(column))
        g = query.graph(session, list(zip(namespace, name, cols)), depth=depth, as_of=at,
                        readable=readable(user), link=run_link)
        return g

    @app.get("/api/estate/diff")
    def estate_diff(user: GetUserDep, session: SessionDep, namespace: str = Query(...), name: str = Query(...),
                    column: str = "", depth: int = Query(2, ge=0, le=IMPACT_MAX_DEPTH),
                    before: str = Query(...), after: Optional[str] = None) -> dict:  # noqa: UP045
        """Datasets, columns and edges added/removed around a start between ``before`` and ``after`` (now)."""
        b, a = instant(before, "before"), instant(after, "after")
        fresh(session)
        who = readable(user)
        g_b = query.graph(session, [(namespace, name, column)], depth=depth, as_of=b, readable=who, link=run_link)
        g_a = query.graph(session, [(namespace, name, column)], depth=depth, as_of=a, readable=who, link=run_link)
        return {"before": g_b["as_of"], "after": g_a["as_of"], **query.diff(g_b, g_a)}

    @app.get("/api/estate/runs")
    def estate_runs(user: GetUserDep, session: SessionDep, dag_id: Optional[str] = None,  # noqa: UP045
                    limit: int = Query(200, ge=1, le=1000)) -> dict:
        """Recent finished lineage runs (DAG, run, end time) for the as-of picker."""
        fresh(session)
        return {"runs": query.runs(session, readable=readable(user), dag_id=dag_id, limit=limit)}
