"""The Sieve model: R(k), segmentation with a slope cone, equal-width blocks, counters and budgets.

Pure Python + numpy; no Spark, no I/O.

* ``R(k)`` counts how often the location set (set of file ids) changes between consecutive keys.
* :class:`Segmenter` consumes ``(key, location set)`` pairs in ascending key order and closes a
  segment when the slope ``(R(k)-R(s_min))/(k-s_min)`` leaves the cone ``[slLow, slHigh]`` (error
  bound ``e``), when the segment reaches ``max_segment_keys`` keys (memory bound), or at a gap
  larger than ``gap_factor`` times the segment's mean key spacing (so that keys absent from the
  table answer "no file" instead of a flat segment's location set).
* :func:`make_segment` cuts a segment of ``W = s_max - s_min + 1`` integer keys into
  ``b_count`` equal-width blocks, ``b_count = min(R(s_max) - R(s_min) + 1, W)``,
  ``b_size = ceil(W / b_count)``; key ``k`` is in block ``(k - s_min) // b_size``.
  Each block holds its location set with a counter per location (number of distinct keys of the
  block present in that location). The segment's error budget is ``E = e * b_count``.
* :class:`Segment` is stored as three parallel arrays sorted by (block, file id):
  ``blk``, ``fid``, ``cnt``. Updates are vectorised merges of (block, fid, count) triples.
* **Holes** (format 3): the runs of integer keys inside ``[s_min, s_max]`` that no file holds
  (``hole_at`` offsets from ``s_min``, ``hole_len`` lengths, sorted). A block answers its location
  set only for keys outside every hole, and a range is first shrunk to the present keys at its
  ends, so an absent key between two present keys of one block answers no file (sparse codes,
  TPC-H order keys). Holes are kept while they pay: at most ``max(1, n_keys // KEYS_PER_HOLE)``
  per segment, the longest first. Adding a key inside a hole splits the hole (never a false
  negative); removing a file leaves holes as they are (only fewer files answer).
* **Spans**: a segment whose keys fit int64 spans less than :data:`MAX_SEGMENT_SPAN` keys
  (``s_max - s_min < 2**62``; the segmenter closes it before), so every key offset, block and hole
  offset fits int64 exactly. Offsets of int64 keys are taken in uint64 (:func:`key_offsets`: exact
  for ``key >= s_min``, never wrapping), and keys beyond int64 use Python ints. A segment with both
  ends in int64 that spans ``2**63`` keys or more can only come from a build before this rule (its
  blocks were computed with wrapped int64 offsets): it answers all its blocks (a full read of its
  files, never a false negative) until a sync or build rewrites it.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

# At most one stored hole per this many keys of a segment (the longest holes are kept): bounds the
# hole lists to about two small varints per KEYS_PER_HOLE keys, before compression.
KEYS_PER_HOLE = 1
_EMPTY = np.empty(0, np.int64)
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
# A segment whose keys fit int64 spans fewer keys than this (s_max - s_min < MAX_SEGMENT_SPAN).
MAX_SEGMENT_SPAN = 1 << 62
_U64 = (1 << 64) - 1


def fits_int64(value: int) -> bool:
    return INT64_MIN <= value <= INT64_MAX


def key_offsets(keys: np.ndarray, s_min: int) -> np.ndarray:
    """``keys - s_min`` of int64 keys as uint64: exact for every key ``>= s_min`` (an int64 offset
    wraps once the span reaches 2**63; a uint64 one holds any span of int64 keys)."""
    return keys.astype(np.int64, copy=False).view(np.uint64) - np.uint64(int(s_min) & _U64)


def blocks_of_keys(keys: Sequence[int] | np.ndarray, s_min: int, b_size: int) -> np.ndarray:
    """Block ``(k - s_min) // b_size`` of each key ``k >= s_min`` (int64), without wrap-around: int64
    keys in uint64 (:func:`key_offsets`), other keys (beyond int64) as Python ints."""
    s_min, b_size = int(s_min), int(b_size)
    if isinstance(keys, np.ndarray) and keys.dtype != object and fits_int64(s_min):
        if b_size > _U64:  # one block of more than 2**64 keys
            return np.zeros(len(keys), np.int64)
        return (key_offsets(keys, s_min) // np.uint64(b_size)).astype(np.int64)
    return np.fromiter(((int(k) - s_min) // b_size for k in keys), dtype=np.int64, count=len(keys))


def in_doubt(s_min: int, s_max: int) -> bool:
    """A segment of int64 keys spanning 2**63 keys or more: written before :data:`MAX_SEGMENT_SPAN`,
    with blocks from wrapped int64 offsets, so its blocks cannot be trusted."""
    return int(s_max) - int(s_min) >= 1 << 63 and fits_int64(int(s_min)) and fits_int64(int(s_max))


@dataclass
class Segment:
    """One segment: key range, block width and the (block, file id, counter) triples."""

    s_min: int
    s_max: int
    b_size: int
    b_count: int
    blk: np.ndarray  # uint32, sorted (with fid) ascending
    fid: np.ndarray  # uint32
    cnt: np.ndarray  # uint32: distinct keys of the block held by the file
    n_keys: int = 0
    hole_at: np.ndarray = field(default_factory=lambda: _EMPTY)  # int64 offsets from s_min, ascending
    hole_len: np.ndarray = field(default_factory=lambda: _EMPTY)  # int64 lengths (>= 1)

    def block_of(self, key: int) -> int:
        """Block index of ``key`` (O(1)); the key must lie in [s_min, s_max]."""
        return int((key - self.s_min) // self.b_size)

    def locations(self) -> np.ndarray:
        """Sorted unique file ids present in any block."""
        return np.unique(self.fid)

    def fids_in_blocks(self, b0: int, b1: int) -> np.ndarray:
        """Unique file ids of blocks ``b0..b1`` (inclusive)."""
        i0 = int(np.searchsorted(self.blk, b0, "left"))
        i1 = int(np.searchsorted(self.blk, b1, "right"))
        return np.unique(self.fid[i0:i1])

    def fids_for_range(self, lo: int, hi: int) -> np.ndarray:
        """File ids that may hold a key in [lo, hi] (clipped to the segment, shrunk past holes)."""
        span = block_span(self, lo, hi)
        return np.empty(0, np.uint32) if span is None else self.fids_in_blocks(*span)

    def fill_holes(self, keys: np.ndarray) -> None:
        """Keys now present (``s_min <= k <= s_max``): split every hole that holds one of them."""
        if not len(self.hole_at) or not len(keys):
            return
        # holes are kept only below a span of 2**62: every offset of a key of the segment fits int64
        if keys.dtype != object and fits_int64(int(self.s_min)):
            off = key_offsets(keys, self.s_min).astype(np.int64)
        else:
            off = np.asarray([int(k) - self.s_min for k in keys], np.int64)
        at, ln = self.hole_at, self.hole_len
        pos = np.searchsorted(at, off, "right") - 1
        hit = (pos >= 0) & (off < at[np.clip(pos, 0, None)] + ln[np.clip(pos, 0, None)])
        if not hit.any():
            return
        new_at: list[int] = []
        new_len: list[int] = []
        touched = set(np.unique(pos[hit]).tolist())
        by_hole: dict[int, list[int]] = {}
        for p, o in zip(pos[hit].tolist(), off[hit].tolist()):
            by_hole.setdefault(p, []).append(o)
        for i in range(len(at)):
            a, end = int(at[i]), int(at[i] + ln[i])  # [a, end)
            if i not in touched:
                new_at.append(a)
                new_len.append(end - a)
                continue
            start = a
            for o in sorted(set(by_hole[i])):
                if o > start:
                    new_at.append(start)
                    new_len.append(o - start)
                start = o + 1
            if end > start:
                new_at.append(start)
                new_len.append(end - start)
        self.hole_at = np.asarray(new_at, np.int64)
        self.hole_len = np.asarray(new_len, np.int64)

    def block_locations(self, b: int) -> dict[int, int]:
        """Location set of block ``b`` with counters (for tests and inspection)."""
        i0 = int(np.searchsorted(self.blk, b, "left"))
        i1 = int(np.searchsorted(self.blk, b, "right"))
        return {int(f): int(c) for f, c in zip(self.fid[i0:i1], self.cnt[i0:i1])}

    # ---- updates -----------------------------------------------------------------------------
    def add_keys(self, keys: np.ndarray, file_id: int) -> int:
        """Add index records ``(k, file_id)`` for keys inside the segment (unique keys).

        Returns the number of (block, location) pairs that were new: each such pair makes the
        other ``b_size - 1`` keys of the block false positives for that file, so the caller adds
        ``new_pairs * (b_size - 1)`` to the segment's used error budget.
        """
        if len(keys) == 0:
            return 0
        self.fill_holes(keys)
        blocks = blocks_of_keys(keys, self.s_min, self.b_size)
        ub, counts = np.unique(blocks, return_counts=True)
        return self.add_pairs(ub, np.full(len(ub), file_id, np.int64), counts)

    def add_pairs(self, blocks: np.ndarray, fids: np.ndarray, counts: np.ndarray) -> int:
        """Merge (block, fid, count) triples; returns how many (block, fid) pairs are new.

        The segment's triples are sorted by (block, fid), so the new pairs are merged in by binary
        search (O(triples) copies, no sort of the whole segment)."""
        old = _pair_code(self.blk, self.fid)
        new, inv = np.unique(_pair_code(np.asarray(blocks), np.asarray(fids)), return_inverse=True)
        add = np.bincount(inv.ravel(), weights=np.asarray(counts, np.int64), minlength=len(new)).astype(np.int64)
        if len(old) > 1 and not bool(np.all(old[1:] > old[:-1])):  # not sorted: merge by sorting
            codes = np.concatenate([old, new])
            weights = np.concatenate([self.cnt.astype(np.int64), add])
            uc, inv2 = np.unique(codes, return_inverse=True)
            n_new = len(uc) - len(np.unique(old))
            self.blk, self.fid = _pair_decode(uc)
            self.cnt = np.bincount(inv2.ravel(), weights=weights).astype(np.uint32)
            return n_new
        pos = np.searchsorted(old, new)
        found = pos < len(old)
        found[found] = old[pos[found]] == new[found]
        cnt = self.cnt.astype(np.int64)
        np.add.at(cnt, pos[found], add[found])
        fresh = ~found
        codes = np.insert(old, pos[fresh], new[fresh])
        self.blk, self.fid = _pair_decode(codes)
        self.cnt = np.insert(cnt, pos[fresh], add[fresh]).astype(np.uint32)
        return int(fresh.sum())

    def remove_pairs(self, blocks: np.ndarray, fids: np.ndarray, counts: np.ndarray) -> None:
        """Decrement counters of (block, fid) by ``counts``; a location at 0 leaves the block."""
        return self.add_pairs_signed(np.asarray(blocks), np.asarray(fids), -np.asarray(counts, np.int64))

    def add_pairs_signed(self, blocks: np.ndarray, fids: np.ndarray, counts: np.ndarray) -> None:
        old = _pair_code(self.blk, self.fid)
        codes = np.concatenate([old, _pair_code(blocks, fids)])
        weights = np.concatenate([self.cnt.astype(np.int64), counts.astype(np.int64)])
        uc, inv = np.unique(codes, return_inverse=True)
        summed = np.bincount(inv, weights=weights).astype(np.int64)
        keep = summed > 0
        self.blk, self.fid = _pair_decode(uc[keep])
        self.cnt = summed[keep].astype(np.uint32)

    def drop_locations(self, dead: Iterable[int]) -> bool:
        """Remove whole locations (deleted/rewritten files) from every block; True if any removed.

        No data is read: dropping a file removes all of its (k, file) records, i.e. its counter
        goes to 0 in every block. This never adds false positives.
        """
        dead_arr = np.fromiter(dead, dtype=np.int64)
        if len(dead_arr) == 0 or len(self.fid) == 0:
            return False
        mask = np.isin(self.fid.astype(np.int64), dead_arr)
        if not mask.any():
            return False
        keep = ~mask
        self.blk, self.fid, self.cnt = self.blk[keep], self.fid[keep], self.cnt[keep]
        return True

    @property
    def empty(self) -> bool:
        return len(self.fid) == 0


class SegmentShape(Protocol):
    """What :func:`block_span` needs of a segment (a :class:`Segment` or a paged one)."""

    s_min: int
    s_max: int
    b_size: int
    hole_at: np.ndarray
    hole_len: np.ndarray


def block_span(seg: SegmentShape, lo: int, hi: int) -> tuple[int, int] | None:
    """Blocks ``(b0, b1)`` that may hold a key in [lo, hi]: the range clipped to the segment and
    shrunk past holes at its ends; None when no key of the segment can match."""
    lo, hi = max(lo, seg.s_min), min(hi, seg.s_max)
    if lo > hi:
        return None
    if in_doubt(seg.s_min, seg.s_max):  # blocks from wrapped offsets: every block may hold the key
        return 0, (int(seg.s_max) - int(seg.s_min)) // int(seg.b_size)
    at, ln = seg.hole_at, seg.hole_len
    if len(at):
        i = int(np.searchsorted(at, lo - seg.s_min, "right")) - 1
        if i >= 0 and lo - seg.s_min < at[i] + ln[i]:
            lo = seg.s_min + int(at[i] + ln[i])
        j = int(np.searchsorted(at, hi - seg.s_min, "right")) - 1
        if j >= 0 and hi - seg.s_min < at[j] + ln[j]:
            hi = seg.s_min + int(at[j]) - 1
        if lo > hi:
            return None
    return int((lo - seg.s_min) // seg.b_size), int((hi - seg.s_min) // seg.b_size)


def _starts(lens: np.ndarray) -> np.ndarray:
    """Offsets of each set in the concatenated file ids, and the total at the end."""
    out = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=out[1:])
    return out


def key_runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For sorted keys with repeats: the index of each distinct key's first row and its row count."""
    first = np.ones(len(keys), bool)
    first[1:] = keys[1:] != keys[:-1]
    starts = np.flatnonzero(first)
    return starts, np.diff(np.append(starts, len(keys)))


