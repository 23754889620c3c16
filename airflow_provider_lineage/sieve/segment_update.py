"""Applying a sync's or a compaction's changes to an ordered index's segments (how: :mod:`.sync`).

:func:`apply_to_segments` is copy-on-write: the segments a change touches are edited in the segment
list, rewritten, re-segmented from their exact blocks (no data read: :func:`exact_offsets`) or
rebuilt from the files' keys (:class:`KeyCache`), and keys outside every segment form new segments in
their gap. :func:`project_budgets` is merge-on-read's: it only charges the budgets in the segment list.
"""
from __future__ import annotations

import contextlib
import itertools
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .keys import as_key_array
from .model import Segment, Segmenter, key_offsets, over_budget
from .sinks import SegmentSink, meta_for
from .storage import IndexStore, Manifest, SegmentList, SegmentMeta, sets_by_segment
from .table import FileEntry, read_file_keys


@dataclass
class _Counts:
    covered: int = 0
    rewritten: int = 0
    rebuilt: int = 0
    created: int = 0
    dropped: int = 0
    keys_read: int = 0


@dataclass
class KeyCache:
    """Keys of files read during one update (each file is read at most once)."""

    manifest: Manifest
    files: Mapping[int, FileEntry]
    cache: dict[int, np.ndarray] = field(default_factory=dict)
    counts: _Counts = field(default_factory=_Counts)

    def keys(self, fid: int) -> np.ndarray:
        if fid not in self.cache:
            try:
                keys, _, _ = read_file_keys(self.files[fid].path, self.manifest.column, self.manifest.key_type)
            except (OSError, KeyError):
                keys = np.empty(0, np.int64)  # gone since listing: the next sync removes it
            self.cache[fid] = keys
            self.counts.keys_read += len(keys)
        return self.cache[fid]


def _ranges(metas: Sequence[SegmentMeta]) -> tuple[np.ndarray, np.ndarray]:
    """The segments' (s_min, s_max) as key arrays, for :func:`_locate` (built once per update)."""
    cols = metas if isinstance(metas, SegmentList) else None
    return (as_key_array(cols.s_min if cols is not None else (m.s_min for m in metas)),
            as_key_array(cols.s_max if cols is not None else (m.s_max for m in metas)))


