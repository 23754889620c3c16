"""Structured Streaming writes: one capture record per streaming query, not one per micro-batch.

A streaming query's micro-batches never reach a ``QueryExecutionListener`` (Spark reports only named
executions to it; ``MicroBatchExecution`` runs each batch without a name), so a file sink or ``toTable``
used to leave no record. :class:`StreamingCapture` is a py4j ``SparkListenerInterface`` on the
SparkContext, so it sees every session's streaming queries (the application's, a Spark Connect
session's, a declarative pipeline's flows):

* ``SparkListenerSQLExecutionEnd`` whose ``qe()`` is an ``IncrementalExecution`` (a micro-batch): the
  first one of a query run (``runId``) becomes the query's record, through the same seam as a batch write
  (:meth:`.listener.WriteCaptureListener._capture`): the logical root of a micro-batch is the streaming
  write (``WriteToMicroBatchDataSourceV1``: file sink, ``toTable`` of a V1 table, ``foreachBatch``;
  ``WriteToMicroBatchDataSource``: V2 sinks and tables), put over the batch's optimized query, whose leaves
  are the streaming sources as the batch read them (a file source: a file relation over its folder);
  the later micro-batches of the run only count;
* ``QueryTerminatedEvent``: the query's record is handed over, ``streaming.state`` ``"terminated"`` (or
  ``"failed"`` with the exception), so an ``availableNow`` / ``once`` query gives exactly one record;
* :meth:`StreamingCapture.finish` (the launcher's end of run, after the listener bus drained): a query
  still running (a ``processingTime`` or continuous trigger the job left running) is handed over with
  ``streaming.state == "running"``, and reported as such in the task log and XCom.

With ``other_sessions`` (the launcher's setting), a named execution (what a batch write is) of a session that has
no capture listener of ours is captured here too: the Spark Connect sessions of a driver that runs a local Connect
server (a declarative pipeline's flows, ``spark-pipelines``; an application run with ``--remote local``). A session
with our ``QueryExecutionListener`` (or its clone in a streaming query) reports its writes itself.

``foreachBatch``: the writes the function makes are batch writes over the micro-batch's rows (a ``LogicalRDD``),
captured by the session's listener (one per micro-batch); the query's record (``streaming.sink ==
"ForeachBatchSink"``, with ``output_ids``, the exprIds of that ``LogicalRDD``) is what
:func:`~airflow_provider_lineage.lineage.record.fold_foreach_batch` puts under them: one record per query run and
output, with column lineage from the streaming source.

Everything is defensive: the callback runs on Spark's listener bus and never raises into it.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, ClassVar

from airflow_provider_lineage.lineage.logs import get_logger
from airflow_provider_lineage.lineage.naming import KAFKA_OPTIONS
from airflow_provider_lineage.lineage.record import FOREACH_BATCH_SINK, CaptureRecord, OutputInfo

log = get_logger(__name__)

#: Logical roots of a micro-batch (``IncrementalExecution.logical``) that write.
STREAM_WRITES = frozenset(
    {"WriteToMicroBatchDataSourceV1", "WriteToMicroBatchDataSource", "WriteToContinuousDataSource"}
)
_END = "SparkListenerSQLExecutionEnd"
_TERMINATED = "QueryTerminatedEvent"
_STARTED = "QueryStartedEvent"
#: Bound on the queries remembered (a long-running driver with many short queries).
MAX_QUERIES = 10_000


class StreamingBatchExecution:
    """A micro-batch's ``QueryExecution`` seen as a write: ``optimizedPlan()`` is the streaming write node
    (the batch's logical root) over the batch's optimized query. Everything else is the real execution's."""

    def __init__(self, qe: Any, jvm: Any) -> None:
        self._qe = qe
        self._jvm = jvm

    def optimizedPlan(self) -> Any:
        root = self._qe.analyzed()
        query = self._qe.optimizedPlan()
        if query.getClass().getSimpleName() in ("WriteToDataSourceV2", "WriteToContinuousDataSource"):
            query = query.query()  # the V2 physical write the optimizer made of the root: its query
        return root.withNewChildren(self._jvm.PythonUtils.toSeq([query]))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._qe, name)


