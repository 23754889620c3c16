"""A ``QueryExecutionListener`` written in Python (py4j) that records every write the driver runs.

Runs inside the Spark driver. Per write command it keeps what the lineage engine needs of the optimized
and analyzed plans, as one compact DAG (:mod:`.plan_walk`: each distinct plan/expression node once,
walked inside the JVM with memoisation by object identity; never the whole plans' ``toJSON()``, which
is exponential on shared sub-expressions), the facts the plans leave out (output path/table/mode/
format, each leaf relation's storage location or table), and hands a
:class:`~airflow_provider_lineage.lineage.record.CaptureRecord` to a sink.

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
import importlib
import itertools
import os
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_provider_lineage.capture import driver as driver_flow
from airflow_provider_lineage.capture import identity, plan_walk
from airflow_provider_lineage.capture.config import CaptureBudget
from airflow_provider_lineage.capture.output_readers import OUTPUT_READERS, _seq
from airflow_provider_lineage.capture.py4j_helpers import _detach, _java_message, _json_plan, _short
from airflow_provider_lineage.capture.relations import RelationReader, _OverBudget
from airflow_provider_lineage.lineage.logs import get_logger
from airflow_provider_lineage.lineage.record import WRITE_COMMANDS, CaptureRecord, OutputInfo

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = get_logger(__name__)


_LOGICAL_PLAN = "org.apache.spark.sql.catalyst.plans.logical.LogicalPlan"


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


class WriteCaptureListener(RelationReader):
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
        if (
            budget.plan_json and record.incomplete is None
        ):  # opt-in debugging form (exponential on shared sub-expressions)
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
            record.incomplete = (
                f"the per-write capture budget of {budget.write_s:g}s is spent "
                "(spark.airflow_lineage.writeBudgetSeconds)"
            )
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
        """``(exprId, name, type)`` of a Seq of attributes: one round trip (the plan walker's reader), else per
        attribute."""
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


def _test_hook() -> None:
    hook = os.environ.get(TEST_HOOK_ENV, "")
    if not hook:
        return
    if hook == "crash":
        raise RuntimeError("capture test hook: a deliberate crash of the analysis")
    if hook.startswith("sleep:"):
        time.sleep(float(hook.split(":", 1)[1]))


#: Names that moved to their own modules (issue 50), still importable from here: ``from
#: airflow_provider_lineage.capture.listener import CaptureSession, drain`` keeps working.
_MOVED = {
    **dict.fromkeys(("install", "drain", "drain_bus", "CaptureSession"), "session"),
    **dict.fromkeys(("OUTPUT_READERS", "OutputReader", "_scala_map", "_table_name", "_v2_table_name",
                     "_format_name", "_fill_v2", "_fill_streaming_v2"), "output_readers"),
    **dict.fromkeys(("has_py4j_listener", "py4j_listener_ids", "warm_listener_proxy", "LISTENER_INTERFACES"),
                    "py4j_helpers"),
    **dict.fromkeys(("_python_data_source",), "relations"),
}


def __getattr__(name: str) -> Any:
    """PEP 562: the moved names, from their new homes (loaded on first use: no import cycle)."""
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"airflow_provider_lineage.capture.{home}"), name)
