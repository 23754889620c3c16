"""Checking one lineage record before the estate index stores it: every name it can hold, every edge
well formed, each element left out named (:func:`lineage`), and the record's digest.

The dataset identity the index keys on is :func:`canonical` (today's naming rules).
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from typing import Any

from airflow_provider_lineage.lineage import canonical as canonical_rules
from airflow_provider_lineage.plugins.estate import schema as s

log = logging.getLogger(__name__)


def canonical(namespace: str, name: str) -> tuple[str, str]:
    """The dataset identity the index keys on: (namespace, name) under the *current* naming rules, the
    namespace's host (bucket, account) lower-cased (:func:`airflow_provider_lineage.lineage.canonical.index_key`),
    so that a record written under an older rule lands under today's name and ``s3a://Bucket`` is
    ``s3://bucket``, as the guard matches declarations
    (:func:`~airflow_provider_lineage.lineage.canonical.match_key`)."""
    try:
        ns, nm = canonical_rules.index_key(namespace, name)
        return str(ns), str(nm)
    except Exception:
        log.debug("identity rule failed for %s:%s", namespace, name, exc_info=True)
    return namespace, name


class BadRecord(ValueError):
    """A lineage record (right format marker) whose content cannot be indexed (the message says why)."""


def _text(value: Any, what: str, limit: int, problems: list[str]) -> str | None:
    """``value`` as a name the index can hold, else ``None`` with the reason added to ``problems``."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        problems.append(f"{what} is not a string")
        return None
    text = str(value)
    if "\x00" in text:
        problems.append(f"{what} contains a NUL byte")
        return None
    if len(text) > limit:
        problems.append(f"{what} is over {limit} characters ({len(text)})")
        return None
    return text


def label_text(value: Any, limit: int) -> str | None:
    """A display-only value (type, subtype): NULs removed, cut to ``limit``; ``None`` when empty."""
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).replace("\x00", "")[:limit]
    return text or None


def _index(value: Any, ok: Sequence[bool]) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(ok) or not ok[value]:
        return None
    return value


def lineage(record: dict[str, Any]) -> tuple[list[tuple[str, str, str | None]], dict[str, Any], str, list[str]]:
    """(dataset identities, the record's lineage by identity index, its digest, problems).

    Checks every element: a dataset whose identity the index cannot hold (not a string, a NUL byte,
    longer than its column) is left out with the edges and io rows that name it, a malformed edge or
    index is left out, and each is named in ``problems``. Raises :class:`BadRecord` when the record's
    shape is wrong (``datasets``, ``edges`` ... not lists).
    """
    raw = record.get("datasets")
    if not isinstance(raw, list):
        raise BadRecord("'datasets' is not a list")
    for key in ("inputs", "outputs", "edges", "dataset_edges"):
        if record.get(key) is not None and not isinstance(record.get(key), list):
            raise BadRecord(f"{key!r} is not a list")
    problems: list[str] = []
    idents: list[tuple[str, str, str | None]] = []
    ok: list[bool] = []
    for i, ds in enumerate(raw):
        if not isinstance(ds, dict):
            problems.append(f"dataset #{i} is not an object")
            idents.append(("", "", None))
            ok.append(False)
            continue
        found: list[str] = []
        ns_raw = _text(ds.get("namespace", ""), f"dataset #{i} namespace", 100_000, found)
        nm_raw = _text(ds.get("name", ""), f"dataset #{i} name", 100_000, found)
        if ns_raw is not None and nm_raw is not None:
            ns, nm = canonical(ns_raw, nm_raw)
            ns_ok = _text(ns, f"dataset #{i} namespace", s.MAX_NAMESPACE, found)
            nm_ok = _text(nm, f"dataset #{i} name", s.MAX_NAME, found)
        else:
            ns_ok = nm_ok = None
        if ns_ok is None or nm_ok is None:
            problems += [f"{p}: dataset left out" for p in found]
            idents.append(("", "", None))
            ok.append(False)
            continue
        table = ds.get("table")
        table = _text(table, f"dataset #{i} table", s.MAX_TABLE, []) if table is not None else None
        idents.append((ns_ok, nm_ok, table))
        ok.append(True)
    n_bad: dict[str, int] = {}

    def bad(what: str) -> None:
        n_bad[what] = n_bad.get(what, 0) + 1

    io_rows = set()
    for key, out in (("inputs", False), ("outputs", True)):
        for i in record.get(key) or []:
            j = _index(i, ok)
            if j is None:
                bad(key)
            else:
                io_rows.add((j, out))
    edges = []
    for e in record.get("edges") or []:
        if not isinstance(e, list) or len(e) != 7:
            bad("edges")
            continue
        out, col, src, src_field, typ, sub, masked = e
        out, src = _index(out, ok), _index(src, ok)
        col = _text(col, "column", s.MAX_COLUMN, [])
        src_field = _text(src_field, "column", s.MAX_COLUMN, [])
        if out is None or src is None or col is None or src_field is None:
            bad("edges")
            continue
        edges.append((out, col, src, src_field, label_text(typ, 20) or "UNKNOWN", label_text(sub, 40), bool(masked)))
    for e in record.get("dataset_edges") or []:
        if not isinstance(e, list) or len(e) != 6:
            bad("dataset_edges")
            continue
        out, src, src_field, typ, sub, masked = e
        out, src = _index(out, ok), _index(src, ok)
        src_field = _text(src_field, "column", s.MAX_COLUMN, [])
        if out is None or src is None or src_field is None:
            bad("dataset_edges")
            continue
        edges.append((out, "", src, src_field, label_text(typ, 20) or "UNKNOWN", label_text(sub, 40), bool(masked)))
    fields = []
    for i, ds in enumerate(raw):
        if not ok[i]:
            continue
        cols = ds.get("fields") or []
        if not isinstance(cols, list):
            bad("fields")
            continue
        for name_type in cols:
            if not isinstance(name_type, list) or not name_type:
                bad("fields")
                continue
            name = _text(name_type[0], "column", s.MAX_COLUMN, [])
            if not name:
                bad("fields")
                continue
            fields.append((i, name, label_text(name_type[1], s.MAX_TYPE) if len(name_type) > 1 else None))
    problems += [f"{n} malformed {what} entr{'y' if n == 1 else 'ies'} left out" for what, n in sorted(n_bad.items())]
    # the table labels are part of the lineage's identity: a set shared by two records carries the labels of both
    body = {"d": [[a, b] for a, b, _ in idents], "io": sorted(io_rows), "e": edges, "f": fields,
            "t": [t for _, _, t in idents]}
    digest = hashlib.sha256(json.dumps(body, separators=(",", ":"), default=str).encode()).hexdigest()
    return idents, body, digest, problems
