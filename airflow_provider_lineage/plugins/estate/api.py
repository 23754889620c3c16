"""The estate endpoints, the ``router`` the plugin's FastAPI app includes (see ``docs/ui.md``)::

    GET /api/impact?namespace=&name=&column=&direction=downstream|upstream&depth=&as_of=&format=json|csv&limit=&cursor=
    GET /api/estate/search?q=&limit=&cursor=
    GET /api/estate/graph?namespace=&name=&column=[&namespace=&name=&column=...]&depth=&as_of=&limit=
    GET /api/estate/diff?namespace=&name=&column=&depth=&before=&after=&limit=
    GET /api/estate/runs?dag_id=&limit=&cursor=
    GET /api/estate/problems?limit=&cursor=
    GET /api/estate/start?limit=          the page's first view (:mod:`.start`, with this module's ``fresh``)

Every one needs a signed-in user (401 without a token) and reads only the DAGs the auth manager lets
the user read, and read the XComs of (the index is derived from XComs: :mod:`..access`); what is
reachable only through other DAGs is a count (``hidden``), never a name, and a
dataset or column only such DAGs name answers exactly as one that does not exist.

Bounded: list answers page (``limit`` up to the documented maximum, ``next_cursor`` to pass as
``cursor`` for the next page, ``null`` on the last); graph answers stop at ``limit`` column edges and say
``truncated``. Before answering, the index catches up with XCom (:func:`.index.sync`, throttled); a
large backlog (the first sync after an upgrade) is indexed in batches in a background thread while
requests answer with what is indexed so far, and a ``notice`` says so. An index that cannot be
updated, or records that could not be indexed, never fail a request: they are a ``notice``.
No ``from __future__ import annotations``: FastAPI reads the annotations at run time. Imported only by
the api-server (it loads the API stack at its top).
"""
import base64
import csv
import io
import json
import logging
from datetime import UTC, datetime
from typing import Any, Optional
from urllib.parse import quote

from airflow.api_fastapi.common.db.common import SessionDep
from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import Response

from airflow_provider_lineage.plugins.estate import index, lists, query

log = logging.getLogger(__name__)
router = APIRouter()

IMPACT_MAX_DEPTH = 20
#: Impact rows per page: default and maximum.
IMPACT_LIMIT, IMPACT_MAX_LIMIT = 1000, 10_000
#: Search hits per page: default and maximum; runs per page: default and maximum.
SEARCH_LIMIT, SEARCH_MAX_LIMIT = 50, 500
RUNS_LIMIT, RUNS_MAX_LIMIT = 200, 1000
PROBLEMS_LIMIT, PROBLEMS_MAX_LIMIT = 50, 500
#: Start nodes one graph request may name.
GRAPH_MAX_STARTS = 50
#: CSV cells starting with one of these are prefixed with ``'`` (OWASP: CSV injection).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def parse_instant(text: Optional[str], what: str = "as_of") -> Optional[datetime]:  # noqa: UP045
    """An ISO 8601 instant (naive = UTC); ``None``/empty = now. Raises ``ValueError`` naming the fix."""
    if text is None or not text.strip():
        return None
    try:
        ts = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{what}={text!r} is not an ISO 8601 instant: use e.g. 2026-01-31T12:00:00Z") from None
    try:
        return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)
    except (OverflowError, ValueError):
        raise ValueError(f"{what}={text!r} is out of range once converted to UTC: use an instant between "
                         "0001-01-02 and 9999-12-30") from None


def run_link(run: Any) -> str:
    """The Airflow UI address of the run's Column lineage tab."""
    return f"/dags/{quote(run.dag_id, safe='')}/runs/{quote(run.run_id, safe='')}/plugin/column-lineage-run"


