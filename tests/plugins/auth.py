"""A test auth manager: Airflow's SimpleAuthManager, except that user ``outsider`` may not read one DAG."""
from __future__ import annotations

from typing import Any

from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

DENIED_USER = "outsider"
DENIED_DAG = "lineage_etl"


class DenyOneDagAuthManager(SimpleAuthManager):
    """SimpleAuthManager whose user ``outsider`` (role viewer) is refused every access to ``lineage_etl``."""

    def is_authorized_dag(self, *, method: Any, user: Any, access_entity: Any = None, details: Any = None) -> bool:
        if user.get_name() == DENIED_USER and (details is None or details.id in (None, DENIED_DAG)):
            return False
        return super().is_authorized_dag(method=method, user=user, access_entity=access_entity, details=details)
