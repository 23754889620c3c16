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
"""
from __future__ import annotations

import contextlib
import itertools
import time
import warnings
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import hashed
from .build import SegmentSink, build, meta_for, require_root
from .errors import IndexUnavailable
from .files import reading_as, spark_read_conf
from .keys import as_key_array
from .model import Segment, Segmenter, key_offsets, over_budget
from .query import check_freshness, diff_files, index_location, records_footers
from .records import IndexStats, SyncReport
from .storage import (
    ChangedFiles,
    IndexStore,
    Manifest,
    SegmentList,
    SegmentMeta,
    commit_attempts,
    sets_by_segment,
)
from .table import FileEntry, TableRef, list_table_files, read_file_keys, resolve_table


@dataclass
class _Counts:
    covered: int = 0
    rewritten: int = 0
    rebuilt: int = 0
    created: int = 0
    dropped: int = 0
    keys_read: int = 0


@dataclass
class _KeyCache:
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
                      cache: _KeyCache) -> SegmentList:
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
            dead: set[int], charge: bool, cache: _KeyCache) -> list[SegmentMeta]:
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


def _project_budgets(metas: list[SegmentMeta], adds: Iterable[tuple[int, np.ndarray]]) -> list[SegmentMeta]:
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
        ref, new_nulls, pairs = hashed.add_files(store, base, files, new_ids)
        nulls |= new_nulls
        report.keys_read = pairs
        if ref is not None:
            structures.append(ref)
            report.deltas_written = 1
    new = _new_manifest(base, files=files, next_file_id=next_id, null_files=sorted(nulls), hashed=structures,
                        dead_files=sorted(set(base.dead_files) | set(gone)))
    if len(structures) > hashed.MAX_STRUCTURES:  # bounded however often it syncs without a compact
        new = _new_manifest(new, hashed=[hashed.merge(store, new, files)], dead_files=[])
    return new


def _update(store: IndexStore, base: Manifest, added: list[FileEntry], gone: list[int],
            report: SyncReport) -> Manifest:
    if base.structure == "hashed":
        return _update_hashed(store, base, added, gone, report)
    files, new_ids, next_id = _changed_files(base, added, gone)
    cache = _KeyCache(base, files)
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
        metas = _project_budgets(store.read_segment_list(base.segment_list), adds)
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
                    merged = hashed.merge(store, base, base.files)
                    report.deltas_folded = len(base.hashed) - 1
                    new = _new_manifest(base, hashed=[merged], dead_files=[])
                    report.version = store.commit(new, base.version)
                report.seconds = round(time.monotonic() - t0, 3)
                return report
            if not base.deltas and not base.dead_files and not any(over_budget(s.used, s.budget) for s in metas):
                report.action = "none"
                return report
            cache = _KeyCache(base, base.files)
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
