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
"""
from __future__ import annotations

import collections
import datetime as dt
import json
import os
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
#: The shape of the capture token the operators issue (:class:`~airflow_provider_lineage.operators.connect_run.
#: ConnectRun`, ``RemoteCapture``): anything else is not a run of theirs, and never becomes a path.
TOKEN_PATTERN = re.compile(r"run-[0-9a-f]{32}")


def valid_token(token: str | None) -> bool:
    """Whether ``token`` has the shape of a capture token the operators issue (``run-`` + 32 lowercase hex)."""
    return bool(token) and TOKEN_PATTERN.fullmatch(str(token)) is not None


def folder_inside(capture_dir: str, key: str) -> str:
    """``<capture_dir>/<key>``, checked to stay inside ``capture_dir``: one plain path component, and for a local
    path, no symlink that leads out of it. Raises ``ValueError`` naming the problem."""
    if not key or key in (".", "..") or "/" in key or "\\" in key or "\0" in key:
        raise ValueError(f"{key!r} is not a run folder name")
    folder = capture_dir.rstrip("/") + "/" + key
    if "://" in capture_dir and not capture_dir.startswith("file:"):
        return folder  # an object store or HDFS: no symlinks, the name is one component
    base = capture_dir
    if base.startswith("file:"):
        import urllib.parse

        base = urllib.parse.unquote(urllib.parse.urlsplit(base).path)
    real_base = os.path.realpath(base)
    real = os.path.realpath(os.path.join(base, key))
    if os.path.dirname(real) != real_base:
        raise ValueError(f"the run folder {folder} resolves to {real}, outside the capture location {real_base}")
    return folder

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
_JOB_START = "SparkListenerJobStart"
_EXECUTION_ID = "spark.sql.execution.id"
_NO_JOB: Any = object()
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
    spark_dropped_at_start: int | None = None


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

        sc = self.spark.sparkContext
        ensure_callback_server_started(sc._gateway)
        bus = sc._jsc.sc().listenerBus()
        try:
            bus.addToQueue(self, BUS_QUEUE)  # private[spark] in Scala, public in the bytecode
        except Exception:  # noqa: BLE001 - an older/other Spark: the shared queue
            sc._jsc.sc().addSparkListener(self)
            self._bus_queue = "shared"
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
            token = ident.token or (self._session_token.get(ident.session_id) if ident.session_id else None)
            if token is None and ident.session_id:
                token = _conf(session, TOKEN_CONF)
            key = self._claim(ident, token) if token and ident.session_id else None
            if key:
                self._stream_runs[run_id] = (key, _conf(session, TASK_RUN_CONF), ident)
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


def _shown(token: str | None) -> str:
    """A client's token as a log shows it (bounded, printable)."""
    text = repr(str(token))
    return text if len(text) <= 80 else text[:77] + "...'"


def _str(event: Any, name: str) -> str | None:
    try:
        return str(getattr(event, name)())
    except Exception:  # noqa: BLE001 - a Spark without that field
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
