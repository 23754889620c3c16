"""The OpenLineage identity of an Airflow task run: job namespace/name, run id, parent and root.

Exactly what Airflow's OpenLineage provider computes (``airflow.providers.openlineage.plugins.macros``:
``lineage_job_namespace``, ``lineage_job_name``, ``lineage_run_id``, ``lineage_root_job_namespace``,
``lineage_root_job_name``, ``lineage_root_run_id``), so the Spark job's events hang under the task run
the provider reports. Each macro is asked on its own: one that fails (an older provider without it, a
task instance it cannot read) costs only its own value, which then comes from the same formula as the
provider's (``OpenLineageAdapter.build_task_instance_run_id`` / ``build_dag_run_id``):

* job namespace: ``[openlineage] namespace``, else ``$OPENLINEAGE_NAMESPACE``, else ``default``;
* job name ``{dag_id}.{task_id}``; root job name ``{dag_id}``;
* task run id: ``generate_static_uuid(logical_date, f"{namespace}.{dag_id}.{task_id}.{try_number}.{map_index}")``;
* DAG run id: ``generate_static_uuid(logical_date, f"{namespace}.{dag_id}.{clear_number}")``.

``generate_static_uuid`` (openlineage-python) makes a UUIDv7 whose time part is the logical date and whose
random part comes from the data: the same task try always gets the same run id, with or without the provider.
The logical date is the DAG run's ``logical_date``, else its ``run_after`` (Airflow 3 runs without one).
"""
from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from typing import Any

from airflow_provider_lineage.lineage.model import ParentRun


def job_namespace() -> str:
    """``[openlineage] namespace`` -> ``$OPENLINEAGE_NAMESPACE`` -> ``default`` (the provider's ``conf.namespace``)."""
    try:
        from airflow.configuration import conf

        option = conf.get("openlineage", "namespace", fallback="") or ""
    except Exception:  # noqa: BLE001 - no Airflow configuration: the environment decides
        option = ""
    return option or os.getenv("OPENLINEAGE_NAMESPACE", "default")


def logical_date_of(ti: Any) -> dt.datetime:
    """The DAG run's logical date, else its ``run_after`` (as the provider's ``_get_logical_date``)."""
    dag_run = getattr(ti, "dag_run", None)
    if dag_run is None:
        try:
            dag_run = ti.get_template_context().get("dag_run")
        except Exception:  # noqa: BLE001 - fall through to the task instance's own dates
            dag_run = None
    for holder, attr in ((dag_run, "logical_date"), (dag_run, "run_after"), (ti, "logical_date")):
        value = getattr(holder, attr, None) if holder is not None else None
        if value:
            return value
    raise ValueError("the task instance has no DAG run with a logical date or run_after: no deterministic run id")


def task_run_id(namespace: str, dag_id: str, task_id: str, try_number: int, logical_date: dt.datetime,
                map_index: int) -> str:
    """The provider's ``build_task_instance_ol_run_id`` formula."""
    from openlineage.client.uuid import generate_static_uuid

    data = f"{namespace}.{dag_id}.{task_id}.{try_number}.{map_index}".encode()
    return str(generate_static_uuid(instant=logical_date, data=data))


def dag_run_id(namespace: str, dag_id: str, logical_date: dt.datetime, clear_number: int) -> str:
    """The provider's ``build_dag_run_ol_run_id`` formula."""
    from openlineage.client.uuid import generate_static_uuid

    return str(generate_static_uuid(instant=logical_date, data=f"{namespace}.{dag_id}.{clear_number}".encode()))


def _macros() -> Any:
    try:
        from airflow.providers.openlineage.plugins import macros
    except Exception:  # noqa: BLE001 - provider absent or broken: the fallback formulas
        return None
    return macros


def _ask(macros: Any, name: str, *args: Any) -> str | None:
    fn: Callable[..., Any] | None = getattr(macros, name, None) if macros is not None else None
    if fn is None:
        return None
    try:
        value = fn(*args)
    except Exception:  # noqa: BLE001 - one failing macro costs only its own value
        return None
    return str(value) if value else None


def task_run_identity(ti: Any, *, dag_id: str | None = None, task_id: str | None = None) -> ParentRun:
    """The task run's OpenLineage identity and its root (the DAG run), as the provider's macros give them.

    :param ti: the running task instance (``context["ti"]``); may be ``None`` outside a task run.
    :param dag_id: used when ``ti`` has none (an operator run outside a DAG run).
    :param task_id: likewise.
    """
    macros = _macros() if ti is not None else None
    dag = getattr(ti, "dag_id", None) or dag_id or "adhoc"
    task = getattr(ti, "task_id", None) or task_id or "task"
    namespace = _ask(macros, "lineage_job_namespace") or job_namespace()
    name = _ask(macros, "lineage_job_name", ti) or f"{dag}.{task}"
    run_id = _ask(macros, "lineage_run_id", ti)
    root_namespace = _ask(macros, "lineage_root_job_namespace", ti) or namespace
    root_name = _ask(macros, "lineage_root_job_name", ti) or dag
    root_run_id = _ask(macros, "lineage_root_run_id", ti)
    if run_id is None or root_run_id is None:
        try:
            when = logical_date_of(ti)
        except Exception:  # noqa: BLE001 - no DAG run at all: a fixed instant keeps the id deterministic
            when = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        map_index = getattr(ti, "map_index", -1)
        map_index = -1 if map_index is None else int(map_index)
        try_number = int(getattr(ti, "try_number", 1) or 1)
        clear_number = int(getattr(getattr(ti, "dag_run", None), "clear_number", 0) or 0)
        run_id = run_id or task_run_id(namespace, dag, task, try_number, when, map_index)
        root_run_id = root_run_id or dag_run_id(namespace, dag, when, clear_number)
    return ParentRun(namespace=namespace, name=name, run_id=run_id, root_namespace=root_namespace,
                     root_name=root_name, root_run_id=root_run_id)


def dag_parent(task_run: ParentRun) -> ParentRun | None:
    """The parent of the task run's own events: the DAG run."""
    if not (task_run.root_name and task_run.root_run_id):
        return None
    ns = task_run.root_namespace or task_run.namespace
    return ParentRun(ns, task_run.root_name, task_run.root_run_id, ns, task_run.root_name, task_run.root_run_id)


def emit_task_start(openlineage_config: Any, task_run: ParentRun, log: Any) -> tuple[Any, str]:
    """Send the task's START event through the operator's own transport (``openlineage_config`` or the
    ``OPENLINEAGE_*`` settings); returns the client (for the task's end event) and where events go. Delivery
    problems are logged as warnings, never raised; a transport that cannot be made raises."""
    from airflow_provider_lineage.lineage import events, transport

    client, where = transport.client_for(openlineage_config)
    event = events.build_event(
        "START",
        job_namespace=task_run.namespace,
        job_name=task_run.name,
        run_id=task_run.run_id,
        run_facets=events.run_facets(None, parent=dag_parent(task_run)),
        job_facets=events.job_facets(integration="AIRFLOW", job_type="TASK"),
    )
    for msg in transport.emit_all(client, [event]):
        log.warning("%s", msg)
    return client, where
