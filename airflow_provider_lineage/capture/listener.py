"""A ``QueryExecutionListener`` written in Python (py4j) that records every write the driver runs.

Runs inside the Spark driver. Per write command it keeps what the lineage engine needs of the optimized
and analyzed plans, as one compact DAG (:mod:`.plan_walk`: each distinct plan/expression node once,
walked inside the JVM with memoisation by object identity; never the whole plans' ``toJSON()``, which
is exponential on shared sub-expressions), the facts the plans leave out (output path/table/mode/
format, each leaf relation's storage location or table), and hands a :class:`~.records.CaptureRecord`
to a sink.

Off Spark's listener-bus thread: with ``asynchronous=True`` (what :func:`install` does) the py4j
callback only queues the ``QueryExecution`` and returns; a Python worker thread reads the plan under a
:class:`~.config.CaptureBudget` (per-write and total time, a heap floor, node and size caps). A write
past a budget is still recorded, with ``incomplete`` saying why (its output and relations, no plans):
the events carry it as an incomplete capture, never as a complete graph. :func:`drain_bus` waits for
the bus and for these workers within one timeout; whatever is still running then is abandoned and
reported.

Everything here is defensive: a slow or failing capture must never disturb the job. Any problem
becomes a record with ``capture_error`` set, and a log line.
"""
from __future__ import annotations

import collections
import datetime as dt
import itertools
import os
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Self

