"""py4j helpers of the capture: releasing JVM references, Scala sequences, Java exceptions' text, the listener proxies.

Kept apart from the listener (:mod:`.listener`) so that every capture module (the session listener, the SparkContext
listeners of :mod:`.driver_jobs`, :mod:`.streaming` and :mod:`.connect`) shares them.
"""
from __future__ import annotations

import traceback
from typing import Any


def scala_seq(seq: Any) -> list[Any]:
    """The elements of a Scala collection (a ``Seq``, a ``Set`` ...) through its iterator: one py4j call each."""
    it = seq.iterator()
    out = []
    while it.hasNext():
        out.append(it.next())
    return out


def _detach(gateway: Any, obj: Any) -> None:
    """Release a JVM reference now (py4j would otherwise keep the object alive until Python's GC)."""
    if obj is None or not hasattr(obj, "_target_id"):
        return
    try:
        gateway.detach(obj)
    except Exception:  # noqa: BLE001, S110 - an already released reference
        pass


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
