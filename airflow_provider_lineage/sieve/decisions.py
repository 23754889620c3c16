"""What an index needs: maintenance decisions from its status and the caller's thresholds (no Spark).

Decisions (``mode="auto"`` of :func:`.maintain.maintain`, and the sensor's :func:`check`), from
:func:`~.status.maintenance_status` plus two thresholds the caller may lower (they default to the
core's own, so by default the core decides alone):

* no index (missing, or its manifest unreadable)            -> ``build`` (nothing if the table is empty)
* index corrupt, most files changed, error budget spent     -> ``rebuild``
* files added / removed / rewritten since the index version -> ``sync``
* merge-on-read deltas or dead file ids piling up           -> ``compact``
* an ``update_strategy`` other than the index's             -> ``rebuild`` (the strategy is a build setting)
* otherwise                                                 -> nothing

No Airflow imports here (the arrow points from the Airflow layer into this package). The index modules
(numpy, pyarrow) are imported when a check runs: the Airflow sensor and trigger import this module while a
DAG file is parsed.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from .errors import SieveError
from .fs import StoreError, is_catalog_name
from .fs import storage_options as scoped_options
from .records import MaintenanceStatus
from .status import COMPACT_DELTAS, REBUILD_BUDGET, maintenance_status

RESULT_VERSION = 1
ACTIONS = ("none", "sync", "compact", "rebuild", "build")
_STRATEGIES = {"cow": "cow", "copy_on_write": "cow", "copy-on-write": "cow",
               "mor": "mor", "merge_on_read": "mor", "merge-on-read": "mor"}


def update_mode(strategy: str | None) -> str | None:
    """``copy_on_write``/``cow`` -> ``cow``, ``merge_on_read``/``mor`` -> ``mor`` (None stays None)."""
    if strategy is None:
        return None
    try:
        return _STRATEGIES[str(strategy).strip().lower()]
    except KeyError:
        raise SieveError(f"update_strategy={strategy!r} is unknown: use 'copy_on_write' (cow) or "
                         "'merge_on_read' (mor)") from None


@dataclass
class Thresholds:
    """When an index needs work beyond the core's defaults (lower values make it act sooner).

    :param max_deltas: merge-on-read: compact at this many delta files.
    :param max_budget_fraction: rebuild when this share of the total error budget is used.
    """

    max_deltas: int = COMPACT_DELTAS
    max_budget_fraction: float = REBUILD_BUDGET

    def __post_init__(self) -> None:
        if int(self.max_deltas) < 1:
            raise SieveError(f"max_deltas={self.max_deltas}: use 1 or more (default {COMPACT_DELTAS})")
        if not 0 < float(self.max_budget_fraction) <= 1:
            raise SieveError(f"max_budget_fraction={self.max_budget_fraction}: use a share in (0, 1] "
                             f"(default {REBUILD_BUDGET})")
        self.max_deltas, self.max_budget_fraction = int(self.max_deltas), float(self.max_budget_fraction)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Need:
    """What one index needs (the sensor's answer per index; also a valid operator ``indexes`` entry)."""

    table: str
    column: str
    index_path: str | None
    action: str  # one of ACTIONS
    reason: str
    version: int | None = None
    files_added: int = 0
    files_removed: int = 0
    files_changed: int = 0
    delta_count: int = 0
    budget_used_fraction: float = 0.0
    record_version: int = RESULT_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def table_root(table: str, spark: Any = None) -> str:
    """Root of a path/URI table (no Spark) or a catalog table (needs ``spark``): a local path or a URI."""
    from .table import resolve_table, table_path

    if not is_catalog_name(table):
        return table_path(table)
    return resolve_table(table, spark).root


def decide(st: MaintenanceStatus, thresholds: Thresholds, *, table_files: int | None = None,
           update_strategy: str | None = None) -> tuple[str, str]:
    """(action, reason) for one index from its maintenance status (no I/O)."""
    wanted = update_mode(update_strategy)
    if not st.present:
        if table_files == 0:
            return "none", "the table has no Parquet files yet (an empty table needs no index)"
        return "build", st.reason or "no index"
    if st.recommendation in ("rebuild", "build"):
        return "rebuild", st.reason
    if wanted and st.mode and wanted != st.mode:
        return "rebuild", f"update strategy {st.mode} -> {wanted} (a build setting)"
    if st.budget_used_fraction >= thresholds.max_budget_fraction:
        return "rebuild", (f"error budget {st.budget_used_fraction:.0%} used "
                           f"(threshold {thresholds.max_budget_fraction:.0%})")
    if st.recommendation == "sync":
        return "sync", st.reason
    if (st.mode == "mor" or st.structure == "hashed") and st.delta_count >= thresholds.max_deltas:
        what = "hashed-key structures added by syncs" if st.structure == "hashed" else "merge-on-read deltas"
        return "compact", f"{st.delta_count} {what} (threshold {thresholds.max_deltas})"
    if st.recommendation == "compact":
        return "compact", st.reason
    return "none", st.reason or "index is current"


def check(table: str, column: str, *, index_path: str | None = None, thresholds: Thresholds | None = None,
          update_strategy: str | None = None, storage_options: Mapping[str, Any] | None = None,
          full_verify: bool = True) -> Need:
    """What one index needs, from the table listing and the index files only (no Spark).

    A missing table directory needs nothing yet (the reason says so); a catalog table name needs
    ``index_path`` (the manifest records the table's location). Tables and indexes may live on an
    object store (:mod:`.fs`); ``storage_options`` are that store's options (default: its usual
    environment). A store that cannot be reached raises :class:`.fs.StoreError` (names the fix).
    ``full_verify``: see :func:`.status.maintenance_status`.
    """
    with scoped_options(storage_options):
        return _check(table, column, index_path, thresholds or Thresholds(), update_strategy, full_verify)


def _check(table: str, column: str, index_path: str | None, thresholds: Thresholds,
           update_strategy: str | None, full_verify: bool = True) -> Need:
    from .table import root_exists, table_path

    if not is_catalog_name(table) and not root_exists(table_path(table)):
        return Need(table, column, index_path, "none",
                    f"table path {table_path(table)} does not exist (yet): nothing to index")
    try:
        st = maintenance_status(table, column, index_path=index_path, full_verify=full_verify)
    except StoreError:
        raise
    except OSError as exc:  # an unreadable index folder: rebuilding it names the fix (not writable)
        return Need(table, column, index_path, "rebuild", f"cannot read the index ({exc})")
    n_files = None
    if not st.present and not is_catalog_name(table):
        from .table import list_table_files

        n_files = len(list_table_files(table))
    action, reason = decide(st, thresholds, table_files=n_files, update_strategy=update_strategy)
    return Need(table, column, index_path if index_path else st.index_path, action, reason, st.version,
                st.files_added, st.files_removed, st.files_changed, st.delta_count, st.budget_used_fraction)