class StreamingCapture:
    """py4j ``SparkListenerInterface``: one :class:`CaptureRecord` per streaming query run.

    :param spark: a (classic) session of the driver; its SparkContext is the one observed.
    :param emit: called with each finished record (listener thread, or :meth:`finish`'s caller).
    :param capture: the :class:`~.listener.WriteCaptureListener` whose ``_capture`` builds records
        (default: a new one on ``spark`` that emits nothing itself).
    """

    class Java:
        implements: ClassVar[list[str]] = ["org.apache.spark.scheduler.SparkListenerInterface"]

    def __init__(self, spark: Any, emit: Callable[[CaptureRecord], None], capture: Any = None,
                 other_sessions: bool = True) -> None:
        if capture is None:
            from airflow_provider_lineage.capture.listener import WriteCaptureListener

            capture = WriteCaptureListener(spark, _ignore)
        self._spark = spark
        self._jvm = spark.sparkContext._jvm
        self._emit = emit
        self._capture = capture
        self._lock = threading.RLock()
        #: runId -> the query's pending record (None: seen, nothing to record, e.g. foreachBatch)
        self._pending: OrderedDict[str, CaptureRecord | None] = OrderedDict()
        self._batches: dict[str, int] = {}
        self._done: OrderedDict[str, None] = OrderedDict()
        self._names: OrderedDict[str, str] = OrderedDict()  # runId -> queryName (QueryStartedEvent)
        self.errors: list[str] = []
        self.captured = 0
        self._registered = False
        self._added: Any = None
        #: also capture the (batch) writes of sessions without a capture listener of ours: Spark Connect
        #: sessions (a declarative pipeline's flows, an application run with ``--remote local``)
        self.other_sessions = other_sessions
        self._covered: OrderedDict[str, bool] = OrderedDict()

    # -- SparkListenerInterface ----------------------------------------------------------------
    def onOtherEvent(self, event: Any) -> None:
        try:
            name = event.getClass().getSimpleName()
            if name == _END:
                qe = event.qe()
                if qe is None:
                    return
                if qe.getClass().getSimpleName() == "IncrementalExecution":
                    self._on_batch(event, qe)
                elif self.other_sessions:
                    self._on_write(event, qe)
            elif name == _STARTED:
                query_name = event.name()
                if query_name is not None:
                    with self._lock:
                        self._names[str(event.runId().toString())] = str(query_name)
                        while len(self._names) > MAX_QUERIES:
                            self._names.popitem(last=False)
            elif name == _TERMINATED:
                self._on_terminated(str(event.runId().toString()), event.exception())
        except Exception as exc:  # noqa: BLE001 - never raise into Spark's listener bus
            self._error(f"streaming capture: event not handled: {exc!r}")

    def __getattr__(self, name: str) -> Any:
        """Every other ``SparkListenerInterface`` callback: nothing to do."""
        if name.startswith("on") and name[2:3].isupper():
            return _ignore
        raise AttributeError(name)

    # -- lifecycle -----------------------------------------------------------------------------
    def register(self) -> StreamingCapture:
        """Start py4j's callback server and add this listener to the SparkContext's shared listener queue."""
        from pyspark.java_gateway import ensure_callback_server_started

        from airflow_provider_lineage.capture import listener_forwarder

        sc = self._spark.sparkContext
        ensure_callback_server_started(sc._gateway)
        # behind the JVM filter: only these events cross to Python (not every task's)
        self._added = listener_forwarder.register(sc, self, other_events=(_END, _STARTED, _TERMINATED),
                                                  job_starts=listener_forwarder.JOBS_NONE)
        self._registered = True
        return self

    def unregister(self) -> None:
        if self._registered:
            try:
                from airflow_provider_lineage.capture import listener_forwarder

                listener_forwarder.unregister(self._spark.sparkContext, self._added)
            except Exception:  # noqa: BLE001, S110 - stopping anyway
                pass
            self._registered = False

    def finish(self, sessions: list[Any] = (), run_ids: set[str] | None = None) -> list[CaptureRecord]:  # type: ignore[assignment]
        """Hand over the records of queries not terminated yet (still running): call after draining the bus.

        ``sessions``: JVM sessions whose active queries that ran no micro-batch yet (a continuous trigger
        reports its one execution only when it stops) are recorded from their ``lastExecution`` too.
        ``run_ids``: only these query runs (a Spark Connect client's, when it ends its run); later micro-batches
        of a run handed over here are not recorded again.
        """
        active: set[str] | None = set() if sessions else None
        for jsession in sessions:
            active |= self._scan_active(jsession)  # type: ignore[operator]
        out: list[CaptureRecord] = []
        with self._lock:
            pending = [(k, v) for k, v in self._pending.items() if run_ids is None or k in run_ids]
            for run_id, _record in pending:
                del self._pending[run_id]
                if run_ids is not None:
                    self._done[run_id] = None
        for run_id, record in pending:
            if record is None:
                continue
            record.streaming["state"] = "running" if active is None or run_id in active else "terminated"
            record.streaming["batches"] = self._batches.get(run_id, 0)
            out.append(record)
            self._hand_over(record)
        return out

    def _scan_active(self, jsession: Any) -> set[str]:
        """Run ids of the session's active queries; those with no micro-batch seen yet are recorded from
        their ``lastExecution``."""
        found: set[str] = set()
        try:
            active = list(jsession.streams().active())
        except Exception:  # noqa: BLE001 - a stopped session
            return found
        for query in active:
            try:
                run_id = str(query.runId().toString())
                found.add(run_id)
                with self._lock:
                    if run_id in self._pending or run_id in self._done:
                        continue
                    self._pending[run_id] = None
                    if query.name() is not None:
                        self._names[run_id] = str(query.name())
                qe = query.streamingQuery().lastExecution()
                if qe is None:
                    continue
                record = self._record(None, qe, run_id)
                with self._lock:
                    self._pending[run_id] = record
            except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
                self._error(f"streaming capture: could not record an active query: {exc!r}")
        return found

    # -- events --------------------------------------------------------------------------------
    def _on_batch(self, event: Any, qe: Any) -> None:
        """A micro-batch: the first of a query run becomes its record; the later ones only count."""
        run_id = str(qe.runId().toString())
        with self._lock:
            if run_id in self._done:
                return
            self._batches[run_id] = self._batches.get(run_id, 0) + 1
            if run_id in self._pending:
                return
            self._pending[run_id] = None  # claimed: later batches only count
            while len(self._pending) > MAX_QUERIES:
                self._pending.popitem(last=False)
        record = self._record(event, qe, run_id)
        with self._lock:
            if run_id in self._pending:
                self._pending[run_id] = record

    def _on_write(self, event: Any, qe: Any) -> None:
        """A named execution (a write goes through ``withAction``) of a session our listener is not on."""
        execution_name = _option(_plain(event, "executionName"))
        if execution_name is None or self._has_listener(qe.sparkSession()):
            return
        duration = _plain(event, "duration")
        failure = _option(_plain(event, "executionFailure"))
        record = self._capture._capture(str(execution_name), qe, int(duration) if duration is not None else None,
                                        failure)
        if record is not None:
            self._hand_over(record)

    def _has_listener(self, jsession: Any) -> bool:
        """Whether the session has a py4j ``QueryExecutionListener`` (the launcher's, or its clone in a
        streaming query's session), which reports its writes itself."""
        key = str(jsession.sessionUUID())
        with self._lock:
            if key in self._covered:
                return self._covered[key]
        from airflow_provider_lineage.capture.py4j_helpers import has_py4j_listener

        try:
            covered = has_py4j_listener(jsession)
        except Exception:  # noqa: BLE001 - cannot tell: leave the session to its own listener
            covered = True
        with self._lock:
            self._covered[key] = covered
            while len(self._covered) > MAX_QUERIES:
                self._covered.popitem(last=False)
        return covered

    def _on_terminated(self, run_id: str, exception: Any) -> None:
        with self._lock:
            record = self._pending.pop(run_id, None)
            self._done[run_id] = None
            while len(self._done) > MAX_QUERIES:
                self._done.popitem(last=False)
            batches = self._batches.pop(run_id, 0)
            self._names.pop(run_id, None)
        if record is None:
            return
        message = _option(exception)
        record.streaming["state"] = "failed" if message else "terminated"
        record.streaming["batches"] = batches
        if message:
            record.status, record.error = "failure", str(message)
        self._hand_over(record)

    # -- records -------------------------------------------------------------------------------
    def _record(self, event: Any, qe: Any, run_id: str) -> CaptureRecord | None:
        root = qe.logical()
        write = root.getClass().getSimpleName()
        if write not in STREAM_WRITES:
            return None
        sink = _sink_of(root)
        duration = _plain(event, "duration") if event is not None else None
        record = self._capture._capture("writeStream", StreamingBatchExecution(qe, self._jvm),
                                        int(duration) if duration is not None else None, None)
        if record is None:
            return None
        query_id = str(qe.queryId().toString())
        record.streaming = {"query_id": query_id, "run_id": run_id, "sink": sink, "state": "running"}
        if sink == FOREACH_BATCH_SINK:  # the batch writes of the function are folded into it (fold_foreach_batch)
            record.streaming["output_ids"] = _output_ids(qe)
        with self._lock:
            name = self._names.get(run_id)
        if name:
            record.streaming["name"] = name
        return record

    def _hand_over(self, record: CaptureRecord) -> None:
        try:
            self._emit(record)
            self.captured += 1
        except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
            self._error(f"could not hand over the capture record of streaming query {record.streaming}: {exc!r}")

    def _error(self, message: str) -> None:
        log.warning("%s", message)
        self.errors.append(message)
        del self.errors[:-100]


