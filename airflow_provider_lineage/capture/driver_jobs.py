"""Driver round trips no ``QueryExecutionListener`` event reports: ``toLocalIterator()`` and RDD actions.

Spark 4.1 reports only *named* executions to a session's ``QueryExecutionListener``. Two ways of returning a
DataFrame's rows to the driver post none:

* ``df.toLocalIterator()`` runs as an unnamed SQL execution (``Dataset.toPythonIterator``): its
  ``SparkListenerSQLExecutionEnd`` has no ``executionName``, but carries the ``QueryExecution``;
* an RDD action over ``df.rdd`` or ``df.toJSON()`` (``collect``, ``take``, ``first``, ``toLocalIterator``,
  ``collectAsMap``, ``reduce`` ..., after any ``map``/``filter``/``union``): a plain Spark job, outside any SQL
  execution (no ``spark.sql.execution.id`` in its properties). Its stages list every RDD of its lineage; the
  DataFrame's part of it is the ``SQLExecutionRDD`` of the DataFrame's ``QueryExecution.toRdd``.

:class:`DriverJobs` is a py4j ``SparkListenerInterface`` on the SparkContext's *shared* listener queue, the queue
the session's ``QueryExecutionListener`` is called from, so these events reach the capture's worker in order with
the writes (a write after a ``df.rdd.collect()`` sees it). It is registered behind a JVM-side filter
(:mod:`.listener_forwarder`): only job starts outside a SQL execution and ``SparkListenerSQLExecutionEnd`` events
cross to Python, never the per-task events of the user's jobs. A Python-side hook on the classic ``DataFrame.rdd`` and
``DataFrame.toJSON`` (:func:`install_hooks`) maps the ``SQLExecutionRDD`` each one makes to its DataFrame; a job
outside a SQL execution over such an RDD is analysed once, as a ``collect()`` of that DataFrame would be
(:meth:`.listener.WriteCaptureListener._driver_action`): whatever the RDD's functions computed from the rows, it can
only hold the DataFrame's columns. Later writes then get the ``driver round trip`` edges (capture/driver.py).

Not seen (docs/engine.md, "What the capture cannot see"): a DataFrame turned into an RDD before the capture was
installed, or by JVM code (Spark ML's ``fit``, a data source's schema inference). Such jobs return models or
schemas, not rows, and are left alone.
"""
from __future__ import annotations

import collections
import functools
import threading
import weakref
from typing import Any, ClassVar

from airflow_provider_lineage.capture import driver_values, listener_forwarder
from airflow_provider_lineage.capture.py4j_helpers import _detach
from airflow_provider_lineage.lineage.logs import get_logger

log = get_logger(__name__)

#: The function name an RDD action's driver return is recorded under (``DriverLog`` entries, reasons).
RDD_ACTION = "RDD action"
#: The function name of a ``toLocalIterator()`` (Spark's own name for it; in ``driver.RETURNING_FUNCS``).
TO_LOCAL_ITERATOR = "toPythonIterator"
#: Bound on the DataFrame RDDs remembered (each holds a JVM reference to its Dataset until a job uses it).
MAX_RDDS = 1_000
#: Bound on the RDDs looked at per job (a job whose lineage is longer is searched this far).
MAX_RDD_INFOS = 5_000
_SQL_RDD = "SQLExecutionRDD"
_EXECUTION_ID = "spark.sql.execution.id"
_END = "SparkListenerSQLExecutionEnd"

_active: weakref.WeakSet[DriverJobs] = weakref.WeakSet()
_hooks_lock = threading.Lock()
_HOOK_MARK = "_apl_driver_jobs_hook"  # set on install_hooks' wrappers
#: local property set while ``createDataFrame``/``toDF`` infers a schema from an RDD: the jobs it runs return rows to
#: the driver for their types only, so they are no driver round trip (and leave the RDD to its real action)
SCHEMA_INFERENCE = "spark.airflow_lineage.schemaInference"


