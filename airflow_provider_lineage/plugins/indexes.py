"""Sieve index badges: the state of each index a run's ``SieveIndexOperator`` tasks maintained.

The api-server touches no path a task chose. A task's ``table``/``index_path`` are templated, so
they are whatever the DAG's author (or a run's conf) made them: reading them from the api-server
would tell any reader whether a path exists there, show error text about it, list object stores with
the api-server's credentials and walk whole trees per tab open. So a badge says:

* by default, **what the index task recorded** (its XCom ``return_value``: the ``MaintainResult`` of
  each index): ``fresh`` when the step succeeded (the index covered the table when the task ended,
  ``checked`` = when it recorded it, ``version`` the index version), ``error`` when it failed (the
  exception's type; the task's log has the message). ``source: "recorded"``.
* a **live check** (:func:`airflow_provider_lineage.sieve.decisions.check`: the table's file listing and
  the index manifest and checksums, no Spark) only for a local table and index that lie under a root
  of ``[column_lineage] sieve_badge_roots`` (comma-separated local folders; default none): ``fresh``,
  ``stale`` (files added, removed or rewritten since the index version), ``missing``, ``corrupt``,
  ``rebuild``; ``source: "checked"``. Bounded: a table of over ``sieve_badge_max_files`` (default
  10,000) entries is not walked, each check runs at most ``sieve_badge_timeout`` seconds (default 5)
  on a small shared pool (2 threads, one check per path at a time, a result kept 30 s), and a check
  that fails or times out falls back to the recorded state with a fixed sentence, never error text.
"""
from __future__ import annotations

import os
import posixpath
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import UTC, datetime
from typing import Any

from airflow_provider_lineage import conf
from airflow_provider_lineage.lineage.naming import dataset_for_location
from airflow_provider_lineage.plugins.graph import dataset_id

#: defaults of ``[column_lineage] sieve_badge_max_files`` and ``sieve_badge_timeout``
MAX_FILES = 10_000
TIMEOUT_S = 5.0
#: seconds a live check's answer is reused for the same (table, column, index path)
CACHE_S = 30.0
_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()
_checks: dict[tuple[str, str, str | None], tuple[float, Future]] = {}


def state_of(action: str, reason: str) -> str:
    """The badge state for a :class:`~airflow_provider_lineage.sieve.decisions.Need` (action, reason)."""
    if action in ("none", "compact"):
        return "fresh"
    if action == "sync":
        return "stale"
    if action == "build":
        return "missing"
    if "unusable" in reason or "checksum" in reason or "corrupt" in reason:
        return "corrupt"
    return "rebuild"


def roots() -> list[str]:
    """The configured roots (``[column_lineage] sieve_badge_roots``): absolute, normalised local folders."""
    raw = conf.sieve_badge_roots()
    out = []
    for part in raw.replace("\n", ",").split(","):
        part = part.strip()
        part = part.removeprefix("file://")
        if part and os.path.isabs(part):
            out.append(posixpath.normpath(part))
    return out


def _limits() -> tuple[int, float]:
    try:
        files = max(1, int(conf.sieve_badge_max_files(MAX_FILES) or MAX_FILES))
    except ValueError:
        files = MAX_FILES
    try:
        seconds = max(0.1, float(conf.sieve_badge_timeout(TIMEOUT_S) or TIMEOUT_S))
    except ValueError:
        seconds = TIMEOUT_S
    return files, seconds


def under_roots(path: str | None, allowed: list[str]) -> str | None:
    """``path`` as a local folder under one of ``allowed`` (lexically first, with no ``..`` left, then with its
    symlinks resolved), else ``None``. Only a path that passes the lexical test is ever looked at."""
    if not path or not allowed:
        return None
    text = str(path)
    if text.startswith("file://"):
        text = text[len("file://"):]
    elif text.startswith("file:"):
        text = text[len("file:"):]
    if "\x00" in text or not text.startswith("/") or "://" in text:
        return None
    norm = posixpath.normpath(text)
    if ".." in norm.split("/"):
        return None

    def inside(p: str) -> bool:
        return any(p == r or p.startswith(r.rstrip("/") + "/") for r in allowed)

    if not inside(norm):
        return None
    real = os.path.realpath(norm)  # a symlink under a root that points out of it is out
    return norm if inside(real) and inside(posixpath.normpath(real)) else None


