"""Segments: the piecewise-linear structure for ordered keys, written into packs, and the sorted
segment list that names each segment's byte range, budget, files and full files."""
from __future__ import annotations

import contextlib
import itertools
import secrets
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from ..codec import ZLIB_LEVEL, Reader, Writer, inflate, seal, seal_raw, unseal, unseal_raw
from ..errors import IndexUnavailable
from ..model import Segment, block_span
from .folder import FileRef, Folder

PACK_BYTES = 8 << 20  # a segment pack is written out when it reaches this size
REPACK_MIN_LIVE = 0.5  # updates copy the live segments out of packs with less live data than this
SMALL_PACK_BYTES = 256 << 10  # ... and merge the packs under this size once there are more than
MAX_SMALL_PACKS = 16  # this many (each update writes one small pack: the file count stays bounded)


@dataclass
class SegmentMeta:
    """One entry of the sorted segment list."""

    s_min: int
    s_max: int
    b_size: int
    b_count: int
    budget: int  # s.E = e * b_count
    used: int  # s.e: extra false positives taken by updates since the segment was formed
    n_keys: int
    file: FileRef
    locations: np.ndarray  # sorted unique file ids present in the segment (uint32), full ones included
    # Files holding *every* key of [s_min, s_max] (sorted uint32), recorded here instead of in the
    # segment's blocks: a sync adds such a file without rewriting the segment (see sync.py). Every
    # key of the range that a lookup asks for is in each of them: they answer any overlapping key.
    full: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint32))



