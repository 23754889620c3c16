"""A stand-in for Marquez (0.5x) that applies its column-lineage ingestion rules to a stream of run events.

This is a MOCK of Marquez: Marquez itself (a JVM service with PostgreSQL) cannot run on the build
machines. It keeps only what decides whether a column edge is stored and what is shown for it,
following Marquez's ``OpenLineageDao`` / ``DatasetFieldDao`` / ``ColumnLineageDao``:

* a column edge is read only from an **output** of a run event, from the ``columnLineage`` facet's
  ``fields``; the facet's dataset-level ``dataset`` list is ignored (the checker reads both forms:
  edges stated only in the ``dataset`` list -- this package's default form -- are reported by
  :meth:`MarquezModel.hidden`, not as drops: Marquez does not show them, by design of its ingestion);
* the output column must be a field of that output's ``schema`` facet **in the same event**;
* the input field must already exist as a dataset field (from a ``schema`` facet, any event so far)
  of a dataset that **this run** has as an input (run inputs accumulate over the run's events); the
  input is found by exact ``namespace`` + ``name`` or through a ``symlinks`` identifier;
* per-input ``transformations`` are never read: the edge's type and description come from the
  deprecated field-level ``transformationType`` / ``transformationDescription``;
* dataset fields are rows keyed on (dataset, name, type): a field without ``type`` makes a new row
  per event (MarquezProject/marquez#3083), two types for one name make two rows;
* namespaces must match :data:`NAMESPACE_RE`, ``eventTime`` must be ISO-8601 with ``T``, and every
  facet needs ``_producer`` and ``_schemaURL``.

>>> m = MarquezModel(); [m.ingest(e) for e in events]
>>> m.lost()          # edges the events carry in ``fields`` that Marquez would not store ([] = all kept)
>>> m.hidden()        # edges stated only in a ``dataset`` list (Marquez ignores it; ``fields``/``both`` shows them)
>>> m.violations      # rule breaches (missing types, bad namespaces, facets without _producer ...)
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_lineage.lineage import column_facet

NAMESPACE_RE = re.compile(r"^[a-zA-Z:;=/0-9_\-.@+]{1,1024}$")

DatasetKey = tuple[str, str]
FieldKey = tuple[str, str, str]


@dataclass(frozen=True)
class StoredEdge:
    """A column edge as Marquez stores it: input field -> output field, with the field-level type/description."""

    input: FieldKey
    output: FieldKey
    type: str | None
    description: str | None


@dataclass(frozen=True)
class Dropped:
    input: FieldKey
    output: FieldKey
    reason: str


@dataclass
class MarquezModel:
    """Replays run events through Marquez's column-lineage rules (see the module docstring)."""

    #: dataset -> field name -> the types it has rows for (``None``: a row without type)
    fields: dict[DatasetKey, dict[str, list[str | None]]] = field(default_factory=dict)
    #: symlinks identifier -> dataset
    aliases: dict[DatasetKey, DatasetKey] = field(default_factory=dict)
    run_inputs: dict[str, set[DatasetKey]] = field(default_factory=dict)
    stored: dict[tuple[FieldKey, FieldKey], StoredEdge] = field(default_factory=dict)
    dropped: list[Dropped] = field(default_factory=list)
    #: every edge the events carry in ``fields``: (input field, output field)
    carried: set[tuple[FieldKey, FieldKey]] = field(default_factory=set)
    #: edges of ``dataset`` lists, expanded to every field of the output's schema (that is what they mean)
    dataset_level: set[tuple[FieldKey, FieldKey]] = field(default_factory=set)
    violations: list[str] = field(default_factory=list)
    datasets: set[DatasetKey] = field(default_factory=set)

    # -- ingestion ------------------------------------------------------------------------------
    def ingest_all(self, events: Iterable[dict[str, Any]]) -> MarquezModel:
        for ev in events:
            self.ingest(ev)
        return self

    def ingest(self, ev: dict[str, Any]) -> None:
        where = f"{ev.get('eventType')} {ev.get('job', {}).get('name')}"
        self._check_envelope(ev, where)
        run_id = ev["run"]["runId"]
        inputs = self.run_inputs.setdefault(run_id, set())
        for side in ("inputs", "outputs"):
            for ds in ev.get(side) or []:
                key = self._register(ds, where)
                if side == "inputs":
                    inputs.add(key)
        for out in ev.get("outputs") or []:
            self._column_lineage(out, inputs, where)

    def _check_envelope(self, ev: dict[str, Any], where: str) -> None:
        t = str(ev.get("eventTime", ""))
        try:
            dt.datetime.fromisoformat(t)
            ok = "T" in t
        except ValueError:
            ok = False
        if not ok:
            self.violations.append(f"{where}: eventTime {t!r} is not ISO-8601 with 'T'")
        self._namespace(ev.get("job", {}).get("namespace", ""), f"{where}: job")
        self._facets(ev.get("run", {}).get("facets") or {}, f"{where}: run")
        self._facets(ev.get("job", {}).get("facets") or {}, f"{where}: job")

    def _namespace(self, ns: str, what: str) -> None:
        if not NAMESPACE_RE.match(ns or ""):
            self.violations.append(f"{what} namespace {ns!r} does not match {NAMESPACE_RE.pattern}")

    def _facets(self, facets: dict[str, Any], what: str) -> None:
        for name, facet in facets.items():
            missing = [k for k in ("_producer", "_schemaURL") if not (isinstance(facet, dict) and facet.get(k))]
            if missing:
                self.violations.append(f"{what} facet {name!r} lacks {', '.join(missing)}")

    def _register(self, ds: dict[str, Any], where: str) -> DatasetKey:
        key = (ds["namespace"], ds["name"])
        self._namespace(ds["namespace"], f"{where}: dataset {ds['name']}")
        facets = ds.get("facets") or {}
        self._facets(facets, f"{where}: dataset {ds['name']}")
        self._facets(ds.get("inputFacets") or {}, f"{where}: dataset {ds['name']} input")
        self._facets(ds.get("outputFacets") or {}, f"{where}: dataset {ds['name']} output")
        self.datasets.add(key)
        rows = self.fields.setdefault(key, {})
        for f in (facets.get("schema") or {}).get("fields") or []:
            typ = f.get("type") or None
            if typ is None:
                self.violations.append(
                    f"{where}: {key[0]}:{key[1]} field {f.get('name')!r} has no type (#3083: a new row per event)"
                )
            types = rows.setdefault(f["name"], [])
            if typ is None or typ not in types:
                types.append(typ)
        for ident in (facets.get("symlinks") or {}).get("identifiers") or []:
            alias = (ident.get("namespace", ""), ident.get("name", ""))
            self._namespace(alias[0], f"{where}: symlink of {ds['name']}")
            self.aliases.setdefault(alias, key)
        return key

    def _resolve(self, ns: str, name: str) -> DatasetKey:
        key = (ns, name)
        return key if key in self.fields else self.aliases.get(key, key)

    def _column_lineage(self, out: dict[str, Any], run_inputs: set[DatasetKey], where: str) -> None:
        facets = out.get("facets") or {}
        facet = facets.get("columnLineage")
        if not facet:
            return
        out_key = (out["namespace"], out["name"])
        schema = {f["name"] for f in (facets.get("schema") or {}).get("fields") or []}
        for col, ns, name, fld, *_kind, all_rows in column_facet.edges({"dataset": facet.get("dataset")}, schema):
            if all_rows:
                self.dataset_level.add(((ns, name, fld), (*out_key, col)))
        for col, spec in (facet.get("fields") or {}).items():
            out_field = (*out_key, col)
            if spec.get("inputFields") and not spec.get("transformationType"):
                self.violations.append(
                    f"{where}: {out_key[1]}.{col} has no field-level transformationType (Marquez shows none)"
                )
            for inp in spec.get("inputFields") or []:
                in_field = (inp["namespace"], inp["name"], inp["field"])
                self.carried.add((in_field, out_field))
                reason = self._why_dropped(in_field, col, schema, run_inputs)
                if reason:
                    self.dropped.append(Dropped(in_field, out_field, reason))
                    continue
                ds = self._resolve(inp["namespace"], inp["name"])
                edge = StoredEdge((*ds, inp["field"]), out_field, spec.get("transformationType"),
                                  spec.get("transformationDescription"))
                self.stored[(edge.input, edge.output)] = edge

    def _why_dropped(self, in_field: FieldKey, col: str, schema: set[str], run_inputs: set[DatasetKey]) -> str | None:
        if col not in schema:
            return "output column not in the output's schema facet of this event"
        ds = self._resolve(in_field[0], in_field[1])
        if ds not in run_inputs:
            return "input dataset is not an input of this run"
        if in_field[2] not in self.fields.get(ds, {}):
            return "input field is not a known field of the input dataset"
        return None

    # -- answers --------------------------------------------------------------------------------
    def lost(self) -> list[tuple[FieldKey, FieldKey]]:
        """Edges carried in the events' ``fields`` that Marquez does not store (rule breaches)."""
        seen = {(self._canon(i), o) for i, o in self.stored}
        return sorted((i, o) for i, o in self.carried if (self._canon(i), o) not in seen)

    def hidden(self) -> list[tuple[FieldKey, FieldKey]]:
        """Edges stated only in ``dataset`` lists (expanded per output field): Marquez ignores the list,
        so it does not show them; the ``fields`` or ``both`` placement (``indirect_lineage``) does."""
        seen = {(self._canon(i), o) for i, o in self.stored}
        return sorted((i, o) for i, o in self.dataset_level if (self._canon(i), o) not in seen)

    def _canon(self, f: FieldKey) -> FieldKey:
        return (*self._resolve(f[0], f[1]), f[2])

    def type_conflicts(self) -> dict[FieldKey, list[str | None]]:
        """Fields with more than one row (several types, or rows without type)."""
        return {(*ds, name): types for ds, fs in self.fields.items() for name, types in fs.items() if len(types) > 1}

    def upstream(self, namespace: str, name: str, field_name: str) -> set[StoredEdge]:
        """The stored edges into one output field (what the column-lineage page shows one hop up)."""
        return {e for e in self.stored.values() if e.output == (namespace, name, field_name)}
