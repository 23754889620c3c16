"""An index's maintenance status: its health and the core's recommendation, from the file listing and
the index files only (no Spark, no data reads). The caller's decisions from it: :mod:`.decisions`.

Importing this module imports no numpy or pyarrow (the Airflow sensor and trigger import it while
a DAG file is parsed); the index modules are imported when a status is computed.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import IndexUnavailable
from .fs import storage_options as scoped_options
from .records import MaintenanceStatus

if TYPE_CHECKING:
    import numpy as np

    from .storage import IndexStore, Manifest, SegmentMeta

# Thresholds (module constants so an operator can document/override them).
COMPACT_DELTAS = 8  # merge-on-read: compact at this many delta files
COMPACT_DEAD_FILES = 16  # merge-on-read: compact when this many dead ids linger in segments
REBUILD_DRIFT = 0.5  # rebuild when this share of the indexed files changed
HASHED_KEYS_GROWTH = 2.0  # hashed: keys beyond this many times the fingerprints' design count -> rebuild
REBUILD_BUDGET = 0.5  # rebuild when this share of the total error budget is used
REBUILD_OVER_BUDGET = 0.25  # rebuild when this share of the segments is over budget (mor)


def maintenance_status(table: str, column: str, *, index_path: str | None = None,
                       storage_options: Mapping[str, Any] | None = None, full_verify: bool = True,
                       freshness: str | None = None) -> MaintenanceStatus:
    """Index health and a recommendation in {none, sync, compact, rebuild, build}.

    Pure Python: lists the table directory, reads the manifest and verifies the checksums of every
    index file, as a reader would (a corrupt index recommends ``rebuild``). ``full_verify=False``
    checks a hashed structure's header and last page only, as a sync does (a watcher that checks
    every minute then does not read the whole index each time). A catalog table name
    needs ``index_path`` (the manifest records the table's location). Table and index may be on an
    object store (:mod:`.fs`; ``storage_options``: that store's options, default its environment).
    Rewritten files are found by path, size and mtime, and on an index that records footer checksums
    (built with ``freshness="footer"``) by every file's footer checksum too; ``freshness="footer"``
    asks for that check, and recommends ``rebuild`` for an index without the checksums.
    """
    if freshness is not None:
        from .query import check_freshness

        check_freshness(freshness)
    with scoped_options(storage_options):
        return _status(table, column, index_path, full_verify, freshness)


def _status(table: str, column: str, index_path: str | None, full_verify: bool = True,
            freshness: str | None = None) -> MaintenanceStatus:
    from .model import over_budget
    from .query import diff_files, index_location, records_footers
    from .storage import IndexStore
    from .table import list_table_files

    path = index_location(table, column, index_path)
    store = IndexStore(path)
    st = MaintenanceStatus(table=table, column=column, index_path=path, present=False)
    try:
        m = store.load_manifest()
        metas = store.read_segment_list(m.segment_list)
    except IndexUnavailable as exc:
        st.recommendation, st.reason = "build", exc.reason
        return st
    st.present, st.version, st.mode = True, m.version, m.mode
    st.files_indexed, st.segments, st.structure = len(m.files), len(metas), m.structure
    try:
        deltas = store.verify(
            m, hashed_pages=full_verify
        )  # the checksums a reader verifies: a corrupt index means full reads forever
    except IndexUnavailable as exc:
        st.recommendation = "rebuild"
        st.reason = (
            f"the index is unusable, every read is a full read ({exc.reason}); "
            "rebuild (or maintain, which follows this recommendation) repairs it"
        )
        return st
    footers = records_footers(m)
    if freshness == "footer" and not footers:
        st.recommendation = "rebuild"
        st.reason = ("freshness='footer' asks for footer checksums and this index records none: a rebuild with "
                     "freshness='footer' records them (until then, use freshness='stat')")
        return st
    added, removed, changed = diff_files(m, list_table_files(m.table), "footer" if footers else "stat")
    budget_total = sum(s.budget for s in metas)
    used = sum(min(s.used, s.budget) for s in metas)
    st.present, st.version, st.mode = True, m.version, m.mode
    st.files_indexed = len(m.files)
    st.files_added, st.files_removed, st.files_changed = len(added), len(removed), len(changed)
    st.delta_count = len(m.deltas) + max(0, len(m.hashed) - 1)  # hashed: the structures syncs added
    st.delta_bytes = sum(d.bytes for d in m.deltas) + sum(h.bytes for h in m.hashed[1:])
    st.delta_records = sum(d.records for d in m.deltas) + sum(h.pairs for h in m.hashed[1:])
    # fingerprints an absent key is checked against: with a retrieval structure, not the pages it covers
    # (read only for the keys it sends there); it spends its own share of fpp
    covered = m.fuse.pages if m.fuse is not None else None
    hashed_keys = sum(h.keys for h in m.hashed if h.name != covered)
    design_keys = (m.fpp - (m.fuse.fpp if m.fuse else 0.0)) * 2.0 ** m.fp_bits if m.structure == "hashed" else 0.0
    st.dead_files = len(m.dead_files)
    st.segments = len(metas)
    st.segments_over_budget = sum(1 for s in metas if over_budget(s.used, s.budget))
    st.budget_used_fraction = used / budget_total if budget_total else 0.0
    n_changed = len(added) + len(removed) + len(changed)
    st.drift = n_changed / max(1, len(m.files))
    st.details = {"thresholds": {"compact_deltas": COMPACT_DELTAS, "compact_dead_files": COMPACT_DEAD_FILES,
                                 "rebuild_drift": REBUILD_DRIFT, "rebuild_budget": REBUILD_BUDGET}}
    if st.drift >= REBUILD_DRIFT and len(m.files) > 0:
        st.recommendation = "rebuild"
        st.reason = drift_reason(len(m.files), len(added), len(removed), len(changed))
    elif st.budget_used_fraction >= REBUILD_BUDGET or (
            metas and st.segments_over_budget / len(metas) >= REBUILD_OVER_BUDGET):
        st.recommendation = "rebuild"
        st.reason = (f"error budget {st.budget_used_fraction:.0%} used, {st.segments_over_budget} of "
                     f"{len(metas)} segments over budget")
    elif m.structure == "hashed" and hashed_keys > HASHED_KEYS_GROWTH * design_keys:
        st.recommendation = "rebuild"
        st.reason = (
            f"{hashed_keys} keys in fingerprints of {m.fp_bits} bits sized for {design_keys:.0f}: absent keys "
            f"read a file {hashed_keys / 2.0**m.fp_bits + (m.fuse.fpp if m.fuse else 0.0):.2%} of the time "
            f"(target {m.fpp:.2%}); a rebuild "
            "sizes the fingerprints for the keys now"
        )
    elif outside := _outside_prefix(m, metas, store, deltas):
        st.recommendation = "rebuild"
        st.reason = (f"{outside} file(s) hold {m.column} values outside the learned prefix "
                     f"{m.key_type.prefix_bytes!r}: they share one key, so lookups for them read every such file; "
                     "a rebuild learns the prefix of the values now")
    elif n_changed:
        st.recommendation = "sync"
        st.reason = f"{len(added)} added, {len(removed)} removed, {len(changed)} rewritten files since v{m.version}"
    elif (m.mode == "mor" or m.structure == "hashed") and (
        st.delta_count >= COMPACT_DELTAS or st.dead_files >= COMPACT_DEAD_FILES or st.segments_over_budget
    ):
        st.recommendation = "compact"
        st.reason = (f"{st.delta_count} deltas, {st.dead_files} dead file ids, "
                     f"{st.segments_over_budget} segments over budget")
    else:
        st.recommendation, st.reason = "none", "index is current"
    return st


def drift_reason(indexed: int, added: int, removed: int, changed: int) -> str:
    """Why a drift rebuild, in true arithmetic: drift = (added + removed + rewritten) / indexed files.

    A table whose every indexed file was removed or rewritten (an overwrite) is called what it is.
    """
    drift = (added + removed + changed) / max(1, indexed)
    files = f"{indexed} indexed file{'s' if indexed != 1 else ''}"
    if removed + changed >= indexed:
        return (f"table rewritten: all {files} removed or rewritten, {added} added since the index version "
                f"(a rebuild reads no more than a sync would)")
    return (f"{added} added + {removed} removed + {changed} rewritten files against {files} "
            f"(drift {drift:.2f} >= {REBUILD_DRIFT})")


def _outside_prefix(m: Manifest, metas: list[SegmentMeta], store: IndexStore,
                    deltas: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> int:
    """Live files with string/binary values outside the key type's learned prefix (keys LOW_KEY or
    HIGH_KEY, which every such value shares): values a sync added after the build learned it."""
    from .keys import HIGH_KEY, LOW_KEY

    kt = m.key_type
    if not kt.shares_keys or not kt.prefix_bytes:
        return 0
    files: set[int] = set()
    for meta in (metas[0], metas[-1]) if metas else ():
        if meta.s_min <= LOW_KEY <= meta.s_max or meta.s_min <= HIGH_KEY <= meta.s_max:
            seg = store.open_segment(meta.file)
            for k in (LOW_KEY, HIGH_KEY):
                files.update(seg.fids_for_range(k, k).tolist())
            files.update(meta.full.tolist())
    for keys, fids in deltas.values():  # decoded by verify
        files.update(fids[(keys == LOW_KEY) | (keys == HIGH_KEY)].tolist())
    return len(files & set(m.files))
