"""``GET /api/tags/unmasked``: where tags reach unmasked (the estate index, else the newest records).

No ``from __future__ import annotations``: FastAPI reads the route functions' annotations at run time.
"""
from typing import Any, Optional

from airflow.api_fastapi.common.db.common import SessionDep
from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import APIRouter, Query

from airflow_provider_lineage.plugins import access
from airflow_provider_lineage.plugins.guard import estate as guard_estate

router = APIRouter()


@router.get("/api/tags/unmasked")
def tags_unmasked(user: GetUserDep, session: SessionDep, tag: Optional[str] = Query(None, max_length=200),  # noqa: UP045
                  limit: int = Query(500, ge=1, le=5000)) -> dict[str, Any]:
    """Where tags reach unmasked: columns that inherited a tag through no masking step, along the estate
    index's edges (else the newest records of the DAGs the user may read), with the path. Computed once per
    index sync; what the user cannot read is a count (``hidden``, ``hidden_hops``, ``problems_hidden``)."""
    from airflow_provider_lineage.plugins.estate import index

    readable = access.readable_dag_ids(user)
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
