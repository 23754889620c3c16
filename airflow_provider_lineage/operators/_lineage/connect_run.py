"""The task's side of capture over Spark Connect: tag the remote session, end the run, read the records back.

The session runs on a Connect server started with ``python -m airflow_provider_lineage.connect_server``
(:mod:`airflow_provider_lineage.capture.connect`), which writes each write's record under
``<capture_dir>/<token>/``. :class:`ConnectRun` is one task attempt there:

1. :meth:`ConnectRun.begin`: sets the session conf ``spark.airflow_lineage.taskRun``, the client tag
   ``airflow_lineage_token:<token>`` and runs ``SET spark.airflow_lineage.captureToken=<token>`` on the new session,
   before the task's code runs (the server sees that declaration in order with the session's writes, binds the
   session to the run, and ends it with a status as soon as the session closes, even without a write);
2. :meth:`ConnectRun.end`: ``SET spark.airflow_lineage.flush=<token>``, then waits (bounded by
   ``capture_drain_timeout``) for the status the server writes once every earlier write of the run is written;
3. :meth:`ConnectRun.fetch`: reads the run's envelopes as cluster deploy mode does
   (:class:`.remote_capture.RemoteCapture`: only this token's, corrupt or oversized ones skipped and named).

The capture location comes from the task's ``capture_dir``, else the connection's extra ``capture_dir``, else
what the server says (``spark.airflow_lineage.connectServer``: right when the worker sees the same path).
A server without capture is detected at once (no such setting), so the task never waits for nothing.
"""
from __future__ import annotations

import time
import uuid
from typing import Any

from airflow_provider_lineage.capture.connect import (
    FLUSH_CONF,
    SERVER_CONF,
    TASK_RUN_CONF,
    TOKEN_CONF,
    TOKEN_TAG_PREFIX,
)
from airflow_provider_lineage.capture.remote import STATUS_NAME
from airflow_provider_lineage.operators._lineage import remote_capture

NO_SERVER_CAPTURE = (
    "the Spark Connect server at {url} does not capture lineage (it is not a lineage Connect server): this task's "
    "writes have no lineage. Start the server with 'python -m airflow_provider_lineage.connect_server --port P "
    "--capture-dir URI' (docs/lineage.md#spark-connect)"
)
NO_CAPTURE_DIR = (
    "no capture_dir for the Spark Connect session: give the task capture_dir=..., or the connection the extra "
    "'capture_dir', naming the location the lineage Connect server writes to (its --capture-dir) as this worker "
    "reaches it; this task's writes have no lineage"
)


def server_capture_dir(spark: Any) -> str | None:
    """The lineage Connect server's capture location, ``None`` for a server without capture."""
    try:
        value = spark.conf.get(SERVER_CONF, None)
    except Exception:  # noqa: BLE001 - an older server, or not reachable: treated as no capture
        return None
    return str(value) if value else None


class ConnectRun:
    """One task attempt's capture on a lineage Connect server.

    :param op: the operator (its ``capture_conn_id``, ``capture_record_limit``, ``keep_capture_records``,
        ``capture_drain_timeout``, ``lineage_log``).
    :param task_run: ``namespace/name/runId`` of the task run (written into each envelope).
    """

    def __init__(self, op: Any, task_run: str) -> None:
        self.op = op
        self.task_run = task_run
        self.token = f"run-{uuid.uuid4().hex}"
        self.capture: remote_capture.RemoteCapture | None = None
        self.problems: list[str] = []
        self.status_seen = False

    def begin(self, spark: Any, capture_dir: str | None, url: str) -> bool:
        """Tag ``spark`` with this run's token; ``False`` (and a warning) when nothing can be captured."""
        log = self.op.lineage_log
        advertised = server_capture_dir(spark)
        if advertised is None:
            self.problems.append(NO_SERVER_CAPTURE.format(url=url))
            log.warning("%s", self.problems[-1])
            return False
        capture_dir = capture_dir or advertised
        if not capture_dir:
            self.problems.append(NO_CAPTURE_DIR)
            log.warning("%s", NO_CAPTURE_DIR)
            return False
        try:
            cap = remote_capture.RemoteCapture(
                capture_dir, task_run=self.task_run, token=self.token,
                storage_options=remote_capture.storage_options_from_connection(self.op.capture_conn_id),
                limit=self.op.capture_record_limit, keep=self.op.keep_capture_records)
            cap.check_reachable()
        except Exception as exc:  # noqa: BLE001 - lineage never fails the task
            self.problems.append(f"{exc}; this task's writes have no lineage")
            log.warning("%s", self.problems[-1])
            return False
        try:
            spark.conf.set(TASK_RUN_CONF, self.task_run)
            spark.addTag(TOKEN_TAG_PREFIX + self.token)
            spark.sql(f"SET {TOKEN_CONF}={self.token}")  # an execution: the server binds the session to this run
        except Exception as exc:  # noqa: BLE001 - lineage never fails the task
            self.problems.append(f"could not tag the Spark Connect session with this task run: {exc!r}")
            log.warning("%s", self.problems[-1])
            return False
        self.capture = cap
        self.op.log.info("Spark Connect session %s: capture records of this task run go to %s (token %s)",
                         url, cap.capture_dir, self.token)
        return True

    def end(self, spark: Any) -> None:
        """Ask the server to end the run, then wait (bounded) for its status."""
        if self.capture is None:
            return
        try:
            spark.sql(f"SET {FLUSH_CONF}={self.token}")
        except Exception as exc:  # noqa: BLE001 - a stopped session: the server ends the run when it closes
            self.op.log.info("could not end the capture run through the session (%r): waiting for the server to end "
                             "it when the session closes", exc)

    def wait_status(self) -> bool:
        """Wait for the run's status envelope (``capture_drain_timeout`` seconds at most)."""
        if self.capture is None:
            return False
        timeout = float(self.op.capture_drain_timeout)
        deadline = time.monotonic() + timeout
        delay = 0.05
        while True:
            try:
                import pyarrow.fs as pafs

                fs, inner = self.capture._fs()
                if fs.get_file_info(inner + "/" + STATUS_NAME).type == pafs.FileType.File:
                    self.status_seen = True
                    return True
            except Exception:  # noqa: BLE001, S110 - the store is asked again until the deadline
                pass
            if time.monotonic() >= deadline:
                self.problems.append(
                    "the lineage Connect server wrote no status for this run within "
                    f"capture_drain_timeout={timeout:g}s: "
                    "the records found are used (writes may be missing)"
                )
                return False
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    def fetch(self) -> remote_capture.FetchResult | None:
        """Read the run's records back into a local run folder (``None`` when nothing was captured)."""
        if self.capture is None:
            return None
        fetched = remote_capture.fetch(self.op, self.capture)
        fetched.problems = [*self.problems, *fetched.problems]
        return fetched
