"""Building the hashed structure on the driver, adding a sync's files to it, merging it (compaction).

Each file's key column is read and hashed batch by batch (:func:`read_file_hashes`, a few threads);
the (value hash, file) pairs are packed into one word each, sorted per file, then merged and grouped
bucket by bucket (:func:`_read_grouped`), spilled to a temporary directory above :data:`SPILL_PAIRS`
pairs (:class:`_Spill`). The structure itself, its choice and its lookups: :mod:`.hashed`.
"""
from __future__ import annotations

import contextlib
import contextvars
import itertools
import os
import tempfile
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Self

import numpy as np

from .errors import SieveError
from .files import int96_columns, open_parquet, rebase_array, rebase_of, resolve_columns
from .fingerprints import encode_pages, fingerprint_bits, fingerprints, group_packed, page_bits_for
from .fs import open_input
from .fuse_build import FuseBuilder, one_file, still_pays, warm_up
from .hashed import READ_THREADS, distinct
from .hashing import hash_batch
from .keys import BYTE_KINDS, KeyType
from .storage import FuseRef, HashedRef, IndexStore, Manifest, PageSink
from .table import FileEntry

BATCH_ROWS = 1 << 16  # rows hashed at a time: a file streams batch by batch


def read_file_hashes(path: str, column: str, kt: KeyType) -> tuple[np.ndarray, int, int, Any, Any]:
    """(hashes of the non-NULL values, duplicates kept, in no order; NULL count; rows; smallest key;
    largest key) of one Parquet file, read and hashed batch by batch (no per-value Python), the values as
    Spark reads them (as :func:`.table.read_file_keys`: the column matched case-insensitively, INT96 in
    microseconds, legacy dates and timestamps rebased: :mod:`.files`)."""
    pf = open_parquet(open_input(path))
    rows = pf.metadata.num_rows
    found = resolve_columns([column], pf.schema_arrow.names).get(column)
    if found is None:  # schema evolution: only NULLs
        return np.empty(0, np.uint64), rows, rows, None, None
    rebase = rebase_of(pf.metadata.metadata)
    int96 = rebase.any and found in int96_columns(pf)
    parts: list[np.ndarray] = []
    nulls = 0
    lo = hi = None
    for batch in pf.iter_batches(columns=[found], batch_size=BATCH_ROWS, use_threads=False):
        col = rebase_array(batch.column(0), rebase, int96) if rebase.any else batch.column(0)
        h, n, a, b = hash_batch(kt, col)
        nulls += n
        if len(h):
            parts.append(h)
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
    hashes = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.empty(0, np.uint64)
    if lo is not None and kt.kind in BYTE_KINDS:  # the ordered (window) keys of the smallest and largest value
        lo, hi = kt.interval(lo, None)[0], kt.interval(None, hi)[1]
    return hashes, nulls, rows, lo, hi


def read_hashes(files: Sequence[FileEntry], fids: Sequence[int], column: str, kt: KeyType
                ) -> Iterable[tuple[int, tuple[np.ndarray, int, int, Any, Any]]]:
    """(file id, :func:`read_file_hashes`) of each file, read in a few threads (numpy and Arrow
    release the GIL while they hash and decode)."""
    ctx = contextvars.copy_context()  # the caller's storage options hold in every thread
    with ThreadPoolExecutor(max_workers=max(1, min(READ_THREADS, len(files)))) as pool:
        got = pool.map(lambda p: ctx.copy().run(read_file_hashes, p, column, kt), [f.path for f in files])
        yield from zip(fids, got)


def _key_array(values: list[Any]) -> np.ndarray:
    try:
        return np.asarray(values, np.int64)
    except OverflowError:
        return np.asarray(values, dtype=object)