class DriverJobs:
    """py4j ``SparkListenerInterface``: the driver round trips of ``listener``'s session that post no
    ``QueryExecutionListener`` event, handed to ``listener`` as driver actions."""

    class Java:
        implements: ClassVar[list[str]] = ["org.apache.spark.scheduler.SparkListenerInterface"]

    def __init__(self, listener: Any) -> None:
        """:param listener: the session's :class:`~.listener.WriteCaptureListener` (its worker analyses)."""
        self._listener = listener
        self._spark = listener._spark
        self._gateway = listener._gateway
        self._session_uuid = str(self._spark._jsparkSession.sessionUUID())
        self._lock = threading.Lock()
        #: SQLExecutionRDD id -> the ``QueryExecution`` of the DataFrame whose rows it computes (a JVM reference of
        #: the capture's own, never the user's ``df._jdf``: released when a job used it, or when forgotten)
        self._rdds: collections.OrderedDict[int, Any] = collections.OrderedDict()
        #: SQLExecutionRDD ids already analysed (a second action over the same RDD returns the same columns)
        self._done: collections.OrderedDict[int, None] = collections.OrderedDict()
        #: what :meth:`register` added to the bus: the JVM forwarder, or this object when it could not be compiled
        self._added: Any = None
        self.seen_jobs = 0
        #: SparkListenerInterface callbacks that reached Python (the forwarder keeps this to the few that matter)
        self.callbacks = 0

    # -- SparkListenerInterface (Spark's listener-bus thread: only hands over) --------------------------
    def onJobStart(self, event: Any) -> None:
        self.callbacks += 1
        try:
            props = event.properties()
            if props is not None and props.getProperty(_EXECUTION_ID) is not None:
                return  # part of a SQL execution: a write or a named action, which the session listener reports
            if props is not None and props.getProperty(SCHEMA_INFERENCE) is not None:
                return  # createDataFrame/toDF reading rows for their types only: no value stays in the driver
            with self._lock:
                if not self._rdds:
                    return
            for rdd_id in self._job_rdds(event):
                with self._lock:
                    qe = self._rdds.pop(rdd_id, None)
                    if qe is None:
                        continue
                    self._done[rdd_id] = None
                    while len(self._done) > MAX_RDDS:
                        self._done.popitem(last=False)
                self.seen_jobs += 1
                self._listener._handle(RDD_ACTION, qe, None, None)  # the listener releases ``qe`` when done
        except Exception as exc:
            log.debug("driver jobs: job start not handled", exc_info=True)
            self._listener.driver.note_unseen(RDD_ACTION, f"the capture failed: {exc!r}")
        finally:
            _detach(self._gateway, event)

    def onOtherEvent(self, event: Any) -> None:
        """An unnamed SQL execution of the session: ``toLocalIterator()`` (Spark's ``toPythonIterator``)."""
        self.callbacks += 1
        try:
            if event.getClass().getSimpleName() != _END or not event.executionName().isEmpty():
                return
            qe = event.qe()
            if qe is None:
                return
            if str(qe.getClass().getSimpleName()) == "IncrementalExecution" \
                    or str(qe.sparkSession().sessionUUID()) != self._session_uuid \
                    or not event.executionFailure().isEmpty():
                _detach(self._gateway, qe)
                return
            self._listener._handle(TO_LOCAL_ITERATOR, qe, None, None)
        except Exception as exc:
            log.debug("driver jobs: execution end not handled", exc_info=True)
            self._listener.driver.note_unseen(TO_LOCAL_ITERATOR, f"the capture failed: {exc!r}")
        finally:
            _detach(self._gateway, event)

    def __getattr__(self, name: str) -> Any:
        """Every other ``SparkListenerInterface`` callback: nothing to do."""
        if name.startswith("on") and name[2:3].isupper():
            return self._ignore
        raise AttributeError(name)

    def _ignore(self, *_args: Any) -> None:
        self.callbacks += 1

    def equals(self, other: Any) -> bool:
        """``Object.equals`` of the JVM proxy (Spark's ``removeSparkListener`` compares listeners)."""
        return other is self

    def hashCode(self) -> int:
        return id(self) & 0x7FFFFFFF

    # -- the DataFrame RDDs -------------------------------------------------------------------------
    def note_rdd(self, jdf: Any, jrdd: Any) -> None:
        """``jrdd`` (a JVM RDD) was made from the DataFrame ``jdf``: remember its ``SQLExecutionRDD``. Both are the
        user's references: never released here."""
        if str(jdf.sparkSession().sessionUUID()) != self._session_uuid:
            return
        rdd_id = _sql_rdd_id(jrdd.rdd() if hasattr(jrdd, "rdd") else jrdd)
        if rdd_id is None:
            self._listener.driver.note_unseen(RDD_ACTION, "an RDD made from a DataFrame whose rows the capture "
                                                          "could not trace")
            return
        with self._lock:
            if rdd_id in self._rdds or rdd_id in self._done:
                return
            self._rdds[rdd_id] = jdf.queryExecution()  # a new reference, the capture's to release
            while len(self._rdds) > MAX_RDDS:  # forgotten: a later action over it is not seen
                _old, old_qe = self._rdds.popitem(last=False)
                _detach(self._gateway, old_qe)
                self._listener.driver.note_unseen(RDD_ACTION, f"more than {MAX_RDDS} DataFrames turned into RDDs")

    def _job_rdds(self, event: Any) -> list[int]:
        """The ids of the ``SQLExecutionRDD``s in the job's stages (every RDD of its lineage)."""
        found: list[int] = []
        looked = 0
        stages = event.stageInfos().iterator()
        while stages.hasNext() and looked < MAX_RDD_INFOS:
            infos = stages.next().rddInfos().iterator()
            while infos.hasNext() and looked < MAX_RDD_INFOS:
                info = infos.next()
                looked += 1
                if str(info.name()) == _SQL_RDD:
                    found.append(int(info.id()))
        return found

    # -- lifecycle --------------------------------------------------------------------------------
    def register(self) -> DriverJobs:
        """Add this listener, behind its JVM filter, to the SparkContext's shared listener queue (the session
        listener's queue)."""
        self._added = listener_forwarder.register(self._spark.sparkContext, self, other_events=(_END,),
                                                  job_starts=listener_forwarder.JOBS_OUTSIDE_SQL)
        _active.add(self)
        install_hooks()
        driver_values.install()  # the values it returned: a literal equal to one is never taken for a code constant
        return self

    def unregister(self) -> None:
        _active.discard(self)
        if not _active:  # no session tracks the driver: the hooks stop reading values
            driver_values.RECEIVED.active = False
        added, self._added = self._added, None
        if added is not None:
            try:
                listener_forwarder.unregister(self._spark.sparkContext, added)
            except Exception:  # noqa: BLE001, S110 - a stopped SparkContext
                pass
        with self._lock:
            held, self._rdds = list(self._rdds.values()), collections.OrderedDict()
        for qe in held:
            _detach(self._gateway, qe)


