"""``GET /api/search``: datasets and columns of the newest lineage records of the DAGs the user may read.

No ``from __future__ import annotations``: FastAPI reads the route functions' annotations at run time.
"""
import logging
from typing import Any

from airflow.api_fastapi.common.db.common import SessionDep
from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import APIRouter, HTTPException, Query

from airflow_provider_lineage.plugins import access, store
from airflow_provider_lineage.plugins import graph as graphs

log = logging.getLogger(__name__)
router = APIRouter()


@router.get("/api/search")
def search(user: GetUserDep, session: SessionDep, q: str = Query("", max_length=200),
           limit: int = Query(50, ge=1, le=500)) -> dict[str, Any]:
    """Datasets and columns of the newest lineage records of the DAGs (and XComs) the user may read.

    Only hits: no count of the records read (a record's raw JSON may hold what its hits do not show)."""
    if "\x00" in q:
        raise HTTPException(400, "q contains a NUL byte (\\x00), which no dataset or column name holds: remove it")
    readable = access.readable_dag_ids(user)
    records = store.recent_records(session, readable, q) if q.strip() else []
    try:
        hits = graphs.search(records, q, limit)
    except Exception:  # noqa: BLE001 - a malformed record is skipped, never a 500 for every search
        ok = [rec for rec in records if _searchable(rec, q)]
        hits = graphs.search(ok, q, limit)
    return {"query": q, "hits": hits}


def _searchable(rec: Any, q: str) -> bool:
    """Whether the run view's search can read the record (a malformed one is left out, with a log line)."""
    try:
        graphs.search([rec], q, 1)
    except Exception:
        log.info("search: a malformed lineage record left out (%s)", rec[0], exc_info=True)
        return False
    return True