SERIAL_READ_BYTES = 4 << 20  # files smaller than this in all (a small sync's): read in this thread, no pool to start
BUCKET_BITS = 8  # pairs are grouped in up to 2**8 buckets by their hashes' top bits: small arrays, small sorts
BUCKET_PAIRS = 1 << 17  # about the pairs of one bucket (fewer buckets for fewer pairs: less Python per pair)
# More (value, file) pairs than this (8 bytes each in memory): the sorted runs are spilled to a temporary
# directory and read back bucket by bucket (driver memory: about one bucket plus the encoded pages).
SPILL_PAIRS = 4_000_000


def _packed_file(path: str, column: str, kt: KeyType, j: int, idx_bits: int
                 ) -> tuple[np.ndarray, int, int, Any, Any]:
    """:func:`read_file_hashes`, each hash packed with the file's index ``j`` in its low ``idx_bits``
    bits, sorted (in the reading thread: numpy sorts without the GIL)."""
    hashes, nulls, rows, lo, hi = read_file_hashes(path, column, kt)
    if len(hashes):
        hashes &= ~np.uint64((1 << idx_bits) - 1)
        hashes |= np.uint64(j)
        hashes.sort()
    return hashes, nulls, rows, lo, hi


def _read_grouped(store: IndexStore, files: Any, entries: list[FileEntry], ids: Sequence[int], column: str,
                  kt: KeyType, fp_bits: int | None, fpp: float, fuse_mode: str = "never"
                  ) -> tuple[HashedRef | None, set[int], int, int, FuseRef | None]:
    """Reads the files, groups their (fingerprint, file id) pairs and writes one structure:
    (ref or None when no file holds a key, NULL files, fingerprint bits, distinct keys). Sets each
    file's ``num_rows`` in ``files`` (indexed by file id).

    Each file's hashes are packed with the file's index among ``entries`` into one word (the hash's
    top bits above the index) and sorted as they are read (threads); the driver then holds 8 bytes
    per (value, file). Pairs are grouped bucket by bucket (the hashes' top :data:`BUCKET_BITS`
    bits: each bucket is the files' sorted slices, merged), first to count the distinct keys (which
    size the fingerprints), then to group and encode that bucket's pages
    (:func:`.fingerprints.group_packed`): no array of all pairs, no sort of all pairs.

    Above :data:`SPILL_PAIRS` pairs the sorted runs are spilled to a temporary directory (the
    system's, ``TMPDIR``; see :class:`_Spill`) and each bucket is read back from it, so the driver
    holds about one bucket's arrays and the encoded pages: the structure is the same byte for byte.

    A build (``fp_bits`` None) with ``fuse_mode`` ``always``, or ``auto`` when :func:`.fuse_build.still_pays`,
    also maps every key to its file, or to "in the pages" for the keys in several files, in a
    retrieval structure (:mod:`.fuse`), built shard by shard as the buckets are merged (a shard: the
    keys of a run of buckets); the pages then hold only the keys in several files."""
    idx_bits = max(0, (len(entries) - 1).bit_length())
    if fp_bits is not None and fp_bits + idx_bits > 64:  # fingerprints wider than the hash bits a word keeps
        return (*_read_grouped_wide(store, files, entries, ids, column, kt, fp_bits), None)
    with _Spill() as spill:
        return _grouped(store, files, entries, ids, column, kt, fp_bits, fpp, idx_bits, spill,
                        fuse_mode if fp_bits is None else "never")


def _bounded_map(pool: ThreadPoolExecutor, fn: Any, items: Iterable[Any], ahead: int) -> Iterator[Any]:
    """``pool.map`` that runs at most ``ahead`` items ahead of the consumer (bounded results in memory)."""
    it = iter(items)
    pending = deque(pool.submit(fn, x) for x in itertools.islice(it, ahead))
    try:
        while pending:
            r = pending.popleft().result()
            for x in itertools.islice(it, 1):
                pending.append(pool.submit(fn, x))
            yield r
    finally:
        for f in pending:
            f.cancel()


