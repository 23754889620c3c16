"""Answering predicates with an index: which files can hold matching rows.

Point and IN: binary search of the sorted segment list, then the key's block in O(1).
Ranges: every overlapping segment; a segment wholly inside the range answers its location set from
the segment list without being loaded, others walk their blocks from the low to the high key. A
segment's *full* files (recorded in the segment list: they hold every key of its range) answer any
key of the range.
Keys in gaps between segments answer no file. Merge-on-read deltas are searched too, and file ids
of files that left the table are dropped. Never a false negative for files the index knows.

**Stale-safe by default.** :meth:`SieveIndex.lookup` compares the table's listing with the index
version (path, size, mtime): files added or rewritten since then are *unindexed* candidates (they
may hold the key), files removed since then are never answered. ``freshness="footer"`` also
compares every file's Parquet footer checksum (an index built with it records them: sees a rewrite
that kept size and mtime), ``freshness="names"`` compares paths only (cheaper on a local file
system; blind to files rewritten in place), ``assume_fresh=True`` skips the listing (for callers
that just synced); ``listing=`` passes one the caller already has.
"""
from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import IndexUnavailable, SieveError
from .hashed import HashedLookup
from .keys import KeyType
from .model import INT64_MAX, INT64_MIN, over_budget
from .predicates import Eq, In, IsNull, Predicate, Range
from .records import IndexStats
from .storage import (
    FileTable,
    IndexStore,
    Manifest,
    PagedSegment,
    SegmentList,
    SegmentMeta,
    default_index_path,
)
from .table import (
    FileEntry,
    TableRef,
    is_catalog_name,
    list_local_names,
    list_table_files,
    list_table_paths,
    list_table_versions,
    resolve_table,
    stamp_footers,
    table_path,
)


def index_location(table: str | TableRef, column: str, index_path: str | None, spark: Any = None) -> str:
    """The index folder: ``index_path`` if given, else ``<table_root>/_sieve/<column>``."""
    if index_path:
        return table_path(index_path)  # a local path or an object-store URI (fs.normalize)
    if isinstance(table, str) and is_catalog_name(table) and spark is None:
        raise SieveError(f"{table!r} is a catalog table name: pass index_path= (or a SparkSession where "
                         "the call accepts one) so the index folder can be found without Spark")
    ref = table if isinstance(table, TableRef) else resolve_table(table, spark)
    return default_index_path(ref.root, column)


def intervals_of(pred: Predicate, kt: KeyType) -> list[tuple[int | None, int | None]]:
    """Inclusive integer key intervals a predicate can match (empty list = nothing)."""
    if isinstance(pred, Eq):
        return _point(pred.value, kt)
    if isinstance(pred, In):
        # x IN (NULL) is never true
        return sorted({iv for v in pred.values if v is not None for iv in _point(v, kt)})
    if isinstance(pred, Range):
        lo, hi = kt.interval(pred.low, pred.high, pred.low_inclusive, pred.high_inclusive)
        if lo is not None and hi is not None and lo > hi:
            return []
        return [(lo, hi)]
    raise SieveError(f"unsupported predicate {pred!r}: use Eq, In, Range or IsNull")


def _point(value: Any, kt: KeyType) -> list[tuple[int | None, int | None]]:
    """The keys ``column = value`` can match: none when no key equals the value (e.g. 1.5 on an
    integer column), the value's own key otherwise, even when other values share it (strings)."""
    lo, hi = kt.interval(value, value)
    return [(lo, hi)] if lo is not None and hi is not None and lo <= hi else []


@dataclass(frozen=True)
class Candidates:
    """The answer to one predicate: the files to read and where they come from.

    ``files`` (sorted absolute paths) = ``from_index`` files the index cannot exclude + ``unindexed``
    files added or rewritten since the index version (they may hold matching rows). ``removed_skipped``
    counts index candidates that left the table (not in ``files``). ``stale`` is True when the table's
    files differ from the indexed ones; ``table_files`` is the number of files the table has now
    (the indexed live files with ``assume_fresh=True``).
    """

    files: tuple[str, ...]
    from_index: int
    unindexed: int
    removed_skipped: int
    stale: bool
    table_files: int

    def __len__(self) -> int:
        return len(self.files)

    def summary(self) -> str:
        """One line, e.g. ``3 of 200 files (3 from the index, 0 unindexed)``."""
        line = (f"{len(self.files)} of {self.table_files} files ({self.from_index} from the index, "
                f"{self.unindexed} unindexed)")
        if self.stale:
            line += "; the table changed since the index version: run sync"
        return line