# -- output descriptors of the streaming writes (registered with the listener's readers) -----------
def _stream_v1(lst: Any, cmd: Any, out: OutputInfo) -> None:
    """``WriteToMicroBatchDataSourceV1(catalogTable, sink, query, queryId, writeOptions, outputMode, batchId)``."""
    from airflow_provider_lineage.capture import output_readers as readers

    sink = cmd.sink()
    options = readers._scala_map(cmd.writeOptions())
    out.mode = _mode(cmd)
    out.format = _sink_format(sink)
    out.location = options.get("path") or _file_sink_path(sink)
    if out.format and out.format not in ("parquet", "orc", "csv", "json", "text", "avro", "delta"):
        out.options = {k: v for k, v in options.items() if k.lower() in ("path", "table", *KAFKA_OPTIONS)}
    partitions = _private_field(sink, "partitionColumnNames")
    if partitions is not None:
        out.partition_columns = [str(c) for c in readers._seq(partitions)]
    if cmd.catalogTable().isDefined():
        table = cmd.catalogTable().get()
        out.table = readers._table_name(table.identifier())
        out.location = out.location or lst._table_location(table.identifier())
    lst._fill_columns(out, cmd.query())


def _stream_v2(lst: Any, cmd: Any, out: OutputInfo) -> None:
    """``WriteToMicroBatchDataSource(relation, table, query, queryId, writeOptions, outputMode, batchId)``."""
    from airflow_provider_lineage.capture import identity
    from airflow_provider_lineage.capture import output_readers as readers

    out.mode = _mode(cmd)
    relation = _plain(cmd, "relation")
    if relation is not None and relation.isDefined():
        readers._fill_v2(out, identity.v2_relation(lst._spark, relation.get()))
        out.table = out.table or readers._v2_table_name(relation.get())
    else:
        table = _plain(cmd, "table")
        name = str(table.name()) if table is not None else str(cmd.getClass().getSimpleName())
        out.format = readers._format_name(name) if name else None  # KafkaTable -> kafka; memory, console as named
        if out.format == name:
            out.format = name.lower()
        write_options = _plain(cmd, "writeOptions")
        options = readers._scala_map(write_options) if write_options is not None else {}
        out.options = {k: v for k, v in options.items() if k.lower() in ("path", "queryname", *KAFKA_OPTIONS)}
        out.location = options.get("path")
    lst._fill_columns(out, cmd.query())


