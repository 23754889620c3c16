"""Where the plan cannot tell where a value came from: the engine's over-approximations and their reasons.

The rule (docs/engine.md): an output column's inputs are exact, or a superset with a reason; never a subset.
This module holds the engine's side of the cases the capture cannot see through (docs/engine.md, "What the
capture cannot see, and what it does then"):

* **driver round trips**: values an earlier action returned to the driver (``collect``, ``first``, ``toPandas``
  ... and session variables) may come back in a later write as driver-local data (``createDataFrame`` of rows,
  a ``LocalRelation``), a literal that is not a constant of the application's code, or a value a Python UDF or an
  RDD function reads from its closure (a lookup dict, a broadcast). :class:`DriverFlow` is the vertex those
  constructs get a DIRECT edge from: every column the application returned to the driver before the write;
* **RDD round trips** and **Python data sources**: every output column of the leaf from every column read;
* **checkpoints**: the checkpointed plan's lineage as the capture saw it, else an unknown input.

Every such vertex is *marked* with its reason (:meth:`Marks.add`); :func:`reasons_by_column` carries the marks to
the output columns whose values can go through them: ``WriteLineage.approximate_columns``.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from airflow_provider_lineage.lineage.graph import INDIRECT, TRANSFORMATION, ColumnGraph, Trans, Vertex
from airflow_provider_lineage.lineage.model import UNKNOWN_INPUT
from airflow_provider_lineage.lineage.naming import DatasetRef

if TYPE_CHECKING:
    from airflow_provider_lineage.lineage.plan import TreeNode

#: The graph vertex of "every column returned to the driver before this write".
DRIVER_VERTEX: Vertex = "driver:returns"
#: Reason prefixes (the facet's transformation description says ``approximate: <reason>``).
DRIVER_ROUND_TRIP = "driver round trip"
RDD_ROUND_TRIP = "RDD round trip"
PYTHON_DATA_SOURCE = "Python data source"
CHECKPOINT = "checkpoint"
#: Literal types that carry no data worth a lineage edge (``NULL``, ``true``/``false``).
_NO_DATA_TYPES = frozenset({"null", "boolean"})


class Marks:
    """Vertex -> the reasons its value is over-approximated (or has an unknown input)."""

    def __init__(self) -> None:
        self.by_vertex: dict[Vertex, list[str]] = {}

    def add(self, vertex: Vertex, reason: str) -> None:
        bucket = self.by_vertex.setdefault(vertex, [])
        if reason not in bucket:
            bucket.append(reason)

    def __bool__(self) -> bool:
        return bool(self.by_vertex)


def reasons_by_column(graph: ColumnGraph, marks: Marks, columns: Iterable[tuple[str, Vertex]]) -> dict[str, list[str]]:
    """``{output column: [reason, ...]}`` for every column whose value can go through a marked vertex (by the
    graph's edges, DIRECT or INDIRECT). One forward pass from the marks over the reversed edges per reason
    (there are few reasons), never one search per column."""
    if not marks:
        return {}
    users: dict[Vertex, list[Vertex]] = {}
    for target, deps in graph.deps.items():
        for source, _t in deps:
            users.setdefault(source, []).append(target)
    by_reason: dict[str, list[Vertex]] = {}
    for vertex, reasons in marks.by_vertex.items():
        for r in reasons:
            by_reason.setdefault(r, []).append(vertex)
    reached: dict[Vertex, list[str]] = {}
    for reason, starts in by_reason.items():
        seen: set[Vertex] = set(starts)
        stack = list(starts)
        while stack:
            v = stack.pop()
            reached.setdefault(v, []).append(reason)
            for u in users.get(v, ()):
                if u not in seen:
                    seen.add(u)
                    stack.append(u)
    out: dict[str, list[str]] = {}
    for name, vertex in columns:
        got = reached.get(vertex)
        if got:
            bucket = out.setdefault(name, [])
            bucket.extend(r for r in got if r not in bucket)
    return out


def _ref(item: list[Any]) -> DatasetRef:
    return DatasetRef(str(item[0]), str(item[1]), item[2] or None)


class DriverFlow:
    """What a write's record says went through the driver before it (``CaptureRecord.driver``)."""

    def __init__(self, data: dict[str, Any] | None) -> None:
        data = data or {}
        self.returns: list[dict[str, Any]] = list(data.get("returns") or [])
        self.unseen: str | None = data.get("unseen")
        raw = data.get("literals")
        self.all_literals = raw == "*"
        self.literals: set[tuple[str, str]] = set()
        if isinstance(raw, list):
            self.literals = {(str(v), str(t)) for v, t in raw if v is not None}
        self.checkpoints: dict[int, list[list[Any]]] = {int(k): v for k, v in (data.get("checkpoints") or {}).items()}
        self._installed = False

    @property
    def active(self) -> bool:
        """Something was returned to the driver before this write (or may have been: ``unseen``)."""
        return bool(self.returns) or self.unseen is not None

    def reason(self) -> str:
        actions = ", ".join(f"{r.get('func')} #{r.get('seq')}" for r in self.returns[:5])
        more = f" and {len(self.returns) - 5} more" if len(self.returns) > 5 else ""
        n = len({tuple(s) for r in self.returns for s in r.get("sources") or []})
        text = (f"{DRIVER_ROUND_TRIP}: may hold values the application returned to the driver before this write "
                f"({actions}{more}: {n} input column(s))") if self.returns else ""
        if self.unseen:
            unseen = f"{UNKNOWN_INPUT}: {DRIVER_ROUND_TRIP} the capture could not analyse ({self.unseen})"
            return f"{unseen}; {text}" if text else unseen
        return text

    def vertex(self, graph: ColumnGraph, marks: Marks) -> Vertex:
        """The driver vertex (its sources: every returned column), added to ``graph`` on first use."""
        if not self._installed:
            self._installed = True
            for r in self.returns:
                for s in r.get("sources") or []:
                    graph.add_source(DRIVER_VERTEX, _ref(s), str(s[3]))
            marks.add(DRIVER_VERTEX, self.reason())
        return DRIVER_VERTEX

    def literal_flagged(self, node: TreeNode) -> bool:
        """A literal that may hold a driver value: not ``NULL``/boolean and not a constant of the code."""
        value = node.fields.get("value")
        dtype = str(node.fields.get("dataType", ""))
        if value is None or dtype in _NO_DATA_TYPES:
            return False
        return self.all_literals or (str(value), dtype) in self.literals

    def inputs(self) -> dict[DatasetRef, dict[str, str]]:
        out: dict[DatasetRef, dict[str, str]] = {}
        for r in self.returns:
            for s in r.get("sources") or []:
                out.setdefault(_ref(s), {}).setdefault(str(s[3]), "")
        return out


def driver_step(start: Trans) -> Trans:
    """The step from the driver vertex: DIRECT/TRANSFORMATION into a value, the influence's own kind into a scope."""
    return start if start.type == INDIRECT else TRANSFORMATION


def checkpoint_trans(edge: list[Any]) -> Trans:
    """A checkpointed column's edge ``[ns, name, table, field, type, subtype, masking]`` as a transformation."""
    return Trans(str(edge[4]), str(edge[5]), bool(edge[6]) if len(edge) > 6 else False)


def checkpoint_ref(edge: list[Any]) -> tuple[DatasetRef, str]:
    return _ref(edge), str(edge[3])
