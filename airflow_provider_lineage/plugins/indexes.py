"""Sieve index badges: the state of each index a run's ``SieveIndexOperator`` tasks maintained.

The state comes from the sensor's own check (:func:`airflow_provider_lineage.sieve.maintain.check`:
the table's file listing and the index manifest and checksums, no Spark), read when the view asks:

* ``fresh``: the index covers every file of the table (nothing to do);
* ``stale``: files were added, removed or rewritten since the index version (the counts say which);
* ``missing``: no index (or no readable manifest) at the path;
* ``corrupt``: an index file fails its checksum (every read is a full read until it is rebuilt);
* ``rebuild``: the index is readable but needs a rebuild (drift, error budget, strategy);
* ``error``: the check itself failed (the message says why).
"""
from __future__ import annotations

from typing import Any

from airflow_provider_lineage.lineage.naming import dataset_for_location
from airflow_provider_lineage.plugins.graph import dataset_id


def state_of(action: str, reason: str) -> str:
    """The badge state for a :class:`~airflow_provider_lineage.sieve.maintain.Need` (action, reason)."""
    if action in ("none", "compact"):
        return "fresh"
    if action == "sync":
        return "stale"
    if action == "build":
        return "missing"
    if "unusable" in reason or "checksum" in reason or "corrupt" in reason:
        return "corrupt"
    return "rebuild"


def badges(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One badge per (table, column) of the run's index results (the last result of a column wins)."""
    from airflow_provider_lineage.sieve.maintain import check

    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in results:  # keyed like the graph's datasets, so two spellings of one table are one badge
        ref = dataset_for_location(str(entry["table_root"]))
        latest[(dataset_id(ref.namespace, ref.name), str(entry["column"]))] = entry
    out = []
    for (dataset, column), entry in latest.items():
        table_root = str(entry["table_root"])
        badge: dict[str, Any] = {
            "dataset": dataset,
            "column": column,
            "index_path": entry.get("index_path"),
            "task_id": entry.get("task_id"),
            "run_version": entry.get("version"),
        }
        try:
            need = check(table_root, column, index_path=entry.get("index_path"))
            badge.update(state=state_of(need.action, need.reason), action=need.action, reason=need.reason,
                         version=need.version, files_added=need.files_added, files_removed=need.files_removed,
                         files_changed=need.files_changed)
        except Exception as exc:  # noqa: BLE001 - a badge never breaks the view
            badge.update(state="error", action=None, reason=f"{type(exc).__name__}: {exc}", version=None)
        out.append(badge)
    return out