def _sql_rdd_id(rdd: Any, depth: int = 30) -> int | None:
    """The id of the first ``SQLExecutionRDD`` up ``rdd``'s (narrow) dependencies."""
    for _ in range(depth):
        if str(rdd.getClass().getSimpleName()) == _SQL_RDD:
            return int(rdd.id())
        deps = rdd.dependencies()
        if deps.isEmpty():
            return None
        rdd = deps.head().rdd()
    return None


def _seen(df: Any, rdd: Any) -> None:
    """The Python hook's report: DataFrame ``df`` was turned into the RDD ``rdd``."""
    for jobs in list(_active):
        try:
            jobs.note_rdd(df._jdf, rdd._jrdd)
        except Exception:
            log.debug("driver jobs: DataFrame RDD not noted", exc_info=True)


def _ours(attr: Any) -> bool:
    """Whether ``attr`` (a ``DataFrame`` attribute) is, or wraps, one of :func:`install_hooks`' wrappers."""
    fn = getattr(attr, "func", None) or getattr(attr, "fget", None) or attr
    for _ in range(16):  # a chain of functools.wraps wrappers (the UDF registry's RDD hook wraps ``rdd`` too)
        if fn is None:
            return False
        if getattr(fn, _HOOK_MARK, False):
            return True
        fn = getattr(fn, "__wrapped__", None)
    return False


def install_hooks() -> None:
    """Wrap the classic ``DataFrame.rdd`` and ``DataFrame.toJSON`` (idempotent): each reports the RDD it made to
    every registered :class:`DriverJobs`. Behaviour and results are the originals'. Checked at every
    registration, not once per process: a hook that wrapped ``rdd`` before this one and is later removed
    (:class:`~airflow_provider_lineage.capture.rdds.RddFunctions` restores what it found) takes this wrapper with
    it, and the next registration puts it back."""
    with _hooks_lock:
        try:
            from pyspark.sql.classic.dataframe import DataFrame
        except ImportError:  # a Spark without the classic package: not hooked
            return
        original_rdd = DataFrame.__dict__.get("rdd")
        getter = getattr(original_rdd, "func", None) or getattr(original_rdd, "fget", None)
        if getter is not None and not _ours(original_rdd):
            @functools.wraps(getter)
            def rdd(self: Any) -> Any:
                made = getter(self)
                _seen(self, made)
                return made

            setattr(rdd, _HOOK_MARK, True)
            prop = functools.cached_property(rdd)
            prop.__set_name__(DataFrame, "rdd")
            DataFrame.rdd = prop  # type: ignore[method-assign, assignment]
        _hook_schema_inference()
        original_json = DataFrame.toJSON
        if not _ours(original_json):
            @functools.wraps(original_json)
            def to_json(self: Any, use_unicode: bool = True) -> Any:
                made = original_json(self, use_unicode)
                _seen(self, made)
                return made

            setattr(to_json, _HOOK_MARK, True)
            DataFrame.toJSON = to_json  # type: ignore[method-assign]


def _hook_schema_inference() -> None:
    """Mark the jobs of ``SparkSession._inferSchema`` with :data:`SCHEMA_INFERENCE` (a thread-local Spark property
    those jobs carry)."""
    from pyspark.sql.session import SparkSession

    original = SparkSession.__dict__.get("_inferSchema")
    if original is None or _ours(original):
        return

    @functools.wraps(original)
    def _infer_schema(self: Any, *args: Any, **kwargs: Any) -> Any:
        sc = getattr(self, "_sc", None)
        try:
            sc.setLocalProperty(SCHEMA_INFERENCE, "1")
        except Exception:  # noqa: BLE001 - no mark: the inference counts as a round trip (sound, less precise)
            sc = None
        try:
            return original(self, *args, **kwargs)
        finally:
            if sc is not None:
                try:
                    sc.setLocalProperty(SCHEMA_INFERENCE, None)
                except Exception:  # noqa: BLE001, S110 - a stopped context
                    pass

    setattr(_infer_schema, _HOOK_MARK, True)
    SparkSession._inferSchema = _infer_schema  # type: ignore[method-assign]