class SieveIndex:
    """One opened index version (read-only). Segments are loaded lazily and cached (LRU)."""

    def __init__(self, store: IndexStore, manifest: Manifest, cache_segments: int = 64) -> None:
        self.store = store
        self.manifest = manifest
        metas = store.segment_list(manifest.segment_list)  # entries built on access
        self.metas: Sequence[SegmentMeta] = metas
        lazy = isinstance(metas, SegmentList)
        self._mins = metas.s_min if lazy else [m.s_min for m in metas]
        self._maxs = metas.s_max if lazy else [m.s_max for m in metas]
        self._cache: OrderedDict[int, PagedSegment] = OrderedDict()
        self._cache_size = cache_segments
        self.deltas = [store.read_delta(d) for d in manifest.deltas]
        self.segments_loaded = 0
        # keys without order: hash fingerprints (hashed.py); None for a segment index
        self.hashed = HashedLookup(store, manifest) if manifest.structure == "hashed" else None

    @property
    def key_type(self) -> KeyType:
        return self.manifest.key_type

    @property
    def table(self) -> TableRef:
        return self.manifest.table

    def segment(self, i: int) -> PagedSegment:
        """Segment ``i`` (header read; pages inflated as lookups need them), cached."""
        seg = self._cache.get(i)
        if seg is None:
            seg = self.store.open_segment(self.metas[i].file)
            self.segments_loaded += 1
            self._cache[i] = seg
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(i)
        return seg

    # ---- answering -----------------------------------------------------------------------------
    def candidate_ids(self, pred: Predicate) -> set[int]:
        """File ids that may hold a row matching ``pred`` (live files only)."""
        live = self.manifest.files
        if isinstance(pred, IsNull):
            return {f for f in self.manifest.null_files if f in live}
        found: set[int] = set()
        if self.hashed is not None:
            if isinstance(pred, Eq | In):
                values = [pred.value] if isinstance(pred, Eq) else list(pred.values)
                intervals_of(pred, self.key_type)  # the values' types checked as for segments
                found = self.hashed.ids_for_values(values)
            else:
                for lo, hi in intervals_of(pred, self.key_type):
                    found.update(self.hashed.ids_for_range(lo, hi))
            return {f for f in found if f in live}
        for lo, hi in intervals_of(pred, self.key_type):
            found.update(self._ids_in(lo, hi))
        return {f for f in found if f in live}

    def _ids_in(self, lo: int | None, hi: int | None) -> set[int]:
        out: set[int] = set()
        if self.metas:
            start = 0 if lo is None else bisect.bisect_left(self._maxs, lo)
            end = len(self.metas) if hi is None else bisect.bisect_right(self._mins, hi)
            for i in range(start, end):
                m = self.metas[i]
                if (lo is None or lo <= m.s_min) and (hi is None or m.s_max <= hi):
                    out.update(m.locations.tolist())
                else:
                    seg = self.segment(i)
                    out.update(seg.fids_for_range(m.s_min if lo is None else lo,
                                                  m.s_max if hi is None else hi).tolist())
                    out.update(m.full.tolist())  # they hold every key of the range: [lo, hi] overlaps it
        for keys, fids in self.deltas:
            if len(keys) == 0:
                continue
            a, b = lo, hi
            if keys.dtype != object:  # int64 keys: a bound beyond int64 is clamped, not compared as a float
                if (a is not None and a > INT64_MAX) or (b is not None and b < INT64_MIN):
                    continue
                a = None if a is None or a < INT64_MIN else a
                b = None if b is None or b > INT64_MAX else b
            i0 = 0 if a is None else int(np.searchsorted(keys, a, "left"))
            i1 = len(keys) if b is None else int(np.searchsorted(keys, b, "right"))
            out.update(np.unique(fids[i0:i1]).tolist())
        return out

    def lookup(self, pred: Predicate, *, assume_fresh: bool = False,
               listing: list[FileEntry] | None = None, freshness: str = "stat") -> Candidates:
        """The files that may hold rows matching ``pred``, safe on a stale index.

        Files added or rewritten since the index version are candidates (``unindexed``); removed
        ones are not. ``freshness`` says how the table is checked against the index version (no
        Spark; ``listing`` passes a listing the caller already has):

        * ``"stat"`` (default): every data file's path, size and mtime; added, removed and
          rewritten files are all seen, except a file rewritten with the same size whose mtime was
          set back (``os.utime``, ``touch -r``, a copy that keeps times).
        * ``"footer"``: as ``"stat"``, and every file's Parquet footer checksum against the one the
          index recorded (:func:`.table.footer_checksum`; build with ``freshness="footer"``): one
          read of each file's end per lookup. Sees that rewrite too, unless it kept the row groups,
          every column chunk's byte size and every min/max statistic. On an index that records no
          footers it raises SieveError (readers then read every file, with a warning).
        * ``"names"``: the data files' paths only, without a ``stat`` per file on a local file
          system (about a fifth of the cost). Added, removed and renamed files are seen; a file
          rewritten *in place* under its old name is not, so use it only for tables whose writers
          never do that (Spark, Hive and table-format writers write new files; ``pq.write_table``
          or pandas over an existing file rewrite it in place).
        * ``"none"`` (the same as ``assume_fresh=True``): no check; the caller knows the index is
          current (it just synced): the answer covers indexed files only.

        Raises IndexUnavailable when a segment or delta file is missing or corrupt.
        """
        freshness = check_freshness("none" if assume_fresh else freshness)
        files = self.manifest.files
        path = files.path if isinstance(files, FileTable) else (lambda fid: files[fid].path)
        ids = self.candidate_ids(pred)
        change = self._changes(freshness, listing)
        if change is None:  # the table holds exactly the indexed files (or the caller vouches for it)
            paths = sorted(path(f) for f in ids)
            return Candidates(tuple(paths), len(paths), 0, 0, False, len(files))
        added, removed, changed, n_listed = change
        gone = set(removed) | set(changed)
        indexed = {path(f) for f in ids if f not in gone}
        unindexed = set(added) | {path(f) for f in changed}
        return Candidates(files=tuple(sorted(indexed | unindexed)), from_index=len(indexed),
                          unindexed=len(unindexed), removed_skipped=len(ids & set(removed)),
                          stale=bool(added or removed or changed), table_files=n_listed)

    def _changes(self, freshness: str, listing: list[FileEntry] | None
                 ) -> tuple[list[str], list[int], list[int], int] | None:
        """(added paths, removed ids, rewritten ids, files listed) since the index version, by the
        ``freshness`` check; None when nothing changed. The usual answer, an unchanged table, is
        one set comparison with the index's file table."""
        if listing is not None:
            entries, removed, changed = diff_files(self.manifest, listing, freshness)
            return [f.path for f in entries], removed, changed, len(listing)
        if freshness == "none":
            return None
        if freshness == "footer":
            listed = list_table_files(self.table)
            entries, removed, changed = diff_files(self.manifest, listed, "footer")
            return ([f.path for f in entries], removed, changed, len(listed)) if entries or removed or changed else None
        files = self.manifest.files
        table = files if isinstance(files, FileTable) else None
        if freshness == "names":
            local = list_local_names(self.table)
            if local is None:
                listed = list_table_paths(self.table)
            elif table is not None and local[0] == table.base and len(local[1]) == len(table) \
                    and set(local[1]) == table.relative_set():  # no path joined or decoded
                return None
            else:
                listed = [local[0] + name for name in local[1]]
            added, removed = diff_paths(self.manifest, listed)
            return (added, removed, [], len(listed)) if added or removed else None
        versions = list_table_versions(self.table)
        if table is not None and len(versions) == len(table) and set(versions) == table.version_set():
            return None
        added, removed, changed = diff_versions(self.manifest, versions)
        return (added, removed, changed, len(versions)) if added or removed or changed else None

    def candidates(self, pred: Predicate, *, assume_fresh: bool = False,
                   listing: list[FileEntry] | None = None, freshness: str = "stat") -> list[str]:
        """Absolute local paths of the files that may hold matching rows, sorted (stale-safe).

        Same as ``lookup(...).files``: files added or rewritten since the index version are included,
        removed files are not. ``freshness`` as in :meth:`lookup`; ``assume_fresh=True`` answers
        from the index alone (no listing).
        """
        return list(self.lookup(pred, assume_fresh=assume_fresh, listing=listing, freshness=freshness).files)

    # ---- freshness and stats -------------------------------------------------------------------
    def diff(self, listing: list[FileEntry] | None = None, freshness: str = "stat"
             ) -> tuple[list[FileEntry], list[int], list[int]]:
        """(files added, file ids removed, file ids changed) between the index and the table now
        (``freshness``: ``"stat"`` or ``"footer"``, as in :meth:`lookup`)."""
        return diff_files(self.manifest, listing if listing is not None else list_table_files(self.table), freshness)

    def is_stale(self, freshness: str = "stat") -> bool:
        """True when the table's files differ from the indexed ones (path, size or mtime; with
        ``freshness="footer"`` also the footer checksum)."""
        added, removed, changed = self.diff(freshness=freshness)
        return bool(added or removed or changed)

    def verify(self) -> None:
        """Read and checksum every file of this version (raises IndexUnavailable)."""
        for i in range(len(self.metas)):
            self.store.read_segment(self.metas[i].file)
        for ref in self.manifest.hashed:
            self.store.read_hashed_pairs(ref)
        if self.manifest.fuse is not None:
            self.store.check_fuse(self.manifest.fuse)

    def stats(self) -> IndexStats:
        m = self.manifest
        rows = [f.num_rows for f in m.files.values()]
        n_rows = sum(r for r in rows if r is not None) if all(r is not None for r in rows) else None
        keys = sum(s.n_keys for s in self.metas) + sum(len(k) for k, _ in self.deltas) + sum(h.keys for h in m.hashed)
        fuse_keys = m.fuse.one_file if m.fuse is not None else 0
        keys += fuse_keys
        index_bytes = self.store.total_bytes(m)
        budget_total = sum(s.budget for s in self.metas)
        budget_used = sum(min(s.used, s.budget) for s in self.metas)
        attr = n_rows * m.key_type.width if n_rows is not None else None
        return IndexStats(
            table=m.table.name, column=m.column, index_path=self.store.path, version=m.version,
            mode=m.mode, key_type=m.key_type.type_name, created=m.created, files=len(m.files),
            rows=n_rows, keys=keys, segments=len(self.metas), blocks=sum(s.b_count for s in self.metas),
            index_bytes=index_bytes, bytes_per_key=(index_bytes / keys) if keys else 0.0,
            attribute_bytes=attr, attribute_share=(index_bytes / attr) if attr else None,
            error_bound=m.error_bound, budget_total=budget_total, budget_used=budget_used,
            budget_used_fraction=(budget_used / budget_total) if budget_total else 0.0,
            segments_over_budget=sum(1 for s in self.metas if over_budget(s.used, s.budget)),
            deltas=len(m.deltas), delta_records=sum(d.records for d in m.deltas),
            delta_bytes=sum(d.bytes for d in m.deltas), null_files=len(m.null_files),
            build_seconds=m.build_stats.get("seconds"), structure=m.structure,
            pairs=sum(h.pairs for h in m.hashed) + fuse_keys, structures=len(m.hashed), fpp=m.fpp,
            fuse_keys=fuse_keys,
        )


