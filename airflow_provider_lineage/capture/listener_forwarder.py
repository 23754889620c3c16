"""A JVM-side filter in front of the capture's py4j ``SparkListenerInterface`` listeners.

A Python object registered as a ``SparkListenerInterface`` is called over py4j's callback socket for *every* listener
event (each task's start and end, stage, executor metrics, block updates...), ~100 µs or more each, on the listener
bus thread of its queue: a job of tens of thousands of short tasks backs the queue up (Spark drops events past
``spark.scheduler.listenerbus.eventqueue.capacity``, for every listener of that queue). ``apl.ListenerForwarder``
(Java below, compiled in the driver JVM with Janino as :mod:`.plan_walk` does) extends ``SparkListener``, overrides
only ``onJobStart`` and ``onOtherEvent``, filters in the JVM (job starts inside or outside a SQL execution; other
events by class simple name) and hands what is left to the Python object through a ``java.util.function.BiConsumer``
(``accept(callbackName, event)``): every other event never leaves the JVM.

:func:`register` adds a forwarder for a listener (or, when the forwarder cannot be compiled, the listener itself, as
before, with one warning per process); :func:`unregister` removes whichever was added. Either way what is added is
one JVM object kept for the removal: py4j makes a new JVM proxy each time a Python object crosses, so
``removeSparkListener(python_object)`` matches nothing and left the Python listener registered.
"""
from __future__ import annotations

import threading
from typing import Any, ClassVar

from airflow_provider_lineage._jvm import janino_class
from airflow_provider_lineage.lineage.logs import get_logger

log = get_logger(__name__)

_CLASS = "apl.ListenerForwarder"
#: job starts forwarded: every one, only those outside a SQL execution, only those inside one, none
JOBS_ALL, JOBS_OUTSIDE_SQL, JOBS_INSIDE_SQL, JOBS_NONE = 0, 1, 2, 3

SOURCE = r"""// Compiled in the Spark driver JVM with Janino by airflow_provider_lineage/capture/listener_forwarder.py.
// Java 1.4 style (raw types, no lambdas) so Janino compiles it on every Spark version.
package apl;

import java.util.HashSet;

public class ListenerForwarder extends org.apache.spark.scheduler.SparkListener {
    private volatile java.util.function.BiConsumer target;
    private final HashSet others = new HashSet();
    private volatile int jobs = 0;
    private long forwarded = 0;

    public void target(java.util.function.BiConsumer t) { target = t; }
    public void otherEvents(String names) {
        String[] parts = names.split(",");
        for (int i = 0; i < parts.length; i++) { if (parts[i].length() > 0) others.add(parts[i]); }
    }
    public void jobStarts(int mode) { jobs = mode; }
    public long forwarded() { return forwarded; }
    public void close() { target = null; }

    public void onJobStart(org.apache.spark.scheduler.SparkListenerJobStart event) {
        java.util.function.BiConsumer t = target;
        if (t == null || jobs == 3) return;
        if (jobs != 0) {
            java.util.Properties p = event.properties();
            boolean inSql = p != null && p.getProperty("spark.sql.execution.id") != null;
            if (inSql != (jobs == 2)) return;
        }
        forwarded++;
        t.accept("onJobStart", event);
    }

    public void onOtherEvent(org.apache.spark.scheduler.SparkListenerEvent event) {
        java.util.function.BiConsumer t = target;
        if (t == null || !others.contains(event.getClass().getSimpleName())) return;
        forwarded++;
        t.accept("onOtherEvent", event);
    }
}
"""

_lock = threading.Lock()
#: gateway id -> the compiled class, or the exception its compilation raised (compiled once per driver JVM)
_classes: dict[int, Any] = {}
_warned = False


def forwarder_class(gateway: Any) -> Any:
    """The compiled ``ListenerForwarder`` class of this driver JVM (raises what the compilation raised)."""
    key = id(gateway)
    with _lock:
        hit = _classes.get(key)
        if hit is None:
            try:
                hit = janino_class(gateway, "org.apache.spark.scheduler.SparkListener", SOURCE, _CLASS)
            except Exception as exc:  # noqa: BLE001 - remembered: one attempt per JVM, the caller falls back
                hit = exc
            _classes[key] = hit
    if isinstance(hit, Exception):
        raise hit
    return hit


class _Callback:
    """The py4j ``BiConsumer`` the forwarder calls: ``accept("onJobStart" | "onOtherEvent", event)``."""

    class Java:
        implements: ClassVar[list[str]] = ["java.util.function.BiConsumer"]

    def __init__(self, listener: Any) -> None:
        self._listener = listener

    def accept(self, callback: str, event: Any) -> None:
        getattr(self._listener, str(callback))(event)


def register(sc: Any, listener: Any, *, other_events: tuple[str, ...] = (), job_starts: int = JOBS_ALL,
             bus_queue: str | None = None) -> Any:
    """Add a forwarder to ``listener`` (a py4j ``SparkListenerInterface``) on SparkContext ``sc``'s shared queue, or
    its ``bus_queue``; returns what was added (for :func:`unregister`). Falls back to ``listener`` itself when the
    forwarder cannot be compiled (every event then crosses to Python, as before)."""
    global _warned
    jsc = sc._jsc.sc()
    try:
        forwarder = forwarder_class(sc._gateway).newInstance()
        forwarder.otherEvents(",".join(other_events))
        forwarder.jobStarts(int(job_starts))
        forwarder.target(_Callback(listener))
        added = forwarder
    except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
        if not _warned:
            _warned = True
            log.warning("the capture's listener filter could not be compiled (%r): every Spark listener event "
                        "is sent to Python", exc)
        added = python_proxy(sc, listener)
    if bus_queue is None:
        jsc.addSparkListener(added)
    else:
        jsc.listenerBus().addToQueue(added, bus_queue)  # private[spark] in Scala, public in the bytecode
    return added


def python_proxy(sc: Any, listener: Any) -> Any:
    """The JVM proxy of the py4j Python object ``listener`` as one JVM reference (the same object for adding and
    removing it)."""
    return sc._gateway.jvm.java.util.Objects.requireNonNull(listener)


def unregister(sc: Any, added: Any) -> None:
    """Remove what :func:`register` added (a forwarder stops calling Python at once) and release it."""
    try:
        sc._jsc.sc().removeSparkListener(added)
    finally:
        try:
            if is_forwarder(added):
                added.close()
            sc._gateway.detach(added)
        except Exception:  # noqa: BLE001, S110 - a stopped JVM
            pass


def is_forwarder(added: Any) -> bool:
    """Whether :func:`register` added a forwarder (``False``: the Python listener's own proxy)."""
    return str(added.getClass().getName()) == _CLASS