def sorted_pairs(keys: np.ndarray, fids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(key, file id) int64 pairs sorted by key then file id, without repeats.

    When the keys span less than 2**31 and the ids fit 32 bits (the usual case) each pair is one
    int64 code, ``(key - min) << 32 | id``, and one sort of the codes does it (about 8x faster
    than a lexsort of the two columns); else the two columns are lexsorted.
    """
    if not len(keys):
        return keys, fids
    lo, hi = int(keys.min()), int(keys.max())
    if hi - lo < 1 << 31 and int(fids.min()) >= 0 and int(fids.max()) < 1 << 32:
        codes = np.sort(((keys - np.int64(lo)) << np.int64(32)) | fids)
        keep = np.ones(len(codes), bool)
        keep[1:] = codes[1:] != codes[:-1]
        codes = codes[keep]
        return (codes >> np.int64(32)) + np.int64(lo), codes & np.int64(0xFFFFFFFF)
    order = np.lexsort((fids, keys))
    keys, fids = keys[order], fids[order]
    keep = np.ones(len(keys), bool)
    keep[1:] = (keys[1:] != keys[:-1]) | (fids[1:] != fids[:-1])
    return keys[keep], fids[keep]


def _set_changes(lens: np.ndarray, fids: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``out[i]``: whether set ``i`` differs from set ``i - 1`` (``out[0]`` is True)."""
    n = len(lens)
    out = np.ones(n, bool)
    if n < 2:
        return out
    same_len = np.flatnonzero(lens[1:] == lens[:-1]) + 1  # rows whose size equals the previous row's
    out[same_len] = False
    ln = lens[same_len]
    single = ln == 1  # one file each (a key in one file: the common case) -- compare directly
    if single.any():
        rows = same_len[single]
        out[rows] = fids[starts[rows]] != fids[starts[rows - 1]]
        same_len, ln = same_len[~single], ln[~single]
    total = int(ln.sum())
    if total:
        row = np.repeat(same_len, ln)
        pos = np.repeat(starts[same_len], ln) + np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(ln) - ln, ln)
        differs = fids[pos] != fids[pos - np.repeat(ln, ln)]  # the same element of the previous row
        out[np.unique(row[differs])] = True
    return out


