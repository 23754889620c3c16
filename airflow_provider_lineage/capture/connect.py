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

Attribution, per write, from the session that ran it, as it was when the write *started*:

1. the client tag ``airflow_lineage_token:<token>`` in the execution's job tags (a snapshot taken by Spark when the
   execution started), else the token the session declared before (``SET spark.airflow_lineage.captureToken=<token>``,
   seen in the bus's order; what ``PySparkLineageOperator`` runs first), else the session conf as the execution's
   jobs saw it (a client that only called ``spark.conf.set``: Spark copies the session's SQL conf into each job's
   properties when it submits the job; read when the write is handled only for an execution that ran no job): the
   record goes to ``<capture_dir>/<token>/`` as an
   envelope (:mod:`.remote`), exactly like a cluster-deploy-mode driver's, and the task reads it back;
2. no token: ``<capture_dir>/connect-<user>-<session>/``, with the task run ``spark_connect/<user>/<session>``
   in each envelope (a job named after the Connect user and session).

The token is the server's to check, never a path the client chooses: it must have the shape the operators issue
(``run-`` + 32 hex digits, :data:`TOKEN_PATTERN`); a session is bound to the first token it declares (it writes to,
and ends, that run only); a token another live session holds, or whose run has ended, is refused. A refused or
malformed token is logged and ignored: the session's writes are recorded as an untagged session's (2.), never in
someone else's run. Run folders are resolved inside ``capture_dir`` (a symlink out is refused).

Driver round trips, per session: an action that returns rows to the client (``collect``, ``take``, ``first``,
``head``, ``toPandas``, ``toLocalIterator``: Connect runs each as a ``collectArrow`` execution) or sets a session
variable is analysed like the in-driver listener's (capture/driver.py), and the session's later writes get the
``driver round trip`` edges from the columns it returned; another session's returns never count. The client's code
is not on the server, so no literal is known as a constant of it: every literal that is not trivial counts.

Records of different tokens never share a folder, so concurrent clients never mix. A client ends its run
with ``SET spark.airflow_lineage.flush=<token>``: the bus delivers events in order, so when that command's
end is handled every earlier write of the run has been written, and the server writes the run's status
envelope (the operator waits for it). A session that closes (or stops) ends its run at once, with a status
(``captured: 0`` when it wrote nothing). Events Spark's listener queue dropped (and the capture's own queue) while
a run was open are counted in its status.

The listener callback only puts the event on a bounded queue and returns (a full queue drops the event
and counts it); one worker thread does the py4j reads, the plan JSON and the writes. No Airflow imports.

