"""Scheduler-side hook: update the estate index when a DAG run finishes.

Airflow 3 workers have no metadata-DB access, so the task itself cannot index its record; the
scheduler can, and it fires ``on_dag_run_success`` / ``on_dag_run_failed`` (in ``DagRun.update_state``)
once every task of the run has finished. The hook only starts a background thread that runs
:func:`.estate.index.sync`: the scheduler's own transaction is still open when listeners are called (on SQLite
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
import time
from typing import Any

from airflow.listeners import hookimpl

log = logging.getLogger(__name__)
_running = threading.Lock()
_again = threading.Event()


#: Seconds between attempts when a sync fails (e.g. SQLite's "database is locked" while the api-server
#: writes): the tag map is published only after the index holds the run, or after the last attempt.
RETRY_DELAYS = (1.0, 3.0, 10.0, 30.0)


def _sync_with_retries(sleep: Any = time.sleep) -> bool:
    """:func:`.estate.index.sync_all` until it succeeds, at most ``1 + len(RETRY_DELAYS)`` times; whether it did."""
    from airflow.utils.session import create_session

    from airflow_provider_lineage.plugins.estate import index

    for attempt, delay in enumerate((*RETRY_DELAYS, None)):
        try:
            # in batches (the first sync after an upgrade is long); when the api-server is syncing, wait for
            # it: the tag map published next must be computed from an index that holds this run
            index.sync_all(create_session, wait=True)
            return True
        except Exception:
            if delay is None:
                log.warning("estate index: sync after a DAG run failed %d times (the api-server catches up; "
                            "the tag map is published from the index as it is)", attempt + 1, exc_info=True)
                return False
            log.info("estate index: sync after a DAG run failed, again in %.0f s", delay, exc_info=True)
            sleep(delay)
    return False


def _work() -> None:
    while True:
        _again.clear()
        _sync_with_retries()
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
        while True:
            try:
                _work()
            finally:
                _running.release()
            # a run that finished between _work's last look at _again and the release above: its kick found
            # the lock held and left the work to this thread
            if not _again.is_set() or not _running.acquire(blocking=False):
                return

    threading.Thread(target=run, name="apl-estate-sync", daemon=True).start()


@hookimpl
def on_dag_run_success(dag_run: Any, msg: str) -> None:
    _kick()


@hookimpl
def on_dag_run_failed(dag_run: Any, msg: str) -> None:
    _kick()