def _columns(manifest: Manifest) -> tuple[list[int], list[str], list[int], list[int]]:
    """(ids, paths, sizes, mtimes) of the manifest's files."""
    files = manifest.files
    if isinstance(files, FileTable):
        return files.columns()
    entries = list(files.values())
    return list(files), [f.path for f in entries], [f.size for f in entries], [f.mtime_ns for f in entries]


def diff_versions(manifest: Manifest, versions: list[tuple[str, int, int]]) -> tuple[list[str], list[int], list[int]]:
    """Compare listed (path, size, mtime_ns) with the manifest: (new paths, removed ids, rewritten ids)."""
    ids, paths, sizes, mtimes = _columns(manifest)
    get = dict(zip(paths, range(len(ids)))).get
    seen = [False] * len(ids)
    added: list[str] = []
    changed: list[int] = []
    for p, size, mtime in versions:
        i = get(p)
        if i is None:
            added.append(p)
        else:
            seen[i] = True
            if size != sizes[i] or mtime != mtimes[i]:
                changed.append(ids[i])
    removed = [fid for fid, s in zip(ids, seen) if not s]
    return added, sorted(removed), sorted(changed)


def diff_files(manifest: Manifest, listing: list[FileEntry], freshness: str = "stat"
               ) -> tuple[list[FileEntry], list[int], list[int]]:
    """Compare a listing with the manifest: (new files, removed ids, rewritten ids).

    ``freshness="footer"`` also reads every listed file's footer checksum into its
    :attr:`FileEntry.footer` (a sync records them) and counts a file whose checksum differs from the
    recorded one (or has none recorded) as rewritten; it raises SieveError when the index records
    no footer checksums. Other values compare path, size and mtime."""
    if freshness == "footer":
        require_footers(manifest)
        stamp_footers(listing)
    added, removed, changed = diff_versions(manifest, [(f.path, f.size, f.mtime_ns) for f in listing])
    new = set(added)
    if freshness == "footer":
        ids, paths, _, _ = _columns(manifest)
        by_path = dict(zip(paths, ids))
        files = manifest.files
        recorded = files.footer_of if isinstance(files, FileTable) else (lambda fid: files[fid].footer)
        known = set(changed)
        for f in listing:
            fid = by_path.get(f.path)
            if fid is not None and fid not in known:
                got = recorded(fid)
                if got is None or f.footer is None or got != f.footer:
                    changed.append(fid)
        changed.sort()
    return [f for f in listing if f.path in new], removed, changed


