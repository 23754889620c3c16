"""The column graph: vertices are exprIds (plus synthetic scope vertices), edges carry a transformation.

Composition along a path follows openlineage-spark (spark_column_lineage.md, "Facet building"):

* an INDIRECT step wins (the step closest to the output wins when both are INDIRECT);
* DIRECT after DIRECT takes the strongest subtype, AGGREGATION > TRANSFORMATION > IDENTITY;
* masking is sticky: a path is masked when any step on it masks. That is only true because a masking
  step is one-way (a hash, ``mask()`` with literal replacements, a count: :func:`~.expressions.masking_proved`):
  nothing later on the path can give the value back. Reversible encodings (``aes_encrypt``, ``base64``,
  ``hex``, ``encode``, ``to_json``) are never masking steps, so ``aes_decrypt(aes_encrypt(x, k), k)`` or
  ``unbase64(base64(x))`` composes to an unmasked path.

Resolution (all source fields behind a vertex) is memoised per vertex and iterative, so the cost is
linear in edges times the number of distinct sources per vertex, with no path explosion and no
recursion limit on deep plans.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from airflow_provider_lineage.lineage.naming import DatasetRef

DIRECT = "DIRECT"
INDIRECT = "INDIRECT"
_DIRECT_RANK = {"IDENTITY": 0, "TRANSFORMATION": 1, "AGGREGATION": 2}


@dataclass(frozen=True, order=True)
class Trans:
    """One transformation: OpenLineage ``type``/``subtype``/``masking``."""

    type: str
    subtype: str
    masking: bool = False

    def masked(self, flag: bool = True) -> Trans:
        return Trans(self.type, self.subtype, self.masking or flag) if flag else self


IDENTITY = Trans(DIRECT, "IDENTITY")
TRANSFORMATION = Trans(DIRECT, "TRANSFORMATION")
AGGREGATION = Trans(DIRECT, "AGGREGATION")
FILTER = Trans(INDIRECT, "FILTER")
JOIN = Trans(INDIRECT, "JOIN")
GROUP_BY = Trans(INDIRECT, "GROUP_BY")
SORT = Trans(INDIRECT, "SORT")
WINDOW = Trans(INDIRECT, "WINDOW")
CONDITIONAL = Trans(INDIRECT, "CONDITIONAL")


def compose(outer: Trans, inner: Trans) -> Trans:
    """The transformation of a path ``source -inner-> x -outer-> output``."""
    mask = outer.masking or inner.masking
    if outer.type == INDIRECT:
        return Trans(INDIRECT, outer.subtype, mask)
    if inner.type == INDIRECT:
        return Trans(INDIRECT, inner.subtype, mask)
    sub = outer.subtype if _DIRECT_RANK.get(outer.subtype, 1) >= _DIRECT_RANK.get(inner.subtype, 1) else inner.subtype
    return Trans(DIRECT, sub, mask)


Vertex = int | str
Source = tuple[DatasetRef, str]
Resolved = dict[Source, frozenset[Trans]]


class ColumnGraph:
    """Edges ``target <- (source vertex, transformation)`` and the source fields of leaf attributes."""

    def __init__(self) -> None:
        self.deps: dict[Vertex, list[tuple[Vertex, Trans]]] = {}
        self._dep_keys: dict[Vertex, set[tuple[Vertex, Trans]]] = {}
        self.sources: dict[Vertex, list[Source]] = {}
        self.labels: dict[Vertex, str] = {}
        self._memo: dict[Vertex, Resolved] = {}
        self.cyclic = False

    def add_loop(self, target: Vertex, source: Vertex, trans: Trans) -> None:
        """An edge that closes a cycle (a recursive CTE's reference to its own output): resolution
        then iterates to a fixpoint instead of the one-pass memoised traversal."""
        self.cyclic = True
        self.add(target, source, trans)

    def add(self, target: Vertex, source: Vertex, trans: Trans) -> None:
        """Add the edge ``target <- source`` (duplicates and self-loops are ignored)."""
        if target == source:
            return
        keys = self._dep_keys.setdefault(target, set())
        if (source, trans) in keys:
            return
        keys.add((source, trans))
        self.deps.setdefault(target, []).append((source, trans))
        self._memo.clear()

    def add_source(self, vertex: Vertex, dataset: DatasetRef, field: str) -> None:
        lst = self.sources.setdefault(vertex, [])
        if (dataset, field) not in lst:
            lst.append((dataset, field))
            self._memo.clear()

    def resolve(self, vertex: Vertex) -> Resolved:
        """Every source field behind ``vertex`` with the composed transformations (memoised)."""
        memo = self._memo
        if vertex in memo:
            return memo[vertex]
        if self.cyclic:
            self._fixpoint()
            return self._memo.setdefault(vertex, {})
        on_stack: set[Vertex] = set()
        stack: list[tuple[Vertex, bool]] = [(vertex, False)]
        while stack:
            v, expanded = stack.pop()
            if not expanded:
                if v in memo or v in on_stack:
                    continue
                on_stack.add(v)
                stack.append((v, True))
                for u, _t in self.deps.get(v, ()):
                    if u not in memo and u not in on_stack:
                        stack.append((u, False))
                continue
            acc: dict[Source, set[Trans]] = {}
            for src in self.sources.get(v, ()):
                acc.setdefault(src, set()).add(IDENTITY)
            for u, t in self.deps.get(v, ()):
                for src, ts in memo.get(u, {}).items():  # a vertex on a cycle contributes nothing
                    bucket = acc.setdefault(src, set())
                    for t2 in ts:
                        bucket.add(compose(t, t2))
            memo[v] = {k: frozenset(v2) for k, v2 in acc.items()}
            on_stack.discard(v)
        return memo[vertex]

    def _fixpoint(self) -> None:
        """Resolve every vertex of a graph with cycles: passes in DFS post-order (one pass settles the
        acyclic part) until nothing changes; terminates because the sets only grow in a finite lattice."""
        order: list[Vertex] = []
        seen: set[Vertex] = set()
        for root in list(self.deps) + list(self.sources):
            if root in seen:
                continue
            seen.add(root)
            stack: list[tuple[Vertex, int]] = [(root, 0)]
            while stack:
                v, i = stack.pop()
                deps = self.deps.get(v, [])
                if i < len(deps):
                    stack.append((v, i + 1))
                    u = deps[i][0]
                    if u not in seen:
                        seen.add(u)
                        stack.append((u, 0))
                else:
                    order.append(v)
        acc: dict[Vertex, dict[Source, set[Trans]]] = {v: {} for v in order}
        changed = True
        while changed:
            changed = False
            for v in order:
                mine = acc[v]
                for src in self.sources.get(v, ()):
                    if IDENTITY not in mine.setdefault(src, set()):
                        mine[src].add(IDENTITY)
                        changed = True
                for u, t in self.deps.get(v, ()):
                    for src, ts in list(acc.get(u, {}).items()):
                        bucket = mine.setdefault(src, set())
                        for t2 in list(ts):
                            c = compose(t, t2)
                            if c not in bucket:
                                bucket.add(c)
                                changed = True
        self._memo = {v: {k: frozenset(ts) for k, ts in a.items()} for v, a in acc.items()}

    def upstream_vertices(self, vertex: Vertex) -> Iterable[tuple[Vertex, Trans]]:
        return self.deps.get(vertex, ())
