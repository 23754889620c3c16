"""The hashed structure end to end: choosing it, building it, adding files, compacting, answering.

An index is built with ``structure="segments"`` (ordered keys: :mod:`.model`), ``"hashed"``
(keys without exploitable order: :mod:`.fingerprints`) or ``"auto"`` (the default), which samples
the column: when the sampled files' key ranges each span most of the column's range (min/max
prunes nothing) and most sampled values are distinct (high cardinality: UUIDs, random ids, phone
numbers), the hashed structure is chosen; otherwise segments.

Point and IN predicates look each value's fingerprint up (never a false negative; about ``fpp``
of absent values read any file). Range predicates answer the files whose key range (min, max)
overlaps, which is what min/max pruning would read: correct, not sharper. A sync reads only the
added files and writes one small structure for them with the same fingerprint bits; removed files
are dropped from the answer at once (the live file table) and from the structures at ``compact``,
which merges all structures into one.
"""
from __future__ import annotations

import contextvars
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import SieveError
from .fingerprints import DEFAULT_FPP, fingerprint_bits, fingerprints
from .fs import open_input
from .hashing import hash_of_value, hashes_of_arrow
from .keys import BYTE_KINDS, KeyType, window_key
from .storage import HashedHeader, HashedRef, IndexStore, Manifest
from .table import FileEntry

STRUCTURES = ("auto", "segments", "hashed")
READ_THREADS = 4
MAX_STRUCTURES = 16  # a sync that would make more merges them all into one (as compact does)
CHOOSER_FILES = 16  # files sampled by structure="auto"
CHOOSER_SPAN = 0.5  # mean share of the column's (sampled) key range one file spans, at least
CHOOSER_DISTINCT = 0.5  # distinct values / sampled values, at least
CHOOSER_MIN_KEYS = 10_000  # fewer distinct sampled keys: segments (a small column's segments are small anyway)


def check_structure(structure: str, fpp: float) -> None:
    if structure not in STRUCTURES:
        raise SieveError(f"structure={structure!r} is unknown: use 'auto' (chosen from a sample of the column), "
                         "'segments' (ordered keys: dates, clustered ids) or 'hashed' (keys without order: "
                         "UUIDs, random ids)")
    if not 0 < fpp < 0.5:
        raise SieveError(f"fpp={fpp} is out of range: pass the share of absent keys that may read a file, "
                         f"between 0 and 0.5 (default {DEFAULT_FPP})")


def read_file_hashes(path: str, column: str, kt: KeyType) -> tuple[np.ndarray, int, int, Any, Any]:
    """(sorted unique hashes, NULL count, rows, smallest key, largest key) of one Parquet file."""
    pf = pq.ParquetFile(open_input(path))
    rows = pf.metadata.num_rows
    if column not in pf.schema_arrow.names:  # schema evolution: only NULLs
        return np.empty(0, np.uint64), rows, rows, None, None
    col = pf.read(columns=[column]).column(column)
    hashes, nulls = hashes_of_arrow(kt, col)
    lo = hi = None
    if len(hashes):
        if kt.kind in BYTE_KINDS:  # the ordered (window or radix) keys of the smallest and largest value
            mm = pc.min_max(col)
            lo = kt.interval(mm["min"].as_py(), None)[0]
            hi = kt.interval(None, mm["max"].as_py())[1]
        else:
            keys, _ = kt.keys_of_arrow(col)
            lo, hi = keys[0], keys[-1]
            lo, hi = int(lo), int(hi)
    return hashes, nulls, rows, lo, hi


def read_hashes(files: Sequence[FileEntry], fids: Sequence[int], column: str, kt: KeyType
                ) -> Iterable[tuple[int, tuple[np.ndarray, int, int, Any, Any]]]:
    """(file id, :func:`read_file_hashes`) of each file, read in a few threads."""
    ctx = contextvars.copy_context()  # the caller's storage options hold in every thread
    with ThreadPoolExecutor(max_workers=max(1, min(READ_THREADS, len(files)))) as pool:
        got = pool.map(lambda p: ctx.copy().run(read_file_hashes, p, column, kt), [f.path for f in files])
        yield from zip(fids, got)