def _locate(ranges: tuple[np.ndarray, np.ndarray], keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For sorted keys: index of the segment with s_min <= k (-1 if none) and whether k is inside
    (``ranges`` from :func:`_ranges`)."""
    mins, maxs = ranges
    if not len(mins):
        return np.full(len(keys), -1, np.int64), np.zeros(len(keys), bool)
    if keys.dtype == object or mins.dtype == object:
        mins, maxs, keys = mins.astype(object), maxs.astype(object), keys.astype(object)
    pos = np.searchsorted(mins, keys, "right").astype(np.int64) - 1
    inside = (pos >= 0) & (keys <= maxs[np.clip(pos, 0, None)])
    return pos, inside


def _by_segment(keys: np.ndarray, pos: np.ndarray, inside: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(segment index, its keys) for sorted keys located by :func:`_locate` (each segment's keys
    are one slice: no mask per segment)."""
    ks, ps = keys[inside], pos[inside]
    segs, starts = np.unique(ps, return_index=True)
    ends = [*starts[1:].tolist(), len(ps)]
    for i, a, b in zip(segs.tolist(), starts.tolist(), ends):
        yield i, ks[a:b]


PRELOAD_MIN_SEGMENTS = 32  # an update touching this many segments reads their packs whole, once
VECTOR_MIN_KEYS = 512  # re-segment this many keys or more with Segmenter.push_many


def _segments_from(store: IndexStore, m: Manifest, pairs: dict[int, list[int]]) -> list[SegmentMeta]:
    """Segments of (key -> file ids) pairs (written to the open pack)."""
    ks = sorted(pairs)
    keys = None
    if len(ks) >= VECTOR_MIN_KEYS:  # fewer keys: numpy's per-call cost does not pay
        with contextlib.suppress(OverflowError):  # keys beyond int64 (64-bit string keys)
            keys = np.asarray(ks, np.int64)
    if keys is None:
        sink = SegmentSink(store, m.error_bound)
        seg = Segmenter(m.error_bound, m.max_segment_keys, sink, m.gap_factor)
        for k in ks:
            seg.push(k, tuple(sorted(set(pairs[k]))))
        seg.finish()
        return sink.metas
    lens = np.fromiter((len(pairs[k]) for k in ks), np.int64, len(ks))
    fids = np.fromiter(itertools.chain.from_iterable(pairs[k] for k in ks), np.int64, int(lens.sum()))
    return _segments_from_arrays(store, m, np.repeat(keys, lens), fids)


def _segments_from_arrays(store: IndexStore, m: Manifest, keys: np.ndarray, fids: np.ndarray) -> list[SegmentMeta]:
    """Segments of (key, file id) pairs given as two int64 arrays (any order, repeats allowed)."""
    sink = SegmentSink(store, m.error_bound)
    seg = Segmenter(m.error_bound, m.max_segment_keys, sink, m.gap_factor)
    seg.push_pairs(keys, fids)
    seg.finish()
    return sink.metas


# A segment is re-segmented from its own blocks (no data read) only up to this many present keys.
EXACT_RESEGMENT_MAX_KEYS = 1 << 20


def present_offsets(seg: Segment, limit: int = EXACT_RESEGMENT_MAX_KEYS) -> np.ndarray | None:
    """Offsets from ``s_min`` of the keys outside every hole, ascending (None when too many or unknown)."""
    width = int(seg.s_max) - int(seg.s_min) + 1
    if width >= 1 << 62:  # huge decimal spans keep no holes
        return None
    if width - int(seg.hole_len.sum()) > limit:
        return None
    if not len(seg.hole_at):
        return np.arange(width, dtype=np.int64)
    starts = np.concatenate([[0], seg.hole_at + seg.hole_len]).astype(np.int64)
    ends = np.concatenate([seg.hole_at, [width]]).astype(np.int64)
    lens = np.maximum(ends - starts, 0)
    total = int(lens.sum())
    # arange per run [start, end), concatenated without a Python loop
    run_of = np.repeat(np.arange(len(lens)), lens)
    first = np.cumsum(lens) - lens
    return (starts[run_of] + np.arange(total, dtype=np.int64) - first[run_of]).astype(np.int64)


def exact_offsets(seg: Segment) -> tuple[np.ndarray, np.ndarray] | None:
    """Every (key, file id) pair of a segment, when the blocks say so exactly; else None.

    Keys are given as offsets from ``s_min`` (int64), repeated once per file, ascending. A block is
    exact when each of its files holds every present key of the block (its counter equals the
    number of keys of the block outside the holes): then every present key of the block is in
    exactly the block's files. With ``error_bound=0`` every block is exact (the cone forces a flat
    or exactly linear R(k)), so an update can re-segment such a segment without reading data.
    Counters never exceed the true number of keys, so a hole list that missed some absent keys can
    only make a block look inexact (the data is then read), never give a wrong answer. Keys whose
    files were all removed are left out.
    """
    exact = _exact_blocks(seg)
    if exact is None:
        return None
    off, blocks_of, _ = exact
    starts = np.searchsorted(seg.blk, np.arange(seg.b_count), "left").astype(np.int64)
    ends = np.searchsorted(seg.blk, np.arange(seg.b_count), "right").astype(np.int64)
    n = (ends - starts)[blocks_of]  # files of each present key
    total = int(n.sum())
    keys = np.repeat(off, n)
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
    fids = seg.fid.astype(np.int64)[np.repeat(starts[blocks_of], n) + within]
    return keys, fids


def _exact_blocks(seg: Segment) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(present key offsets, their blocks, present keys per block) when every block is exact."""
    off = present_offsets(seg)
    if off is None:
        return None
    blocks_of = off // seg.b_size
    per_block = np.bincount(blocks_of, minlength=seg.b_count)
    if len(seg.fid) and not np.array_equal(seg.cnt.astype(np.int64), per_block[seg.blk.astype(np.int64)]):
        return None
    return off, blocks_of, per_block


def covers_whole_blocks(seg: Segment, adds: list[tuple[int, np.ndarray]]) -> bool:
    """Whether the added files keep an exact segment exact as it is: each holds, of every block,
    all its present keys or none, and no key in a hole.

    Then adding the (block, file) pairs with the block's key count adds no false positive and moves
    no change point of R(k) inside a block, so the segment need not be re-segmented: it is rewritten
    with the new pairs (the common case of a column whose values recur in every new file, e.g. a
    country code or a date every append holds).
    """
    exact = _exact_blocks(seg)
    if exact is None:
        return False
    off, _, per_block = exact
    for _, ks in adds:
        if ks.dtype == object:
            return False
        # an exact segment spans < 2**62 keys (present_offsets): the offsets of its keys fit int64
        o = key_offsets(ks, seg.s_min).astype(np.int64)
        at = np.minimum(np.searchsorted(off, o), len(off) - 1)
        if not np.array_equal(off[at], o):  # a key in a hole (or beyond the present keys)
            return False
        got = np.bincount(o // seg.b_size, minlength=seg.b_count)
        if not bool(np.all((got == 0) | (got == per_block))):
            return False
    return True


def exact_pairs(seg: Segment) -> dict[int, list[int]] | None:
    """:func:`exact_offsets` as a dict of key -> file ids (keys as Python ints: any key width)."""
    got = exact_offsets(seg)
    if got is None:
        return None
    off, fids = got
    out: dict[int, list[int]] = {}
    s_min = int(seg.s_min)
    for o, f in zip(off.tolist(), fids.tolist()):
        out.setdefault(s_min + o, []).append(f)
    return out


def _resegment(store: IndexStore, m: Manifest, seg: Segment, adds: list[tuple[int, np.ndarray]]
               ) -> list[SegmentMeta] | None:
    """The segment with the added (file id, keys) re-segmented from its exact blocks (no data read)."""
    pairs = exact_pairs(seg)
    if pairs is None:
        return None
    for fid, ks in adds:
        for k in ks.tolist():
            pairs.setdefault(int(k), []).append(fid)
    return _segments_from(store, m, pairs) if pairs else []


def _all_full(s_min: int, s_max: int, adds: list[tuple[int, np.ndarray]], newest: int) -> bool:
    """Whether each added file holds every key of the segment's range [s_min, s_max] (and is a
    new file: its id is above every id in the segment list, ``newest``).

    The keys given are the file's unique keys inside the range, so holding as many keys as the
    range is wide means holding all of them. Such files are recorded as the segment's *full* files
    in the segment list and the segment is not rewritten: every key of the range is in each of
    them, so no false positive is added and no change point of R(k) moves (the common case of a
    dense column every load covers, e.g. dates or small codes)."""
    width = int(s_max) - int(s_min) + 1
    return all(ks.dtype != object and len(ks) == width and fid > newest for fid, ks in adds)


def _put_full_in_blocks(seg: Segment, full: np.ndarray) -> None:
    """Write a segment's full files into its blocks (before the segment is rewritten or re-segmented:
    its range may change, and every path below works on the blocks)."""
    if len(full):
        keys = np.arange(int(seg.s_min), int(seg.s_max) + 1, dtype=np.int64)
        for fid in full.tolist():
            seg.add_keys(keys, fid)  # exact: the file holds each of them


def apply_to_segments(store: IndexStore, m: Manifest, metas: Sequence[SegmentMeta],
                      adds: Iterable[tuple[int, np.ndarray]], dead: set[int], charge: bool,
                      cache: KeyCache) -> SegmentList:
    """Copy-on-write application of added (file id, sorted unique keys) and dead file ids.

    Works on the segment list's columns: the segments that only change in the list (untouched,
    a new full file, a dead full file) are edited there, vectorised; only the others are read,
    rewritten or re-segmented (:func:`_rework`)."""
    cols = SegmentList.of(metas)
    ranges = _ranges(cols)
    pending: dict[int, list[tuple[int, np.ndarray]]] = defaultdict(list)
    outside: list[tuple[int, np.ndarray]] = []
    for fid, keys in adds:
        if len(keys) == 0:
            continue
        pos, inside = _locate(ranges, keys)
        for i, ks in _by_segment(keys, pos, inside):
            pending[i].append((fid, ks))
        if not inside.all():
            outside.append((fid, keys[~inside]))
    n = len(cols)
    bounds = np.asarray(cols.bounds, np.int64)
    locs = np.asarray(cols.locs, np.int64)
    seg_of = np.repeat(np.arange(n), np.diff(bounds))
    dead_ids = np.fromiter(dead, np.int64, len(dead))
    is_dead = np.isin(locs, dead_ids) if dead else np.zeros(len(locs), bool)
    full_lens, f_fid = cols.full_columns()
    f_seg = np.repeat(np.arange(n), full_lens)
    in_full = np.isin(seg_of * (1 << 32) + locs, f_seg * (1 << 32) + f_fid)  # one of its segment's full files
    newest = int(locs.max()) if len(locs) else -1
    covered = {i for i, adds_here in pending.items() if _all_full(cols.s_min[i], cols.s_max[i], adds_here, newest)}
    budget, used = _int64_column(cols.ints[2]), _int64_column(cols.ints[3])  # META_INTS order
    work = set(pending) - covered
    work.update(np.flatnonzero((used > 0) & (used >= budget)).tolist())  # over budget: rebuilt
    work.update(np.unique(seg_of[is_dead & ~in_full]).tolist())  # a dead file in the blocks
    out = _rework(store, m, cols, ranges, sorted(work), pending, outside, dead, charge, cache)
    # Everything else changes in the list only: dead full files leave, new full files join.
    keep_loc = ~is_dead
    lens = np.bincount(seg_of[keep_loc], minlength=n)
    edited = locs[keep_loc]
    new_full = cols.full_sets()
    if dead and len(f_fid):
        alive = ~np.isin(f_fid, dead_ids)
        new_full = sets_by_segment(np.bincount(f_seg[alive], minlength=n), f_fid[alive])
    inserts = sorted((i, fid) for i in covered - work for fid, _ in pending[i])
    if inserts:
        at = np.asarray([i for i, _ in inserts], np.int64)
        ends = np.concatenate([[0], np.cumsum(lens)])[at + 1]
        edited = np.insert(edited, ends, np.asarray([fid for _, fid in inserts], np.int64))
        np.add.at(lens, at, 1)
        for i, fid in inserts:
            old = new_full.get(i)
            new_full[i] = np.asarray([fid], np.uint32) if old is None else np.append(old, np.uint32(fid))
    cache.counts.covered += len(covered - work)
    kept = [i for i in range(n) if i not in work and lens[i] > 0]
    cache.counts.dropped += sum(1 for i in range(n) if i not in work and lens[i] == 0)
    edited_cols = SegmentList(cols.s_min, cols.s_max, cols.ints, cols.names, edited.astype(np.uint32),
                              [0, *np.cumsum(lens).tolist()], None, new_full)
    return edited_cols.select(kept).merged(SegmentList.of(out))


def _int64_column(values: Sequence[int]) -> np.ndarray:
    """A budget column as int64; a charge of 2**63 or more (merge-on-read charges ``b_size - 1`` per new
    pair, and a block may be 2**62 keys wide) is clamped to 2**62: over any budget either way."""
    try:
        return np.asarray(values, np.int64)
    except OverflowError:
        return np.asarray([min(int(v), 1 << 62) for v in values], np.int64)


def _rework(store: IndexStore, m: Manifest, cols: SegmentList, ranges: tuple[np.ndarray, np.ndarray],
            work: list[int], pending: dict[int, list[tuple[int, np.ndarray]]], outside: list[tuple[int, np.ndarray]],
            dead: set[int], charge: bool, cache: KeyCache) -> list[SegmentMeta]:
    """The segments ``work`` (ascending) read and rewritten, re-segmented or rebuilt with their new
    keys and without dead files, and new segments for the keys ``outside`` every segment."""
    counts = cache.counts
    out: list[SegmentMeta] = []
    # Outside keys: the gap each lies in (gap p follows segment p); a run takes those of its gaps.
    int_keys = not any(k.dtype == object for _, k in outside) and all(
        isinstance(lo, int) and abs(lo) < 1 << 62 and abs(hi) < 1 << 62 for lo, hi in zip(cols.s_min, cols.s_max))
    okeys = (np.concatenate([k.astype(object) if not int_keys else k for _, k in outside]) if outside
             else np.empty(0, np.int64))
    ofids = np.concatenate([np.full(len(k), fid, np.int64) for fid, k in outside]) if outside else okeys
    opos = _locate(ranges, okeys)[0] if outside else np.empty(0, np.int64)
    taken = np.zeros(len(okeys), bool)
    run: list[tuple[int, np.ndarray, np.ndarray]] = []  # consecutive exact segments: (index, keys, fids)

    def flush_run() -> None:
        # Re-segment consecutive exact segments with their new keys in one vectorised pass (the
        # segments one append touches everywhere are many and small), with the new keys that fall
        # in the gaps between them (so nothing overlaps).
        if not run:
            return
        first, last = run[0][0], run[-1][0]
        inner = (opos >= first) & (opos < last) & ~taken
        taken[inner] = True
        keys = np.concatenate([k for _, k, _ in run] + [okeys[inner].astype(np.int64)])
        fids = np.concatenate([f for _, _, f in run] + [ofids[inner]])
        out.extend(_segments_from_arrays(store, m, keys, fids))
        counts.rebuilt += len(run)
        run.clear()

    touched = [cols.names[i] for i in work]
    with store.packs_in_memory(touched if len(touched) >= PRELOAD_MIN_SEGMENTS else []):
        for i in work:  # a segment left out ends a run, as run[-1][0] != i - 1 tells
            meta = cols[i]
            seg = store.read_segment(meta.file)
            _put_full_in_blocks(seg, np.asarray([f for f in meta.full.tolist() if f not in dead], np.int64))
            seg.drop_locations(dead)
            adds_here = pending.get(i, [])
            if adds_here and seg.b_size > 1 and covers_whole_blocks(seg, adds_here):
                flush_run()
                for fid, ks in adds_here:
                    seg.add_keys(ks, fid)  # whole blocks: the counters equal the blocks' key counts
                out.append(meta_for(store, seg, m.error_bound, meta.used))
                counts.rewritten += 1
                continue
            if adds_here and seg.b_size > 1 and int_keys:
                got = exact_offsets(seg)
                if got is not None:
                    if run and run[-1][0] != i - 1:
                        flush_run()
                    keys = [got[0] + np.int64(seg.s_min)] + [ks.astype(np.int64) for _, ks in adds_here]
                    fids = [got[1]] + [np.full(len(ks), fid, np.int64) for fid, ks in adds_here]
                    run.append((i, np.concatenate(keys), np.concatenate(fids)))
                    continue
            flush_run()
            if adds_here and seg.b_size > 1:
                # New (block, file) pairs would add false positives: re-segment exactly instead, from
                # the segment's own blocks when they are exact (no data read); else the budget decides.
                exact = _resegment(store, m, seg, adds_here)
                if exact is not None:
                    out.extend(exact)
                    counts.rebuilt += 1
                    continue
            used, n_keys = meta.used, seg.n_keys
            for fid, ks in pending.get(i, []):
                new_pairs = seg.add_keys(ks, fid)
                n_keys += len(ks)
                if charge and seg.b_size > 1:
                    used += new_pairs * (seg.b_size - 1)
            seg.n_keys = n_keys
            if over_budget(used, meta.budget):
                pairs: dict[int, list[int]] = defaultdict(list)
                for fid in seg.locations().tolist():
                    keys = cache.keys(fid)
                    for k in keys[(keys >= seg.s_min) & (keys <= seg.s_max)].tolist():
                        pairs[k].append(fid)
                out.extend(_segments_from(store, m, pairs))
                counts.rebuilt += 1
            elif seg.empty:
                counts.dropped += 1
            else:
                out.append(meta_for(store, seg, m.error_bound, used))
                counts.rewritten += 1
    flush_run()
    if len(okeys) and not taken.all():
        # Keys of one gap never straddle a segment: segment each gap's keys on its own.
        for p in np.unique(opos[~taken]).tolist():
            here = (opos == p) & ~taken
            if not int_keys:
                gap: dict[int, list[int]] = defaultdict(list)
                for k, f in zip(okeys[here].tolist(), ofids[here].tolist()):
                    gap[int(k)].append(f)
                new = _segments_from(store, m, gap)
            else:
                new = _segments_from_arrays(store, m, okeys[here].astype(np.int64), ofids[here])
            counts.created += len(new)
            out.extend(new)
    return out


def project_budgets(metas: list[SegmentMeta], adds: Iterable[tuple[int, np.ndarray]]) -> list[SegmentMeta]:
    """Merge-on-read: charge ``b_size - 1`` per new (block, file) pair without touching segments."""
    metas = [SegmentMeta(**vars(s)) for s in metas]
    ranges = _ranges(metas)
    for fid, keys in adds:
        if len(keys) == 0:
            continue
        pos, inside = _locate(ranges, keys)
        for i, ks in _by_segment(keys, pos, inside):
            s = metas[i]
            if s.b_size > 1 and not _all_full(
                s.s_min, s.s_max, [(fid, ks)], int(s.locations.max()) if len(s.locations) else -1
            ):
                # a full file will cost nothing
                blocks = {(int(k) - s.s_min) // s.b_size for k in ks.tolist()}
                s.used += len(blocks) * (s.b_size - 1)
    return metas