def _mode(cmd: Any) -> str:
    """Append / Update append rows; Complete rewrites the whole result each batch."""
    try:
        return "Overwrite" if str(cmd.outputMode().toString()).lower() == "complete" else "Append"
    except Exception:  # noqa: BLE001 - a sink without an output mode appends
        return "Append"


def _output_ids(qe: Any) -> list[int]:
    """ExprIds of the micro-batch's output: the ``LogicalRDD`` a ``foreachBatch`` function gets has these (the same
    in every micro-batch of a run)."""
    from airflow_provider_lineage.capture.output_readers import _seq

    query = qe.analyzed()  # the LogicalRDD's output is the analyzed plan's (the optimizer may re-point attributes)
    if query.getClass().getSimpleName() in STREAM_WRITES:
        query = query.query()
    return [int(a.exprId().id()) for a in _seq(query.output())]


def _sink_of(root: Any) -> str:
    try:
        if root.getClass().getSimpleName() == "WriteToMicroBatchDataSourceV1":
            return str(root.sink().getClass().getSimpleName())
        return str(root.getClass().getSimpleName())
    except Exception:  # noqa: BLE001 - unknown shape: treated as a write
        return ""


def _sink_format(sink: Any) -> str | None:
    from airflow_provider_lineage.capture.output_readers import _format_name

    file_format = _private_field(sink, "fileFormat")
    if file_format is not None:
        return _format_name(str(file_format.toString()))
    cls = str(sink.getClass().getSimpleName())
    return cls[:-4].lower() if cls.endswith("Sink") else cls


