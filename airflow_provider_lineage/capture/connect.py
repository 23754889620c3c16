"""Capture on a Spark Connect server: every Connect session's writes, attributed to the client that ran them.

A Spark Connect client has no query execution, listener manager or SparkContext; the server does. This
module runs in the PySpark driver that hosts the Connect server
(:mod:`airflow_provider_lineage.connect_server`) and registers a py4j ``SparkListenerInterface`` on its
SparkContext, in a listener-bus queue of its own (a ``QueryExecutionListener`` on the default session does
not see Connect sessions: each has its own):

* ``SparkListenerSQLExecutionStart.jobTags`` name the Connect user, session and operation
  (``SparkConnect_OperationTag_User_<u>_Session_<s>_Operation_<o>``) and the client's own tags
  (``SparkConnect_SessionTag_User_<u>_Session_<s>_Tag_<tag>``, from ``spark.addTag``);
* ``SparkListenerSQLExecutionEnd.qe()`` is the ``QueryExecution``: the same seam as the in-driver listener
  (:meth:`.listener.WriteCaptureListener._capture`) turns it into a :class:`CaptureRecord`;
* ``SparkListenerConnectSessionClosed`` ends the runs of a session that closed (an untagged session's folder, a
  client that stopped its session before ending its run).

Attribution, per write, from the session that ran it:

1. the session conf ``spark.airflow_lineage.captureToken`` (what ``PySparkLineageOperator`` sets), else a
   client tag ``airflow_lineage_token:<token>``: the record goes to ``<capture_dir>/<token>/`` as an envelope
   (:mod:`.remote`), exactly like a cluster-deploy-mode driver's, and the task reads it back;
2. no token: ``<capture_dir>/connect-<user>-<session>/``, with the task run ``spark_connect/<user>/<session>``
   in each envelope (a job named after the Connect user and session).

Records of different tokens never share a folder, so concurrent clients never mix. A client ends its run
with ``SET spark.airflow_lineage.flush=<token>``: the bus delivers events in order, so when that command's
end is handled every earlier write of the run has been written, and the server writes the run's status
envelope (the operator waits for it).

The listener callback only puts the event on a bounded queue and returns (a full queue drops the event
and counts it); one worker thread does the py4j reads, the plan JSON and the writes. No Airflow imports.
"""
from __future__ import annotations

import collections
import datetime as dt
import json
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from airflow_provider_lineage.capture.config import STATUS_FORMAT_VERSION
from airflow_provider_lineage.lineage.logs import get_logger
from airflow_provider_lineage.lineage.record import CaptureRecord

log = get_logger(__name__)

#: Session conf a client sets to its task attempt's token (records go to ``<capture_dir>/<token>/``).
TOKEN_CONF = "spark.airflow_lineage.captureToken"
#: Session conf naming the task run (``namespace/name/runId``), copied into each envelope.
TASK_RUN_CONF = "spark.airflow_lineage.taskRun"
#: ``SET spark.airflow_lineage.flush=<token>``: the client's end of run; the server writes the status.
FLUSH_CONF = "spark.airflow_lineage.flush"
#: A client tag (``spark.addTag``) that carries the token, for clients that cannot set a session conf.
TOKEN_TAG_PREFIX = "airflow_lineage_token:"
#: Spark conf the lineage Connect server sets (every session sees it): its capture location.
SERVER_CONF = "spark.airflow_lineage.connectServer"
#: The listener-bus queue of the capture listener (its own thread: never delays Spark's other listeners).
BUS_QUEUE = "airflowLineage"

_OPERATION_TAG = re.compile(r"^SparkConnect_OperationTag_User_(?P<user>.*)_Session_(?P<session>[0-9a-fA-F-]{36})"
                            r"_Operation_(?P<operation>[0-9a-fA-F-]{36})$")
_SESSION_TAG = re.compile(r"^SparkConnect_SessionTag_User_(?P<user>.*)_Session_(?P<session>[0-9a-fA-F-]{36})"
                          r"_Tag_(?P<tag>.*)$")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")

_START = "SparkListenerSQLExecutionStart"
_END = "SparkListenerSQLExecutionEnd"
_SESSION_CLOSED = "SparkListenerConnectSessionClosed"
_QUERY_STARTED = "QueryStartedEvent"
_QUERY_TERMINATED = "QueryTerminatedEvent"
_WANTED = frozenset({_START, _END, _SESSION_CLOSED, _QUERY_STARTED, _QUERY_TERMINATED})


