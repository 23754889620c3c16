"""One maintenance step for one index: decide (``auto``, :mod:`.decisions`) and run build / sync /
compact / rebuild, reported as a :class:`MaintainResult`.

Shared by the Spark application the Airflow operator submits (:mod:`.job`) and usable from any
Python code with a SparkSession (or ``spark=None`` for path tables: pyarrow on the driver). The
Airflow sensor uses :func:`.decisions.check` only (no Spark: a file listing plus the index manifest).

No Airflow imports here (the arrow points from the Airflow layer into this package).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .decisions import RESULT_VERSION, Need, Thresholds, check, decide, table_root, update_mode
from .errors import CommitConflict, IndexNotWritable, IndexUnavailable, SieveError
from .fs import StoreError, join
from .records import IndexStats, SyncReport
from .status import maintenance_status

# The index modules (numpy, pyarrow) are imported in the functions that run a step:
# the Airflow operator imports this module while a DAG file is parsed.

# Need, Thresholds, check and update_mode live in .decisions and stay importable from here.
__all__ = ["BUILD_OPTIONS", "MODES", "MaintainResult", "Need", "Thresholds", "check", "maintain", "maintain_safely",
           "update_mode"]

MODES = ("auto", "build", "sync", "compact", "rebuild")
#: Build settings a caller may pass (the core's keyword arguments; ``update_strategy`` is ``mode``).
BUILD_OPTIONS = ("error_bound", "max_segment_keys", "keep_versions", "gap_factor", "rows_per_partition", "engine",
                 "structure", "fpp", "freshness")


@dataclass
class MaintainResult:
    """What one maintenance step did to one index (JSON via :meth:`to_dict`, versioned)."""

    table: str
    column: str
    requested: str  # auto | build | sync | compact | rebuild
    action: str = "none"  # what ran: none | sync | compact | rebuild | build
    reason: str = ""
    status: str = "ok"  # ok | error
    error: str | None = None
    error_type: str | None = None
    index_path: str | None = None
    table_root: str | None = None
    previous_version: int | None = None
    version: int | None = None
    update_strategy: str | None = None
    key_type: str | None = None
    error_bound: int | None = None
    files_added: int = 0
    files_removed: int = 0
    files_changed: int = 0
    segments_covered: int = 0
    segments_rewritten: int = 0
    segments_rebuilt: int = 0
    segments_created: int = 0
    segments_dropped: int = 0
    deltas_written: int = 0
    deltas_folded: int = 0
    files: int = 0
    keys: int = 0
    segments: int = 0
    index_bytes: int = 0
    bytes_per_key: float = 0.0
    budget_used: int = 0
    budget_total: int = 0
    budget_used_fraction: float = 0.0
    deltas: int = 0
    attempts: int = 1
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)
    record_version: int = RESULT_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MaintainResult:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def summary(self) -> str:
        """One line for logs."""
        name = f"{self.table}.{self.column}"
        if self.status != "ok":
            return f"{name}: FAILED ({self.error_type}: {self.error})"
        if self.action == "none":
            return f"{name}: nothing to do ({self.reason}); v{self.version}"
        before = "no index" if self.previous_version is None else f"v{self.previous_version}"
        return (
            f"{name}: {self.action} ({self.reason}) {before} -> v{self.version}: "
            f"+{self.files_added}/-{self.files_removed}/~{self.files_changed} files, segments "
            f"{self.segments_covered} covered, {self.segments_rewritten} rewritten, {self.segments_rebuilt} "
            f"rebuilt, {self.segments_created} created; budget {self.budget_used_fraction:.1%} used; "
            f"{self.index_bytes} B "
            f"({self.bytes_per_key:.2f} B/key); {self.seconds:.1f} s"
        )


def _take_report(res: MaintainResult, rep: SyncReport) -> None:
    res.files_added, res.files_removed, res.files_changed = rep.files_added, rep.files_removed, rep.files_changed
    res.segments_covered, res.segments_rewritten = rep.segments_covered, rep.segments_rewritten
    res.segments_rebuilt = rep.segments_rebuilt
    res.segments_created, res.segments_dropped = rep.segments_created, rep.segments_dropped
    res.deltas_written, res.deltas_folded, res.attempts = rep.deltas_written, rep.deltas_folded, rep.attempts
    if rep.action == "build":  # sync found no usable index and built one
        res.action = "build"
        res.reason = f"{res.reason}; built anew ({rep.reason})" if rep.reason else res.reason
    elif rep.action == "none":
        res.action = "none"


def _take_stats(res: MaintainResult, stats: IndexStats) -> None:
    res.version, res.update_strategy, res.key_type = stats.version, stats.mode, stats.key_type
    res.error_bound, res.files, res.keys, res.segments = stats.error_bound, stats.files, stats.keys, stats.segments
    res.index_bytes, res.bytes_per_key, res.deltas = stats.index_bytes, round(stats.bytes_per_key, 4), stats.deltas
    res.budget_used, res.budget_total = stats.budget_used, stats.budget_total
    res.budget_used_fraction = round(stats.budget_used_fraction, 6)
    res.index_path = stats.index_path


def maintain(spark: Any, table: str, column: str, *, mode: str = "auto", index_path: str | None = None,
             update_strategy: str | None = None, thresholds: Thresholds | None = None,
             log: Callable[[str], None] | None = None, **options: Any) -> MaintainResult:
    """Run one maintenance step on the index of ``table.column`` and report it.

    :param spark: a SparkSession (builds aggregate on the cluster), or None for path tables
        (pyarrow on this machine: small tables).
    :param mode: ``auto`` (decide from cheap checks, see the module docstring), ``build``, ``sync``,
        ``compact`` or ``rebuild``.
    :param index_path: the index folder (default ``<table root>/_sieve/<column>``).
    :param update_strategy: ``copy_on_write`` or ``merge_on_read`` (a build setting; default: keep
        the existing index's, ``copy_on_write`` for a new one).
    :param thresholds: when ``auto`` compacts / rebuilds (see :class:`Thresholds`).
    :param options: other build settings (:data:`BUILD_OPTIONS`); they apply when an index is built
        or rebuilt. ``freshness="footer"`` builds indexes that record footer checksums (syncs then
        compare every file's footer; ``auto`` rebuilds an index without them).
    :raises SieveError: bad input (unknown table, column, type, unwritable folder, lost commit
        races); the message names the fix. The index is never left half-written.
    """
    from .build import build
    from .query import open_index
    from .sync import compact, rebuild, sync
    from .table import root_exists

    say = log or (lambda _msg: None)
    t0 = time.monotonic()
    if mode not in MODES:
        raise SieveError(f"mode={mode!r} is unknown: use one of {', '.join(MODES)}")
    unknown = sorted(set(options) - set(BUILD_OPTIONS))
    if unknown:
        raise SieveError(f"unknown index setting(s) {', '.join(unknown)}: use {', '.join(BUILD_OPTIONS)}, "
                         "update_strategy or index_path")
    build_opts = {k: v for k, v in options.items() if v is not None}
    if "freshness" in build_opts:
        from .query import check_freshness

        check_freshness(build_opts["freshness"])
    strategy = update_mode(update_strategy)
    if strategy:
        build_opts["mode"] = strategy
    thresholds = thresholds or Thresholds()
    res = MaintainResult(table=table, column=column, requested=mode, index_path=index_path)
    root = table_root(table, spark)
    res.table_root = root
    if not root_exists(root):
        raise SieveError(f"table {table} does not exist ({root} is not a directory): check the table "
                         "path or name")
    # Status checks by path (a catalog table's default index sits under its location as well).
    try:
        # freshness="footer": an index without footer checksums is rebuilt with them
        want_footers = "footer" if build_opts.get("freshness") == "footer" else None
        st = maintenance_status(root, column, index_path=index_path, freshness=want_footers)
    except StoreError:
        raise
    except OSError as exc:  # e.g. the index folder is a file, or cannot be listed
        where = index_path or join(root, "_sieve", column)
        raise IndexNotWritable(f"cannot use the Sieve index folder {where} ({exc.strerror or exc}): make it a "
                               "writable folder, or pass index_path= to a writable folder") from exc
    res.index_path = index_path or st.index_path
    res.previous_version = st.version
    res.details["status"] = {k: v for k, v in st.to_dict().items() if k != "details"}
    if mode == "auto":
        from .table import list_table_files

        n_files = None if st.present else len(list_table_files(root))
        action, reason = decide(st, thresholds, table_files=n_files, update_strategy=update_strategy)
    else:
        action, reason = mode, f"requested mode={mode}"
        if mode == "compact" and not st.present:
            raise IndexUnavailable(f"no usable index of {table}.{column} at {res.index_path} to compact "
                                   f"({st.reason}): build one first (mode='build' or 'auto')")
    res.action, res.reason = action, reason
    say(f"{table}.{column}: {action} ({reason})")
    path = res.index_path
    if action == "build":
        _take_stats(res, build(spark, table, column, index_path=path, **build_opts))
    elif action == "rebuild":
        _take_stats(res, rebuild(spark, table, column, index_path=path, **build_opts))
    elif action == "sync":
        _take_report(res, sync(spark, table, column, index_path=path, **build_opts))
    elif action == "compact":
        _take_report(res, compact(table, column, index_path=path, spark=spark))
    if action in ("build", "rebuild"):
        res.files_added = res.files
    if res.version is None or action in ("sync", "compact", "none"):
        try:
            _take_stats(res, open_index(root, column, index_path=path).stats())
        except IndexUnavailable as exc:
            if action != "none":
                raise
            res.reason = f"{res.reason} ({exc.reason})"
    res.seconds = round(time.monotonic() - t0, 3)
    return res


def maintain_safely(spark: Any, table: str, column: str, **kwargs: Any) -> MaintainResult:
    """:func:`maintain`, with a failure returned as a result (``status="error"``) instead of raised."""
    t0 = time.monotonic()
    try:
        return maintain(spark, table, column, **kwargs)
    except CommitConflict as exc:
        msg = (f"{exc} -- another task maintains this index right now; the index is intact (the other "
               "writer's version stands): retry this task, or do not run two maintainers of one index at once")
        return _failed(table, column, kwargs, msg, "CommitConflict", t0)
    except SieveError as exc:
        return _failed(table, column, kwargs, str(exc), type(exc).__name__, t0)
    except Exception as exc:  # noqa: BLE001 - Spark/IO failure: reported with its type, never half-committed
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        return _failed(table, column, kwargs, first, type(exc).__name__, t0)


def _failed(table: str, column: str, kwargs: dict[str, Any], msg: str, kind: str, t0: float) -> MaintainResult:
    return MaintainResult(table=table, column=column, requested=str(kwargs.get("mode", "auto")),
                          index_path=kwargs.get("index_path"), status="error", error=msg, error_type=kind,
                          seconds=round(time.monotonic() - t0, 3))
