"""A test auth manager: Airflow's SimpleAuthManager, except that user ``outsider`` may not read one DAG, and
user ``noxcom`` may read that DAG but not its XComs."""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

DENIED_USER = "outsider"
DENIED_DAG = "lineage_etl"
NO_XCOM_USER = "noxcom"


class DenyOneDagAuthManager(SimpleAuthManager):
    """SimpleAuthManager whose user ``outsider`` (role viewer) is refused every access to ``lineage_etl``."""

    def is_authorized_dag(self, *, method: Any, user: Any, access_entity: Any = None, details: Any = None) -> bool:
        if user.get_name() == DENIED_USER and (details is None or details.id in (None, DENIED_DAG)):
            return False
        if (user.get_name() == NO_XCOM_USER and access_entity is not None and access_entity.value == "XCOM"
                and (details is None or details.id in (None, DENIED_DAG))):
            return False
        return super().is_authorized_dag(method=method, user=user, access_entity=access_entity, details=details)


@contextmanager
def api_client() -> Iterator[Any]:
    """Airflow's API app (core) with :class:`DenyOneDagAuthManager`: a TestClient whose ``tokens`` maps the users
    ``admin``, ``viewer``, ``outsider`` and ``noxcom`` to a JWT each (the environment is restored afterwards)."""
    from fastapi.testclient import TestClient

    env = {
        "AIRFLOW__CORE__AUTH_MANAGER": f"{__name__}.DenyOneDagAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": (
            f"admin:admin,viewer:viewer,{DENIED_USER}:viewer,{NO_XCOM_USER}:viewer"
        ),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    from airflow.api_fastapi import app as api_app
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    api_app.purge_cached_app()
    try:
        app = api_app.create_app(apps="core")
        manager = api_app.get_auth_manager()
        with TestClient(app) as client:
            client.tokens = {  # type: ignore[attr-defined]
                name: manager.generate_jwt(SimpleAuthManagerUser(username=name, role=role))
                for name, role in (
                    ("admin", "admin"),
                    ("viewer", "viewer"),
                    (DENIED_USER, "viewer"),
                    (NO_XCOM_USER, "viewer"),
                )
            }
            yield client
    finally:
        api_app.purge_cached_app()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