from airflow_provider_lineage.capture import driver as driver_flow
from airflow_provider_lineage.capture import identity, plan_walk
from airflow_provider_lineage.capture.config import CaptureBudget
from airflow_provider_lineage.lineage.logs import get_logger
from airflow_provider_lineage.lineage.naming import KAFKA_OPTIONS
from airflow_provider_lineage.lineage.record import (
    WRITE_COMMANDS,
    CaptureRecord,
    OutputInfo,
    RelationInfo,
    append_collapsed,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = get_logger(__name__)


_LOGICAL_PLAN = "org.apache.spark.sql.catalyst.plans.logical.LogicalPlan"
#: Leaves that point at another part of the plan (a CTE definition, a recursive CTE's previous
#: iteration), not at data: not relations (their exprIds may equal the real relation's).
_REFERENCE_LEAVES = frozenset({"CTERelationRef", "UnionLoopRef"})

#: Test hook (never set in production): ``sleep:SECONDS`` makes the analysis of every write that slow,
#: ``crash`` makes it raise; proves that neither touches the job (exit code, output, wall time).
TEST_HOOK_ENV = "AIRFLOW_LINEAGE_CAPTURE_TEST_HOOK"

#: async listeners by SparkContext id: :func:`drain_bus` waits for their workers too
_async_listeners: weakref.WeakSet[WriteCaptureListener] = weakref.WeakSet()


@dataclass
class _Work:
    func_name: str
    qe: Any
    duration_ns: int | None
    exception: Any
    abandoned: bool = False


class WriteCaptureListener:
    """py4j implementation of ``org.apache.spark.sql.util.QueryExecutionListener``.

    :param spark: the session whose writes are captured.
    :param emit: called with each finished :class:`CaptureRecord` (on the worker thread when
        asynchronous, else on the listener thread).
    :param budget: time, memory and size bounds of the capture (default :class:`~.config.CaptureBudget`).
    :param asynchronous: queue each callback for a worker thread and return at once (Spark's listener
        bus is never held by the capture); ``False`` (the default, for direct callers of
        :meth:`_capture`) analyses on the calling thread.
    """

    def __init__(self, spark: SparkSession, emit: Callable[[CaptureRecord], None], budget: CaptureBudget | None = None,
                 asynchronous: bool = False) -> None:
        self._spark = spark
        self._emit = emit
        self._sc = spark.sparkContext
        self._jvm = self._sc._jvm
        self._gateway = self._sc._gateway
        self._seq = itertools.count(1)
        self._lock = threading.Lock()
        self.budget = budget or CaptureBudget()
        self.asynchronous = asynchronous
        self.errors: list[str] = []
        self.captured = 0
        #: seconds of capture work spent (all writes); past ``budget.total_s`` writes are recorded incomplete
        self.spent_s = 0.0
        #: where that time went: ``walk_s`` (the plans' DAG), ``relations_s`` (the input relations),
        #: ``deliver_s`` (writing or sending each record)
        self.stages: dict[str, float] = {"walk_s": 0.0, "relations_s": 0.0, "deliver_s": 0.0}
        self._environment: dict[str, str] | None = None
        self._cond = threading.Condition()
        self._queue: collections.deque[_Work] = collections.deque()
        self._worker: threading.Thread | None = None
        self._partial: CaptureRecord | None = None
        self._closed = False
        self._reader = plan_walk.Reader(self._gateway)
        #: root paths -> the folders they name, within one write's capture
        self._folders: dict[tuple[str, ...], list[str]] = {}
        self._warmed = False
        #: what the application returned to its driver so far (capture/driver.py; docs/engine.md)
        self.driver = driver_flow.DriverLog()
        #: analyse the actions that return rows to the driver: set by :func:`install` (the application's own
        #: session listener); off where ``_capture`` is called directly, e.g. a Connect server, whose sessions'
        #: clients are other processes (one client's returned columns must never be named in another's lineage)
        self.track_driver = False
        #: the SparkContext listener that sees the driver round trips no session event reports (toLocalIterator,
        #: RDD actions: capture/driver_jobs.py), registered by :func:`install`
        self.driver_jobs: Any = None
        if asynchronous:
            _async_listeners.add(self)

    # -- QueryExecutionListener -------------------------------------------------------------
    def onSuccess(self, funcName: str, qe: Any, durationNs: int) -> None:
        self._handle(funcName, qe, durationNs, None)

    def onFailure(self, funcName: str, qe: Any, exception: Any) -> None:
        self._handle(funcName, qe, None, exception)

    class Java:
        implements: ClassVar[list[str]] = ["org.apache.spark.sql.util.QueryExecutionListener"]

    # -- internals ----------------------------------------------------------------------------
    def _handle(self, func_name: str, qe: Any, duration_ns: int | None, exception: Any) -> None:
        work = _Work(func_name, qe, duration_ns, exception)
        if self._closed:  # after the drain at exit: never analyse on Spark's listener thread
            for obj in (qe, exception):
                _detach(self._gateway, obj)
            return
        if not self.asynchronous:
            self._process(work)
            return
        with self._cond:  # hand over and return: Spark's listener bus never waits for the capture
            if not self._warmed:
                # the first query of the application (often a read long before the last write): compile the
                # plan walker and read the settings naming needs on the worker now, not in the attach (the
                # job's critical path) and not when the last write ends
                self._warmed = True
                self._queue.append(_Work("__warm_up__", None, None, None))
            self._queue.append(work)
            self._cond.notify_all()
        self._start_worker()

    def _start_worker(self) -> None:
        with self._cond:
            if self._worker is not None and self._worker.is_alive():
                return
            self._worker = threading.Thread(target=self._run, name="airflow-lineage-capture", daemon=True)
            self._worker.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                work = self._queue[0]
            try:
                if work.qe is None:  # warm-up while the job runs: compile the walker, read the settings naming needs
                    plan_walk.walker_class(self._gateway)
                    if self._environment is None:
                        self._environment = identity.environment(self._spark)
                else:
                    self._process(work)
            except Exception:
                log.debug("capture worker step failed", exc_info=True)
            finally:
                with self._cond:
                    if self._queue and self._queue[0] is work:
                        self._queue.popleft()
                    self._cond.notify_all()

    def close(self) -> None:
        """Let the worker thread end once its queue is empty (the listener is unregistered)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        _async_listeners.discard(self)
        if self.driver_jobs is not None:
            self.driver_jobs.unregister()
            self.driver_jobs = None

    def pending(self) -> int:
        """Query executions handed over and not analysed yet."""
        with self._cond:
            return sum(1 for w in self._queue if w.qe is not None)

    def wait(self, timeout_s: float) -> bool:
        """Wait (at most ``timeout_s``) until the worker analysed every handed-over write. On timeout the rest
        is abandoned: a write whose analysis had started is recorded incomplete, the others are counted in
        :attr:`errors`; ``False`` is returned."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        with self._cond:
            while any(w.qe is not None for w in self._queue):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 1.0))
            left_over = [w for w in self._queue if w.qe is not None]
            if not left_over:
                return True
            for w in left_over:
                w.abandoned = True
            self._queue.clear()
            partial, self._partial = self._partial, None
        if partial is not None:
            partial.incomplete = (f"the capture did not finish within drainTimeoutSeconds={timeout_s:g}s "
                                  "(the driver exits on time); raise spark.airflow_lineage.drainTimeoutSeconds")
            self._finish_incomplete(partial)
            self._deliver(partial)
        unstarted = len(left_over) - (1 if partial is not None else 0)
        if unstarted > 0:
            msg = (f"{unstarted} query execution(s) not analysed within drainTimeoutSeconds={timeout_s:g}s; writes "
                   "among them have no lineage record (raise spark.airflow_lineage.drainTimeoutSeconds)")
            log.warning("%s", msg)
            self.errors.append(msg)
        return False

    def _process(self, work: _Work) -> None:
        t0 = time.monotonic()
        record: CaptureRecord | None = None
        try:
            record = self._capture(work.func_name, work.qe, work.duration_ns, work.exception)
        except Exception as exc:  # never let a capture problem escape into Spark
            partial, self._partial = self._partial, None
            if partial is not None and not work.abandoned:  # a write: published incomplete, with the reason
                partial.incomplete = f"the capture failed: {_short(exc)}"
                self._finish_incomplete(partial)
                record = partial
            msg = f"capture failed in {work.func_name}: {exc!r}"
            log.warning("%s", msg, exc_info=True)
            self.errors.append(msg)
        finally:
            self._partial = None
            with self._lock:
                self.spent_s += time.monotonic() - t0
            for obj in (work.qe, work.exception):
                _detach(self._gateway, obj)
        if record is not None and not work.abandoned:
            t1 = time.monotonic()
            self._deliver(record)
            with self._lock:
                spent = time.monotonic() - t1
                self.spent_s += spent
                self.stages["deliver_s"] += spent

    def _deliver(self, record: CaptureRecord) -> None:
        try:
            self._emit(record)
            self.captured += 1
        except Exception as exc:
            msg = f"could not hand over the capture record of {record.command}: {exc!r}"
            log.warning("%s", msg, exc_info=True)
            self.errors.append(msg)

    @staticmethod
    def _finish_incomplete(record: CaptureRecord) -> None:
        record.plans = None
        record.optimized_plan = record.analyzed_plan = None
        note = f"lineage incomplete: {record.incomplete}"
        record.capture_error = f"{record.capture_error}; {note}" if record.capture_error else note

    def _capture(self, func_name: str, qe: Any, duration_ns: int | None, exception: Any) -> CaptureRecord | None:
        """The record of one ``QueryExecution`` (``None`` when it is not a write). Never walks a whole plan
        as a tree; every JVM reference taken here is detached before returning (``qe`` stays the caller's)."""
        started = time.monotonic()
        budget = self.budget
        refs: list[Any] = []
        self._reader = plan_walk.Reader(self._gateway)
        self._folders = {}
        try:
            return self._capture_inner(func_name, qe, duration_ns, exception, started, budget, refs)
        finally:
            self._reader.close()
            for obj in refs:
                _detach(self._gateway, obj)

    def _capture_inner(self, func_name: str, qe: Any, duration_ns: int | None, exception: Any, started: float,
                       budget: CaptureBudget, refs: list[Any]) -> CaptureRecord | None:
        plan = None
        plan_error: str | None = None
        try:
            plan = qe.optimizedPlan()
            refs.append(plan)
        except Exception as exc:  # analysis/optimisation failed: the write failed before running  # noqa: BLE001 - never fail the user's Spark job for the capture
            plan_error = _short(exc)
        if plan is None:
            node = qe.logical()
            refs.append(node)
        else:
            node = plan
        command = node.getClass().getSimpleName()
        if command not in WRITE_COMMANDS:
            if exception is None and self.track_driver and driver_flow.is_driver_action(func_name, command):
                try:
                    self._driver_action(func_name, command, plan, started, budget, refs)
                except Exception as exc:
                    log.debug("driver action %s not analysed", func_name, exc_info=True)
                    self.driver.note_unseen(func_name, f"the capture failed: {_short(exc)}")
            return None
        with self._lock:
            seq = next(self._seq)
        if self._environment is None:
            self._environment = identity.environment(self._spark)
        record = CaptureRecord(
            command=command,
            status="failure" if exception is not None else "success",
            func_name=func_name,
            spark_version=self._spark.version,
            app_id=self._sc.applicationId,
            app_name=self._sc.appName,
            event_time=dt.datetime.now(dt.UTC).isoformat(),
            duration_ms=duration_ns / 1e6 if duration_ns is not None else None,
            error=_java_message(exception) if exception is not None else None,
            sequence=seq,
            environment=dict(self._environment),
        )
        self._partial = record
        _test_hook()
        problems: list[str] = []
        if plan_error:
            problems.append(f"optimized plan unavailable: {plan_error}")
        analyzed = None
        try:
            analyzed = qe.analyzed()
            refs.append(analyzed)
        except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
            problems.append(f"analyzed plan unavailable: {_short(exc)}")
        try:
            record.output = self._output(node)
        except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
            problems.append(f"output unknown: {_short(exc)}")
            record.output = OutputInfo(command=command)
        with self._lock:
            spent = self.spent_s
        if spent >= budget.total_s:
            record.incomplete = (f"the application's capture budget of {budget.total_s:g}s is spent "
                                 "(spark.airflow_lineage.totalBudgetSeconds)")
        else:
            self._read_plans(record, plan, analyzed, started, budget, problems, refs)
        if budget.plan_json and record.incomplete is None:  # opt-in debugging form (exponential on shared sub-expressions)
            if plan is not None:
                record.optimized_plan = _json_plan(plan, problems, "optimized")
            if analyzed is not None:
                record.analyzed_plan = _json_plan(analyzed, problems, "analyzed")
        if problems:
            record.capture_error = "; ".join(problems)
        if record.incomplete is not None:
            self._finish_incomplete(record)
        try:
            record.driver = self.driver.for_write(record)
        except Exception as exc:
            log.debug("driver round trips not attached", exc_info=True)
            record.driver = {"unseen": f"the capture failed to attach them: {_short(exc)}"}
        self._partial = None
        return record

    def _driver_action(self, func_name: str, command: str, plan: Any, started: float, budget: CaptureBudget,
                       refs: list[Any]) -> None:
        """An action that returned rows to the driver, set a session variable or checkpointed a DataFrame: analyse
        its plan as a write's and keep which input columns its values came from (capture/driver.py). Whatever
        cannot be analysed is kept as "unseen": later writes then mark driver-local values as unknown inputs."""
        with self._lock:
            spent = self.spent_s
            seq = next(self._seq)
        if plan is None:
            self.driver.note_unseen(func_name, "no optimized plan")
            return
        if spent >= budget.total_s:
            self.driver.note_unseen(func_name, f"the capture budget of {budget.total_s:g}s is spent")
            return
        if self._environment is None:
            self._environment = identity.environment(self._spark)
        probe = CaptureRecord(command=command, status="success", func_name=func_name, sequence=seq,
                              environment=dict(self._environment))
        problems: list[str] = []
        self._read_plans(probe, plan, None, started, budget, problems, refs)
        if probe.incomplete is not None or probe.plans is None:
            self.driver.note_unseen(func_name, probe.incomplete or "; ".join(problems) or "plan not read")
            return
        probe.driver = {"checkpoints": {str(k): v for k, v in self.driver.checkpoints.items()}}
        from airflow_provider_lineage.lineage.engine import analyze

        try:
            lineage, _ctx, attrs = analyze(probe)
        except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
            self.driver.note_unseen(func_name, f"its plan could not be analysed ({_short(exc)})")
            return
        self.driver.note(seq, func_name, command, lineage, attrs)

    def _read_plans(self, record: CaptureRecord, plan: Any, analyzed: Any, started: float, budget: CaptureBudget,
                    problems: list[str], refs: list[Any]) -> None:
        """The plans' DAG and the relations at its leaves, within the per-write budget."""
        left_ms = int((budget.write_s - (time.monotonic() - started)) * 1000)
        if left_ms <= 0:
            record.incomplete = f"the per-write capture budget of {budget.write_s:g}s is spent (spark.airflow_lineage.writeBudgetSeconds)"
            return
        roots = [p for p in (plan, analyzed) if p is not None]
        if not roots:
            return
        limits = plan_walk.Limits(max_nodes=budget.max_nodes, max_chars=budget.max_chars, millis=left_ms,
                                  min_free_heap=budget.min_free_heap)
        t0 = time.monotonic()
        ex = plan_walk.extract(self._gateway, roots, limits)
        t1 = time.monotonic()
        self.stages["walk_s"] += t1 - t0
        refs.extend(ex.leaves)
        if ex.stopped is not None:
            record.incomplete = f"{ex.stopped} (spark.airflow_lineage.writeBudgetSeconds / minFreeHeap)"
            return
        assert ex.dag is not None
        walked = list(ex.dag.get("roots") or [])
        ex.dag["roots"] = [walked.pop(0) if p is not None and walked else -1 for p in (plan, analyzed)]
        record.plans = ex.dag
        try:
            record.relations = self._relations_of(ex.leaves, started, budget)
            self.stages["relations_s"] += time.monotonic() - t1
        except _OverBudget:
            record.incomplete = (f"the per-write capture budget of {budget.write_s:g}s is spent while reading the "
                                 "input relations (spark.airflow_lineage.writeBudgetSeconds)")
        except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
            problems.append(f"input relations unknown: {_short(exc)}")

    # output ---------------------------------------------------------------------------------
    def _output(self, cmd: Any) -> OutputInfo:
        """The output descriptor of a write command, read by the command's entry in :data:`OUTPUT_READERS`."""
        name = cmd.getClass().getSimpleName()
        out = OutputInfo(command=name)
        reader = OUTPUT_READERS.get(name)
        if reader is not None:
            reader(self, cmd, out)
        return out

    def _fill_columns(self, out: OutputInfo, query: Any) -> None:
        attrs = self._attributes(query.output())
        out.columns = [name for _i, name, _t in attrs]
        out.column_types = [typ for _i, _n, typ in attrs]

    def _attributes(self, attrs: Any) -> list[tuple[int, str, str]]:
        """``(exprId, name, type)`` of a Seq of attributes: one round trip (the plan walker's reader), else per attribute."""
        try:
            return self._reader.attributes(attrs)
        except Exception:  # noqa: BLE001 - the walker could not be compiled: read attribute by attribute
            return [(int(a.exprId().id()), a.name(), a.dataType().simpleString()) for a in _seq(attrs)]

    def _strings(self, values: Any) -> list[str]:
        try:
            return self._reader.strings(values)
        except Exception:  # noqa: BLE001 - the walker could not be compiled: read one by one
            return [str(v) for v in _seq(values)]

    def _table_location(self, ident: Any) -> str | None:
        try:
            meta = self._spark._jsparkSession.sessionState().catalog().getTableMetadata(ident)
            return meta.location().toString()
        except Exception:  # noqa: BLE001 - never fail the user's Spark job for the capture
            return None

    # relations ------------------------------------------------------------------------------
    def _relations_of(self, leaves: list[Any], started: float, budget: CaptureBudget) -> list[RelationInfo]:
        """The relations at the plans' leaves (each leaf node once, from the plan walk), deduplicated by exprIds."""
        seen: dict[tuple[int, ...], RelationInfo] = {}
        for leaf in leaves:
            if time.monotonic() - started > budget.write_s:
                raise _OverBudget
            cls = leaf.getClass().getSimpleName()
            if cls in WRITE_COMMANDS or cls in _REFERENCE_LEAVES:
                continue
            info = self._relation(leaf)
            if info is not None:
                seen.setdefault(tuple(info.expr_ids), info)
        return list(seen.values())

    def _cached_logical(self, node: Any) -> list[Any]:
        try:
            return [node.cacheBuilder().logicalPlan()]
        except Exception:  # noqa: BLE001 - never fail the user's Spark job for the capture
            return []

    def _relation(self, node: Any) -> RelationInfo | None:
        cls = node.getClass().getSimpleName()
        attrs = self._attributes(node.output())
        info = RelationInfo(
            node_class=cls,
            expr_ids=[i for i, _n, _t in attrs],
            columns=[{"name": n, "type": t} for _i, n, t in attrs],
        )
        if cls == "LogicalRelation":
            rel = node.relation()
            rel_cls = rel.getClass().getSimpleName()
            if rel_cls == "HadoopFsRelation":
                roots = [p.toString() for p in _seq(rel.location().rootPaths())]
                key = tuple(roots)  # a self-join or a union reads one table several times: stat its paths once
                if key not in self._folders:
                    self._folders[key] = identity.folders_of_files(self._spark, roots)  # a file read names its folder
                info.locations = list(self._folders[key])
                info.format = _format_name(rel.fileFormat().toString())
            elif rel_cls == "JDBCRelation":
                opts = _scala_map(rel.jdbcOptions().parameters())
                info.format = "jdbc"
                info.options = {k: v for k, v in opts.items() if k.lower() in ("url", "dbtable", "query")}
            else:
                info.format = rel_cls
            if node.catalogTable().isDefined():
                info.table = _table_name(node.catalogTable().get().identifier())
        elif cls == "HiveTableRelation":
            meta = node.tableMeta()
            info.table = _table_name(meta.identifier())
            info.format = "hive"
            try:
                info.locations = [meta.location().toString()]
            except Exception:  # noqa: BLE001, S110 - never fail the user's Spark job for the capture
                pass
        elif cls == "LogicalRDD":
            try:  # checkpoint()/localCheckpoint(): the plan before the checkpoint is gone from this plan
                rdd = node.rdd()
                if rdd.isCheckpointed() or rdd.getCheckpointFile().isDefined():
                    info.options = {"checkpoint": "true"}
                    info.origin = "checkpoint"
                else:  # an RDD over files or a file-based table: LogicalRDDVisitor's trace
                    trace = identity.rdd_trace(self._spark, rdd)
                    info.locations, info.read_columns = trace.paths, trace.read_columns
                    info.origin = trace.origin
            except Exception:
                log.debug("could not inspect LogicalRDD checkpoint state", exc_info=True)
        elif cls in ("StreamingDataSourceV2ScanRelation", "StreamingDataSourceV2Relation"):
            _fill_streaming_v2(info, node)  # a micro-batch's V2 source (Kafka, rate, ...): untested with Kafka here
        elif cls in ("DataSourceV2Relation", "DataSourceV2ScanRelation"):
            rel = node if cls == "DataSourceV2Relation" else node.relation()
            if _python_data_source(info, rel):
                return info
            _fill_v2(info, identity.v2_relation(self._spark, rel))
            info.table = info.table or _v2_table_name(rel)
            info.format = info.format or "v2"
        return info