def choose(files: Sequence[FileEntry], column: str, kt: KeyType) -> str:
    """``"hashed"`` or ``"segments"`` from a sample of the files (see the module doc)."""
    if len(files) < 2:
        return "segments"
    step = max(1, len(files) // CHOOSER_FILES)
    sample = list(files[::step])[:CHOOSER_FILES]
    per_file: list[np.ndarray] = []
    hashes: list[np.ndarray] = []
    rows = 0
    for f in sample:
        pf = pq.ParquetFile(open_input(f.path))
        if column not in pf.schema_arrow.names:
            continue
        batch = next(pf.iter_batches(columns=[column], batch_size=20_000), None)
        if batch is None:
            continue
        keys, nulls = kt.keys_of_arrow(batch.column(0))  # ordered keys: how much of the range a file spans
        rows += len(batch) - nulls
        if len(keys):
            if keys.dtype == object:  # keys beyond int64 (wide decimals, uint64): keep segments
                return "segments"
            per_file.append(keys)
            hashes.append(hashes_of_arrow(kt, batch.column(0))[0])  # distinct values (string keys may share)
    if len(per_file) < 2 or rows == 0:
        return "segments"
    distinct_values = distinct(np.concatenate(hashes))
    if distinct_values < CHOOSER_MIN_KEYS or distinct_values < CHOOSER_DISTINCT * rows:
        return "segments"
    union = np.unique(np.concatenate(per_file))
    if len(union) < 2:
        return "segments"
    n = len(union) - 1
    spans = [(np.searchsorted(union, k[-1]) - np.searchsorted(union, k[0])) / n for k in per_file]
    return "hashed" if float(np.mean(spans)) >= CHOOSER_SPAN else "segments"


UNKNOWN_RANGE = (-(1 << 63), (1 << 63) - 1)  # a file without statistics: every range may match


def footer_range(path: str, column: str, kt: KeyType) -> tuple[int, int]:
    """A file's smallest and largest key from its Parquet footer statistics (no data read);
    :data:`UNKNOWN_RANGE` when they are missing or cannot be mapped."""
    try:
        pf = pq.ParquetFile(open_input(path))
        md = pf.metadata
        leaf = next((i for i in range(md.num_columns) if md.schema.column(i).path == column), None)
        if leaf is None:
            return UNKNOWN_RANGE
        lo = hi = None
        for rg in range(md.num_row_groups):
            chunk = md.row_group(rg).column(leaf)
            st = chunk.statistics if chunk.is_stats_set else None
            if st is not None and st.has_null_count and st.null_count >= chunk.num_values:
                continue
            if st is None or not st.has_min_max:
                return UNKNOWN_RANGE
            if kt.kind in BYTE_KINDS:
                a, b = window_key(bytes(st.min_raw), kt.prefix_bytes), window_key(bytes(st.max_raw), kt.prefix_bytes)
            elif kt.kind == "int":
                a, b = int(st.min), int(st.max)
            else:
                a, b = kt.encode(st.min)[0], kt.encode(st.max)[0]
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
        if lo is None or hi is None or not UNKNOWN_RANGE[0] <= lo <= hi <= UNKNOWN_RANGE[1]:
            return UNKNOWN_RANGE
        return int(lo), int(hi)
    except (OSError, TypeError, ValueError, OverflowError, ArithmeticError):
        return UNKNOWN_RANGE


def footer_ranges(files: Sequence[FileEntry], column: str, kt: KeyType) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(file ids, smallest keys, largest keys) of every file, from the footers (a few threads)."""
    ctx = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=max(1, min(READ_THREADS * 2, len(files)))) as pool:
        got = list(pool.map(lambda p: ctx.copy().run(footer_range, p, column, kt), [f.path for f in files]))
    return (np.arange(len(files), dtype=np.int64), np.asarray([g[0] for g in got], np.int64),
            np.asarray([g[1] for g in got], np.int64))


def write_structure(store: IndexStore, hs: list[np.ndarray], fs: list[np.ndarray], fp_bits: int,
                    ranges: dict[int, tuple[Any, Any]]) -> HashedRef:
    hashes = np.concatenate(hs) if hs else np.empty(0, np.uint64)
    fids = np.concatenate(fs) if fs else np.empty(0, np.uint32)
    ids = sorted(ranges)
    lo = _key_array([ranges[i][0] for i in ids])
    hi = _key_array([ranges[i][1] for i in ids])
    return store.write_hashed(fingerprints(hashes, fp_bits), fids, fp_bits, np.asarray(ids, np.int64), lo, hi)


def _key_array(values: list[Any]) -> np.ndarray:
    try:
        return np.asarray(values, np.int64)
    except OverflowError:
        return np.asarray(values, dtype=object)


def _read_pairs(files: Any, entries: list[FileEntry], ids: Sequence[int], column: str, kt: KeyType
                ) -> tuple[list[np.ndarray], list[np.ndarray], set[int], dict[int, tuple[Any, Any]]]:
    """Each file's hashes with its file id, the files holding NULLs, per-file min/max; sets each file's
    ``num_rows`` in ``files`` (indexed by file id)."""
    hs: list[np.ndarray] = []
    fs: list[np.ndarray] = []
    nulls: set[int] = set()
    ranges: dict[int, tuple[Any, Any]] = {}
    for fid, (hashes, n_null, rows, lo, hi) in read_hashes(entries, ids, column, kt):
        files[fid].num_rows = rows
        if n_null:
            nulls.add(fid)
        if len(hashes):
            hs.append(hashes)
            fs.append(np.full(len(hashes), fid, np.uint32))
            ranges[fid] = (lo, hi)
    return hs, fs, nulls, ranges


def build_local(store: IndexStore, files: list[FileEntry], column: str, kt: KeyType, fpp: float
                ) -> tuple[HashedRef, set[int], int, int]:
    """The build's structure from the files read on the driver: (ref, NULL files, fp bits, keys)."""
    hs, fs, nulls, ranges = _read_pairs(files, files, range(len(files)), column, kt)
    n_keys = distinct(np.concatenate(hs)) if hs else 0
    fp_bits = fingerprint_bits(n_keys, fpp)
    return write_structure(store, hs, fs, fp_bits, ranges), nulls, fp_bits, n_keys


def distinct(values: np.ndarray) -> int:
    """The number of distinct values (a sort: faster than numpy's hash-based unique here)."""
    if not len(values):
        return 0
    s = np.sort(values)
    return 1 + int(np.count_nonzero(s[1:] != s[:-1]))


def add_files(store: IndexStore, m: Manifest, files: dict[int, FileEntry], new_ids: list[int]
              ) -> tuple[HashedRef | None, set[int], int]:
    """A small structure for files a sync adds (same fingerprint bits): (ref or None, NULL files, pairs)."""
    entries = [files[i] for i in new_ids]
    hs, fs, nulls, ranges = _read_pairs(files, entries, new_ids, m.column, m.key_type)
    if not hs:
        return None, nulls, 0
    return write_structure(store, hs, fs, m.fp_bits, ranges), nulls, sum(len(h) for h in hs)


def merge(store: IndexStore, m: Manifest, live: Iterable[int]) -> HashedRef:
    """One structure holding every structure's pairs of live files (compaction)."""
    keep = np.asarray(sorted(live), np.int64)
    fps, fids, ids, lo, hi = [], [], [], [], []
    for ref in m.hashed:
        header, f, i = store.read_hashed_pairs(ref)
        alive = np.isin(i.astype(np.int64), keep)
        fps.append(f[alive])
        fids.append(i[alive])
        ok = np.isin(header.file_ids, keep)
        ids.append(header.file_ids[ok])
        lo += np.asarray(header.file_min)[ok].tolist()
        hi += np.asarray(header.file_max)[ok].tolist()
    all_ids = np.concatenate(ids) if ids else np.empty(0, np.int64)
    return store.write_hashed(np.concatenate(fps) if fps else np.empty(0, np.uint64),
                              np.concatenate(fids) if fids else np.empty(0, np.uint32), m.fp_bits, all_ids,
                              _key_array(lo), _key_array(hi))


class HashedLookup:
    """Answers predicates from a hashed index's structures (headers read once, pages cached)."""

    def __init__(self, store: IndexStore, manifest: Manifest, cache_pages: int = 256) -> None:
        self.store, self.manifest = store, manifest
        self._headers: dict[str, HashedHeader] = {}
        self._layouts: dict[str, tuple[int, int, int, np.ndarray]] = {}
        self._pages: OrderedDict[tuple[str, int], Any] = OrderedDict()
        self._cache_pages = cache_pages
        self.pages_read = 0

    def layout(self, ref: HashedRef) -> tuple[int, int, int, np.ndarray]:
        """(fingerprint bits, page bits, file id width, page offsets): from the manifest when it
        carries the page table (a point lookup then reads one page), else from the header."""
        got = self._layouts.get(ref.name)
        if got is None:
            got = ref.page_table()
            if got is None:
                h = self.header(ref)
                got = (h.fp_bits, h.page_bits, h.fid_width, h.page_start)
            self._layouts[ref.name] = got
        return got

    def header(self, ref: HashedRef) -> HashedHeader:
        h = self._headers.get(ref.name)
        if h is None:
            h = self._headers[ref.name] = self.store.read_hashed_header(ref)
        return h

    def _page(self, ref: HashedRef, p: int) -> Any:
        key = (ref.name, p)
        page = self._pages.get(key)
        if page is None:
            _, _, fid_width, starts = self.layout(ref)
            page = self.store.read_hashed_page(ref, None, p, starts=starts, fid_width=fid_width)
            self.pages_read += 1
            self._pages[key] = page
            if len(self._pages) > self._cache_pages:
                self._pages.popitem(last=False)
        else:
            self._pages.move_to_end(key)
        return page

    def ids_for_values(self, values: Iterable[Any]) -> set[int]:
        hashes = []
        for v in values:
            if v is None:
                continue
            h = hash_of_value(self.manifest.key_type, v)
            if h is not None:
                hashes.append(h)
        out: set[int] = set()
        if not hashes:
            return out
        fps = fingerprints(np.asarray(hashes, np.uint64), self.manifest.fp_bits)
        for ref in self.manifest.hashed:
            fp_bits, page_bits, _, _ = self.layout(ref)
            low_bits = fp_bits - page_bits
            pages = (fps >> np.uint64(low_bits)).astype(np.int64) if page_bits else np.zeros(len(fps), np.int64)
            lows = fps & np.uint64((1 << low_bits) - 1)
            for p in np.unique(pages).tolist():
                out.update(self._page(ref, p).files_of(lows[pages == p]).tolist())
        return out

    def ids_for_range(self, lo: int | None, hi: int | None) -> set[int]:
        """Files whose key range overlaps [lo, hi] (what min/max pruning reads)."""
        out: set[int] = set()
        for ref in self.manifest.hashed:
            header = self.header(ref)
            for fid, a, b in zip(header.file_ids.tolist(), header.file_min.tolist(), header.file_max.tolist(),
                                 strict=True):
                if (hi is None or a <= hi) and (lo is None or b >= lo):
                    out.add(fid)
        return out
