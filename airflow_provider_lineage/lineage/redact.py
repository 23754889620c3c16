"""Hiding the hops of a tag path a reader may not see (pure Python): what a user cannot read contributes counts only.

A tag's path runs from the declared column to the column it reached, one hop per column edge, across tasks and
DAGs. Every run of hops the reader may not see becomes one marker that says how many hops it hides
(:func:`redact`): the path keeps its shape, never a name the reader could not read elsewhere. Who may see which
hop is the caller's rule (the task's guard: the datasets of its run; the UI: :mod:`...plugins.guard.access`).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Column = tuple[str, str, str | None]
#: what a hidden stretch of a path shows (``hidden``: how many hops it stands for)
HIDDEN_NAME = "(hidden)"


def marker(n: int) -> dict[str, Any]:
    """A stretch of ``n`` hops the user may not see."""
    return {"namespace": "", "name": HIDDEN_NAME, "column": f"{n} hidden", "hidden": n}


def is_marker(hop: Mapping[str, Any]) -> bool:
    """A marker already in a path: a shortened path's middle (:func:`.tags._short_path`) or a hidden stretch."""
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