# -- helpers ----------------------------------------------------------------------------------
def _python_data_source(info: RelationInfo, relation: Any) -> bool:
    """A ``pyspark.sql.datasource`` source (Spark's ``PythonTable``): named by its ``path`` option (``load(path)``)
    as a file location, else left unnamed (the engine reports an unknown input). ``True`` when it is one."""
    try:
        table = relation.table()
        if table.getClass().getSimpleName() != "PythonTable":
            return False
        name = str(table.name())
    except Exception:  # noqa: BLE001 - not a V2 relation with a table
        return False
    info.origin = "python_datasource"
    info.format = f"python:{name}"
    try:
        found = relation.options().asCaseSensitiveMap()
        options = {str(k).lower(): str(found.get(k)) for k in found.keySet()}
    except Exception:  # noqa: BLE001 - a relation without options
        options = {}
    path = options.get("path")
    if path:
        info.locations = [path]
        info.options = {"path": path}
    return True


class _OverBudget(Exception):
    """The per-write budget ran out."""


def _detach(gateway: Any, obj: Any) -> None:
    """Release a JVM reference now (py4j would otherwise keep the object alive until Python's GC)."""
    if obj is None or not hasattr(obj, "_target_id"):
        return
    try:
        gateway.detach(obj)
    except Exception:  # noqa: BLE001, S110 - an already released reference
        pass


