"""The access rule on tag paths (pure Python, no Airflow): what a user cannot read contributes counts only.

A tag's path runs from the declared column to the column it reached, one hop per column edge, across
tasks and DAGs. A user may see a hop when the user may read a DAG whose lineage names the column (an edge
of one of its tasks leads into it or out of it), or when the hop's dataset belongs to the run the user is
looking at. Every run of hops the user may not see becomes one marker that says how many hops it hides
(:func:`redact`): the path keeps its shape, never a name the user could not read elsewhere.

Columns are ``(namespace, name, column)`` as the estate index keys them (:func:`.estate.identity`).
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

Column = tuple[str, str, str | None]
#: what a hidden stretch of a path shows (``hidden``: how many hops it stands for)
HIDDEN_NAME = "(hidden)"


def marker(n: int) -> dict[str, Any]:
    """A stretch of ``n`` hops the user may not see."""
    return {"namespace": "", "name": HIDDEN_NAME, "column": f"{n} hidden", "hidden": n}


def is_marker(hop: Mapping[str, Any]) -> bool:
    """A marker already in a path: a shortened path's middle (:func:`..lineage.tags._short_path`) or a
    hidden stretch."""
    return not hop.get("namespace")


def hops_visible(path: list[Mapping[str, Any]], readable: Callable[[Column], bool],
                 key: Callable[[Mapping[str, Any]], Column]) -> list[bool]:
    """Which hops of ``path`` the user may see (``readable(column)``); markers stay."""
    return [is_marker(h) or readable(key(h)) for h in path]


def redact(path: list[Mapping[str, Any]], visible: list[bool]) -> tuple[list[dict[str, Any]], int]:
    """``(path with every run of hidden hops replaced by one marker, hops hidden)``."""
    out: list[dict[str, Any]] = []
    hidden = run = 0
    for hop, ok in zip(path, visible, strict=True):
        if ok:
            if run:
                out.append(marker(run))
                run = 0
            out.append(dict(hop))
        else:
            run += 1
            hidden += 1
    if run:
        out.append(marker(run))
    return out, hidden


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
