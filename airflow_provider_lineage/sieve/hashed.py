"""The hashed structure: choosing it, its files' key ranges from the footers, answering predicates.

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
which merges all structures into one. Building, adding files and merging: :mod:`.hashed_build`.
"""
from __future__ import annotations

import contextvars
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from .errors import IndexUnavailable, SieveError
from .files import open_parquet, rebase_of
from .fingerprints import DEFAULT_FPP, fingerprints
from .fs import open_input
from .fuse import ARITY, CHECK_SALT, mix, slots_of
from .hashing import hash_of_value, hashes_of_arrow
from .keys import BYTE_KINDS, KeyType, window_key
from .storage import HashedHeader, HashedRef, IndexStore, Manifest
from .storage.fuse import slot_value
from .table import FileEntry, NoFooterStatistics, footer_min_max

STRUCTURES = ("auto", "segments", "hashed", "fuse", "pages")
# structure= -> the retrieval structure for the keys in one file each: when smaller and compiled,
# always, never (fingerprint pages only)
FUSE_MODES = {"auto": "auto", "hashed": "auto", "fuse": "always", "pages": "never"}
READ_THREADS = 4
MAX_STRUCTURES = 16  # a sync that would make more merges them all into one (as compact does)
CHOOSER_FILES = 16  # files sampled by structure="auto"
CHOOSER_SPAN = 0.5  # mean share of the column's (sampled) key range one file spans, at least
CHOOSER_DISTINCT = 0.5  # distinct values / sampled values, at least
CHOOSER_MIN_KEYS = 10_000  # fewer distinct sampled keys: segments (a small column's segments are small anyway)


def check_structure(structure: str, fpp: float) -> None:
    if structure not in STRUCTURES:
        raise SieveError(f"structure={structure!r} is unknown: use 'auto' (chosen from a sample of the column), "
                         "'segments' (ordered keys: dates, clustered ids), 'hashed' (keys without order: "
                         "UUIDs, random ids), or to force the hashed structure's parts 'fuse' (keys in one file "
                         "each in a retrieval structure) or 'pages' (fingerprint pages only)")
    if not 0 < fpp < 0.5:
        raise SieveError(f"fpp={fpp} is out of range: pass the share of absent keys that may read a file, "
                         f"between 0 and 0.5 (default {DEFAULT_FPP})")


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
            # distinct values: an integer key is its value; several strings may share a window key
            hashes.append(hashes_of_arrow(kt, batch.column(0))[0] if kt.kind in BYTE_KINDS else keys)
    if len(per_file) < 2 or rows == 0:
        return "segments"
    distinct_values = distinct(np.concatenate(hashes))
    if distinct_values < CHOOSER_MIN_KEYS or distinct_values < CHOOSER_DISTINCT * rows:
        return "segments"
    union = np.sort(np.concatenate(per_file))
    union = union[np.concatenate(([True], union[1:] != union[:-1]))]
    if len(union) < 2:
        return "segments"
    n = len(union) - 1
    spans = [(np.searchsorted(union, k[-1]) - np.searchsorted(union, k[0])) / n for k in per_file]
    return "hashed" if float(np.mean(spans)) >= CHOOSER_SPAN else "segments"


UNKNOWN_RANGE = (-(1 << 63), (1 << 63) - 1)  # a file without statistics: every range may match


def footer_range(path: str, column: str, kt: KeyType) -> tuple[int, int]:
    """A file's smallest and largest key from its Parquet footer statistics (no data read:
    :func:`.table.footer_min_max`); :data:`UNKNOWN_RANGE` when they are missing or cannot be mapped."""
    try:
        pf = open_parquet(open_input(path))
        if rebase_of(pf.metadata.metadata).any:  # legacy-calendar values: the statistics are not the values Spark reads
            return UNKNOWN_RANGE
        got = footer_min_max(pf, column, lambda st: _key_bounds(st, kt))
        if got is None:
            return UNKNOWN_RANGE
        lo, hi = got
        if not UNKNOWN_RANGE[0] <= lo <= hi <= UNKNOWN_RANGE[1]:
            return UNKNOWN_RANGE
        return int(lo), int(hi)
    except (NoFooterStatistics, OSError, TypeError, ValueError, OverflowError, ArithmeticError):
        return UNKNOWN_RANGE


def _key_bounds(st: Any, kt: KeyType) -> tuple[int, int]:
    """One row group's (min, max) statistics as keys."""
    if kt.kind in BYTE_KINDS:
        return window_key(bytes(st.min_raw), kt.prefix_bytes), window_key(bytes(st.max_raw), kt.prefix_bytes)
    if kt.kind == "int":
        return int(st.min), int(st.max)
    return kt.encode(st.min)[0], kt.encode(st.max)[0]