class SegmentFiles(Folder):
    """Writes and reads segments (in packs) and segment lists."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self._pack_cache: dict[str, bytes] = {}  # whole packs read by packs_in_memory (one update)
        self._pack = bytearray()  # segments written since the last flush (one pack file)
        self._pack_name: str | None = None
        self._lists: dict[tuple[str, int], Sequence[SegmentMeta]] = {}  # segment lists read or written here

    def write_segment(self, seg: Segment) -> FileRef:
        """Append one segment (format 5) to the open pack; returns its byte range in the pack.

        A segment is a zlib header, then pages of whole blocks, each compressed alone.

        Header: key range, block width and count, key count, the holes (runs of absent keys: gaps
        between holes and lengths) and the page table (first block, compressed length and triple
        count of every page). A page holds the (block, file id, counter) triples of consecutive
        blocks, about :data:`PAGE_TRIPLES` of them, sorted by (block, file id), as three byte-plane
        columns: block deltas from the page's first block, file id deltas within a block (the raw
        id at a block's first triple), counters. A point lookup inflates one page.
        """
        blk = seg.blk.astype(np.int64)
        fid = seg.fid.astype(np.int64)
        cuts = _page_cuts(blk)
        pages: list[bytes] = []
        firsts: list[int] = []
        triples: list[int] = []
        for a, b in itertools.pairwise(cuts):
            pb, pf = blk[a:b], fid[a:b]
            first = np.ones(len(pb), bool)
            first[1:] = pb[1:] != pb[:-1]
            w = Writer()
            w.uints(_deltas(pb, int(pb[0])))
            w.uints(np.where(first, pf, _deltas(pf, 0)))
            w.uints(seg.cnt[a:b])
            pages.append(zlib.compress(bytes(w.buf), ZLIB_LEVEL))
            firsts.append(int(pb[0]))
            triples.append(b - a)
        h = Writer()
        h.svarint(seg.s_min)
        for v in (seg.s_max - seg.s_min, seg.b_size, seg.b_count, seg.n_keys):
            h.uvarint(v)
        ends = seg.hole_at + seg.hole_len
        h.uints(seg.hole_at - np.concatenate([[0], ends[:-1]]).astype(np.int64) if len(ends) else seg.hole_at)
        h.uints(seg.hole_len)
        h.uints(_deltas(np.asarray(firsts, np.int64), 0))
        h.uints(np.asarray([len(x) for x in pages], np.int64))
        h.uints(np.asarray(triples, np.int64))
        out = Writer()
        out.blob(zlib.compress(bytes(h.buf), ZLIB_LEVEL))
        return self._add_to_pack(seal_raw(b"SVS4", bytes(out.buf) + b"".join(pages)))

    def read_segment(self, ref: FileRef) -> Segment:
        """The whole segment (every page decoded): for updates."""
        return self.open_segment(ref).whole()

    def open_segment(self, ref: FileRef) -> PagedSegment:
        """The segment's header, checksum verified; pages are inflated when a lookup needs them."""
        return self._segment_from(ref, self.segment_bytes(ref))

    def _segment_from(self, ref: FileRef, data: bytes) -> PagedSegment:
        return PagedSegment(self._checked(ref, data), f"{self._full(ref.name)}@{ref.offset}")

    def _checked(self, ref: FileRef, data: bytes) -> memoryview:
        """A segment's payload after checking its size and CRC (segment list) and container."""
        where = f"{self._full(ref.name)}@{ref.offset}"
        if len(data) != ref.bytes or zlib.crc32(data) != ref.crc32:
            raise IndexUnavailable(f"segment {where} does not match its checksum in the segment list "
                                   "(corrupt or truncated): rebuild the index")
        return unseal_raw(b"SVS4", data, where)

    def segment_bytes(self, ref: FileRef) -> bytes:
        """The stored bytes of one segment: its range of a pack (one ranged read), unchecked."""
        if ref.name == self._pack_name:  # written by this writer, not flushed yet
            return bytes(self._pack[ref.offset:ref.offset + ref.bytes])
        cached = self._pack_cache.get(ref.name)
        if cached is not None:
            return cached[ref.offset:ref.offset + ref.bytes]
        try:
            if self.local:
                with open(self._full(ref.name), "rb") as fh:
                    fh.seek(ref.offset)
                    return fh.read(ref.bytes)
            filesystem, inner = self._remote(ref.name)
            with filesystem.open_input_file(inner) as fh:
                return fh.read_at(ref.bytes, ref.offset)
        except OSError as exc:
            raise IndexUnavailable(f"index file {self._full(ref.name)} is missing or unreadable ({exc}): "
                                   "rebuild the index") from exc

    @contextlib.contextmanager
    def packs_in_memory(self, names: Iterable[str], limit: int = PACK_BYTES * 4) -> Iterator[None]:
        """Inside the block, segments of these packs are cut from one read of each pack (an update
        that rewrites most segments), up to ``limit`` bytes of packs; forgotten after the block."""
        try:
            total = 0
            for name in dict.fromkeys(names):
                with contextlib.suppress(OSError):  # unreadable: segment_bytes reports it
                    data = self._read_bytes(name)
                    total += len(data)
                    if total > limit:
                        break
                    self._pack_cache[name] = data
            yield
        finally:
            self._pack_cache.clear()

    def _add_to_pack(self, data: bytes) -> FileRef:
        """Append one sealed segment to the open pack (flushed at :data:`PACK_BYTES` and on commit)."""
        if self._pack_name is None:
            self._pack_name = f"seg-{secrets.token_hex(8)}.svs"
        ref = FileRef(self._pack_name, len(data), zlib.crc32(data), 0, len(self._pack))
        self._pack += data
        if len(self._pack) >= PACK_BYTES:
            self.flush_pack()
        return ref

    def flush_pack(self) -> None:
        """Write the open pack (one file; one PUT on an object store)."""
        if self._pack_name is None:
            return
        name, data = self._pack_name, bytes(self._pack)
        self._pack_name, self._pack = None, bytearray()
        with self.writing():
            self._put(name, data)
        self.written.append(name)

    def repack(self, metas: Sequence[SegmentMeta], min_live: float = REPACK_MIN_LIVE) -> Sequence[SegmentMeta]:
        """Copy the live segments of some packs into the open pack, byte for byte, so that those
        packs can be pruned: packs that are mostly dead (live bytes < ``min_live`` of the pack), so
        an index takes at most about ``1 / min_live`` times its live bytes however many updates
        rewrote parts of it; and all small packs once there are more than :data:`MAX_SMALL_PACKS`
        (every update writes one), so the number of files stays bounded too."""
        live: dict[str, int] = {}
        for ref in segment_files(metas):
            live[ref.name] = live.get(ref.name, 0) + ref.bytes
        sizes = self._sizes([n for n in live if n != self._pack_name])
        sparse = {n for n, size in sizes.items() if live[n] < min_live * size}
        small = {n for n, size in sizes.items() if size < SMALL_PACK_BYTES}
        if len(small) > MAX_SMALL_PACKS:
            sparse |= small
        if not sparse:
            return metas
        out = []
        for m in metas:
            if m.file.name in sparse:
                data = self.segment_bytes(m.file)
                self._checked(m.file, data)  # never copy a corrupt segment
                m = SegmentMeta(**{**vars(m), "file": self._add_to_pack(data)})
            out.append(m)
        return out

    def write_segment_list(self, metas: Sequence[SegmentMeta]) -> FileRef:
        """Segment list (SVL6), column by column so that opening an index decodes it vectorised:
        key ranges (ascending), the integer fields (with each segment's byte range in its pack), the
        pack names, then every location set and every set of full files as file id deltas
        (restarting at each segment) with the sets' lengths."""
        w = Writer()
        w.uvarint(len(metas))
        metas = SegmentList.of(metas)
        s_min, s_max, ints, names = metas.s_min, metas.s_max, metas.ints, metas.names
        lens = np.diff(np.asarray(metas.bounds, np.int64))
        flat = np.asarray(metas.locs, np.int64)
        full_lens, full_flat = metas.full_columns()
        w.keys(_key_column(list(s_min)))
        w.keys(_key_column(list(s_max)))
        for column in ints:
            _big_uints(w, list(column))
        w.blob("\n".join(names).encode())
        for set_lens, set_flat in ((lens, flat), (full_lens, full_flat)):
            w.uints(set_lens)
            w.uints(_set_deltas(set_lens, set_flat))
        ref = self._write("segments", ".svl", seal(b"SVL6", bytes(w.buf)), len(metas))
        self._lists[(ref.name, ref.crc32)] = metas
        return ref

    def read_segment_list(self, ref: FileRef | None) -> list[SegmentMeta]:
        """The segment list (decoded once per store: the file is immutable; callers get their own list)."""
        return list(self.segment_list(ref))

    def segment_list(self, ref: FileRef | None) -> Sequence[SegmentMeta]:
        """The segment list as stored (read-only; entries built on access), decoded once per store."""
        if ref is None:
            return []
        known = self._lists.get((ref.name, ref.crc32))
        if known is not None:
            return known
        raw = self._read_checked(ref)
        magic = b"SVL5" if raw[:4] == b"SVL5" else b"SVL6"  # SVL5 (format 5): no full files
        data = unseal(magic, raw, self._full(ref.name))
        try:
            metas = _decode_segment_list(data, full=magic == b"SVL6")
        except (IndexError, ValueError, UnicodeDecodeError) as exc:
            raise IndexUnavailable(f"segment list {ref.name} is truncated (corrupt): rebuild the index") from exc
        self._lists[(ref.name, ref.crc32)] = metas
        return metas


