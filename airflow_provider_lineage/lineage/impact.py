"""Upstream / downstream of a column across jobs, from OpenLineage events.

Datasets are matched by OpenLineage identity (namespace + name), so the output of one job and the
input of the next meet when both producers follow the naming spec. Field edges come from each
output's ``columnLineage`` facet; the facet's top-level ``dataset`` list (rows influenced by
filters, joins, ...) applies to every field of that output and is followed only when
``include_indirect`` is true.
"""
from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FieldKey = tuple[str, str, str]


@dataclass(frozen=True)
class Hop:
    """A column reached by the traversal: ``distance`` edges away, via these transformation kinds."""

    namespace: str
    name: str
    field: str
    distance: int
    via: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.namespace}:{self.name}:{self.field} (distance {self.distance}; {', '.join(self.via)})"


def _event_dicts(events: Any) -> Iterable[dict[str, Any]]:
    if isinstance(events, (str, Path)):
        with open(events, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if line:
                    yield json.loads(line)
        return
    for ev in events:
        if isinstance(ev, dict):
            yield ev
        elif isinstance(ev, str):
            yield json.loads(ev)
        else:
            from openlineage.client.serde import Serde

            yield json.loads(Serde.to_json(ev))


class LineageGraph:
    """Column edges gathered from many events (any producer that emits ``columnLineage``)."""

    def __init__(self) -> None:
        # output field -> {input field: {transformation kinds}}
        self.up: dict[FieldKey, dict[FieldKey, set[str]]] = {}
        self.down: dict[FieldKey, dict[FieldKey, set[str]]] = {}
        self.fields: dict[tuple[str, str], set[str]] = {}

    @classmethod
    def from_events(cls, events: Any) -> LineageGraph:
        """Build from a JSONL path, or an iterable of event dicts / JSON strings / client events."""
        g = cls()
        for ev in _event_dicts(events):
            g.add_event(ev)
        return g

    def _edge(self, src: FieldKey, dst: FieldKey, kinds: set[str]) -> None:
        self.up.setdefault(dst, {}).setdefault(src, set()).update(kinds)
        self.down.setdefault(src, {}).setdefault(dst, set()).update(kinds)
        self.fields.setdefault(src[:2], set()).add(src[2])
        self.fields.setdefault(dst[:2], set()).add(dst[2])

    def add_event(self, ev: dict[str, Any]) -> None:
        for side in ("inputs", "outputs"):
            for ds in ev.get(side) or []:
                schema = ((ds.get("facets") or {}).get("schema") or {}).get("fields") or []
                self.fields.setdefault((ds["namespace"], ds["name"]), set()).update(f.get("name", "") for f in schema)
        for out in ev.get("outputs") or []:
            ns, name = out["namespace"], out["name"]
            facet = (out.get("facets") or {}).get("columnLineage") or {}
            out_fields = set(self.fields.get((ns, name), set())) | set((facet.get("fields") or {}).keys())
            for fname, spec in (facet.get("fields") or {}).items():
                for inp in spec.get("inputFields") or []:
                    kinds = {f"{t.get('type')}/{t.get('subtype')}" for t in inp.get("transformations") or []} or {"DIRECT/?"}
                    self._edge((inp["namespace"], inp["name"], inp["field"]), (ns, name, fname), kinds)
            for inp in facet.get("dataset") or []:
                kinds = {f"{t.get('type')}/{t.get('subtype')}" for t in inp.get("transformations") or []} or {"INDIRECT/?"}
                kinds = {k if k.startswith("INDIRECT") else "INDIRECT/" + k.split("/", 1)[-1] for k in kinds}
                for fname in out_fields:
                    self._edge((inp["namespace"], inp["name"], inp["field"]), (ns, name, fname), kinds)

    def _walk(self, adj: dict[FieldKey, dict[FieldKey, set[str]]], start: FieldKey, include_indirect: bool) -> list[Hop]:
        seen: dict[FieldKey, Hop] = {}
        queue: deque[tuple[FieldKey, int]] = deque([(start, 0)])
        visited = {start}
        while queue:
            node, dist = queue.popleft()
            for nxt, kinds in adj.get(node, {}).items():
                use = kinds if include_indirect else {k for k in kinds if not k.startswith("INDIRECT")}
                if not use or nxt in visited:
                    continue
                visited.add(nxt)
                seen[nxt] = Hop(*nxt, distance=dist + 1, via=tuple(sorted(use)))
                queue.append((nxt, dist + 1))
        return sorted(seen.values(), key=lambda h: (h.distance, h.namespace, h.name, h.field))

    def upstream(self, namespace: str, name: str, field: str, include_indirect: bool = False) -> list[Hop]:
        """Every column ``field`` is computed from (transitively, across jobs)."""
        return self._walk(self.up, (namespace, name, field), include_indirect)

    def downstream(self, namespace: str, name: str, field: str, include_indirect: bool = False) -> list[Hop]:
        """Every column computed from ``field`` (transitively, across jobs): the impact of changing it."""
        return self._walk(self.down, (namespace, name, field), include_indirect)

    def parse_ref(self, ref: str) -> FieldKey:
        """``namespace:name:field`` (namespaces may contain ``:``; matched against known datasets)."""
        head, sep, fld = ref.rpartition(":")
        if not sep:
            raise ValueError(f"{ref!r} is not namespace:name:field (e.g. file:/data/orders:amount)")
        for ns, nm in self.fields:
            if f"{ns}:{nm}" == head:
                return (ns, nm, fld)
        ns, _, nm = head.partition(":")
        return (ns, nm, fld)