def _test_hook() -> None:
    hook = os.environ.get(TEST_HOOK_ENV, "")
    if not hook:
        return
    if hook == "crash":
        raise RuntimeError("capture test hook: a deliberate crash of the analysis")
    if hook.startswith("sleep:"):
        time.sleep(float(hook.split(":", 1)[1]))


def _seq(scala_seq: Any) -> list[Any]:
    it = scala_seq.iterator()
    out = []
    while it.hasNext():
        out.append(it.next())
    return out


def _scala_map(scala_map: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    it = scala_map.iterator()
    while it.hasNext():
        kv = it.next()
        out[str(kv._1())] = str(kv._2())
    return out



# -- output descriptors, one reader per write command (the plan JSON nulls these fields out) ----------
OutputReader = Callable[["WriteCaptureListener", Any, OutputInfo], None]


def _hadoop_fs_insert(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    out.location = cmd.outputPath().toString()
    out.mode = cmd.mode().toString()
    out.format = _format_name(cmd.fileFormat().toString())
    out.partition_columns = [name for _i, name, _t in lst._attributes(cmd.partitionColumns())]
    out.columns = lst._strings(cmd.outputColumnNames())
    out.column_types = [typ for _i, _n, typ in lst._attributes(cmd.query().output())]
    if cmd.catalogTable().isDefined():
        out.table = _table_name(cmd.catalogTable().get().identifier())


def _data_source_table(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    table = cmd.table() if out.command.startswith("Create") else cmd.tableDesc()
    out.table = _table_name(table.identifier())
    out.mode = cmd.mode().toString()
    if table.provider().isDefined():
        out.format = table.provider().get().lower()
    out.partition_columns = [str(c) for c in _seq(table.partitionColumnNames())]
    lst._fill_columns(out, cmd.query())
    out.location = lst._table_location(table.identifier())


def _hive_table(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    insert = out.command == "InsertIntoHiveTable"
    table = cmd.table() if insert else cmd.tableDesc()
    out.table = _table_name(table.identifier())
    out.format = "hive"
    out.mode = ("Overwrite" if cmd.overwrite() else "Append") if insert else cmd.mode().toString()
    lst._fill_columns(out, cmd.query())
    out.location = lst._table_location(table.identifier())


def _save_into_data_source(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    opts = _scala_map(cmd.options())
    out.mode = cmd.mode().toString()
    out.format = _format_name(cmd.dataSource().getClass().getName())
    out.options = {k: v for k, v in opts.items() if k.lower() in ("url", "dbtable", "path", "table", *KAFKA_OPTIONS)}
    out.location = opts.get("path")
    lst._fill_columns(out, cmd.query())


def _fill_v2(info: Any, found: dict[str, Any]) -> None:
    """Copy :func:`.identity.v2_table`'s findings onto a RelationInfo/OutputInfo."""
    if found.get("table"):
        info.table = found["table"]
    if found.get("location"):
        if isinstance(info, RelationInfo):
            info.locations = [found["location"]]
        else:
            info.location = found["location"]
    if found.get("format"):
        info.format = found["format"]
    if found.get("url"):
        info.options = {**(info.options or {}), "url": found["url"]}
    if found.get("table_namespace"):
        info.options = {**(info.options or {}), "table_namespace": found["table_namespace"]}


def _fill_streaming_v2(info: RelationInfo, node: Any) -> None:
    """A streaming V2 source as a micro-batch reads it: its source name, and the options that name Kafka topics."""
    relation = node.relation() if node.getClass().getSimpleName() == "StreamingDataSourceV2ScanRelation" else node
    try:
        name = str(relation.table().name())
        info.format = "kafka" if "kafka" in name.lower() else name
    except Exception:  # noqa: BLE001 - an unnamed source
        info.format = "v2-stream"
    try:
        found = relation.options().asCaseSensitiveMap()
        options = {str(k): str(found.get(k)) for k in found.keySet()}
    except Exception:  # noqa: BLE001 - a relation without options
        options = {}
    info.options = {k: v for k, v in options.items() if k.lower() in KAFKA_OPTIONS}


def _v2_write(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    out.mode = {"AppendData": "Append", "ReplaceData": "Overwrite", "WriteDelta": "Merge"}.get(out.command, "Overwrite")
    out.table = _v2_table_name(cmd.table())
    _fill_v2(out, identity.v2_relation(lst._spark, cmd.table()))
    lst._fill_columns(out, cmd.query())


def _v2_table_as_select(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    out.mode = "Overwrite" if "Replace" in out.command else "ErrorIfExists"
    # the target is a ResolvedIdentifier: its catalog and identifier, never its plan text
    _fill_v2(out, identity.resolved_identifier(lst._spark, cmd))
    lst._fill_columns(out, cmd.query())


def _directory_insert(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    out.mode = "Overwrite" if cmd.overwrite() else "Append"
    if cmd.storage().locationUri().isDefined():
        out.location = cmd.storage().locationUri().get().toString()
    out.format = cmd.provider().lower() if out.command == "InsertIntoDataSourceDirCommand" else "hive"
    lst._fill_columns(out, cmd.query())


def _merge(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    out.table = _v2_table_name(cmd.targetTable())
    try:
        target = cmd.targetTable()
        while target.getClass().getSimpleName() != "DataSourceV2Relation" and target.children().size() == 1:
            target = target.children().head()
        _fill_v2(out, identity.v2_relation(lst._spark, target))
    except Exception:
        log.debug("could not name the MERGE target's storage", exc_info=True)
    out.mode = "Merge"


def _unresolved_insert(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    """``InsertIntoStatement`` stays unresolved only when the write failed in analysis."""
    target = cmd.table()
    try:
        out.table = ".".join(str(p) for p in _seq(target.multipartIdentifier()))
    except Exception:  # noqa: BLE001 - fall back to the plan's own text
        out.table = str(target.toString()).strip()


#: Write command class -> the reader of its output descriptor (like the engine's ``RULES``).
OUTPUT_READERS: dict[str, OutputReader] = {
    "InsertIntoHadoopFsRelationCommand": _hadoop_fs_insert,
    "CreateDataSourceTableAsSelectCommand": _data_source_table,
    "SaveAsV1TableCommand": _data_source_table,
    "InsertIntoHiveTable": _hive_table,
    "CreateHiveTableAsSelectCommand": _hive_table,
    "OptimizedCreateHiveTableAsSelectCommand": _hive_table,
    "SaveIntoDataSourceCommand": _save_into_data_source,
    "AppendData": _v2_write,
    "OverwriteByExpression": _v2_write,
    "OverwritePartitionsDynamic": _v2_write,
    "ReplaceData": _v2_write,
    "WriteDelta": _v2_write,
    "CreateTableAsSelect": _v2_table_as_select,
    "ReplaceTableAsSelect": _v2_table_as_select,
    "AtomicCreateTableAsSelect": _v2_table_as_select,
    "AtomicReplaceTableAsSelect": _v2_table_as_select,
    "InsertIntoDataSourceDirCommand": _directory_insert,
    "InsertIntoHiveDirCommand": _directory_insert,
    "MergeIntoTable": _merge,
    "InsertIntoStatement": _unresolved_insert,
}

def _table_name(ident: Any) -> str:
    parts = []
    try:
        if ident.catalog().isDefined():
            parts.append(ident.catalog().get())
    except Exception:  # noqa: BLE001, S110 - never fail the user's Spark job for the capture
        pass
    if ident.database().isDefined():
        parts.append(ident.database().get())
    parts.append(ident.table())
    if len(parts) == 2:
        parts.insert(0, "spark_catalog")
    elif len(parts) == 1:
        parts = ["spark_catalog", "default", *parts]
    return ".".join(parts)


def _v2_table_name(relation: Any) -> str | None:
    try:
        if relation.identifier().isDefined():
            ident = relation.identifier().get()
            ns = list(ident.namespace())
            cat = relation.catalog().get().name() if relation.catalog().isDefined() else None
            return ".".join([*(x for x in [cat] if x), *ns, ident.name()])
    except Exception:  # noqa: BLE001, S110 - never fail the user's Spark job for the capture
        pass
    try:
        return str(relation.table().name())
    except Exception:  # noqa: BLE001 - never fail the user's Spark job for the capture
        return None


def _format_name(raw: str) -> str:
    low = raw.lower()
    for name in ("parquet", "orc", "csv", "json", "text", "avro", "jdbc", "noop", "delta", "iceberg", "kafka"):
        if name in low:
            return name
    return raw


def _json_plan(plan: Any, problems: list[str], label: str) -> list[dict[str, Any]] | None:
    import json

    try:
        return json.loads(plan.toJSON())
    except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
        problems.append(f"{label} plan JSON unavailable: {_short(exc)}")
        return None


def _java_message(exception: Any) -> str:
    try:
        return f"{exception.getClass().getName()}: {exception.getMessage()}"
    except Exception:  # noqa: BLE001 - never fail the user's Spark job for the capture
        return str(exception)


def _short(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text.splitlines()[0][:500] if text else repr(exc)


def has_py4j_listener(jsession: Any) -> bool:
    """Whether the JVM session has a py4j ``QueryExecutionListener`` (ours, another library's, or a copy in a cloned
    session: a streaming query runs on a clone of the session that started it, listeners included)."""
    return any(_is_py4j_proxy(lst) for lst in jsession.listenerManager().listListeners())


def py4j_listener_ids(jvm: Any, jsession: Any) -> set[int]:
    """Identity hash codes of the session's py4j ``QueryExecutionListener`` proxies (a cloned session holds the
    same proxy objects as the session it was cloned from)."""
    return {int(jvm.System.identityHashCode(lst)) for lst in jsession.listenerManager().listListeners()
            if _is_py4j_proxy(lst)}


def _is_py4j_proxy(listener: Any) -> bool:
    return "$Proxy" in str(listener.getClass().getName())


#: The Java interfaces the capture implements in Python (the session listener, the SparkContext's streaming one).
LISTENER_INTERFACES = ("org.apache.spark.sql.util.QueryExecutionListener",
                       "org.apache.spark.scheduler.SparkListenerInterface")


def warm_listener_proxy(gateway: Any, interfaces: tuple[str, ...] = LISTENER_INTERFACES) -> None:
    """Have the JVM make (and cache) its proxy classes for Python objects of ``interfaces`` now, off the job's
    critical path: the first registration of each listener otherwise makes them. Nothing made here is kept
    (the objects are never registered or called)."""
    objects = gateway.jvm.java.util.Objects
    for name in interfaces:
        java = type("Java", (), {"implements": [name]})
        objects.isNull(type("_Shape", (), {"Java": java})())  # the argument crosses as a JVM proxy, then is dropped


def install(spark: SparkSession, emit: Callable[[CaptureRecord], None], budget: CaptureBudget | None = None,
            asynchronous: bool = True) -> WriteCaptureListener:
    """Register a :class:`WriteCaptureListener` on ``spark`` (starts py4j's callback server).

    :param budget: the capture's time/memory bounds (default :class:`~.config.CaptureBudget`).
    :param asynchronous: analyse on a worker thread (default): Spark's listener bus is never held;
        :func:`drain`/:func:`drain_bus` wait for the worker too.
    """
    from pyspark.java_gateway import ensure_callback_server_started

    ensure_callback_server_started(spark.sparkContext._gateway)
    listener = WriteCaptureListener(spark, emit, budget=budget, asynchronous=asynchronous)
    listener.track_driver = True
    spark._jsparkSession.listenerManager().register(listener)
    try:
        from airflow_provider_lineage.capture.driver_jobs import DriverJobs

        listener.driver_jobs = DriverJobs(listener).register()
    except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
        log.warning("toLocalIterator() and RDD actions are not tracked as driver round trips: %r", exc)
        listener.driver.note_unseen("toLocalIterator/RDD actions", f"not tracked: {_short(exc)}")
    return listener


def drain_bus(sc: Any, timeout_s: float = 60.0) -> bool:
    """Wait until the listener bus of SparkContext ``sc`` has delivered every queued event and the
    asynchronous listeners of ``sc`` have analysed every write handed to them, within ``timeout_s`` in all.

    Returns ``False`` when that did not finish in time (records may then be missing or incomplete; the
    caller reports that as a capture problem rather than waiting longer and slowing the job). A stopped
    bus has nothing left to deliver and counts as drained.
    """
    deadline = time.monotonic() + timeout_s
    drained = True
    try:
        bus = sc._jsc.sc().listenerBus()
        start = time.monotonic()
        bus.waitUntilEmpty(int(timeout_s * 1000))  # raises TimeoutException when not drained in time
        log.debug("listener bus drained in %.3fs", time.monotonic() - start)
    except Exception as exc:  # noqa: BLE001 - py4j wraps Spark's TimeoutException; anything else: bus stopped
        if "Timeout" in repr(exc):
            log.warning("Spark's listener bus did not drain in %ss", timeout_s)
            drained = False
        else:
            log.debug("listener bus drain skipped: %r", exc)
    for listener in list(_async_listeners):
        if listener._sc is sc:
            drained = listener.wait(max(0.0, deadline - time.monotonic())) and drained
    return drained


def drain(spark: SparkSession, timeout_s: float = 60.0) -> bool:
    """:func:`drain_bus` for a session."""
    return drain_bus(spark.sparkContext, timeout_s)


class CaptureSession:
    """Capture every write of ``spark`` (tests, benchmarks, notebooks).

    >>> with CaptureSession(spark) as cap:
    ...     df.write.mode("overwrite").saveAsTable("sales")
    >>> lin = analyze_record(cap.records[-1])

    :attr records: one record per logical write, in write order: the events Spark posts for one
        write (``saveAsTable``/CTAS post the inner file write, then ``CreateDataSourceTableAsSelect``
        and ``SaveAsV1TableCommand`` wrappers) are merged as they arrive, like the operator does
        (:func:`~.records.collapse_nested`).
    :attr events: every record the listener produced, wrappers included (raw).
    """

    def __init__(self, spark: SparkSession, drain_timeout_s: float = 60.0, udfs: Any = None,
                 budget: CaptureBudget | None = None) -> None:
        self.spark = spark
        #: the capture's bounds (:class:`~.config.CaptureBudget`; ``plan_json=True`` keeps ``toJSON()`` too)
        self.budget = budget
        self.drain_timeout_s = drain_timeout_s
        #: a :class:`~.udfs.UdfRegistry` installed before the UDFs were created: records get UDF analyses
        self.udfs = udfs
        self.records: list[CaptureRecord] = []
        self.events: list[CaptureRecord] = []
        self.listener: WriteCaptureListener | None = None
        self._records_lock = threading.Lock()  # the listener's worker and a streaming capture both hand records over

    def _on_record(self, record: CaptureRecord) -> None:
        if self.udfs is not None:
            self.udfs.enrich(record)
        with self._records_lock:
            self.events.append(record)
            append_collapsed(self.records, record)

    def __enter__(self) -> Self:
        # events of writes that ran before the block are still queued: deliver them first, so they
        # do not reach this block's listener
        drain(self.spark, self.drain_timeout_s)
        self.listener = install(self.spark, self._on_record, budget=self.budget)
        return self

    def __exit__(self, *exc: object) -> None:
        drain(self.spark, self.drain_timeout_s)
        if self.listener is not None:
            try:
                self.spark._jsparkSession.listenerManager().unregister(self.listener)
            except Exception:  # noqa: BLE001, S110 - never fail the user's Spark job for the capture
                pass
            self.listener.close()