Just over 600 lines: one listener's event handling, token checks and run bookkeeping; the identities and token
helpers are in :mod:`.connect_tokens`, the streaming queries in :mod:`.connect_streams`.
"""
from __future__ import annotations

import collections
import datetime as dt
import json
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from airflow_provider_lineage.capture.config import STATUS_FORMAT_VERSION
from airflow_provider_lineage.capture.connect_streams import ConnectStreams
from airflow_provider_lineage.capture.connect_tokens import (
    BUS_QUEUE,
    FLUSH_CONF,
    SERVER_CONF,
    TASK_RUN_CONF,
    TOKEN_CONF,
    TOKEN_PATTERN,
    TOKEN_TAG_PREFIX,
    ConnectIdentity,
    _bounded,
    _conf,
    _option,
    _set_command,
    _set_key_value,
    _shown,
    _str,
    folder_inside,
    parse_job_tags,
    valid_token,
)
from airflow_provider_lineage.lineage.logs import get_logger
from airflow_provider_lineage.lineage.record import CaptureRecord

__all__ = ["BUS_QUEUE", "FLUSH_CONF", "SERVER_CONF", "TASK_RUN_CONF", "TOKEN_CONF", "TOKEN_PATTERN", "TOKEN_TAG_PREFIX",
           "ConnectCapture", "ConnectIdentity", "folder_inside", "parse_job_tags", "valid_token"]

log = get_logger(__name__)

_START = "SparkListenerSQLExecutionStart"
_END = "SparkListenerSQLExecutionEnd"
_SESSION_CLOSED = "SparkListenerConnectSessionClosed"
_QUERY_STARTED = "QueryStartedEvent"
_QUERY_TERMINATED = "QueryTerminatedEvent"
_JOB_START = "SparkListenerJobStart"
_EXECUTION_ID = "spark.sql.execution.id"
_NO_JOB: Any = object()
_WANTED = frozenset({_START, _END, _SESSION_CLOSED, _QUERY_STARTED, _QUERY_TERMINATED})


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
    spark_dropped_at_start: int | None = None


class ConnectCapture(ConnectStreams):
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
        #: per Connect session: what its actions returned to its client (capture/driver.py), dropped at its close
        self._drivers: collections.OrderedDict[str, Any] = collections.OrderedDict()
        self._no_driver = self._capture.driver
        self._queue: queue.Queue[tuple[str, Any] | None] = queue.Queue(maxsize=queue_size)
        #: execution id -> (who ran it, the token it ran under), from its start event
        self._starts: collections.OrderedDict[int, tuple[ConnectIdentity, str | None]] = collections.OrderedDict()
        #: nested execution id -> its root execution's (a CTAS's inner write runs the jobs)
        self._roots: collections.OrderedDict[int, int] = collections.OrderedDict()
        #: execution id -> the session conf's capture token (``None``: none) when its first job was submitted
        self._job_tokens: collections.OrderedDict[int, str | None] = collections.OrderedDict()
        self._runs: collections.OrderedDict[str, _Run] = collections.OrderedDict()
        self._max_runs = max_runs
        self._sink_factory = sink_factory or self._remote_sink
        #: live session id -> the token it declared first (its run: the only one it writes to and ends), and back
        self._session_token: dict[str, str] = {}
        self._token_session: dict[str, str] = {}
        #: tokens whose run ended (a status was written): never reopened
        self._ended: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._warned: collections.OrderedDict[tuple[str, str, str], None] = collections.OrderedDict()
        self._bus_queue = BUS_QUEUE
        #: (time, Spark's drops, the capture queue's drops) each time the counts changed (sampled about once a
        #: second): a run counts the drops since its session *started* (Spark's session start time), so a drop of
        #: its own first events, before the server saw the session, still shows in its status
        self._drop_marks: collections.deque[tuple[float, int | None, int]] = collections.deque(maxlen=100_000)
        self._drop_marks.append((time.time(), self._spark_dropped(), 0))
        self._marks_truncated = False
        self._last_sample = time.monotonic()
        #: live session id -> (Spark's drops, the capture queue's drops) when it started
        self._session_marks: collections.OrderedDict[str, tuple[int | None, int]] = collections.OrderedDict()
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
        self._added: Any = None

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

    def onJobStart(self, event: Any) -> None:
        """A job of a SQL execution: its properties are the session's SQL conf as Spark propagated it when the job
        was submitted (a snapshot), the capture token included when the client set it with ``spark.conf.set``."""
        try:
            props = event.properties()
            if props is None:
                return
            execution_id = props.getProperty(_EXECUTION_ID)
            if execution_id is not None:
                token = props.getProperty(TOKEN_CONF)
                self._queue.put_nowait((_JOB_START, (int(execution_id), str(token) if token else None)))
        except queue.Full:
            self.dropped += 1
        except Exception:
            log.debug("connect capture: job start not queued", exc_info=True)

    def __getattr__(self, name: str) -> Any:
        """Every other ``SparkListenerInterface`` callback: nothing to do."""
        if name.startswith("on") and name[2:3].isupper():
            return _ignore
        raise AttributeError(name)

    # -- lifecycle ------------------------------------------------------------------------------
    def register(self) -> None:
        """Start py4j's callback server and add this listener to a listener-bus queue of its own."""
        from pyspark.java_gateway import ensure_callback_server_started

        from airflow_provider_lineage.capture import listener_forwarder

        sc = self.spark.sparkContext
        ensure_callback_server_started(sc._gateway)
        # behind the JVM filter: only these events and the jobs of SQL executions cross to Python
        wanted = {"other_events": tuple(sorted(_WANTED)), "job_starts": listener_forwarder.JOBS_INSIDE_SQL}
        try:
            self._added = listener_forwarder.register(sc, self, bus_queue=BUS_QUEUE, **wanted)
        except Exception:  # noqa: BLE001 - an older/other Spark: the shared queue
            self._added = listener_forwarder.register(sc, self, **wanted)
            self._bus_queue = "shared"
        self._registered = True

    def close(self, timeout_s: float = 60.0) -> bool:
        """Deliver what Spark's bus holds, finish the queued work, close every open run (bounded)."""
        from airflow_provider_lineage.capture.session import drain_bus

        if self._registered:
            try:
                drain_bus(self.spark.sparkContext, timeout_s)
                from airflow_provider_lineage.capture import listener_forwarder

                listener_forwarder.unregister(self.spark.sparkContext, self._added)
            except Exception:
                log.debug("connect capture: could not remove the listener", exc_info=True)
            self._registered = False
        done = self.wait_idle(timeout_s)
        self._queue.put(None)
        self._worker.join(timeout_s)
        reason = "the Connect server stopped before the client ended its run"
        for key in list(self._runs):
            self._finish(key, reason)
        for session, token in list(self._session_token.items()):  # declared, nothing written yet
            if token not in self._ended:
                self._finish(token, reason, ConnectIdentity(session_id=session))
        return done

    def state_sizes(self) -> dict[str, int]:
        """How much the capture holds (open runs, live sessions, executions in flight...): back to 0 when idle."""
        return {"runs": len(self._runs), "sessions": len(self._session_token), "tokens": len(self._token_session),
                "executions": len(self._starts) + len(self._roots) + len(self._job_tokens),
                "stream_runs": len(self._stream_runs), "driver_logs": len(self._drivers), "queued": self._queue.qsize()}

    def _driver_log(self, session_id: str | None) -> Any:
        """The session's :class:`~.driver.DriverLog` (made on first use, dropped when the session closes)."""
        from airflow_provider_lineage.capture.driver import DriverLog

        key = session_id or "unknown"
        log_ = self._drivers.get(key)
        if log_ is None:
            log_ = self._drivers[key] = DriverLog()
            _bounded(self._drivers)  # type: ignore[arg-type]
        self._drivers.move_to_end(key)
        return log_

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
            try:
                item = self._queue.get(timeout=1.0)
            except queue.Empty:
                self._sample_drops()
                continue
            if time.monotonic() - self._last_sample >= 1.0:
                self._sample_drops()
            try:
                if item is None:
                    return
                name, event = item
                if name == _START:
                    self._on_start(event)
                elif name == _END:
                    self._on_end(event)
                elif name == _JOB_START:
                    self._on_job_start(*event)
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
        """Who ran the execution, and under which run, as it was when it started: the job tags are Spark's
        snapshot; the session's declared token is what the bus delivered before this start."""
        try:
            tags = str(event.jobTags().mkString("\n")).split("\n")
        except Exception:  # noqa: BLE001 - a Spark without jobTags on the event: no identity
            tags = []
        ident = parse_job_tags(tags)
        if ident.session_id:
            if ident.session_id not in self._session_marks:
                # a session Spark no longer knows (closed before this start was handled): every drop since the
                # server started counts (over-counted, never missed)
                self._session_marks[ident.session_id] = self._marks_at(self._session_start(ident) or 0.0)
                _bounded(self._session_marks)  # type: ignore[arg-type]
            token = ident.token or self._session_token.get(ident.session_id)
            execution_id = int(event.executionId())
            self._starts[execution_id] = (ident, token)
            root = _option(event, "rootExecutionId")
            if root is not None and int(root) != execution_id:
                self._roots[execution_id] = int(root)
                _bounded(self._roots)  # type: ignore[arg-type]
            while len(self._starts) > 10_000:
                self._starts.popitem(last=False)

    def _on_job_start(self, execution_id: int, token: str | None) -> None:
        """The session conf's token (or none) as the execution's first job saw it: for a client that only called
        ``spark.conf.set``, the execution (and the command it runs under) belongs to that run (or to none), whatever
        the client sets later."""
        for key in (execution_id, self._roots.get(execution_id)):
            if key is not None and key in self._starts and key not in self._job_tokens:
                self._job_tokens[key] = token
                _bounded(self._job_tokens)  # type: ignore[arg-type]

    def _on_end(self, event: Any) -> None:
        execution_id = int(event.executionId())
        started = self._starts.pop(execution_id, None)
        self._roots.pop(execution_id, None)
        job_token = self._job_tokens.pop(execution_id, _NO_JOB)
        qe = event.qe()
        if qe is not None and str(qe.getClass().getSimpleName()) == "IncrementalExecution":
            self._on_micro_batch(event, qe)  # a streaming query's micro-batch (no Connect tags on its thread)
            return
        if qe is None or started is None:  # not a Connect execution (the server's own session), or no plan
            return
        ident, token = started
        session = qe.sparkSession()
        logical = _set_command(qe)
        if logical is not None:  # SET: a run declared, the client's end of run, or a setting (not a write)
            declared = _set_key_value(logical, TOKEN_CONF)
            if declared is not None:
                key = self._claim(ident, declared)
                if key is not None:
                    self._run(key, _conf(session, TASK_RUN_CONF), ident)
                return
            flushed = _set_key_value(logical, FLUSH_CONF)
            if flushed:
                self._flush(ident, token, flushed)
            return
        if token is None and ident.session_id not in self._session_token:
            # a client that only set the session conf: as its execution's jobs saw it; for an execution that ran no
            # job, read as late as this
            token = _conf(session, TOKEN_CONF) if job_token is _NO_JOB else job_token
        key = self._claim(ident, token) if token else None
        duration = _option(event, "duration", plain=True)
        failure = _option(event, "executionFailure")
        func_name = _option(event, "executionName") or "command"
        # the session's own driver round trips: what its collect/take/toPandas... returned (never another session's)
        self._capture.driver = self._driver_log(ident.session_id)
        self._capture.track_driver = True
        try:
            record = self._capture._capture(str(func_name), qe, int(duration) if duration is not None else None,
                                            failure)
        finally:
            self._capture.track_driver = False
            self._capture.driver = self._no_driver
        if record is None:
            return
        record.environment = {**record.environment, **{
            k: v for k, v in (("connect_user", ident.user_id), ("connect_session", ident.session_id),
                              ("connect_operation", ident.operation_id)) if v}}
        if key is not None:
            run = self._run(key, _conf(session, TASK_RUN_CONF), ident)
        else:
            run = self._run(ident.folder_key(), ident.task_run(), ident)
        self._write(run, record)

    def _on_session_closed(self, event: Any) -> None:
        """A closed session ends its runs at once: its declared run (with ``captured: 0`` when it wrote nothing: the
        client stopped its session first, or died and the server released it) and an untagged session's folder."""
        session_id = str(event.sessionId())
        token = self._session_token.pop(session_id, None)
        if token is not None:
            if self._token_session.get(token) == session_id:
                del self._token_session[token]
            if token not in self._ended:
                self._finish_streams(token)
                self._finish(token, None, ConnectIdentity(user_id=_str(event, "userId"), session_id=session_id))
        for key in [k for k, run in self._runs.items() if run.identity and run.identity.session_id == session_id]:
            self._finish_streams(key)
            self._finish(key, None)
        self._session_marks.pop(session_id, None)
        self._drivers.pop(session_id, None)

    # -- tokens: the server's, not the client's word ------------------------------------------------
    def _claim(self, ident: ConnectIdentity, token: str) -> str | None:
        """The run a session's execution under ``token`` goes to: the session's first declared token (a session is
        bound to it), ``None`` (an untagged session's folder) for a malformed token, a token another live session
        holds, or one whose run ended. Each refusal is logged once per session and token."""
        session = ident.session_id or "unknown"
        bound = self._session_token.get(session)
        if bound is not None:
            if token != bound:
                self._warn_once(session, token, "rebind",
                                f"connect capture: session {session} (user {ident.user_id}) declared capture token "
                                f"{_shown(token)} after {bound}: ignored, a session writes to and ends the run it "
                                "declared first only")
            return None if bound in self._ended else bound
        if not valid_token(token):
            self._warn_once(session, token, "shape",
                            f"connect capture: session {session} (user {ident.user_id}) declared capture token "
                            f"{_shown(token)}, which is not one the Airflow operators issue ('run-' + 32 hex digits): "
                            "ignored; its writes are recorded as an untagged session's "
                            f"({ident.folder_key()})")
            return None
        if token in self._ended:
            self._warn_once(session, token, "ended",
                            f"connect capture: session {session} (user {ident.user_id}) declared capture token "
                            f"{token}, whose run has ended: ignored; its writes are recorded as an untagged session's")
            return None
        holder = self._token_session.get(token)
        if holder is not None and holder != session:
            self._warn_once(session, token, "held",
                            f"connect capture: session {session} (user {ident.user_id}) declared capture token "
                            f"{token}, which live session {holder} holds: refused; its writes are recorded as an "
                            "untagged session's, never in that run")
            return None
        self._session_token[session] = token
        self._token_session[token] = session
        return token

    def _flush(self, ident: ConnectIdentity, token: str | None, flushed: str) -> None:
        """``SET flush=<token>``: ends the run the session declared first (even after it declared another), only."""
        session = ident.session_id or "unknown"
        bound = self._session_token.get(session)
        if bound is None and token:  # a tags-only client whose first execution is its flush
            bound = self._claim(ident, token)
        if bound is None or flushed != bound:
            self._warn_once(session, flushed, "flush",
                            f"connect capture: session {session} (user {ident.user_id}) asked to end the run of "
                            f"capture token {_shown(flushed)}, which is not its own: ignored")
            return
        if bound in self._ended:
            return
        self._finish_streams(bound)
        self._finish(bound, None, ident)

    def _warn_once(self, session: str, token: str, kind: str, message: str) -> None:
        key = (session, str(token)[:100], kind)
        if key in self._warned:
            return
        self._warned[key] = None
        _bounded(self._warned)  # type: ignore[arg-type]
        self._error(message)

    def _sample_drops(self) -> tuple[int | None, int]:
        """Read the drop counts now; remember them (with the time) when they changed."""
        self._last_sample = time.monotonic()
        now = (self._spark_dropped(), self.dropped)
        if (self._drop_marks[-1][1], self._drop_marks[-1][2]) != now:
            if len(self._drop_marks) == self._drop_marks.maxlen:
                self._marks_truncated = True
            self._drop_marks.append((time.time(), *now))
        return now

    def _marks_at(self, when: float | None) -> tuple[int | None, int]:
        """The drop counts as they were at ``when`` (epoch seconds; ``None``: now). A count sampled after a drop
        holds it, so drops after ``when`` are never in what this returns (a run's status may over-count, never
        under-count); before the oldest mark kept: 0."""
        if when is None:
            return self._sample_drops()
        marks = self._drop_marks
        if when < marks[0][0]:
            return (0, 0) if self._marks_truncated or marks[0][1] is not None else (None, 0)
        for t, spark, own in reversed(marks):
            if t <= when:
                return spark, own
        return marks[0][1], marks[0][2]

    def _session_start(self, ident: ConnectIdentity) -> float | None:
        """When Spark Connect started the session (epoch seconds), ``None`` when it cannot say (closed, other Spark)."""
        try:
            jvm = self.spark.sparkContext._jvm
            pkg = jvm.org.apache.spark.sql.connect.service
            holder = pkg.SparkConnectService.sessionManager().getIsolatedSessionIfPresent(
                pkg.SessionKey(ident.user_id, ident.session_id))
            if holder.isEmpty():
                return None
            return int(holder.get().getSessionHolderInfo().startTimeMs()) / 1000.0
        except Exception:  # noqa: BLE001 - another Spark: the drops since the server saw the session
            return None

    def _spark_dropped(self) -> int | None:
        """Events Spark's listener bus dropped from this capture's queue so far (``None``: not readable)."""
        try:
            bus = self.spark.sparkContext._jsc.sc().listenerBus()
            counter = bus.metrics().metricRegistry().counter(f"queue.{self._bus_queue}.numDroppedEvents")
            return int(counter.getCount())
        except Exception:  # noqa: BLE001 - another Spark: drops are in Spark's log only
            return None

    # -- runs -----------------------------------------------------------------------------------
    def _run(self, key: str, task_run: str | None, ident: ConnectIdentity) -> _Run:
        run = self._runs.get(key)
        if run is None:
            spark_mark, own_mark = self._session_marks.get(ident.session_id or "") or self._marks_at(None)
            run = _Run(key=key, task_run=task_run, sink=None, dropped_at_start=own_mark, identity=ident,
                       spark_dropped_at_start=spark_mark)
            run.sink = self._open_sink(key, task_run)
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

    def _open_sink(self, key: str, task_run: str | None) -> Any:
        try:
            folder_inside(self.capture_dir, key)
            return self._sink_factory(self.capture_dir, key, task_run)
        except Exception as exc:  # noqa: BLE001 - reported in the log; the run has no folder
            self._error(f"connect capture: cannot write to {self.capture_dir}/{key}: {exc}")
            return None

    def _finish(self, key: str, problem: str | None, ident: ConnectIdentity | None = None) -> None:
        """Write the run's status envelope (what the client waits for) and forget the run."""
        run = self._runs.pop(key, None)
        if valid_token(key):
            self._ended[key] = None
            _bounded(self._ended)  # type: ignore[arg-type]
        if run is None:  # a run that wrote nothing: its status still ends the client's wait
            spark_mark, own_mark = self._session_marks.get(ident.session_id or "") if ident and ident.session_id \
                and ident.session_id in self._session_marks else self._marks_at(None)
            run = _Run(key=key, task_run=None, sink=None, dropped_at_start=own_mark, identity=ident,
                       spark_dropped_at_start=spark_mark)
            run.sink = self._open_sink(key, None)
            if run.sink is None:
                return
        if problem:
            run.problems.append(problem)
        if self.dropped > run.dropped_at_start:
            run.problems.append(f"{self.dropped - run.dropped_at_start} Spark event(s) dropped by the Connect server's "
                                "capture queue while this run was active (server overloaded): writes may be missing")
        spark_dropped = self._spark_dropped() if run.spark_dropped_at_start is not None else None
        if spark_dropped is not None and run.spark_dropped_at_start is not None \
                and spark_dropped > run.spark_dropped_at_start:
            run.problems.append(
                f"{spark_dropped - run.spark_dropped_at_start} Spark event(s) dropped by Spark's listener queue "
                f"{self._bus_queue} while this run was active (server overloaded): writes may be missing; raise "
                f"spark.scheduler.listenerbus.eventqueue.{self._bus_queue}.capacity on the server")
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