def _pair_code(blk: np.ndarray, fid: np.ndarray) -> np.ndarray:
    return (np.asarray(blk, np.int64) << 32) | np.asarray(fid, np.int64)


def _pair_decode(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (codes >> 32).astype(np.uint32), (codes & 0xFFFFFFFF).astype(np.uint32)


def budget_for(error_bound: int, b_count: int) -> int:
    """Segment error budget ``s.E = e * b_count``."""
    return int(error_bound) * int(b_count)


def over_budget(used: int, budget: int) -> bool:
    """A segment must be rebuilt once ``s.e >= s.E`` (and it has taken any extra false positive)."""
    return used > 0 and used >= budget


def make_segment(keys: Sequence[int], locs: Sequence[Sequence[int]], r_changes: int) -> Segment:
    """Form the blocks of a closed segment.

    ``keys`` ascending unique ints, ``locs[i]`` the file ids of ``keys[i]``, ``r_changes`` =
    R(s_max) - R(s_min).
    """
    lens = np.fromiter((len(x) for x in locs), dtype=np.int64, count=len(locs))
    fids = np.fromiter(itertools.chain.from_iterable(locs), dtype=np.int64, count=int(lens.sum()))
    return make_segment_csr(keys, lens, fids, r_changes)


def make_segment_csr(keys: Sequence[int] | np.ndarray, lens: np.ndarray, fids: np.ndarray, r_changes: int) -> Segment:
    """:func:`make_segment` with the location sets as ``lens`` (set sizes) and ``fids`` (the sets
    concatenated)."""
    s_min, s_max = int(keys[0]), int(keys[-1])
    width = s_max - s_min + 1
    b_count = max(1, min(r_changes + 1, width))
    b_size = -(-width // b_count)
    b_count = -(-width // b_size)
    blocks = blocks_of_keys(keys, s_min, b_size)
    if len(fids):
        codes = _pair_code(np.repeat(blocks, lens), fids)
        uc, cnt = np.unique(codes, return_counts=True)
    else:
        uc, cnt = np.empty(0, np.int64), np.empty(0, np.int64)
    blk, fid = _pair_decode(uc)
    hole_at, hole_len = holes_of(keys)
    return Segment(s_min, s_max, int(b_size), int(b_count), blk, fid, cnt.astype(np.uint32), len(keys),
                   hole_at, hole_len)


def holes_of(keys: Sequence[int], keys_per_hole: int = KEYS_PER_HOLE) -> tuple[np.ndarray, np.ndarray]:
    """The runs of absent keys between ascending unique ``keys`` (offsets from ``keys[0]``).

    At most ``max(1, len(keys) // keys_per_hole)`` holes are kept, the longest ones.
    """
    if len(keys) < 2 or int(keys[-1]) - int(keys[0]) >= 1 << 62:  # huge decimal spans: no holes
        return _EMPTY, _EMPTY
    if isinstance(keys, np.ndarray) and keys.dtype != object:
        k = keys.astype(np.int64)
        off = k - k[0]
    else:
        k0 = int(keys[0])
        off = np.fromiter((int(x) - k0 for x in keys), np.int64, len(keys))
    gaps = np.diff(off) - 1
    idx = np.flatnonzero(gaps > 0)
    cap = max(1, len(keys) // max(1, keys_per_hole))
    if len(idx) > cap:
        idx = np.sort(idx[np.argsort(-gaps[idx], kind="stable")[:cap]])
    return (off[idx] + 1).astype(np.int64), gaps[idx].astype(np.int64)


@dataclass
class Segmenter:
    """Streaming segmentation (one ordered pass, memory bounded by ``max_segment_keys``).

    Call :meth:`push` with keys in strictly ascending order, then :meth:`finish`. ``emit`` gets
    every closed segment (already cut into blocks) and may write it out; nothing of a closed
    segment is kept here.
    """

    error_bound: int
    max_segment_keys: int
    emit: Callable[[Segment], None]
    gap_factor: float = 64.0
    _keys: list[int] = field(default_factory=list)
    _locs: list[tuple[int, ...]] = field(default_factory=list)
    _prev_locs: tuple[int, ...] | None = None
    _carry: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None  # open segment of push_many
    _r: int = 0
    _r_start: int = 0
    _sl_low: float = 0.0
    _sl_high: float = math.inf
    segments: int = 0
    keys_seen: int = 0

    def push(self, key: int, locs: tuple[int, ...]) -> None:
        if self._carry is not None:
            self._carry_to_lists()
        if self._prev_locs is not None and locs != self._prev_locs:
            self._r += 1
        self._prev_locs = locs
        self.keys_seen += 1
        if self._keys:
            prev, s_min = self._keys[-1], self._keys[0]
            if key <= prev:
                raise ValueError(f"keys must be strictly ascending: {key} after {prev}")
            dk = int(key) - int(s_min)  # Python ints: no int64 wrap-around
            dr = self._r - self._r_start
            sl = dr / dk
            n = len(self._keys)
            gap_break = n >= 2 and int(key) - int(prev) > self.gap_factor * max(1.0, (int(prev) - int(s_min)) / (n - 1))
            gap_break |= dk >= MAX_SEGMENT_SPAN and fits_int64(int(s_min)) and fits_int64(int(key))
            if n >= self.max_segment_keys or gap_break or not (self._sl_low <= sl <= self._sl_high):
                self._close()
            else:
                self._sl_high = min(self._sl_high, (dr + self.error_bound) / dk)
                self._sl_low = max(self._sl_low, (dr - self.error_bound) / dk)
                self._keys.append(key)
                self._locs.append(locs)
                return
        self._keys = [key]
        self._locs = [locs]
        self._r_start = self._r
        self._sl_low, self._sl_high = 0.0, math.inf

    def push_many(self, keys: np.ndarray, lens: np.ndarray, fids: np.ndarray) -> None:
        """Push ascending int64 keys at once, their location sets given as ``lens`` (set sizes) and
        ``fids`` (the sorted sets concatenated): the same segments as :meth:`push` per key, found
        with a few numpy passes per segment instead of Python work per key."""
        if not len(keys):
            return
        keys = np.asarray(keys, np.int64)
        lens = np.asarray(lens, np.int64)
        fids = np.asarray(fids, np.int64)
        starts = _starts(lens)
        change = _set_changes(lens, fids, starts)
        change[0] = self._prev_locs is not None and tuple(fids[:lens[0]].tolist()) != self._prev_locs
        r = self._r + np.cumsum(change, dtype=np.int64)
        self._lists_to_carry()
        if self._carry is not None:  # the open segment continues: its keys go in front
            ck, cl, cf, cr = self._carry
            if int(keys[0]) <= int(ck[-1]):
                raise ValueError(f"keys must be strictly ascending: {int(keys[0])} after {int(ck[-1])}")
            keys, lens, fids, r = (np.concatenate(x) for x in ((ck, keys), (cl, lens), (cf, fids), (cr, r)))
            starts = _starts(lens)
        self.keys_seen += len(keys) - (0 if self._carry is None else len(self._carry[0]))
        self._prev_locs = tuple(fids[starts[-2]:].tolist())
        self._r = int(r[-1])
        s, window = 0, 64
        while (end := self._segment_end(keys, r, s, window)) is not None:
            self.segments += 1
            self.emit(make_segment_csr(keys[s:end], lens[s:end], fids[starts[s]:starts[end]],
                                       int(r[end - 1] - r[s])))
            window = max(64, 2 * (end - s))
            s = end
        self._carry = (keys[s:], lens[s:], fids[starts[s]:], r[s:])

    def push_pairs(self, keys: np.ndarray, fids: np.ndarray) -> None:
        """Push (key, file id) pairs given as two int64 arrays, in any order, repeats allowed: each
        key with its sorted set of files, through :meth:`push_many`."""
        if not len(keys):
            return
        keys, fids = sorted_pairs(np.asarray(keys, np.int64), np.asarray(fids, np.int64))
        starts, lens = key_runs(keys)
        self.push_many(keys[starts], lens, fids)

    def _lists_to_carry(self) -> None:
        """The open segment of :meth:`push` (Python lists) as the arrays :meth:`push_many` keeps."""
        if not self._keys:
            return
        ck = np.asarray(self._keys, np.int64)
        cl = np.fromiter((len(x) for x in self._locs), np.int64, len(self._locs))
        cf = np.fromiter(itertools.chain.from_iterable(self._locs), np.int64, int(cl.sum()))
        change = _set_changes(cl, cf, _starts(cl))
        change[0] = False
        self._carry = (ck, cl, cf, self._r_start + np.cumsum(change, dtype=np.int64))
        self._keys, self._locs = [], []

    def _carry_to_lists(self) -> None:
        """The open segment of :meth:`push_many` as the Python lists and cone :meth:`push` keeps."""
        if self._carry is None:
            return
        ck, cl, cf, cr = self._carry
        self._carry = None
        self._keys = ck.tolist()
        self._locs = [tuple(x.tolist()) for x in np.split(cf, np.cumsum(cl)[:-1])]
        self._r_start = int(cr[0])
        self._sl_low, self._sl_high = 0.0, math.inf
        if len(ck) >= 2:
            dk = key_offsets(ck[1:], ck[0]).astype(np.float64)
            dr = (cr[1:] - cr[0]).astype(np.float64)
            self._sl_low = max(0.0, float(((dr - self.error_bound) / dk).max()))
            self._sl_high = float(((dr + self.error_bound) / dk).min())

    def _segment_end(self, keys: np.ndarray, r: np.ndarray, s: int, window: int) -> int | None:
        """Index of the first key after ``s`` that closes the segment starting at ``s`` (None when
        every key up to the end of the arrays fits), by the rules of :meth:`push`."""
        n = len(keys)
        while True:
            hi = min(n, s + 1 + window)
            if hi <= s + 1:
                return None
            off = key_offsets(keys[s + 1:hi], keys[s])  # exact: no int64 wrap-around
            dk = off.astype(np.float64)
            dr = (r[s + 1:hi] - r[s]).astype(np.float64)
            sl = dr / dk
            high = np.minimum.accumulate((dr + self.error_bound) / dk)
            low = np.maximum.accumulate((dr - self.error_bound) / dk)
            ok = (sl >= np.concatenate([[0.0], low[:-1]])) & (sl <= np.concatenate([[math.inf], high[:-1]]))
            before = np.arange(1, hi - s, dtype=np.int64)  # keys of the segment before each key
            prev = np.concatenate([np.zeros(1, np.uint64), off[:-1]])  # offset of the key before
            mean = np.maximum(1.0, prev.astype(np.float64) / np.maximum(before - 1, 1))
            ok &= ~((before >= 2) & ((off - prev).astype(np.float64) > self.gap_factor * mean))
            ok &= (before < self.max_segment_keys) & (off < np.uint64(MAX_SEGMENT_SPAN))
            bad = np.flatnonzero(~ok)
            if len(bad):
                return s + 1 + int(bad[0])
            if hi == n:
                return None
            window *= 4

    def _close(self) -> None:
        self._carry_to_lists()
        if not self._keys:
            return
        # R at the last key of the segment is the R of the key before the current one.
        last_r = self._r if self._locs[-1] == self._prev_locs else self._r - 1
        seg = make_segment(self._keys, self._locs, last_r - self._r_start)
        self._keys, self._locs = [], []
        self.segments += 1
        self.emit(seg)

    def restart(self) -> None:
        """Close the open segment and forget the last location set: the next keys may be lower
        (another key range) and start a segment of their own."""
        self.finish()
        self._prev_locs = None

    def finish(self) -> None:
        """Close the last segment."""
        if self._carry is not None:
            ck, cl, cf, cr = self._carry
            self._carry = None
            self.segments += 1
            self.emit(make_segment_csr(ck, cl, cf, int(cr[-1] - cr[0])))
            return
        if self._keys:
            seg = make_segment(self._keys, self._locs, self._r - self._r_start)
            self._keys, self._locs = [], []
            self.segments += 1
            self.emit(seg)


def segment_pairs(pairs: Iterable[tuple[int, tuple[int, ...]]], *, error_bound: int,
                  max_segment_keys: int, gap_factor: float = 64.0) -> list[Segment]:
    """Segment an in-memory ascending sequence of (key, location set) pairs (tests, rebuilds)."""
    out: list[Segment] = []
    seg = Segmenter(error_bound, max_segment_keys, out.append, gap_factor)
    for k, locs in pairs:
        seg.push(k, locs)
    seg.finish()
    return out