PAGE_TRIPLES = 2048  # triples per segment page (whole blocks: a page may hold more)


def _deltas(a: np.ndarray, before: int) -> np.ndarray:
    """``a[i] - a[i-1]`` with ``a[-1] = before`` (np.diff with prepend, without its overhead)."""
    out = np.empty(len(a), np.int64)
    if len(a):
        out[0] = a[0] - before
        np.subtract(a[1:], a[:-1], out=out[1:])
    return out


def _page_cuts(blk: np.ndarray, size: int = PAGE_TRIPLES) -> list[int]:
    """Triple offsets where pages start (at block boundaries, about ``size`` triples apart) + the end."""
    n = len(blk)
    if n == 0:
        return [0, 0]
    cuts = [0]
    while n - cuts[-1] > size:
        at = cuts[-1] + size
        at = int(np.searchsorted(blk, blk[at], "left"))  # back to the start of that block
        if at <= cuts[-1]:  # one block larger than a page: the page ends after it
            at = int(np.searchsorted(blk, blk[cuts[-1]], "right"))
            if at >= n:
                break
        cuts.append(at)
    cuts.append(n)
    return cuts


class PagedSegment:
    """A segment file's header with its pages inflated on demand (the query path).

    Answers :meth:`fids_for_range` like :meth:`.model.Segment.fids_for_range`, decoding only the
    pages that hold the blocks of the range; :meth:`whole` decodes every page.
    """

    def __init__(self, payload: memoryview, name: str) -> None:
        self.name = name
        try:
            r = Reader(payload)
            header = inflate(r.blob(), name)
            h = Reader(header)
            self.s_min = h.svarint()
            self.s_max = self.s_min + h.uvarint()
            self.b_size, self.b_count, self.n_keys = h.uvarint(), h.uvarint(), h.uvarint()
            hgap, hlen = h.uints().astype(np.int64), h.uints().astype(np.int64)
            firsts, lengths, triples = h.uints(), h.uints(), h.uints()
        except IndexError as exc:
            raise IndexUnavailable(f"segment {name} is truncated (corrupt): rebuild the index") from exc
        if len(hgap) != len(hlen) or not len(firsts) == len(lengths) == len(triples):
            raise IndexUnavailable(f"segment {name} has columns of different lengths (corrupt): rebuild the index")
        self.hole_len = hlen
        self.hole_at = np.cumsum(hgap + np.concatenate([[0], hlen[:-1]]).astype(np.int64)) if len(hgap) else hgap
        self.page_first = np.cumsum(firsts.astype(np.int64))
        ends = r.pos + np.cumsum(lengths.astype(np.int64))
        if len(ends) and int(ends[-1]) != len(payload):
            raise IndexUnavailable(f"segment {name} has a page table that does not match its size (corrupt): "
                                   "rebuild the index")
        self._bounds = np.concatenate([[r.pos], ends]).astype(np.int64).tolist()
        self._triples = triples.astype(np.int64).tolist()
        self._payload = payload
        self.pages_read = 0

    def page(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(block, file id, counter) triples of page ``i``."""
        r = Reader(inflate(self._payload[self._bounds[i]:self._bounds[i + 1]], self.name))
        try:
            dblk, dfid, cnt = r.uints(), r.uints(), r.uints()
        except IndexError as exc:
            raise IndexUnavailable(f"segment {self.name} has a truncated page (corrupt): rebuild the index") from exc
        n = self._triples[i]
        if not len(dblk) == len(dfid) == len(cnt) == n:
            raise IndexUnavailable(f"segment {self.name} has a page of the wrong length (corrupt): rebuild the index")
        self.pages_read += 1
        dfid = dfid.astype(np.int64)
        blk = int(self.page_first[i]) + np.cumsum(dblk, dtype=np.int64)
        first = np.ones(n, bool)
        first[1:] = blk[1:] != blk[:-1]
        run = np.cumsum(dfid, dtype=np.int64)
        # Restart the running sum at each block's first triple (segmented cumulative sum).
        starts = np.maximum.accumulate(np.where(first, np.arange(n), 0)) if n else blk
        fid = run - (run[starts] - dfid[starts]) if n else run
        return blk, fid, cnt

    def fids_for_range(self, lo: int, hi: int) -> np.ndarray:
        """File ids that may hold a key in [lo, hi] (see :meth:`.model.Segment.fids_for_range`)."""
        span = block_span(self, lo, hi)
        if span is None or not len(self.page_first):
            return np.empty(0, np.uint32)
        b0, b1 = span
        p0 = max(0, int(np.searchsorted(self.page_first, b0, "right")) - 1)
        p1 = max(0, int(np.searchsorted(self.page_first, b1, "right")) - 1)
        found = []
        for i in range(p0, p1 + 1):
            blk, fid, _ = self.page(i)
            found.append(fid[(blk >= b0) & (blk <= b1)])
        return np.unique(np.concatenate(found)).astype(np.uint32)

    def whole(self) -> Segment:
        parts = [self.page(i) for i in range(len(self._triples))]
        if parts:
            blk, fid, cnt = (np.concatenate([p[j] for p in parts]) for j in range(3))
        else:
            blk = fid = cnt = np.empty(0, np.int64)
        if len(blk) and (np.any(blk[1:] < blk[:-1]) or int(blk[-1]) >= self.b_count):
            raise IndexUnavailable(f"segment {self.name} has blocks out of order or range (corrupt): "
                                   "rebuild the index")
        return Segment(self.s_min, self.s_max, self.b_size, self.b_count, blk.astype(np.uint32),
                       fid.astype(np.uint32), cnt.astype(np.uint32), self.n_keys, self.hole_at, self.hole_len)


# The integer fields of a segment-list entry, in the order the list stores them.
META_INTS = tuple(attrgetter(name) for name in ("b_size", "b_count", "budget", "used", "n_keys", "file.bytes",
                                                 "file.crc32", "file.records", "file.offset"))


def _key_column(values: list[int]) -> np.ndarray:
    """Ascending keys as int64, or as Python ints when a delta would not fit (string keys)."""
    try:
        arr = np.asarray(values, np.int64)
        if len(arr) < 2 or int(arr[0]) >= -(1 << 62) and int(arr[-1]) < (1 << 62):
            return arr
    except OverflowError:
        pass
    return np.asarray(values, dtype=object)


def _big_uints(w: Writer, values: list[int]) -> None:
    """Non-negative integers: byte planes when they fit in 63 bits, else varints (flag byte first)."""
    if max(values, default=0) < (1 << 63):
        w.buf.append(0)
        w.uints(np.asarray(values, np.int64))
    else:
        w.buf.append(1)
        w.uvarint(len(values))
        for v in values:
            w.uvarint(v)


def _read_big_uints(r: Reader) -> list[int]:
    flag = r.buf[r.pos]
    r.pos += 1
    if flag == 0:
        return r.uints().tolist()
    return [r.uvarint() for _ in range(r.uvarint())]


def _set_columns(sets: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Sets of file ids as (lengths, concatenation), int64."""
    lens = np.fromiter((len(x) for x in sets), np.int64, len(sets))
    flat = np.concatenate(sets).astype(np.int64) if len(sets) else np.empty(0, np.int64)
    return lens, flat


def _set_deltas(lens: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """Concatenated sorted sets as deltas, each set restarting from 0."""
    deltas = _deltas(flat, 0)
    starts = (np.cumsum(lens) - lens)[lens > 0]
    deltas[starts] = flat[starts]
    return deltas


def _decode_segment_list(data: bytes, full: bool = True) -> SegmentList:
    """What :meth:`IndexStore.write_segment_list` wrote (every open reads it: a few numpy calls);
    ``full=False`` for a format-5 list (no full files)."""
    r = Reader(data)
    n = r.uvarint()
    s_min, s_max = r.keys().tolist(), r.keys().tolist()
    ints = [_read_big_uints(r) for _ in META_INTS]
    blob = r.blob().decode()
    names = blob.split("\n") if n else []
    lengths = r.uints().astype(np.int64)
    deltas = r.uints().astype(np.int64)
    full_lens = r.uints().astype(np.int64) if full else np.zeros(n, np.int64)
    full_deltas = r.uints().astype(np.int64) if full else np.empty(0, np.int64)
    if not (len(s_min) == len(s_max) == len(names) == len(lengths) == len(full_lens) == n
            and all(len(c) == n for c in ints)) \
            or int(lengths.sum()) != len(deltas) or int(full_lens.sum()) != len(full_deltas):
        raise IndexUnavailable("segment list has columns of different lengths (corrupt): rebuild the index")
    if n == 0:
        return SegmentList([], [], [[] for _ in META_INTS], [], np.empty(0, np.uint32), [0])
    # The location sets stay delta-coded until asked for: a point lookup needs one segment's set.
    full_sets = None
    if len(full_deltas):  # few segments have full files: decoded at once, kept by segment
        full_sets = sets_by_segment(full_lens, _running_sums(full_deltas, [0, *np.cumsum(full_lens).tolist()]))
    return SegmentList(s_min, s_max, ints, names, None, [0, *np.cumsum(lengths).tolist()], deltas, full_sets)


def sets_by_segment(lens: np.ndarray, flat: np.ndarray) -> dict[int, np.ndarray]:
    """{segment: its file ids (uint32)} for the segments with a non-empty set, from every set's
    length and their concatenation."""
    cuts = np.cumsum(lens)
    return {int(i): flat[cuts[i] - lens[i]:cuts[i]].astype(np.uint32) for i in np.flatnonzero(lens)}


def _running_sums(deltas: np.ndarray, bounds: Sequence[int]) -> np.ndarray:
    """Every segment's location set from its deltas, in one pass: running sums minus each
    segment's starting total."""
    lengths = np.diff(np.asarray(bounds, np.int64))
    run = np.cumsum(deltas, dtype=np.int64)
    starts = np.asarray(bounds[:-1], np.int64)
    before = np.where(starts > 0, run[np.maximum(starts - 1, 0)], 0) if len(deltas) else starts
    return (run - np.repeat(before, lengths)).astype(np.uint32)


_NO_FILES = np.empty(0, np.uint32)


def segment_files(metas: Sequence[SegmentMeta]) -> list[FileRef]:
    """Each segment's byte range in its pack (from the columns of a :class:`SegmentList`: no entry built)."""
    if isinstance(metas, SegmentList):
        return metas.files()
    return [m.file for m in metas]


class SegmentList(Sequence[SegmentMeta]):
    """A decoded segment list, column by column; an entry is built when asked for, so opening an
    index to answer one point lookup builds one :class:`SegmentMeta`, not hundreds."""

    def __init__(self, s_min: list[Any], s_max: list[Any], ints: Sequence[Sequence[int]], names: list[str],
                 locs: Sequence[int] | None, bounds: Sequence[int], deltas: np.ndarray | None = None,
                 full: dict[int, np.ndarray] | None = None) -> None:
        self.s_min, self.s_max = s_min, s_max  # ascending key ranges (lists: bisect works on them)
        # the integer fields in META_INTS order, the pack names, every location set concatenated
        # (or, as read, their deltas: see locs) and where each segment's set starts (bounds[i]:bounds[i + 1])
        self.ints, self.names, self.bounds = ints, names, bounds
        self._locs, self._deltas = locs, deltas
        self._full = full or {}  # segment -> its full files (a build has none)

    @classmethod
    def of(cls, metas: Sequence[SegmentMeta]) -> SegmentList:
        """The columns of some entries (in their order), or ``metas`` itself if it is a list of columns."""
        if isinstance(metas, SegmentList):
            return metas
        lens, flat = _set_columns([m.locations for m in metas])
        return cls([m.s_min for m in metas], [m.s_max for m in metas], [list(map(get, metas)) for get in META_INTS],
                   [m.file.name for m in metas], flat.astype(np.uint32), [0, *np.cumsum(lens).tolist()], None,
                   {i: m.full for i, m in enumerate(metas) if len(m.full)})

    def select(self, idx: Sequence[int]) -> SegmentList:
        """The segments ``idx`` (any order: the new list keeps it), column by column."""
        bounds = np.asarray(self.bounds, np.int64)
        pick = np.asarray(idx, np.int64)
        lens, starts = np.diff(bounds)[pick], bounds[:-1][pick]
        total = int(lens.sum())
        take = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(total, dtype=np.int64)
        order = pick.tolist()
        full = {j: self._full[i] for j, i in enumerate(order) if i in self._full} if self._full else {}
        get = (lambda col: [col[i] for i in order]) if len(order) < 2 else (lambda col: list(itemgetter(*order)(col)))
        return SegmentList(get(self.s_min), get(self.s_max), [get(col) for col in self.ints], get(self.names),
                           np.asarray(self.locs, np.uint32)[take], [0, *np.cumsum(lens).tolist()], None, full)

    def merged(self, other: SegmentList) -> SegmentList:
        """Both lists' segments, sorted by key range."""
        if not len(other):
            return self
        n = len(self)
        both = SegmentList(
            [*self.s_min, *other.s_min], [*self.s_max, *other.s_max],
            [[*a, *b] for a, b in zip(self.ints, other.ints, strict=True)], [*self.names, *other.names],
            np.concatenate([np.asarray(self.locs, np.uint32), np.asarray(other.locs, np.uint32)]),
            [*self.bounds, *(np.asarray(other.bounds[1:], np.int64) + int(self.bounds[-1])).tolist()], None,
            {**self._full, **{i + n: f for i, f in other._full.items()}})
        return both.select(sorted(range(len(both)), key=both.s_min.__getitem__))

    @property
    def locs(self) -> Sequence[int]:
        """Every location set, concatenated (decoded from the deltas on first use)."""
        if self._locs is None:
            self._locs = _running_sums(self._deltas, self.bounds)
        return self._locs

    def locations(self, i: int) -> np.ndarray:
        """Segment ``i``'s location set (sorted file ids)."""
        b0, b1 = self.bounds[i], self.bounds[i + 1]
        if self._locs is None:
            return np.cumsum(self._deltas[b0:b1], dtype=np.int64).astype(np.uint32)
        return np.asarray(self._locs[b0:b1], np.uint32)

    def full_sets(self) -> dict[int, np.ndarray]:
        """The segments that have full files -> those files (a copy of the mapping)."""
        return dict(self._full)

    def full(self, i: int) -> np.ndarray:
        """Segment ``i``'s full files (sorted file ids; usually none)."""
        return self._full.get(i, _NO_FILES)

    def full_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """Every segment's full files as (lengths, concatenation), int64."""
        lens = np.zeros(len(self), np.int64)
        if not self._full:
            return lens, np.empty(0, np.int64)
        segs = sorted(self._full)
        lens[segs] = [len(self._full[i]) for i in segs]
        return lens, np.concatenate([self._full[i] for i in segs]).astype(np.int64)

    def __len__(self) -> int:
        return len(self.s_min)

    def files(self) -> list[FileRef]:
        nbytes, crc, records, offsets = self.ints[-4:]
        return [FileRef(*x) for x in zip(self.names, nbytes, crc, records, offsets, strict=True)]

    def __iter__(self) -> Iterator[SegmentMeta]:
        """Every entry, the location sets decoded in one pass (what a sync walks)."""
        locs, bounds, full = np.asarray(self.locs, np.uint32), self.bounds, self._full
        for i, (lo, hi, b_size, b_count, budget, used, n_keys, nbytes, crc, records, offset, name) in enumerate(
                zip(self.s_min, self.s_max, *self.ints, self.names, strict=True)):
            yield SegmentMeta(lo, hi, b_size, b_count, budget, used, n_keys,
                              FileRef(name, nbytes, crc, records, offset), locs[bounds[i]:bounds[i + 1]],
                              full.get(i, _NO_FILES))

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self.s_min)
        if not 0 <= i < len(self.s_min):
            raise IndexError(i)
        b_size, b_count, budget, used, n_keys, nbytes, crc, records, offset = (c[i] for c in self.ints)
        return SegmentMeta(self.s_min[i], self.s_max[i], b_size, b_count, budget, used, n_keys,
                           FileRef(self.names[i], nbytes, crc, records, offset), self.locations(i), self.full(i))
