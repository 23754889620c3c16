"""The deployment process fixture: real api-server, scheduler, dag-processor and triggerer processes.

:class:`AirflowDeployment` is the class ``./dev.sh up`` / ``down`` use (``dev/deploy.py``: one
implementation of starting and stopping the processes); see ``/work/notes/FIXTURE.md`` for the
interface. Every process runs in its own process group; the context manager stops them all by group
and asserts that no process of the deployment is left (a process that left its group is still found
by the ``APL_DEPLOYMENT_ID`` variable every process inherits).

:func:`deployment_with_etl` is the session fixture ``deployment`` (``tests/conftest.py``): one
deployment on the project's ``dags/`` that has run ``lineage_etl`` once successfully. Modules that use
it carry ``pytest.mark.xdist_group("deployment")`` and are listed in ``XDIST_GROUP_MODULES`` of
``tests/conftest.py``, so that one pytest-xdist worker runs them all and starts it once.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dev.deploy import (
    DEFAULT_USERS,
    PROCESSES,
    AirflowDeployment,
    DeploymentError,
    PostgresServer,
    free_port,
)

__all__ = ["DEFAULT_USERS", "PROCESSES", "AirflowDeployment", "DeploymentError", "PostgresServer",
           "deployment_with_etl", "free_port", "read_events"]


def read_events(path: Path) -> list[dict[str, Any]]:
    """The OpenLineage events of a JSON-lines file (none if it does not exist)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def deployment_with_etl(home: Path, **kwargs: Any) -> Iterator[AirflowDeployment]:
    """A started deployment that has run ``lineage_etl`` once (``dep.etl_runs`` holds the run id)."""
    with AirflowDeployment(home, **kwargs) as dep:
        run_id = dep.trigger("lineage_etl")
        dep.wait_success("lineage_etl", run_id, timeout=600)
        dep.etl_runs = [run_id]  # type: ignore[attr-defined]
        yield dep