@dataclass
class ConnectIdentity:
    """Who ran a SQL execution: the Connect user, session, operation and the client's tags."""

    user_id: str | None = None
    session_id: str | None = None
    operation_id: str | None = None
    tags: list[str] = field(default_factory=list)

    @property
    def token(self) -> str | None:
        for tag in self.tags:
            if tag.startswith(TOKEN_TAG_PREFIX) and len(tag) > len(TOKEN_TAG_PREFIX):
                return tag[len(TOKEN_TAG_PREFIX):]
        return None

    def folder_key(self) -> str:
        """The folder of an untagged session's records: ``connect-<user>-<session>``."""
        user = _SAFE.sub("_", self.user_id or "anonymous")[:64]
        return f"connect-{user}-{self.session_id or 'unknown'}"

    def task_run(self) -> str:
        """The job an untagged session's writes are named after: ``spark_connect/<user>/<session>``."""
        return f"spark_connect/{self.user_id or 'anonymous'}/{self.session_id or 'unknown'}"


def parse_job_tags(tags: Iterable[str]) -> ConnectIdentity:
    """The Connect identity in a SQL execution's job tags (anything else is ignored)."""
    ident = ConnectIdentity()
    for tag in tags:
        if m := _OPERATION_TAG.match(tag):
            ident.user_id, ident.session_id, ident.operation_id = m["user"], m["session"], m["operation"]
        elif m := _SESSION_TAG.match(tag):
            ident.user_id, ident.session_id = ident.user_id or m["user"], ident.session_id or m["session"]
            ident.tags.append(m["tag"])
    return ident


@dataclass
class _Run:
    """One token's (or untagged session's) folder on the capture location."""

    key: str
    task_run: str | None
    sink: Any
    records: int = 0
    problems: list[str] = field(default_factory=list)
    dropped_at_start: int = 0
    identity: ConnectIdentity | None = None