def _count_over(root: str, limit: int) -> bool:
    """Whether the tree under ``root`` holds more than ``limit`` entries (stops counting at ``limit + 1``)."""
    seen = 0
    stack = [root]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    seen += 1
                    if seen > limit:
                        return True
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return False


def _live(table: str, column: str, index_path: str | None, max_files: int) -> dict[str, Any]:
    from airflow_provider_lineage.sieve.decisions import check

    if _count_over(table, max_files):
        return {"skip": f"the table holds over {max_files:,} files: not checked from the api-server "
                        "(the maintenance sensor checks it)"}
    need = check(table, column, index_path=index_path)
    return {
        "checked": datetime.now(UTC).isoformat(timespec="seconds"),
        "state": state_of(need.action, need.reason),
        "action": need.action,
        "reason": need.reason,
        "version": need.version,
        "files_added": need.files_added,
        "files_removed": need.files_removed,
        "files_changed": need.files_changed,
    }


def _submit(key: tuple[str, str, str | None], max_files: int) -> Future:
    global _pool
    now = time.monotonic()
    with _lock:
        for k in [k for k, (t, f) in _checks.items() if f.done() and now - t > CACHE_S]:
            del _checks[k]
        found = _checks.get(key)
        if found is not None:  # a check in flight or recent: reused, never a second walk of the same path
            return found[1]
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="sieve-badge")
        fut = _pool.submit(_live, key[0], key[1], key[2], max_files)
        _checks[key] = (now, fut)
        return fut


def recorded(entry: dict[str, Any]) -> dict[str, Any]:
    """The badge fields from what the index task recorded (no path read)."""
    when = entry.get("recorded_at")
    if str(entry.get("status") or "ok") != "ok":
        kind = str(entry.get("error_type") or "an error")[:100]
        return {"state": "error", "action": entry.get("action"), "version": entry.get("version"),
                "reason": f"the index task's step failed ({kind}): its log says why", "source": "recorded",
                "checked": when}
    return {"state": "fresh", "action": entry.get("action"), "version": entry.get("version"),
            "reason": "as the index task left it" + (f" at {when}" if when else "")
                      + ": not checked since (the api-server reads no path a task chose unless it is under "
                        "[column_lineage] sieve_badge_roots)",
            "source": "recorded", "checked": when,
            "files_added": int(entry.get("files_added") or 0), "files_removed": int(entry.get("files_removed") or 0),
            "files_changed": int(entry.get("files_changed") or 0)}


def badges(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One badge per (table, column) of the run's index results (the last result of a column wins)."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in results:  # keyed like the graph's datasets, so two spellings of one table are one badge
        ref = dataset_for_location(str(entry["table_root"]))
        latest[(dataset_id(ref.namespace, ref.name), str(entry["column"]))] = entry
    allowed = roots()
    max_files, seconds = _limits()
    pending = []
    out = []
    for (dataset, column), entry in latest.items():
        badge: dict[str, Any] = {
            "dataset": dataset,
            "column": column,
            "index_path": entry.get("index_path"),
            "task_id": entry.get("task_id"),
            "run_version": entry.get("version"),
            **recorded(entry),
        }
        table = under_roots(str(entry["table_root"]), allowed)
        index_path = entry.get("index_path")
        index_ok = index_path is None or under_roots(str(index_path), allowed) is not None
        if table is not None and index_ok:
            idx = under_roots(str(index_path), allowed) if index_path else None
            pending.append((badge, _submit((table, column, idx), max_files)))
        out.append(badge)
    deadline = time.monotonic() + seconds
    for badge, fut in pending:
        try:
            live = fut.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            badge["reason"] = (f"not checked: the check took over {seconds:g} s; " + badge["reason"])
            continue
        except Exception:  # noqa: BLE001 - a badge never breaks the view, and shows no error text
            badge["reason"] = (
                "not checked: the check failed (the maintenance sensor's log says why); " + badge["reason"]
            )
            continue
        if "skip" in live:
            badge["reason"] = live["skip"] + "; " + badge["reason"]
            continue
        badge.update(live, source="checked")
    return out
