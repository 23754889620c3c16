"""Who may read what the plugin serves: every answer of the plugin is derived from XComs (the lineage
records, the Sieve index results), so it needs what Airflow's own XCom endpoints need: read access to
the DAG *and* to its XComs (``DagAccessEntity.XCOM``). A user who may read a DAG but not its XComs gets
from the plugin what ``GET .../xcomEntries`` gives them: nothing of that DAG.

Imported only by the api-server's app (the auth manager lives there).
"""
from __future__ import annotations

from typing import Any


def readable_dag_ids(user: Any) -> set[str]:
    """The DAG ids whose lineage ``user`` may read: DAG read (the auth manager's own list, one query) and XCom
    read, asked per DAG of that list (no SQL for the auth managers Airflow ships: their rules are in memory)."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails

    manager = get_auth_manager()
    dags = manager.get_authorized_dag_ids(user=user, method="GET")
    return {d for d in dags if manager.is_authorized_dag(method="GET", user=user, access_entity=DagAccessEntity.XCOM,
                                                         details=DagDetails(id=d))}