class ConnectCapture:
    """A py4j ``SparkListenerInterface`` that captures every Connect session's writes into ``capture_dir``.

    :param spark: the server's own (PySpark) session; its SparkContext is the one every Connect session shares.
    :param capture_dir: where records go (a path or a URI the clients' Airflow workers also reach).
    :param record_limit: bound (bytes) on one record's envelope; a bigger one is reported in the run's status.
    :param queue_size: bound on events waiting for the worker; beyond it an event is dropped and counted.
    :param max_runs: bound on the runs kept open (tokens never flushed are closed oldest first).
    :param sink_factory: ``(capture_dir, key, task_run) -> sink`` (default :class:`.remote.RemoteSink`).
    """

    class Java:
        implements: ClassVar[list[str]] = ["org.apache.spark.scheduler.SparkListenerInterface"]

    def __init__(self, spark: Any, capture_dir: str, *, record_limit: int | None = None, queue_size: int = 10_000,
                 max_runs: int = 1_000, sink_factory: Callable[[str, str, str | None], Any] | None = None) -> None:
        from airflow_provider_lineage.capture.listener import WriteCaptureListener
        from airflow_provider_lineage.capture.remote import DEFAULT_RECORD_LIMIT

        self.spark = spark
        self.capture_dir = capture_dir.rstrip("/")
        self.record_limit = record_limit or DEFAULT_RECORD_LIMIT
        self._capture = WriteCaptureListener(spark, self._noop)
        self._queue: queue.Queue[tuple[str, Any] | None] = queue.Queue(maxsize=queue_size)
        self._starts: collections.OrderedDict[int, ConnectIdentity] = collections.OrderedDict()
        self._runs: collections.OrderedDict[str, _Run] = collections.OrderedDict()
        self._max_runs = max_runs
        self._sink_factory = sink_factory or self._remote_sink
        self.dropped = 0
        self.captured = 0
        self.statuses = 0
        self.errors: list[str] = []
        #: the streaming queries of the Connect sessions (one record per query run, :mod:`.streaming`), fed by the
        #: worker; runId -> (token or untagged folder key, task run, identity) of the session that started it
        self._streams = self._streaming(spark)
        self._stream_runs: collections.OrderedDict[str, tuple[str, str | None, ConnectIdentity]] = \
            collections.OrderedDict()
        self._stream_starts: collections.OrderedDict[str, ConnectIdentity] = collections.OrderedDict()
        self._worker = threading.Thread(target=self._work, name="airflow-lineage-connect-capture", daemon=True)
        self._worker.start()
        self._registered = False

    # -- SparkListenerInterface (Spark's listener-bus thread: returns at once) ----------------------
    def onOtherEvent(self, event: Any) -> None:
        try:
            name = event.getClass().getSimpleName()
            if name in _WANTED:
                self._queue.put_nowait((name, event))
        except queue.Full:
            self.dropped += 1
        except Exception:
            log.debug("connect capture: event not queued", exc_info=True)

    def __getattr__(self, name: str) -> Any:
        """Every other ``SparkListenerInterface`` callback: nothing to do."""
        if name.startswith("on") and name[2:3].isupper():
            return _ignore
        raise AttributeError(name)

    # -- lifecycle ------------------------------------------------------------------------------
    def register(self) -> None:
        """Start py4j's callback server and add this listener to a listener-bus queue of its own."""
        from pyspark.java_gateway import ensure_callback_server_started

        sc = self.spark.sparkContext
        ensure_callback_server_started(sc._gateway)
        bus = sc._jsc.sc().listenerBus()
        try:
            bus.addToQueue(self, BUS_QUEUE)  # private[spark] in Scala, public in the bytecode
        except Exception:  # noqa: BLE001 - an older/other Spark: the shared queue
            sc._jsc.sc().addSparkListener(self)
        self._registered = True

    def close(self, timeout_s: float = 60.0) -> bool:
        """Deliver what Spark's bus holds, finish the queued work, close every open run (bounded)."""
        from airflow_provider_lineage.capture.listener import drain_bus

        if self._registered:
            try:
                drain_bus(self.spark.sparkContext, timeout_s)
                self.spark.sparkContext._jsc.sc().removeSparkListener(self)
            except Exception:
                log.debug("connect capture: could not remove the listener", exc_info=True)
            self._registered = False
        done = self.wait_idle(timeout_s)
        self._queue.put(None)
        self._worker.join(timeout_s)
        for key in list(self._runs):
            self._finish(key, "the Connect server stopped before the client ended its run")
        return done

    def wait_idle(self, timeout_s: float = 60.0) -> bool:
        """Wait until the worker has handled every queued event (tests, shutdown)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._queue.unfinished_tasks == 0:
                return True
            time.sleep(0.05)
        return False

    # -- the worker -----------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                name, event = item
                if name == _START:
                    self._on_start(event)
                elif name == _END:
                    self._on_end(event)
                elif name == _SESSION_CLOSED:
                    self._on_session_closed(event)
                elif name == _QUERY_STARTED:
                    self._on_query_started(event)
                elif name == _QUERY_TERMINATED:
                    self._on_query_terminated(event)
            except Exception as exc:  # noqa: BLE001 - one bad event never stops the capture
                self._error(f"connect capture: {item[0] if item else '?'} not handled: {exc!r}")
            finally:
                self._queue.task_done()

    def _on_start(self, event: Any) -> None:
        try:
            tags = str(event.jobTags().mkString("\n")).split("\n")
        except Exception:  # noqa: BLE001 - a Spark without jobTags on the event: no identity
            tags = []
        ident = parse_job_tags(tags)
        if ident.session_id:
            self._starts[int(event.executionId())] = ident
            while len(self._starts) > 10_000:
                self._starts.popitem(last=False)

    def _on_end(self, event: Any) -> None:
        execution_id = int(event.executionId())
        ident = self._starts.pop(execution_id, None)
        qe = event.qe()
        if qe is not None and str(qe.getClass().getSimpleName()) == "IncrementalExecution":
            self._on_micro_batch(event, qe)  # a streaming query's micro-batch (no Connect tags on its thread)
            return
        if qe is None or ident is None:  # not a Connect execution (the server's own session), or no plan
            return
        session = qe.sparkSession()
        token = _conf(session, TOKEN_CONF) or ident.token
        logical = _set_command(qe)
        if logical is not None:  # SET: the client's end of run, or a setting (not a write)
            flushed = _set_key_value(logical, FLUSH_CONF)
            if flushed and flushed == token:  # a client ends its own run only
                self._finish_streams(flushed)
                self._finish(flushed, None)
            return
        duration = _option(event, "duration", plain=True)
        failure = _option(event, "executionFailure")
        func_name = _option(event, "executionName") or "command"
        record = self._capture._capture(str(func_name), qe, int(duration) if duration is not None else None, failure)
        if record is None:
            return
        record.environment = {**record.environment, **{
            k: v for k, v in (("connect_user", ident.user_id), ("connect_session", ident.session_id),
                              ("connect_operation", ident.operation_id)) if v}}
        if token:
            run = self._run(token, _conf(session, TASK_RUN_CONF), ident)
        else:
            run = self._run(ident.folder_key(), ident.task_run(), ident)
        self._write(run, record)

    def _on_session_closed(self, event: Any) -> None:
        """A closed session ends its runs: an untagged session's folder, and a client's run it did not end itself
        (it stopped its session first, or died and the server released the session)."""
        session_id = str(event.sessionId())
        for key in [k for k, run in self._runs.items() if run.identity and run.identity.session_id == session_id]:
            self._finish_streams(key)
            self._finish(key, None)

    # -- streaming queries ------------------------------------------------------------------------
    def _streaming(self, spark: Any) -> Any:
        """A :class:`~.streaming.StreamingCapture` this capture feeds (not a listener of its own: the events come
        through this queue, in order with the client's flush); ``None`` when it cannot be made."""
        try:
            from airflow_provider_lineage.capture import streaming

            streaming.register_output_readers()
            return streaming.StreamingCapture(spark, self._on_stream_record, self._capture, other_sessions=False)
        except Exception as exc:  # noqa: BLE001 - batch writes are still captured
            self._error(f"connect capture: streaming queries are not captured: {exc!r}")
            return None

    def _on_query_started(self, event: Any) -> None:
        """A streaming query starts on the client's operation thread: its job tags name the Connect session."""
        try:
            tags = str(event.jobTags().mkString("\n")).split("\n")
        except Exception:  # noqa: BLE001 - a Spark without jobTags on the event
            tags = []
        run_id = str(event.runId().toString())
        self._stream_starts[run_id] = parse_job_tags(tags)
        _bounded(self._stream_starts)
        if self._streams is not None:
            self._streams.onOtherEvent(event)  # the query's name

    def _on_micro_batch(self, event: Any, qe: Any) -> None:
        """The first micro-batch of a query run says whose it is (the session conf its session cloned, else the
        start's tags); the streaming capture makes the query's record."""
        if self._streams is None:
            return
        run_id = str(qe.runId().toString())
        if run_id not in self._stream_runs:
            ident = self._stream_starts.get(run_id) or ConnectIdentity()
            session = qe.sparkSession()
            token = _conf(session, TOKEN_CONF) or ident.token
            if token:
                self._stream_runs[run_id] = (token, _conf(session, TASK_RUN_CONF), ident)
            elif ident.session_id:
                self._stream_runs[run_id] = (ident.folder_key(), ident.task_run(), ident)
            else:  # no Connect session: the server's own query
                return
            _bounded(self._stream_runs)
        self._streams.onOtherEvent(event)

    def _on_query_terminated(self, event: Any) -> None:
        if self._streams is not None:
            self._streams.onOtherEvent(event)  # hands the query's record over (_on_stream_record)
        self._stream_starts.pop(str(event.runId().toString()), None)

    def _on_stream_record(self, record: CaptureRecord) -> None:
        """A streaming query's record (terminated, failed, or still running when its client ended its run)."""
        owner = self._stream_runs.pop(str(record.streaming.get("run_id")), None)
        if owner is None:
            return
        key, task_run, ident = owner
        record.environment = {**record.environment, **{
            k: v for k, v in (("connect_user", ident.user_id), ("connect_session", ident.session_id)) if v}}
        self._write(self._run(key, task_run, ident), record)

    def _finish_streams(self, key: str) -> None:
        """A run ends: its queries still running are handed over as such (their later batches are not recorded)."""
        if self._streams is None:
            return
        run_ids = {run_id for run_id, owner in self._stream_runs.items() if owner[0] == key}
        if run_ids:
            self._streams.finish(run_ids=run_ids)

    # -- runs -----------------------------------------------------------------------------------
    def _run(self, key: str, task_run: str | None, ident: ConnectIdentity) -> _Run:
        run = self._runs.get(key)
        if run is None:
            run = _Run(key=key, task_run=task_run, sink=None, dropped_at_start=self.dropped, identity=ident)
            try:
                run.sink = self._sink_factory(self.capture_dir, key, task_run)
            except Exception as exc:  # noqa: BLE001 - reported in the log; the run has no folder
                self._error(f"connect capture: cannot write to {self.capture_dir}/{key}: {exc!r}")
            self._runs[key] = run
            while len(self._runs) > self._max_runs:
                oldest = next(iter(self._runs))
                self._finish(oldest, f"closed after {self._max_runs} newer runs: the client never ended this run")
        self._runs.move_to_end(key)
        return run

    def _write(self, run: _Run, record: CaptureRecord) -> None:
        if run.sink is None:
            run.problems.append(f"the capture record of {record.command} was not written (no capture location)")
            return
        try:
            run.sink.write(record)
            run.records += 1
            self.captured += 1
        except Exception as exc:  # noqa: BLE001 - one write's record; the run's status says so
            run.problems.append(f"could not write the capture record of {record.command}: {exc}")

    def _finish(self, key: str, problem: str | None) -> None:
        """Write the run's status envelope (what the client waits for) and forget the run."""
        run = self._runs.pop(key, None)
        if run is None:  # a run that wrote nothing: its status still ends the client's wait
            run = _Run(key=key, task_run=None, sink=None, dropped_at_start=self.dropped)
            try:
                run.sink = self._sink_factory(self.capture_dir, key, None)
            except Exception as exc:  # noqa: BLE001 - nothing to write the status with
                self._error(f"connect capture: cannot write the status of {key}: {exc!r}")
                return
        if problem:
            run.problems.append(problem)
        if self.dropped > run.dropped_at_start:
            run.problems.append(f"{self.dropped - run.dropped_at_start} Spark event(s) dropped by the Connect server's "
                                "capture queue while this run was active (server overloaded): writes may be missing")
        ident = run.identity or ConnectIdentity()
        status = {
            "format_version": STATUS_FORMAT_VERSION,
            "spark_version": self.spark.version,
            "app_name": self.spark.sparkContext.appName,
            "captured": run.records,
            "problems": run.problems,
            "connect": {"user_id": ident.user_id, "session_id": ident.session_id},
            "written_at": dt.datetime.now(dt.UTC).isoformat(),
        }
        if run.sink is None:
            return
        try:
            run.sink.write_status(json.dumps(status))
            self.statuses += 1
        except Exception as exc:  # noqa: BLE001 - the client reports the missing status
            self._error(f"connect capture: could not write the status of {key}: {exc!r}")

    def _remote_sink(self, capture_dir: str, key: str, task_run: str | None) -> Any:
        from airflow_provider_lineage.capture.remote import RemoteSink

        conf = self.spark.sparkContext.getConf()
        return RemoteSink(capture_dir, key, task_run=task_run, spark=self.spark,
                          get_conf=lambda k: conf.get(k, None), limit=self.record_limit)

    def _error(self, message: str) -> None:
        log.warning("%s", message)
        self.errors.append(message)
        del self.errors[:-100]

    @staticmethod
    def _noop(record: CaptureRecord) -> None:
        """The in-driver listener's emit callback: unused (:meth:`_on_end` calls its ``_capture``)."""


def _ignore(*_args: Any) -> None:
    return None


def _bounded(mapping: collections.OrderedDict[str, Any], limit: int = 10_000) -> None:
    while len(mapping) > limit:
        mapping.popitem(last=False)


def _conf(session: Any, key: str) -> str | None:
    try:
        value = session.conf().get(key, "")
    except Exception:  # noqa: BLE001 - a session whose conf cannot be read: untagged
        return None
    return str(value) or None


def _set_command(qe: Any) -> Any:
    """The execution's ``SetCommand`` plan, else ``None``."""
    try:
        logical = qe.logical()
        return logical if str(logical.getClass().getSimpleName()) == "SetCommand" else None
    except Exception:  # noqa: BLE001 - not a command we know
        return None


def _set_key_value(plan: Any, key: str) -> str | None:
    """``SET key=value``'s value when the command sets ``key``."""
    try:
        kv = plan.kv()
        if kv.isEmpty():
            return None
        pair = kv.get()
        if str(pair._1()) != key or pair._2().isEmpty():
            return None
        return str(pair._2().get()).strip() or None
    except Exception:  # noqa: BLE001 - another SET shape
        return None


def _option(event: Any, name: str, *, plain: bool = False) -> Any:
    """A field of the end event: a Scala ``Option``'s value (``None`` when empty or absent), or a plain value."""
    try:
        value = getattr(event, name)()
        if plain:
            return value
        return None if value.isEmpty() else value.get()
    except Exception:  # noqa: BLE001 - a Spark without that field
        return None
