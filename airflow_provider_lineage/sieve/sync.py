"""Keeping an index in step with its table: sync (incremental), compact (fold deltas), rebuild.

How updates work (locations are files; Parquet files are immutable, a rewrite is a new version):

* **Diff.** The table's listing is compared with the manifest's file dictionary by path, size and
  mtime: new paths are *added*, missing paths *removed*, same path with another size/mtime is
  *changed* (= removed + added under a fresh file id).
* **Removed files are never read.** Every segment's location set is kept in the segment list, so
  the segments holding a removed file id are known; the id is dropped from every block of those
  segments (its counter goes to 0 everywhere: all its (k, file) records leave). This cannot add a
  false positive. Merge-on-read only drops the id from the live file dictionary (queries filter it
  out) and records it in ``dead_files`` for ``compact`` to purge.
* **Added files are read with pyarrow** (one column, unique keys). A key inside a segment lands in
  its block; a new (block, file) pair costs the segment ``b_size - 1`` extra false positives
  (``s.e += b_size - 1``) -- with immutable files every added pair is new. When ``s.e >= s.E``
  (``E = e * b_count``) the segment is rebuilt from data: the keys in ``[s_min, s_max]`` of the
  files in its (updated) location set are re-read and re-segmented. Keys outside every segment
  form new segments inside their gap (never lost).
* **Full files are not written into segments.** A new file that holds every key of a segment's
  range (dates or codes every load covers) is recorded in the segment list as one of the segment's
  *full* files, and the segment is not read or rewritten: no false positive is added. A removed
  full file leaves the list the same way. When the segment is rewritten for another reason, its
  full files go into its blocks first.
* **Copy-on-write** rewrites the touched segments now. **Merge-on-read** writes one delta file of
  sorted (key, file id) records per sync (searched by every query) and charges the budgets in the
  segment list; ``compact`` folds deltas into segments, purges dead ids and rebuilds segments over
  budget. Neither needs Spark.
* Commits are optimistic: a lost race retries the whole update on the fresh version (storage.commit_attempts:
  5 attempts, random back-off).

The segments' part of an update (copy-on-write rewrites, merge-on-read budgets): :mod:`.segment_update`;
a hashed index's: :mod:`.hashed_build`.
"""
from __future__ import annotations

import time
import warnings
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import hashed_build
from .build import build, require_root
from .errors import IndexUnavailable
from .files import reading_as, spark_read_conf
from .hashed import MAX_STRUCTURES
from .keys import as_key_array
from .model import over_budget
from .query import check_freshness, diff_files, index_location, records_footers
from .records import IndexStats, SyncReport
from .segment_update import KeyCache, apply_to_segments, project_budgets
from .storage import ChangedFiles, IndexStore, Manifest, SegmentMeta, commit_attempts
from .table import FileEntry, TableRef, list_table_files, read_file_keys, resolve_table


def _new_manifest(base: Manifest, **changes: Any) -> Manifest:
    fields = dict(vars(base))
    fields.update(changes)
    return Manifest(**fields)


def _changed_files(base: Manifest, added: list[FileEntry], gone: list[int]) -> tuple[ChangedFiles, list[int], int]:
    """The new version's files (the added ones under the next free ids), those ids, the next free id."""
    new_ids = list(range(base.next_file_id, base.next_file_id + len(added)))
    return ChangedFiles(base.files, gone, dict(zip(new_ids, added))), new_ids, base.next_file_id + len(added)


def _update_hashed(store: IndexStore, base: Manifest, added: list[FileEntry], gone: list[int],
                   report: SyncReport) -> Manifest:
    """A hashed index: the added files get a small structure of their own (same fingerprint bits);
    removed files leave the file table, so no answer names them (compact drops their pairs)."""
    files, new_ids, next_id = _changed_files(base, added, gone)
    nulls = {f for f in base.null_files if f in files}
    structures = list(base.hashed)
    if new_ids:
        ref, new_nulls, pairs = hashed_build.add_files(store, base, files, new_ids)
        nulls |= new_nulls
        report.keys_read = pairs
        if ref is not None:
            structures.append(ref)
            report.deltas_written = 1
    new = _new_manifest(base, files=files, next_file_id=next_id, null_files=sorted(nulls), hashed=structures,
                        dead_files=sorted(set(base.dead_files) | set(gone)))
    if len(structures) > MAX_STRUCTURES:  # bounded however often it syncs without a compact
        new = _new_manifest(new, hashed=[hashed_build.merge(store, new, files)], dead_files=[])
    return new


