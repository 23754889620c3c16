"""Read what lineage needs of a JVM plan without serialising the whole plan (issue 36).

``TreeNode.toJSON()`` writes a tree: a sub-expression shared by many parents (a ``withColumn`` chain
where each step uses the previous column twice, which the optimizer collapses into one expression) is
written once per path, so the text doubles with every step, and the json4s tree plus the string live in
the driver's heap at once. Instead ``PlanWalker`` (Java source in :mod:`.plan_walker_source`, compiled
in the driver JVM with Janino, which Spark ships for its code generation) walks the plans inside the JVM,
memoised by object identity (and attributes by value: each ``Project`` of a wide chain holds its own
copies of the same ``AttributeReference``), and returns a compact DAG: one entry per distinct node (plan
node or expression) with its own fields in ``toJSON()``'s shapes and nested trees (``CaseWhen``'s branch
pairs too) as ``{"$t": id}`` references.
One py4j round trip per root plus one for the walk, which the JVM writes to a temporary file in 64 KiB pieces
(the driver's Python process and JVM share a host); every JVM reference taken is detached.

The engine reads that DAG (:func:`airflow_provider_lineage.lineage.plan.load_dag`) exactly as it reads
``toJSON()`` lists, with shared nodes staying shared.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_lineage._jvm import janino_class
from airflow_provider_lineage.capture.plan_walker_source import SOURCE
from airflow_provider_lineage.lineage.logs import get_logger

log = get_logger(__name__)

__all__ = ["Extract", "Limits", "Reader", "extract", "janino_class", "walker_class"]

_CLASS = "apl.PlanWalker"
_lock = threading.Lock()
#: gateway id -> the compiled class (one compilation per driver JVM)
_classes: dict[int, Any] = {}


@dataclass
class Limits:
    """Bounds of one walk (the memory guard and the per-write budget's share spent in the JVM)."""

    max_nodes: int = 2_000_000
    max_chars: int = 256 * 1024 * 1024
    millis: int = 30_000
    min_free_heap: float = 0.15


@dataclass
class Extract:
    """What a walk returned."""

    dag: dict[str, Any] | None
    leaves: list[Any] = field(default_factory=list)
    stopped: str | None = None
    nodes: int = 0


def walker_class(gateway: Any) -> Any:
    """The compiled ``PlanWalker`` class of this driver JVM (compiled once, on first use)."""
    key = id(gateway)
    with _lock:
        hit = _classes.get(key)
        if hit is not None:
            return hit
        cls = janino_class(gateway, "org.apache.spark.sql.catalyst.trees.TreeNode", SOURCE, _CLASS)
        _classes[key] = cls
        return cls


def extract(gateway: Any, roots: list[Any], limits: Limits | None = None) -> Extract:
    """Walk ``roots`` (JVM plans) into one DAG; the leaves come back as JVM objects the caller detaches."""
    limits = limits or Limits()
    walker = walker_class(gateway).newInstance()
    fd, path = tempfile.mkstemp(prefix="apl-plan-", suffix=".json")
    os.close(fd)
    try:
        walker.limits(int(limits.max_nodes), int(limits.max_chars), int(limits.millis), float(limits.min_free_heap))
        for r in roots:
            walker.root(r)
        walker.walkToFile(path)  # the JVM writes it in 64 KiB pieces: no whole-DAG string in the heap or over py4j
        stopped = walker.stopped()
        leaves: list[Any] = []
        if stopped is None:
            arr = walker.leaves()
            leaves = list(arr)
            gateway.detach(arr)
        with open(path, encoding="utf-8") as fh:
            dag = json.load(fh)
    finally:
        gateway.detach(walker)
        with contextlib.suppress(OSError):
            os.unlink(path)
    if stopped is not None:
        return Extract(None, [], stopped, int(dag.get("count", 0)))
    return Extract(dag, leaves, None, len(dag.get("nodes", [])))


class Reader:
    """Whole schemas and string lists of JVM objects in one py4j round trip each (a 2,000-column relation
    would otherwise cost five round trips a column)."""

    def __init__(self, gateway: Any) -> None:
        self._gateway = gateway
        self._walker: Any = None

    def _get(self) -> Any:
        if self._walker is None:
            self._walker = walker_class(self._gateway).newInstance()
        return self._walker

    def attributes(self, attrs: Any) -> list[tuple[int, str, str]]:
        """``(exprId, name, simpleString type)`` of each attribute of a Scala ``Seq``."""
        return [(int(i), str(n), str(t)) for i, n, t in json.loads(self._get().attributes(attrs))]

    def strings(self, values: Any) -> list[str]:
        return [str(v) for v in json.loads(self._get().strings(values))]

    def close(self) -> None:
        if self._walker is not None:
            try:
                self._gateway.detach(self._walker)
            except Exception:  # noqa: BLE001, S110 - an already released reference
                pass
            self._walker = None