def records_footers(manifest: Manifest) -> bool:
    """True when the index records its files' footer checksums (built with ``freshness="footer"``)."""
    if manifest.build_stats.get("freshness") == "footer":
        return True
    files = manifest.files
    if isinstance(files, FileTable):
        return files.records_footers
    return bool(files) and all(f.footer is not None for f in files.values())


def require_footers(manifest: Manifest) -> None:
    if not records_footers(manifest):
        raise SieveError(f"freshness='footer': the index of {manifest.table.name}.{manifest.column} records no "
                         "footer checksums (built with freshness='stat' or by an older version): run "
                         "sync(..., freshness='footer') or build(..., freshness='footer') once, or use "
                         "freshness='stat'")


def diff_paths(manifest: Manifest, paths: list[str]) -> tuple[list[str], list[int]]:
    """Compare listed paths with the manifest: (new paths, removed ids); rewrites are not seen."""
    ids, mpaths, _, _ = _columns(manifest)
    known = set(mpaths)
    listed = set(paths)
    added = [p for p in paths if p not in known]
    removed = sorted(fid for fid, p in zip(ids, mpaths) if p not in listed)
    return added, removed


FRESHNESS = ("stat", "footer", "names", "none")


def check_freshness(freshness: str, allowed: tuple[str, ...] = FRESHNESS) -> str:
    """``freshness`` if it is one of ``allowed``, else a SieveError naming them."""
    if freshness not in allowed:
        meaning = {"stat": "'stat' (every file's size and mtime, the default)",
                   "footer": "'footer' (also every file's Parquet footer checksum: sees a rewrite that kept "
                             "size and mtime)",
                   "names": "'names' (file names only: for tables whose files are never rewritten in place)",
                   "none": "'none' (no check: only right after a sync)"}
        names = [meaning[v] for v in allowed]
        raise SieveError(f"freshness={freshness!r} is unknown: use {', '.join(names[:-1])} or {names[-1]}")
    return freshness


def open_index(table: str, column: str, *, index_path: str | None = None, spark: Any = None) -> SieveIndex:
    """Open the latest committed version of an index; raises IndexUnavailable(reason)."""
    path = index_location(table, column, index_path, spark)
    store = IndexStore(path)
    manifest = store.load_manifest()
    if manifest.column != column:
        raise IndexUnavailable(f"the index at {path} is for column {manifest.column!r}, not {column!r}: "
                               "pass the right index_path")
    if not is_catalog_name(table) and resolve_table(table).root != manifest.table.root:
        raise IndexUnavailable(f"the index at {path} is for table {manifest.table.root}, not {table}: "
                               "pass the right index_path")
    return SieveIndex(store, manifest)