def _update(store: IndexStore, base: Manifest, added: list[FileEntry], gone: list[int],
            report: SyncReport) -> Manifest:
    if base.structure == "hashed":
        return _update_hashed(store, base, added, gone, report)
    files, new_ids, next_id = _changed_files(base, added, gone)
    cache = KeyCache(base, files)
    nulls = {f for f in base.null_files if f in files}
    adds: list[tuple[int, np.ndarray]] = []
    for fid in new_ids:
        keys, n_null, rows = read_file_keys(files[fid].path, base.column, base.key_type)
        files[fid].num_rows = rows
        cache.cache[fid] = keys
        cache.counts.keys_read += len(keys)
        if n_null:
            nulls.add(fid)
        adds.append((fid, keys))
    dead = set(gone) | set(base.dead_files)
    metas: Sequence[SegmentMeta]
    if base.mode == "cow":
        metas = apply_to_segments(store, base, store.segment_list(base.segment_list), adds, dead, True, cache)
        deltas, dead_files = list(base.deltas), []
        if base.deltas:  # switched from mor: fold the old deltas as well
            metas = apply_to_segments(store, base, metas, _delta_adds(store, base, files), set(), False, cache)
            deltas = []
    else:
        metas = project_budgets(store.read_segment_list(base.segment_list), adds)
        deltas, dead_files = list(base.deltas), sorted(dead)
        if adds:
            obj = any(k.dtype == object for _, k in adds)
            keys = np.concatenate([k.astype(object) if obj else k for _, k in adds])
            fids = np.concatenate([np.full(len(k), fid, np.uint32) for fid, k in adds])
            if len(keys):
                deltas.append(store.write_delta(keys, fids))
                report.deltas_written = 1
    c = cache.counts
    report.segments_covered, report.segments_rewritten, report.segments_rebuilt = c.covered, c.rewritten, c.rebuilt
    report.segments_created, report.segments_dropped, report.keys_read = c.created, c.dropped, c.keys_read
    return _new_manifest(base, files=files, next_file_id=next_id, null_files=sorted(nulls),
                         segment_list=store.write_segment_list(store.repack(metas)), deltas=deltas,
                         dead_files=dead_files)


def _delta_adds(store: IndexStore, m: Manifest, live: dict[int, FileEntry]) -> list[tuple[int, np.ndarray]]:
    per_file: dict[int, list[np.ndarray]] = defaultdict(list)
    for ref in m.deltas:
        keys, fids = store.read_delta(ref)
        for fid in np.unique(fids).tolist():
            if fid in live:
                per_file[fid].append(keys[fids == fid])
    out = []
    for fid, parts in sorted(per_file.items()):
        allk = np.concatenate(parts)
        uniq = np.unique(allk) if allk.dtype != object else as_key_array(sorted(set(allk.tolist())))
        out.append((fid, uniq))
    return out


def _params(m: Manifest) -> dict[str, Any]:
    """Build parameters of an existing index (kept by rebuilds and repairs)."""
    params = {"error_bound": m.error_bound, "max_segment_keys": m.max_segment_keys, "mode": m.mode,
              "keep_versions": m.keep_versions, "gap_factor": m.gap_factor, "structure": m.structure}
    if records_footers(m):
        params["freshness"] = "footer"
    if m.structure == "hashed":
        params["fpp"] = m.fpp
        # the retrieval structure as the build had it: when it pays (hashed), forced (fuse) or never (pages)
        params["structure"] = {"always": "fuse", "never": "pages"}.get(m.build_stats.get("fuse_mode", ""), "hashed")
    return params


def _report(m: Manifest, action: str) -> SyncReport:
    return SyncReport(table=m.table.name, column=m.column, mode=m.mode, version=m.version, action=action)


def sync(spark: Any, table: str, column: str, *, index_path: str | None = None, freshness: str | None = None,
         **build_options: Any) -> SyncReport:
    """Bring the index in step with the table's files; builds one when there is none.

    ``freshness``: how rewritten files are found. An index that records footer checksums (built with
    ``freshness="footer"``) is always synced by them: every file's footer is read and compared, so
    a file rewritten with the same size and its mtime set back is re-read; new files' checksums are
    recorded. ``"footer"`` on an index without them rebuilds it with them (``action="build"``).
    ``"stat"`` (or None, the default, on an index without checksums) compares paths, sizes and
    mtimes. ``"names"``/``"none"`` are for lookups only: a sync always checks at least ``"stat"``.

    With a SparkSession, the files read here follow its read settings as a build's do
    (:class:`.files.ReadConf`: ``spark.sql.caseSensitive``, the rebase modes, the time zone).

    Only added/rewritten files are read (pyarrow); removed files are dropped without reading.
    The index is checked first, and a corrupt, truncated or old-format one is rebuilt (with a warning,
    keeping its parameters): every segment file's checksum; of a hashed structure its header and
    last page (a damaged page in the middle is caught by the readers, which then read every file, and
    by :func:`maintenance_status`, whose ``rebuild`` :func:`maintain` carries out), so that a sync's
    cost follows the files added, not the size of the index. ``build_options`` apply only to such
    builds. A folder that cannot be written raises IndexNotWritable before any work.
    """
    if freshness is not None:
        check_freshness(freshness)
    t0 = time.monotonic()
    ref = resolve_table(table, spark)
    require_root(ref)
    store = IndexStore(index_location(ref, column, index_path))
    store.check_writable()
    if freshness == "footer":
        build_options["freshness"] = "footer"
    with reading_as(spark_read_conf(spark)):  # files read as the session reads them (as a build's)
        return _sync(spark, table, column, ref, store, freshness, build_options, t0)


