"""Building a hashed index's retrieval structure (:mod:`.fuse`) while :mod:`.hashed` groups its keys.

The driver build merges the table's (hash, file) words bucket by bucket (the hashes' top bits);
:class:`FuseBuilder` takes each merged bucket's keys, one entry a key (its file when it is in one
file, else the "in the pages" marker) and peels each shard, the keys of a run of buckets, in a
thread as soon as the run is merged, while the build merges the next buckets.
"""
from __future__ import annotations

import math
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from .fingerprints import fingerprint_bits
from .fuse import MAX_SLOT_BITS, Shard, fpp_of, numba_installed, slot_bits_for
from .fuse import build as peel
from .fuse import warm_up as load_compiled
from .storage import FuseRef, HashedRef, IndexStore
from .storage.fuse import pack_slots

FUSE_MIN_KEYS = 1 << 16  # fewer one-file keys: pages (a small structure's size hardly matters)
FUSE_SHARE = 0.9  # of fpp, at most, for the retrieval structure's absent keys (the rest: the pages')
SHARD_KEYS = 1 << 22  # keys per retrieval shard, at most (build memory: about 46 B a key while it peels)
PEEL_THREADS = 2  # shards peeled at once (compiled code runs without the GIL)


_warm_up_started = threading.Event()


def warm_up() -> None:
    """Starts numba's import and the load of the compiled build (0.6-0.9 s in a new process:
    benchmarks/sieve/numba_load.py) in a thread, once a process: when a build plans the structure (or is told
    to build it). Not sooner: which keys are in one file is known only once every file is read, and builds
    without it should not pay."""
    if not _warm_up_started.is_set():
        _warm_up_started.set()
        threading.Thread(target=load_compiled, name="sieve-fuse-warm-up", daemon=True).start()


def one_file(words: np.ndarray, idx_bits: int) -> np.ndarray:
    """Which of a bucket's sorted, distinct (hash, file index) words hold a key that no other word holds."""
    if not len(words):
        return np.zeros(0, bool)
    key = words >> np.uint64(idx_bits)
    differs = key[1:] != key[:-1]
    out = np.ones(len(words), bool)
    out[1:] &= differs
    out[:-1] &= differs
    return out