def csv_cell(value: Any) -> Any:
    """``value`` safe to open in a spreadsheet: text starting with ``= + - @``, tab or CR gets a leading ``'``."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def impact_csv(answer: dict) -> str:
    from airflow_provider_lineage.plugins.estate.query import IMPACT_COLUMNS

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(IMPACT_COLUMNS)
    for row in answer["rows"]:
        w.writerow([("true" if row[c] else "false") if c == "masked" else csv_cell(row[c]) for c in IMPACT_COLUMNS])
    return buf.getvalue()


def encode_cursor(offset: int, kind: str) -> str:
    """An opaque cursor for the page starting at ``offset`` of a ``kind`` of list."""
    return base64.urlsafe_b64encode(json.dumps({"k": kind, "o": offset}).encode()).decode().rstrip("=")


def decode_cursor(cursor: Optional[str], kind: str) -> int:  # noqa: UP045
    """The offset of ``cursor`` (``None``/empty: 0). Raises ``ValueError`` naming the fix."""
    if not cursor:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        offset = data["o"]
        if data["k"] != kind or not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise ValueError
        return offset
    except Exception:  # noqa: BLE001 - any undecodable cursor is the same client error
        raise ValueError(f"cursor={cursor[:80]!r} is not a cursor this endpoint gave: pass the next_cursor of "
                         "its previous answer, or leave cursor out for the first page") from None


def readable(user: Any) -> set:
    """The DAG ids the user may read, and read the XComs of (the index is derived from XComs)."""
    from airflow_provider_lineage.plugins import access

    return access.readable_dag_ids(user)


def instant(text: Optional[str], what: str = "as_of") -> Optional[datetime]:  # noqa: UP045
    try:
        return parse_instant(text, what)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


def offset_of(cursor: Optional[str], kind: str) -> int:  # noqa: UP045
    try:
        return decode_cursor(cursor, kind)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


def no_nul(**params: Any) -> None:
    for name, value in params.items():
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and "\x00" in v:
                raise HTTPException(400, f"{name} contains a NUL byte (\\x00), which no dataset or column "
                                         "name holds: remove it")


def fresh(session: Any, who: set) -> Optional[str]:  # noqa: UP045
    """Catch the index up (or start it catching up in the background); the notice for the answer."""
    notes = []
    try:
        if index.catching_up(session):
            notes.append(_progress_note())
        elif not index.due(session):
            pass
        elif index.backlog(session) > index.REQUEST_BATCH:
            session.rollback()
            index.start_background(session)
            notes.append(_progress_note())
        else:
            index.sync(session)
    except Exception as exc:
        log.warning("estate index: could not be brought up to date", exc_info=True)
        session.rollback()
        notes.append(f"the estate index could not be brought up to date ({type(exc).__name__}): the "
                     "answer shows what was indexed before")
    try:
        found = lists.problems(session, readable=who, limit=0)
    except Exception:  # noqa: BLE001 - no index yet (its tables are created by the first sync)
        session.rollback()
        found = {"total": 0, "hidden": 0}
    n = found["total"] + found["hidden"]
    if n:
        notes.append(f"{n} lineage record{'s' if n != 1 else ''} could not be indexed in full and "
                     f"{'were' if n != 1 else 'was'} skipped or cut"
                     + (f" ({found['hidden']} of DAGs you cannot read)" if found["hidden"] else "")
                     + ": see /api/estate/problems")
    return "; ".join(notes) or None


def _progress_note() -> str:
    p = index._progress.get(index._progress_key) or {}
    done = p.get("indexed", 0)
    left = p.get("pending")
    return ("the estate index is being built in the background: answers show what is indexed so far"
            + (f" ({done:,} records indexed, {left:,} to go)" if left is not None else ""))


@router.get("/api/impact")
def impact(user: GetUserDep, session: SessionDep, namespace: str = Query(..., max_length=500),
           name: str = Query(..., max_length=1000), column: str = Query("", max_length=500),
           direction: str = Query("downstream", pattern="^(downstream|upstream)$"),
           depth: int = Query(5, ge=1, le=IMPACT_MAX_DEPTH), as_of: Optional[str] = Query(None, max_length=100),  # noqa: UP045
           format: str = Query("json", pattern="^(json|csv)$"),
           limit: int = Query(IMPACT_LIMIT, ge=1, le=IMPACT_MAX_LIMIT),
           cursor: Optional[str] = Query(None, max_length=200)) -> Any:  # noqa: UP045
    """Columns downstream (or upstream) of a column (``column`` empty: the dataset) to ``depth``, as of
    ``as_of``."""
    no_nul(namespace=namespace, name=name, column=column)
    at = instant(as_of)
    offset = offset_of(cursor, "impact")
    who = readable(user)
    notice = fresh(session, who)
    answer = query.impact(session, namespace, name, column, direction=direction, depth=depth, as_of=at,
                          readable=who, limit=limit, offset=offset)
    nxt = encode_cursor(offset + limit, "impact") if offset + limit < answer["total"] else None
    if format == "csv":
        headers = {"Content-Disposition": 'attachment; filename="impact.csv"'}
        if nxt:
            headers["X-Next-Cursor"] = nxt
        return Response(impact_csv(answer), media_type="text/csv; charset=utf-8", headers=headers)
    return {**answer, "next_cursor": nxt, "notice": notice}


@router.get("/api/estate/search")
def estate_search(user: GetUserDep, session: SessionDep, q: str = Query("", max_length=200),
                  limit: int = Query(SEARCH_LIMIT, ge=1, le=SEARCH_MAX_LIMIT),
                  cursor: Optional[str] = Query(None, max_length=200)) -> dict:  # noqa: UP045
    """Datasets and columns of the estate whose name contains ``q``."""
    no_nul(q=q)
    offset = offset_of(cursor, "search")
    if offset > lists.SEARCH_MAX_OFFSET:
        raise HTTPException(400, f"the search pages no further than {lists.SEARCH_MAX_OFFSET:,} hits: "
                                 "narrow the query")
    who = readable(user)
    notice = fresh(session, who)
    hits = lists.search(session, q, limit=limit + 1, readable=who, offset=offset)
    more = len(hits) > limit and offset + limit <= lists.SEARCH_MAX_OFFSET
    return {
        "query": q,
        "hits": hits[:limit],
        "next_cursor": encode_cursor(offset + limit, "search") if more else None,
        "notice": notice,
    }


@router.get("/api/estate/graph")
def estate_graph(user: GetUserDep, session: SessionDep, namespace: list[str] = Query(...),  # noqa: B008
                 name: list[str] = Query(...), column: list[str] = Query([]),  # noqa: B008
                 depth: int = Query(1, ge=0, le=IMPACT_MAX_DEPTH),
                 as_of: Optional[str] = Query(None, max_length=100),  # noqa: UP045
                 limit: int = Query(query.GRAPH_DEFAULT_EDGES, ge=1, le=query.GRAPH_MAX_EDGES)) -> dict:
    """The graph around one or more starts (expanding a node = one more start), ``depth`` hops each way."""
    if len(namespace) != len(name) or len(column) > len(name):
        raise HTTPException(400, "give namespace, name (and column) once per start node, in the same order")
    _starts_ok(namespace, name, column)
    at = instant(as_of)
    who = readable(user)
    notice = fresh(session, who)
    cols = column + [""] * (len(name) - len(column))
    g = query.graph(session, list(zip(namespace, name, cols)), depth=depth, as_of=at,
                    readable=who, link=run_link, limit=limit)
    return {**g, "notice": notice}


def _starts_ok(namespace: list, name: list, column: list) -> None:
    if len(name) > GRAPH_MAX_STARTS:
        raise HTTPException(400, f"at most {GRAPH_MAX_STARTS} start nodes per request: ask for fewer")
    for what, values, most in (("namespace", namespace, 500), ("name", name, 1000), ("column", column, 500)):
        if any(len(v) > most for v in values):
            raise HTTPException(400, f"a {what} is over {most} characters: no dataset of the index has one")
    no_nul(namespace=namespace, name=name, column=column)


@router.get("/api/estate/diff")
def estate_diff(user: GetUserDep, session: SessionDep, namespace: str = Query(..., max_length=500),
                name: str = Query(..., max_length=1000), column: str = Query("", max_length=500),
                depth: int = Query(2, ge=0, le=IMPACT_MAX_DEPTH),
                before: str = Query(..., max_length=100), after: Optional[str] = Query(None, max_length=100),  # noqa: UP045
                limit: int = Query(query.GRAPH_DEFAULT_EDGES, ge=1, le=query.GRAPH_MAX_EDGES)) -> dict:
    """Datasets, columns and edges added/removed around a start between ``before`` and ``after`` (now)."""
    no_nul(namespace=namespace, name=name, column=column)
    b, a = instant(before, "before"), instant(after, "after")
    who = readable(user)
    notice = fresh(session, who)
    g_b = query.graph(session, [(namespace, name, column)], depth=depth, as_of=b, readable=who, link=run_link,
                      limit=limit)
    g_a = query.graph(session, [(namespace, name, column)], depth=depth, as_of=a, readable=who, link=run_link,
                      limit=limit)
    return {"before": g_b["as_of"], "after": g_a["as_of"], **query.diff(g_b, g_a),
            "truncated": g_b["truncated"] or g_a["truncated"], "notice": notice}


@router.get("/api/estate/runs")
def estate_runs(user: GetUserDep, session: SessionDep, dag_id: Optional[str] = Query(None, max_length=250),  # noqa: UP045
                limit: int = Query(RUNS_LIMIT, ge=1, le=RUNS_MAX_LIMIT),
                cursor: Optional[str] = Query(None, max_length=200)) -> dict:  # noqa: UP045
    """Recent finished lineage runs (DAG, run, end time) for the as-of picker."""
    no_nul(dag_id=dag_id)
    offset = offset_of(cursor, "runs")
    who = readable(user)
    notice = fresh(session, who)
    found = lists.runs(session, readable=who, dag_id=dag_id, limit=limit + 1, offset=offset)
    return {
        "runs": found[:limit],
        "next_cursor": encode_cursor(offset + limit, "runs") if len(found) > limit else None,
        "notice": notice,
    }


@router.get("/api/estate/problems")
def estate_problems(user: GetUserDep, session: SessionDep,
                    limit: int = Query(PROBLEMS_LIMIT, ge=1, le=PROBLEMS_MAX_LIMIT),
                    cursor: Optional[str] = Query(None, max_length=200)) -> dict:  # noqa: UP045
    """Lineage records of readable DAGs the index skipped or cut (newest first), with the reason; the
    number of such records of other DAGs (``hidden``)."""
    offset = offset_of(cursor, "problems")
    who = readable(user)
    notice = fresh(session, who)
    try:
        found = lists.problems(session, readable=who, limit=limit, offset=offset)
    except Exception:  # noqa: BLE001 - no index tables yet
        session.rollback()
        found = {"problems": [], "total": 0, "hidden": 0}
    nxt = encode_cursor(offset + limit, "problems") if offset + limit < found["total"] else None
    return {**found, "next_cursor": nxt, "notice": notice}