def footer_ranges(files: Sequence[FileEntry], column: str, kt: KeyType) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(file ids, smallest keys, largest keys) of every file, from the footers (a few threads)."""
    ctx = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=max(1, min(READ_THREADS * 2, len(files)))) as pool:
        got = list(pool.map(lambda p: ctx.copy().run(footer_range, p, column, kt), [f.path for f in files]))
    return (np.arange(len(files), dtype=np.int64), np.asarray([g[0] for g in got], np.int64),
            np.asarray([g[1] for g in got], np.int64))


def distinct(values: np.ndarray) -> int:
    """The number of distinct values (a sort: faster than numpy's hash-based unique here)."""
    if not len(values):
        return 0
    s = np.sort(values)
    return 1 + int(np.count_nonzero(s[1:] != s[:-1]))


class HashedLookup:
    """Answers predicates from a hashed index's structures (headers read once, pages cached)."""

    def __init__(self, store: IndexStore, manifest: Manifest, cache_pages: int = 256) -> None:
        self.store, self.manifest = store, manifest
        self._headers: dict[str, HashedHeader] = {}
        self._layouts: dict[str, tuple[int, int, int, np.ndarray]] = {}
        self._pages: OrderedDict[tuple[str, int], Any] = OrderedDict()
        self._cache_pages = cache_pages
        self.pages_read = 0  # index reads: pages, and runs of four retrieval segments

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

    def _cached(self, key: tuple[str, int], read: Callable[[], Any]) -> Any:
        """An index read (a page, or a run of retrieval segments) from the LRU cache, or ``read()``."""
        got = self._pages.get(key)
        if got is None:
            got = self._pages[key] = read()
            self.pages_read += 1
            if len(self._pages) > self._cache_pages:
                self._pages.popitem(last=False)
        else:
            self._pages.move_to_end(key)
        return got

    def _page(self, ref: HashedRef, p: int) -> Any:
        _, _, fid_width, starts = self.layout(ref)
        return self._cached((ref.name, p), lambda: self.store.read_hashed_page(ref, None, p, starts=starts,
                                                                               fid_width=fid_width))

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
        all_hashes = np.asarray(hashes, np.uint64)
        rt = self.manifest.fuse
        in_pages = np.ones(len(all_hashes), bool)
        if rt is not None:  # one-file keys named here; the pages it covers only for keys in several files
            in_pages = self._fuse_ids(all_hashes, out)
        for ref in self.manifest.hashed:
            hs = all_hashes[in_pages] if rt is not None and ref.name == rt.pages else all_hashes
            if not len(hs):
                continue
            fps = fingerprints(hs, self.manifest.fp_bits)
            fp_bits, page_bits, _, _ = self.layout(ref)
            low_bits = fp_bits - page_bits
            pages = (fps >> np.uint64(low_bits)).astype(np.int64) if page_bits else np.zeros(len(fps), np.int64)
            lows = fps & np.uint64((1 << low_bits) - 1)
            for p in np.unique(pages).tolist():
                out.update(self._page(ref, p).files_of(lows[pages == p]).tolist())
        return out

    def _fuse_ids(self, hashes: np.ndarray, out: set[int]) -> np.ndarray:
        """Adds to ``out`` the files the retrieval structure names for these value hashes (one ranged
        read of four segments per key not cached; an absent key names one, or the pages, with
        probability ``fuse.fpp``); returns which hashes it sends to the pages it covers."""
        ref = self.manifest.fuse
        assert ref is not None
        shards = ref.shard_list()
        which = (hashes >> np.uint64(64 - ref.shard_bits)).astype(np.int64) if ref.shard_bits else \
            np.zeros(len(hashes), np.int64)
        keys = hashes >> np.uint64(ref.key_shift)
        checks = mix(keys, CHECK_SALT) >> np.uint64(64 - (ref.slot_bits - ref.fid_bits))
        fid_mask = (1 << ref.fid_bits) - 1
        in_pages = np.zeros(len(hashes), bool)
        for si in np.unique(which).tolist():
            if si >= len(shards):
                raise IndexUnavailable(f"retrieval structure {ref.name} has no shard {si} (corrupt manifest): "
                                       "rebuild the index")
            rows = np.flatnonzero(which == si)
            sh = shards[si]
            pos = slots_of(keys[rows], sh)
            for j, (row, chk) in enumerate(zip(rows.tolist(), checks[rows].tolist(), strict=True)):
                first = int(pos[0, j]) // sh.segment_length
                segs = self._fuse_segments(si, first)
                v = 0
                for i in range(ARITY):
                    v ^= slot_value(segs[i], int(pos[i, j]) - (first + i) * sh.segment_length, ref.slot_bits)
                fid = v & fid_mask
                if v >> ref.fid_bits != chk or fid > ref.max_fid + 1:
                    continue  # not built in (absent, or added by a sync: the other structures answer)
                if fid == ref.max_fid + 1:
                    in_pages[row] = True
                else:
                    out.add(fid)
        return in_pages

    def _fuse_segments(self, shard: int, first: int) -> list[bytes]:
        rt = self.manifest.fuse
        assert rt is not None
        return self._cached((rt.name, shard * (1 << 40) + first), lambda: self.store.read_fuse_segments(rt, shard,
                                                                                                        first))

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
