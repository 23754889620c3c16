"""What the task shows of the guard's record: tag paths redacted to its own datasets, the diff bounded, the record fit.

What the task shows (XComs, log, failure message, asset events) names only the datasets it reads or writes: a
tag path's hops through any other dataset are a count (:func:`redact_result`; docs/guard.md, "Who sees what").
Used by :mod:`.guard`.
"""
from __future__ import annotations

from typing import Any

from airflow_provider_lineage.lineage import diff as diffs
from airflow_provider_lineage.lineage import run_record
from airflow_provider_lineage.lineage.redact import is_marker, redact

#: Upper bound on the diff entries the record keeps for the view (the XCom has them all).
VIEW_DIFF_ITEMS = 300


def dataset_identity(namespace: str, name: str) -> tuple[str, str]:
    """The dataset identity the estate index keys on (:func:`..lineage.canonical.index_key`: host case folded)."""
    from airflow_provider_lineage.lineage import canonical

    try:
        ns, nm = canonical.index_key(namespace, name)
        return str(ns), str(nm)
    except Exception:  # noqa: BLE001 - the name as it is (as the index does)
        return namespace, name


def own_datasets(record: dict[str, Any]) -> Any:
    """``visible(hop)``: whether a hop of a tag path is on a dataset this task reads or writes (its DAG names
    it), by dataset identity. Anything else is counted, never named, in what the task shows."""
    own = {dataset_identity(d["namespace"], d["name"]) for d in record.get("datasets") or []
           if isinstance(d.get("namespace"), str) and isinstance(d.get("name"), str)}

    def visible(hop: dict[str, Any]) -> bool:
        ns, name = hop.get("namespace"), hop.get("name")
        return isinstance(ns, str) and isinstance(name, str) and dataset_identity(ns, name) in own

    return visible


def _redact_path(path: Any, visible: Any) -> tuple[Any, int]:
    if not isinstance(path, list) or not path:
        return path, 0
    return redact(path, [is_marker(h) or visible(h) for h in path])


def redact_items(items: list[dict[str, Any]], visible: Any) -> tuple[list[dict[str, Any]], int]:
    """Copies of ``items`` (tag entries, violations, stopped tags) with each ``path`` redacted (a run of hops
    ``visible`` refuses becomes one marker with its count: :func:`...lineage.redact.redact`)."""
    out, hidden = [], 0
    for item in items:
        path, n = _redact_path(item.get("path"), visible)
        hidden += n
        out.append({**item, "path": path})
    return out, hidden


def redact_result(result: dict[str, Any], visible: Any) -> tuple[dict[str, Any], int]:
    """:func:`..lineage.tags.propagate`'s result with every path redacted (:func:`redact_items`); the hops hidden."""
    columns: dict[Any, list[dict[str, Any]]] = {}
    hidden = 0
    for c, entries in result["columns"].items():
        columns[c], n = redact_items(entries, visible)
        hidden += n
    stopped, n = redact_items(result.get("stopped") or [], visible)
    return {**result, "columns": columns, "stopped": stopped}, hidden + n


def bounded_diff(d: dict[str, Any]) -> dict[str, Any]:
    """A copy of the diff with each list cut at :data:`VIEW_DIFF_ITEMS` (the cut keys named in ``cut``)."""
    out = dict(d)
    for key in diffs.KEYS[2:]:
        if len(out[key]) > VIEW_DIFF_ITEMS:
            out[key] = out[key][:VIEW_DIFF_ITEMS]
            out.setdefault("cut", []).append(key)
    return out


def fit(record: dict[str, Any], limit: int) -> dict[str, Any]:
    """``record`` within ``limit`` bytes with the guard's keys: :func:`run_record.cut` lets the guard's
    details go first (the diff keeps ``changed``, ``previous_run_id`` and a ``cut`` marker; tags are
    dropped; the XComs ``lineage_diff`` / ``lineage_policy`` keep everything), then trims edges."""
    return run_record.cut(record, limit)
