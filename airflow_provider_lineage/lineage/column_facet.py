"""Reading a ``columnLineage`` facet in either form: dataset-level or per field (no openlineage-python needed).

A producer puts the influences on all rows (FILTER, JOIN, GROUP_BY, SORT) either once into the facet's
top-level ``dataset`` list (facet 1-2-0; this package's default, openlineage-spark's
``datasetLineageEnabled=true``) or onto every output field (the legacy form), or both. They mean the
same: a ``dataset`` entry is an INDIRECT input of every field of the output. Readers that answer per
column (impact, the CLI, the Marquez checker, the benchmarks' scoring) go through :func:`column_inputs`
or :func:`edges`, so both forms give the same answer; readers that keep the two apart (this package's
run record: ``edges`` and ``dataset_edges``) use :func:`dataset_inputs`.

Works on the JSON form (dicts, as in ``events.jsonl`` or an HTTP body).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

#: ``(output field, input namespace, input name, input field, type, subtype, masking, all_rows)``;
#: ``all_rows``: the edge came from the facet's ``dataset`` list.
Edge = tuple[str, str, str, str, str, str, bool, bool]


def dataset_inputs(facet: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The facet's dataset-level input fields (``[]`` when absent or malformed)."""
    got = (facet or {}).get("dataset")
    return [d for d in got if isinstance(d, dict)] if isinstance(got, list) else []


def _transformations(inp: dict[str, Any], indirect: bool) -> list[tuple[str, str, bool]]:
    out = []
    for t in inp.get("transformations") or [{}]:
        typ = str(t.get("type") or ("INDIRECT" if indirect else "DIRECT"))
        if indirect and typ != "INDIRECT":  # a dataset-level entry only influences rows
            typ = "INDIRECT"
        out.append((typ, str(t.get("subtype") or ""), bool(t.get("masking"))))
    return out


def edges(facet: dict[str, Any] | None, output_fields: Iterable[str] = ()) -> Iterator[Edge]:
    """Every edge of the facet, per output field, whichever form the producer used.

    :param output_fields: the output's field names (its ``schema`` facet): the fields a ``dataset``
        entry applies to, besides those the facet's ``fields`` name. An edge present in both places
        (``both`` form) is yielded once, with ``all_rows`` true.
    """
    facet = facet or {}
    per_field = facet.get("fields") if isinstance(facet.get("fields"), dict) else {}
    rows = [(d, t) for d in dataset_inputs(facet) for t in _transformations(d, True)]
    shared = {(d.get("namespace"), d.get("name"), d.get("field"), *t) for d, t in rows}
    names = list(dict.fromkeys([*output_fields, *per_field]))
    for col in names:
        spec = per_field.get(col) or {}
        for inp in spec.get("inputFields") or []:
            for t in _transformations(inp, False):
                key = (inp.get("namespace"), inp.get("name"), inp.get("field"), *t)
                if key in shared:
                    continue  # the same influence the dataset list states for every field
                yield (col, str(inp.get("namespace")), str(inp.get("name")), str(inp.get("field")), *t, False)
        for d, t in rows:
            yield (col, str(d.get("namespace")), str(d.get("name")), str(d.get("field")), *t, True)


def column_inputs(facet: dict[str, Any] | None, output_fields: Iterable[str] = ()) -> dict[str, list[dict[str, Any]]]:
    """The legacy per-field form: ``{output field: [inputField, ...]}`` with the ``dataset`` list expanded
    into every field (one ``inputField`` per input column, its transformations merged)."""
    out: dict[str, dict[tuple[str, str, str], dict[str, Any]]] = {}
    for col, ns, name, field, typ, sub, masking, _rows in edges(facet, output_fields):
        entry = out.setdefault(col, {}).setdefault(
            (ns, name, field), {"namespace": ns, "name": name, "field": field, "transformations": []})
        t = {"type": typ, "subtype": sub, "description": "", "masking": masking}
        if t not in entry["transformations"]:
            entry["transformations"].append(t)
    return {col: list(fields.values()) for col, fields in out.items()}


def form(facet: dict[str, Any] | None) -> str:
    """Which form the facet is in: ``"dataset"`` (a ``dataset`` list, no INDIRECT edge repeated on every
    field), ``"both"`` (the list and its entries on every field), ``"fields"`` (no list), ``"empty"``."""
    facet = facet or {}
    per_field = facet.get("fields") if isinstance(facet.get("fields"), dict) else {}
    listed = dataset_inputs(facet)
    if not listed:
        return "fields" if per_field else "empty"
    first = listed[0]
    key = (first.get("namespace"), first.get("name"), first.get("field"))
    on_all = bool(per_field) and all(
        any((i.get("namespace"), i.get("name"), i.get("field")) == key for i in (spec or {}).get("inputFields") or [])
        for spec in per_field.values())
    return "both" if on_all else "dataset"