def _sync(spark: Any, table: str, column: str, ref: TableRef, store: IndexStore, freshness: str | None,
          build_options: dict[str, Any], t0: float) -> SyncReport:
    for attempt in commit_attempts(f"sync of {table}.{column}", store.path):
        with attempt:
            params: dict[str, Any] = {}
            try:
                base = store.load_manifest()
                params = _params(base)
                store.verify(base, hashed_pages=False)  # a corrupt segment or delta: every read a full read
                if freshness == "footer" and not records_footers(base):
                    raise IndexUnavailable("it records no footer checksums and freshness='footer' asks for them")
            except IndexUnavailable as exc:
                if store.latest_version() is not None and "records no footer checksums" not in exc.reason:
                    warnings.warn(f"Sieve index at {store.path} is unusable ({exc.reason}); rebuilding it",
                                  stacklevel=2)
                params.update(build_options)
                stats = build(spark, table, column, index_path=store.path, **params)
                return SyncReport(table=ref.name, column=column, mode=stats.mode, version=stats.version,
                                  action="build", files_added=stats.files, reason=exc.reason,
                                  seconds=round(time.monotonic() - t0, 3))
            listing = list_table_files(base.table)
            # an index with footer checksums: every file's footer compared, new files' recorded (before
            # their keys are read: a rewrite after that is a changed checksum at the next check)
            added, removed, changed = diff_files(base, listing, "footer" if records_footers(base) else "stat")
            changed_entries = {base.files[fid].path for fid in changed}
            report = _report(base, "sync")
            report.files_added = len(added)
            report.files_removed, report.files_changed = len(removed), len(changed)
            report.attempts = attempt.retry_state.attempt_number
            if not (added or removed or changed):
                report.action = "none"
                report.seconds = round(time.monotonic() - t0, 3)
                return report
            new_entries = added + [f for f in listing if f.path in changed_entries]
            with store.discarding_on_error():
                new = _update(store, base, new_entries, removed + changed, report)
                report.version = store.commit(new, base.version)
            report.seconds = round(time.monotonic() - t0, 3)
            return report
    raise AssertionError("unreachable: commit_attempts raises when every attempt lost")


def compact(table: str, column: str, *, index_path: str | None = None, spark: Any = None) -> SyncReport:
    """Fold merge-on-read deltas into segments, purge dead file ids, rebuild over-budget segments.

    Needs no Spark (a catalog table needs ``index_path`` or ``spark`` to find the index).
    """
    t0 = time.monotonic()
    store = IndexStore(index_location(table, column, index_path, spark))
    with reading_as(spark_read_conf(spark)):  # keys re-read as the session reads them
        return _compact(table, column, store, t0)


def _compact(table: str, column: str, store: IndexStore, t0: float) -> SyncReport:
    for attempt in commit_attempts(f"compact of {table}.{column}", store.path):
        with attempt:
            base = store.load_manifest()
            metas = store.read_segment_list(base.segment_list)
            report = _report(base, "compact")
            report.attempts = attempt.retry_state.attempt_number
            if base.structure == "hashed":  # one structure of the live files' pairs
                if len(base.hashed) <= 1 and not base.dead_files:
                    report.action = "none"
                    return report
                with store.discarding_on_error():
                    merged = hashed_build.merge(store, base, base.files)
                    report.deltas_folded = len(base.hashed) - 1
                    new = _new_manifest(base, hashed=[merged], dead_files=[])
                    report.version = store.commit(new, base.version)
                report.seconds = round(time.monotonic() - t0, 3)
                return report
            if not base.deltas and not base.dead_files and not any(over_budget(s.used, s.budget) for s in metas):
                report.action = "none"
                return report
            cache = KeyCache(base, base.files)
            with store.discarding_on_error():
                adds = _delta_adds(store, base, base.files)
                metas = apply_to_segments(store, base, metas, adds, set(base.dead_files), False, cache)
                c = cache.counts
                report.segments_covered, report.segments_rewritten = c.covered, c.rewritten
                report.segments_rebuilt, report.segments_created, report.segments_dropped = (
                    c.rebuilt,
                    c.created,
                    c.dropped,
                )
                report.keys_read, report.deltas_folded = c.keys_read, len(base.deltas)
                new = _new_manifest(base, segment_list=store.write_segment_list(store.repack(metas)), deltas=[],
                                    dead_files=[])
                report.version = store.commit(new, base.version)
            report.seconds = round(time.monotonic() - t0, 3)
            return report
    raise AssertionError("unreachable: commit_attempts raises when every attempt lost")


def rebuild(spark: Any, table: str, column: str, *, index_path: str | None = None, **overrides: Any) -> IndexStats:
    """Build the index anew, keeping the existing index's parameters (error bound, mode, ...)."""
    ref: TableRef = resolve_table(table, spark)
    path = index_location(ref, column, index_path)
    params: dict[str, Any] = {}
    try:
        params = _params(IndexStore(path).load_manifest())
    except IndexUnavailable:
        pass
    params.update(overrides)
    return build(spark, table, column, index_path=path, **params)
