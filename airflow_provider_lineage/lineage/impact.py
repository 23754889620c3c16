"""Upstream / downstream of a column across jobs, from OpenLineage events.

Datasets are matched by OpenLineage identity (namespace + name), so the output of one job and the
input of the next meet when both producers follow the naming spec. Field edges come from each
output's ``columnLineage`` facet; the facet's top-level ``dataset`` list (rows influenced by
filters, joins, ...) applies to every field of that output and is followed only when
``include_indirect`` is true.
"""
from __future__ import annotations

import difflib
import json
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_provider_lineage.lineage import column_facet

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
        #: ``symlinks`` identifiers (catalog table names) -> dataset: ``"ns:default.t"``, ``"default.t"``
        self.aliases: dict[str, tuple[str, str]] = {}

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
                facets = ds.get("facets") or {}
                schema = (facets.get("schema") or {}).get("fields") or []
                key = (ds["namespace"], ds["name"])
                self.fields.setdefault(key, set()).update(f.get("name", "") for f in schema)
                for ident in (facets.get("symlinks") or {}).get("identifiers") or []:
                    if ident.get("name"):
                        self.aliases.setdefault(f"{ident.get('namespace')}:{ident['name']}", key)
                        self.aliases.setdefault(ident["name"], key)
        for out in ev.get("outputs") or []:
            ns, name = out["namespace"], out["name"]
            facet = (out.get("facets") or {}).get("columnLineage") or {}
            # either form (dataset-level list or per field): a ``dataset`` entry applies to every field
            kinds_of: dict[tuple[FieldKey, FieldKey], set[str]] = {}
            for col, ins, inn, inf, typ, sub, _mask, _rows in column_facet.edges(
                facet, self.fields.get((ns, name), ())
            ):
                kinds_of.setdefault(((ins, inn, inf), (ns, name, col)), set()).add(f"{typ}/{sub or '?'}")
            for (src, dst), kinds in kinds_of.items():
                self._edge(src, dst, kinds)

    def _walk(
        self, adj: dict[FieldKey, dict[FieldKey, set[str]]], start: FieldKey, include_indirect: bool
    ) -> list[Hop]:
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

    def resolve_ref(self, ref: str) -> FieldKey:
        """Like :meth:`parse_ref`, but the dataset may also be named by its catalog table (``symlinks``
        facet: ``default.sales:amount`` or ``<warehouse ns>:default.sales:amount``), and an unknown
        dataset or field raises ``KeyError`` with a message naming close matches."""
        head, sep, fld = ref.rpartition(":")
        if not sep or not head:
            raise ValueError(
                f"{ref!r} is not namespace:name:field (e.g. file:/data/orders:amount, or default.orders:amount)"
            )
        key = next(((ns, nm) for ns, nm in self.fields if f"{ns}:{nm}" == head), None)
        if key is None:
            key = self.aliases.get(head)
        if key is None:
            lowered = {k.lower(): v for k, v in self.aliases.items()}
            key = lowered.get(head.lower())
        if key is None:
            names = [f"{ns}:{nm}" for ns, nm in self.fields] + list(self.aliases)
            close = difflib.get_close_matches(head, names, n=3, cutoff=0.5)
            hint = f"; close matches: {', '.join(close)}" if close else f"; {len(self.fields)} dataset(s) are known"
            raise KeyError(f"unknown dataset {head!r} in these events{hint}")
        known = self.fields.get(key, set())
        if fld not in known:
            match = next((f for f in known if f.lower() == fld.lower()), None)
            if match is None:
                close = difflib.get_close_matches(fld, sorted(known), n=3, cutoff=0.5)
                hint = f"; close matches: {', '.join(close)}" if close else f"; fields are: {', '.join(sorted(known))}"
                raise KeyError(f"unknown column {fld!r} of {key[0]}:{key[1]}{hint}")
            fld = match
        return (key[0], key[1], fld)

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
