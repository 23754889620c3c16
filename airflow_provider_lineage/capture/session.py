"""Installing the capture on a session, draining it, and :class:`CaptureSession` (tests, benchmarks, notebooks)."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

from airflow_provider_lineage.capture.config import CaptureBudget
from airflow_provider_lineage.capture.listener import WriteCaptureListener, _async_listeners
from airflow_provider_lineage.capture.py4j_helpers import _short
from airflow_provider_lineage.lineage.logs import get_logger
from airflow_provider_lineage.lineage.record import CaptureRecord, append_collapsed

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = get_logger(__name__)


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
        (:func:`~airflow_provider_lineage.lineage.record.collapse_nested`).
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