class FuseBuilder:
    """The retrieval structure of a build: every key, mapped to its file when it is in one file, else
    to "in the pages" (:attr:`marker`, the id after the last file), so that a lookup reads the pages
    only for keys in several files, and an absent key reads nothing more once its check bits fail.
    Each shard (the keys of a run of buckets) is peeled and packed in a thread as soon as its last
    bucket is merged (the build's first pass), while the build merges the next buckets."""

    def __init__(self, store: IndexStore, slot_bits: int, max_fid: int, idx_bits: int, shard_bits: int,
                 bucket_bits: int) -> None:
        self.store, self.slot_bits, self.max_fid, self.idx_bits = store, slot_bits, max_fid, idx_bits
        self.marker = max_fid + 1
        self.fid_bits = max(1, self.marker.bit_length())
        self.fpp = fpp_of(self.marker + 1, slot_bits)
        self.shard_bits, self._per_shard = shard_bits, 1 << (bucket_bits - shard_bits)
        self._keys: list[np.ndarray] = []
        self._fids: list[np.ndarray] = []
        self._parts: list[tuple[bytes, Shard]] = []
        self._pool: ThreadPoolExecutor | None = None
        self._pending: deque[Future[tuple[bytes, Shard]]] = deque()
        self.one_file_keys = 0  # keys mapped to their file (the others: to the marker)

    @classmethod
    def planned(cls, mode: str, n_keys: int, n_single: int, max_fid: int, fpp: float, idx_bits: int,
                bucket_bits: int, store: IndexStore, n_pairs: int) -> FuseBuilder | None:
        """A builder when ``mode`` asks for one, or (``auto``) when numba is installed and the
        structure would be smaller than the pages for the one-file keys (``n_keys`` and ``n_single``:
        estimates); else None. Shards are sized by the pairs (at least the keys)."""
        if mode == "never" or n_keys == 0:
            return None
        slot_bits = slot_bits_for(max_fid + 2, FUSE_SHARE * fpp)  # the files and the marker
        if slot_bits > MAX_SLOT_BITS:
            return None
        if mode == "auto" and not (n_single >= FUSE_MIN_KEYS and fuse_pays(n_keys, n_single, max_fid, fpp, slot_bits)
                                   and numba_installed()):
            return None
        if mode == "auto":  # numba's import and code load (about 1 s of CPU in a new process) while buckets merge
            warm_up()
        shard_bits = min(bucket_bits, max(0, math.ceil(math.log2(max(1, n_pairs) / SHARD_KEYS))))
        return cls(store, slot_bits, max_fid, idx_bits, shard_bits, bucket_bits)

    def add_bucket(self, b: int, words: np.ndarray, one: np.ndarray, id_of: np.ndarray) -> None:
        """Takes bucket ``b``'s keys (its sorted, distinct words; ``one``: :func:`one_file` of them),
        peeling a shard when ``b`` ends one."""
        keys = words >> np.uint64(self.idx_bits)
        first = np.ones(len(words), bool)
        if len(words):
            np.not_equal(keys[1:], keys[:-1], out=first[1:])
        take = one | first  # each key once: one-file keys with their file, the others with the marker
        fids = np.full(len(words), self.marker, np.uint32)
        fids[one] = id_of[(words[one] & np.uint64((1 << self.idx_bits) - 1)).astype(np.int64)]
        self.one_file_keys += int(np.count_nonzero(one))
        self._keys.append(keys[take])
        self._fids.append(fids[take])
        if (b + 1) % self._per_shard == 0:
            self._peel()

    def _peel(self) -> None:
        """Peels and packs the held shard in a thread (numba releases the GIL: the build groups the
        next buckets, and peels the next shard, meanwhile); at most :data:`PEEL_THREADS` at once."""
        keys = np.concatenate(self._keys) if self._keys else np.empty(0, np.uint64)
        fids = np.concatenate(self._fids) if self._fids else np.empty(0, np.uint32)
        self._keys, self._fids = [], []
        while len(self._pending) >= PEEL_THREADS:  # bounded memory: at most PEEL_THREADS shards peel at once
            self._parts.append(self._pending.popleft().result())
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=PEEL_THREADS, thread_name_prefix="sieve-fuse")
        self._pending.append(self._pool.submit(self._peeled, keys, fids))

    def _peeled(self, keys: np.ndarray, fids: np.ndarray) -> tuple[bytes, Shard]:
        table, shard = peel(keys, fids, fid_bits=self.fid_bits, slot_bits=self.slot_bits)
        return pack_slots(table, self.slot_bits), shard

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def write(self, pages: HashedRef) -> FuseRef:
        try:
            while self._pending:
                self._parts.append(self._pending.popleft().result())
        finally:
            self.close()
        return self.store.write_fuse(self._parts, slot_bits=self.slot_bits, fid_bits=self.fid_bits,
                                     max_fid=self.max_fid, key_shift=self.idx_bits, shard_bits=self.shard_bits,
                                     fpp=self.fpp, one_file=self.one_file_keys, pages=pages.name)


def still_pays(n_keys: int, n_single: int, max_fid: int, fpp: float, slot_bits: int) -> bool:
    """The plan, checked again on the whole table's counts (the plan saw the first bucket)."""
    return n_single >= FUSE_MIN_KEYS and fuse_pays(n_keys, n_single, max_fid, fpp, slot_bits)


def fuse_pays(n_keys: int, n_single: int, max_fid: int, fpp: float, slot_bits: int) -> bool:
    """The retrieval structure costs about ``slot_bits`` x 1.1 bits a key (every key); it saves the
    pages' bits of the one-file keys: an Elias-Fano fingerprint (its low bits and about 2), 2 bits
    of file count and a file id each."""
    fp_bits = fingerprint_bits(n_keys, fpp)
    pages = max(0.0, fp_bits - math.log2(max(2, n_keys))) + 4 + max(1, max_fid.bit_length())
    return n_keys * slot_bits * 1.1 < n_single * pages
