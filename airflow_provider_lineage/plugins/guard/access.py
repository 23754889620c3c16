"""The access rule on tag paths (pure Python, no Airflow): what a user cannot read contributes counts only.

A tag's path runs from the declared column to the column it reached, one hop per column edge, across
tasks and DAGs. A user may see a hop when the user may read a DAG whose lineage names the column (an edge
of one of its tasks leads into it or out of it), or when the hop's dataset belongs to the run the user is
looking at. Every run of hops the user may not see becomes one marker that says how many hops it hides
(:func:`redact`): the path keeps its shape, never a name the user could not read elsewhere.

Columns are ``(namespace, name, column)`` as the estate index keys them (:func:`.estate.identity`).
"""
from __future__ import annotations

from collections.abc import Collection, Iterable

# the path rule itself is pure and shared with the task's guard (operators/_lineage/guard.py): the lineage core's
from airflow_provider_lineage.lineage.redact import (
    HIDDEN_NAME,
    Column,
    hops_visible,
    is_marker,
    marker,
    redact,
)

__all__ = ["HIDDEN_NAME", "Column", "filter_problems", "hops_visible", "is_marker", "marker", "readable_source",
           "redact"]


def readable_source(source: str, allowed: Collection[str] | None) -> bool:
    """Whether a problem of the declaration source ``source`` (``setting``, ``file``, ``variable``) may be shown
    (``allowed`` ``None``: every source)."""
    return allowed is None or source in allowed


def filter_problems(problems: Iterable[tuple[str, str]], allowed: Collection[str] | None) -> tuple[list[str], int]:
    """``(messages the user may read, how many are hidden)``: a problem names the declaration's datasets, so
    only a user who may read its source (the Variable, the configuration) reads it; others get a count."""
    shown: list[str] = []
    hidden = 0
    for source, message in problems:
        if readable_source(source, allowed):
            shown.append(message)
        else:
            hidden += 1
    return shown, hidden