def _grouped(store: IndexStore, files: Any, entries: list[FileEntry], ids: Sequence[int], column: str,
             kt: KeyType, fp_bits: int | None, fpp: float, idx_bits: int, spill: _Spill, fuse_mode: str
             ) -> tuple[HashedRef | None, set[int], int, int, FuseRef | None]:
    per_file: list[np.ndarray] = []  # the in-memory runs (until SPILL_PAIRS pairs)
    if fuse_mode == "always":  # numba's import and code load while the files are read ("auto": once planned)
        warm_up()
    fine = np.arange(1 << BUCKET_BITS, dtype=np.uint64) << np.uint64(64 - BUCKET_BITS)
    nulls: set[int] = set()
    ranges: dict[int, tuple[Any, Any]] = {}
    ctx = contextvars.copy_context()  # the caller's storage options hold in every thread
    threads = 1 if sum(f.size for f in entries) < SERIAL_READ_BYTES else max(1, min(READ_THREADS, len(entries)))
    held = 0
    with ThreadPoolExecutor(max_workers=threads) if threads > 1 else contextlib.nullcontext() as pool:
        read = (lambda a: ctx.copy().run(_packed_file, a[1].path, column, kt, a[0], idx_bits)) if pool else \
            (lambda a: _packed_file(a[1].path, column, kt, a[0], idx_bits))
        got = _bounded_map(pool, read, enumerate(entries), 2 * threads) if pool else map(read, enumerate(entries))
        for fid, (packed, n_null, rows, lo, hi) in zip(ids, got):
            files[fid].num_rows = rows
            if n_null:
                nulls.add(fid)
            if len(packed):
                per_file.append(packed)
                ranges[fid] = (lo, hi)
                held += len(packed)
                if spill.active or held > SPILL_PAIRS:  # a large table: runs go to disk
                    for run in per_file:
                        spill.put_run(run, np.append(np.searchsorted(run, fine), len(run)))
                    per_file.clear()
    if not ranges:
        return None, nulls, fp_bits if fp_bits is not None else fingerprint_bits(0, fpp), 0, None
    n_pairs = spill.run_pairs + sum(len(f) for f in per_file)
    # bucket b of a file: its slice of hashes with top bits b (the file is sorted)
    bucket_bits = max(0, min(BUCKET_BITS, (n_pairs // BUCKET_PAIRS).bit_length() - 1))
    n_buckets = 1 << bucket_bits
    source: _Spill | _Held = spill if spill.active else _Held(per_file)
    source.start_buckets(bucket_bits)
    n_keys = n_single = 0
    max_fid = max(ids)
    id_of = np.asarray(ids, np.uint32)
    rt: FuseBuilder | None = None
    try:
        for b in range(n_buckets):  # pass 1: merge each bucket's slices, count its keys, keep the merged bucket
            merged = _dedup_sorted(source.read_run_bucket(b))
            keys_here = _count_prefixes(merged, idx_bits)
            n_keys += keys_here
            if fuse_mode != "never":
                one = one_file(merged, idx_bits)
                single_here = int(np.count_nonzero(one))
                n_single += single_here
                if b == 0:  # planned from the first bucket (a random share of the keys): its shards then
                    # peel in threads while the other buckets merge
                    rt = FuseBuilder.planned(fuse_mode, keys_here * n_buckets, single_here * n_buckets, max_fid,
                                              fpp, idx_bits, bucket_bits, store, n_pairs)
                if rt is not None:
                    rt.add_bucket(b, merged, one, id_of)
            source.put_bucket(merged)
        source.drop_runs()
        if rt is not None and fuse_mode == "auto" and not still_pays(n_keys, n_single, max_fid, fpp, rt.slot_bits):
            rt.close()  # the first bucket misled the plan: the pages alone are smaller
            rt = None
        if fp_bits is None:
            fp_bits = min(fingerprint_bits(n_keys, fpp - (rt.fpp if rt else 0.0)), 64 - idx_bits)
        # pass 2: the distinct fingerprints (which size the pages): sorted words, sorted fingerprints
        n_fps = sum(_count_prefixes(_multi(source.read_bucket(b), idx_bits, rt), 64 - fp_bits)
                    for b in range(n_buckets))
        page_bits = page_bits_for(n_fps, fp_bits)
        fid_width = max(1, max(ranges).bit_length())
        pages = PageSink()  # sealed as encoded; spooled to a temporary file past SPOOL_BYTES (a large table)
        small: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        pairs = 0
        for b in range(n_buckets):  # pass 3: group and encode each bucket's pages
            words = _multi(source.take_bucket(b), idx_bits, rt)
            g, counts, gidx, _, _ = group_packed(words, idx_bits, fp_bits, fpp, is_sorted=True)
            pairs += len(gidx)
            if page_bits >= bucket_bits:  # each bucket holds whole pages: encoded bucket by bucket
                per_bucket = 1 << (page_bits - bucket_bits)
                pages.extend(encode_pages(g, counts, id_of[gidx], fp_bits, page_bits, fid_width, b * per_bucket,
                                          per_bucket))
            else:  # a small structure (fewer pages than buckets)
                small.append((g, counts, id_of[gidx]))
        if small:
            pages.extend(encode_pages(*(np.concatenate([g[k] for g in small]) for k in range(3)), fp_bits, page_bits,
                                      fid_width))
        order = sorted(ranges)
        ref = store.write_hashed_pages(pages, fp_bits, page_bits, fid_width, n_fps, pairs, np.asarray(order, np.int64),
                                       _key_array([ranges[i][0] for i in order]),
                                       _key_array([ranges[i][1] for i in order]))
        return ref, nulls, fp_bits, n_keys, rt.write(ref) if rt is not None else None
    finally:
        if rt is not None:  # a failed build leaves no peeling thread behind
            rt.close()


def _multi(words: np.ndarray, idx_bits: int, rt: FuseBuilder | None) -> np.ndarray:
    """The words the pages hold: all, or beside a retrieval structure those of keys in several files."""
    return words if rt is None else words[~one_file(words, idx_bits)]


def _count_prefixes(s: np.ndarray, low_bits: int) -> int:
    """Distinct values of ``s >> low_bits`` (``s`` sorted)."""
    if not len(s):
        return 0
    prefix = s >> np.uint64(low_bits)
    return 1 + int(np.count_nonzero(prefix[1:] != prefix[:-1]))


class _Held:
    """The in-memory twin of :class:`_Spill`'s buckets: the files' sorted runs and the merged buckets,
    held (a table of up to :data:`SPILL_PAIRS` pairs)."""

    def __init__(self, runs: list[np.ndarray]) -> None:
        self._runs = runs
        self._cuts: list[np.ndarray] = []
        self._buckets: list[np.ndarray] = []

    def start_buckets(self, bucket_bits: int) -> None:
        bounds = np.arange(1 << bucket_bits, dtype=np.uint64) << np.uint64(64 - bucket_bits) if bucket_bits else \
            np.zeros(1, np.uint64)
        self._cuts = [np.append(np.searchsorted(f, bounds), len(f)) for f in self._runs]

    def read_run_bucket(self, b: int) -> np.ndarray:
        parts = [f[c[b]:c[b + 1]] for f, c in zip(self._runs, self._cuts, strict=True) if c[b + 1] > c[b]]
        if len(parts) == 1:
            return parts[0].copy()
        merged = np.concatenate(parts) if parts else np.empty(0, np.uint64)
        merged.sort()
        return merged

    def drop_runs(self) -> None:
        self._runs.clear()
        self._cuts = []

    def put_bucket(self, merged: np.ndarray) -> None:
        self._buckets.append(merged)

    def read_bucket(self, b: int) -> np.ndarray:
        return self._buckets[b]

    def take_bucket(self, b: int) -> np.ndarray:
        """The bucket, released here (the last pass: memory goes as pages are encoded)."""
        got, self._buckets[b] = self._buckets[b], self._buckets[b][:0]
        return got


class _Spill:
    """The driver build's spill: each file's sorted run of packed words, written raw (native uint64)
    to one file in a temporary directory of the system's temp dir (``TMPDIR``), with its per-bucket
    cut positions; then each merged bucket, to a second file. Created lazily (nothing on disk for a
    small table), removed on every exit (a context manager). A failed write (disk full) is a
    :class:`.errors.SieveError` naming the directory: the build stops and writes no index."""

    def __init__(self) -> None:
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._runs: Any = None
        self._run_at: list[tuple[int, np.ndarray]] = []  # (byte offset, cut positions at BUCKET_BITS)
        self.run_pairs = 0
        self._buckets: Any = None
        self._bucket_at: list[tuple[int, int]] = []  # (byte offset, words)
        self._step = 1

    @property
    def active(self) -> bool:
        return self._dir is not None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        for fh in (self._runs, self._buckets):
            if fh is not None:
                fh.close()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def _open(self, name: str) -> Any:
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="sieve-spill-")
        return open(os.path.join(self._dir.name, name), "w+b", buffering=0)

    def _write(self, fh: Any, a: np.ndarray) -> int:
        at = fh.tell()
        view = memoryview(np.ascontiguousarray(a, np.uint64)).cast("B")
        try:
            while len(view):
                view = view[fh.write(view):]
        except OSError as exc:
            raise SieveError(f"the driver build could not write its spill in {self._dir.name if self._dir else ''} "
                             f"({exc}): free space there, point TMPDIR to a larger disk, or build with "
                             "engine='spark'") from exc
        return at

    def _read(self, fh: Any, at: int, out: np.ndarray) -> None:
        view = memoryview(out).cast("B")
        fh.seek(at)
        while len(view):
            n = fh.readinto(view)
            if not n:
                raise SieveError(f"the driver build's spill in {self._dir.name if self._dir else ''} is truncated")
            view = view[n:]

    def put_run(self, run: np.ndarray, cuts: np.ndarray) -> None:
        """A file's sorted run; ``cuts``: its bucket boundaries at :data:`BUCKET_BITS` bits (and its length)."""
        if self._runs is None:
            self._runs = self._open("runs.u64")
        self._run_at.append((self._write(self._runs, run), cuts))
        self.run_pairs += len(run)

    def start_buckets(self, bucket_bits: int) -> None:
        self._step = 1 << (BUCKET_BITS - bucket_bits)  # coarser buckets: every step-th fine cut
        self._buckets = self._open("buckets.u64")

    def read_run_bucket(self, b: int) -> np.ndarray:
        """Bucket ``b``'s slices of every run, merged (sorted)."""
        lo, hi = b * self._step, (b + 1) * self._step
        spans = [(at + 8 * int(c[lo]), int(c[hi] - c[lo])) for at, c in self._run_at if c[hi] > c[lo]]
        out = np.empty(sum(n for _, n in spans), np.uint64)
        pos = 0
        for at, n in spans:
            self._read(self._runs, at, out[pos:pos + n])
            pos += n
        if len(spans) > 1:
            out.sort()
        return out

    def drop_runs(self) -> None:
        """The runs are merged into buckets: their file goes (disk: one copy of the pairs at a time)."""
        self._runs.truncate(0)

    def put_bucket(self, merged: np.ndarray) -> None:
        self._bucket_at.append((self._write(self._buckets, merged), len(merged)))

    def read_bucket(self, b: int) -> np.ndarray:
        at, n = self._bucket_at[b]
        out = np.empty(n, np.uint64)
        self._read(self._buckets, at, out)
        return out

    take_bucket = read_bucket  # nothing held to release


def _dedup_sorted(s: np.ndarray) -> np.ndarray:
    if len(s) < 2:
        return s
    keep = np.empty(len(s), bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s if bool(keep.all()) else s[keep]


def _read_grouped_wide(store: IndexStore, files: Any, entries: list[FileEntry], ids: Sequence[int], column: str,
                       kt: KeyType, fp_bits: int) -> tuple[HashedRef | None, set[int], int, int]:
    """:func:`_read_grouped` with separate file id arrays (fingerprints too wide to pack beside them)."""
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
    if not hs:
        return None, nulls, fp_bits, 0
    hashes = np.concatenate(hs)
    order = sorted(ranges)
    ref = store.write_hashed(fingerprints(hashes, fp_bits), np.concatenate(fs), fp_bits, np.asarray(order, np.int64),
                             _key_array([ranges[i][0] for i in order]), _key_array([ranges[i][1] for i in order]))
    return ref, nulls, fp_bits, distinct(hashes)


def build_local(store: IndexStore, files: list[FileEntry], column: str, kt: KeyType, fpp: float,
                fuse_mode: str = "auto") -> tuple[HashedRef, set[int], int, int, FuseRef | None]:
    """The build's structures from the files read on the driver: (pages' ref, NULL files, fp bits,
    keys, retrieval structure or None; ``fuse_mode``: see :data:`FUSE_MODES`)."""
    ref, nulls, fp_bits, n_keys, rt = _read_grouped(store, files, files, range(len(files)), column, kt, None, fpp,
                                                    fuse_mode)
    if ref is None:  # no file holds a key: an empty structure
        ref = store.write_hashed_groups(np.empty(0, np.uint64), np.empty(0, np.int64), np.empty(0, np.uint32),
                                        fp_bits, np.empty(0, np.int64), np.empty(0, np.int64),
                                        np.empty(0, np.int64))
    return ref, nulls, fp_bits, n_keys, rt


def add_files(store: IndexStore, m: Manifest, files: Mapping[int, FileEntry], new_ids: list[int]
              ) -> tuple[HashedRef | None, set[int], int]:
    """A small structure for files a sync adds (same fingerprint bits): (ref or None, NULL files, pairs)."""
    entries = [files[i] for i in new_ids]
    ref, nulls, _, _, _ = _read_grouped(store, files, entries, new_ids, m.column, m.key_type, m.fp_bits, m.fpp)
    return ref, nulls, 0 if ref is None else ref.pairs


def merge(store: IndexStore, m: Manifest, live: Iterable[int]) -> HashedRef:
    """One structure holding every structure's pairs of live files (compaction).

    Each structure's pairs come out sorted (fingerprint, then file id), so with both packed into one
    word they are sorted runs: one stable sort merges them (a run merge, not a full sort) and the
    build's grouping takes them as they are."""
    keep = np.asarray(sorted(live), np.int64)
    top = int(keep.max()) if len(keep) else 0
    is_live = np.zeros(top + 2, bool)  # by file id; every id beyond the live ones maps to the last (False)
    is_live[keep] = True
    fid_bits = max(1, top.bit_length())
    packed = m.fp_bits + fid_bits <= 64
    runs: list[np.ndarray] = []
    fps, fids, ids, lo, hi = [], [], [], [], []
    for ref in m.hashed:
        header, f, i = store.read_hashed_pairs(ref)
        alive = is_live[np.minimum(i, top + 1)]
        if not alive.all():
            f, i = f[alive], i[alive]
        if packed:
            runs.append((f << np.uint64(64 - m.fp_bits)) | i.astype(np.uint64))
        else:
            fps.append(f)
            fids.append(i)
        ok = is_live[np.minimum(header.file_ids, top + 1)]
        ids.append(header.file_ids[ok])
        lo += np.asarray(header.file_min)[ok].tolist()
        hi += np.asarray(header.file_max)[ok].tolist()
    all_ids = np.concatenate(ids) if ids else np.empty(0, np.int64)
    if packed:
        words = np.concatenate(runs) if runs else np.empty(0, np.uint64)
        words.sort(kind="stable")  # timsort finds the structures' sorted runs
        g, counts, gfids, _, _ = group_packed(words, fid_bits, m.fp_bits, is_sorted=True)
        return store.write_hashed_groups(g, counts, gfids, m.fp_bits, all_ids, _key_array(lo), _key_array(hi))
    return store.write_hashed(np.concatenate(fps) if fps else np.empty(0, np.uint64),
                              np.concatenate(fids) if fids else np.empty(0, np.uint32), m.fp_bits, all_ids,
                              _key_array(lo), _key_array(hi))
