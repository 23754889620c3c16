"""Scheduler-side hook: update the estate index when a DAG run finishes.

Airflow 3 workers have no metadata-DB access, so the task itself cannot index its record; the
scheduler can, and it fires ``on_dag_run_success`` / ``on_dag_run_failed`` (in ``DagRun.update_state``)
once every task of the run has finished. The hook only starts a background thread that runs
:func:`.index.sync`: the scheduler's own transaction is still open when listeners are called (on SQLite
a write from here would wait for it), and the scheduling loop must never wait for, or fail because of,
the index. Errors are logged, never raised.

Only the scheduler syncs: in any other process that finishes DAG runs (``airflow dags test``,
``dag.test()``) a background writer would race the process's own exit for the metadata DB (on SQLite
with Airflow 3.0 the exit then spun for good in ``dispose_orm``); there the api-server catches up on its
next estate request, from XCom rows newer than its watermark.
"""
from __future__ import annotations

import logging
import sys
import threading
from typing import Any

from airflow.listeners import hookimpl

log = logging.getLogger(__name__)
_running = threading.Lock()
_again = threading.Event()


def _work() -> None:
    from airflow.utils.session import create_session

    from airflow_provider_lineage.plugins.estate import index

    while True:
        _again.clear()
        try:
            index.sync_all(create_session)  # in batches: the first sync after an upgrade is long
        except Exception:
            log.warning("estate index: sync after a DAG run failed (the api-server catches up)", exc_info=True)
        _publish_tags()
        if not _again.is_set():
            return


def _publish_tags() -> None:
    """Hook of lineage as a guard (docs/guard.md): the estate's column-tag map for the workers."""
    from airflow.utils.session import create_session

    from airflow_provider_lineage.plugins.guard import estate as guard_estate

    try:
        with create_session() as session:
            guard_estate.publish(session)
    except Exception:
        log.warning("column tags along the estate not published (workers keep the previous map)", exc_info=True)


def in_scheduler() -> bool:
    """Whether this process is ``airflow scheduler`` (``airflow scheduler`` / ``python -m airflow scheduler``)."""
    return sys.argv[1:2] == ["scheduler"]


def _kick() -> None:
    if not in_scheduler():
        return
    _again.set()
    if not _running.acquire(blocking=False):
        return  # a sync is running: it will run once more (_again)

    def run() -> None:
        try:
            _work()
        finally:
            _running.release()

    threading.Thread(target=run, name="apl-estate-sync", daemon=True).start()


@hookimpl
def on_dag_run_success(dag_run: Any, msg: str) -> None:
    _kick()


@hookimpl
def on_dag_run_failed(dag_run: Any, msg: str) -> None:
    _kick()