def _file_sink_path(sink: Any) -> str | None:
    path = _private_field(sink, "path")
    return str(path) if path is not None else None


def _private_field(obj: Any, name: str) -> Any:
    """A Scala constructor parameter kept as a private field (``FileStreamSink.fileFormat``), by reflection."""
    try:
        for f in obj.getClass().getDeclaredFields():
            fname = str(f.getName())
            if fname == name or fname.endswith("$$" + name):
                f.setAccessible(True)
                return f.get(obj)
    except Exception:
        log.debug("no field %s on %s", name, obj, exc_info=True)
    return None


def _plain(event: Any, name: str) -> Any:
    try:
        return getattr(event, name)()
    except Exception:  # noqa: BLE001 - a Spark without that field
        return None


def _option(value: Any) -> Any:
    try:
        return None if value is None or value.isEmpty() else value.get()
    except Exception:  # noqa: BLE001 - not a Scala Option
        return value


def _ignore(*_args: Any) -> None:
    return None


def register_output_readers() -> None:
    """Teach the listener the output descriptors of the streaming writes (idempotent)."""
    from airflow_provider_lineage.capture.output_readers import OUTPUT_READERS

    OUTPUT_READERS.setdefault("WriteToMicroBatchDataSourceV1", _stream_v1)
    OUTPUT_READERS.setdefault("WriteToMicroBatchDataSource", _stream_v2)
    OUTPUT_READERS.setdefault("WriteToContinuousDataSource", _stream_v2)


def install(spark: Any, emit: Callable[[CaptureRecord], None], capture: Any = None) -> StreamingCapture:
    """Register a :class:`StreamingCapture` on ``spark``'s SparkContext."""
    register_output_readers()
    return StreamingCapture(spark, emit, capture).register()
