"""The hashed structure: sorted hash fingerprints with their file ids, for keys without order.

Random keys (UUIDs, hashed or random ids, phone numbers) land in files without any order, so
per-file min/max and the piecewise-linear segments of :mod:`.model` cannot tell files apart. Here
each distinct key is reduced to an ``F``-bit fingerprint (the top bits of its 64-bit hash, see
:mod:`.hashing`), and the structure maps each fingerprint to the set of files holding a key with
that fingerprint:

* a present key always finds its fingerprint, so its files are always answered (no false negative;
  two present keys that share a fingerprint answer the union of their files);
* an absent key finds a fingerprint with probability about ``n_keys / 2**F``: with
  ``F = ceil(log2(n_keys / fpp))`` at most ``fpp`` of absent keys read any file.

Fingerprints are cut into ``2**page_bits`` pages by their top bits (about :data:`PAGE_KEYS` keys
each), so a lookup decodes one page. A page holds its fingerprints' remaining bits Elias-Fano coded
(an upper-bits unary bit vector and fixed-width low bits: about ``2 + log2(1/fpp)`` bits a key), the
number of files of each key (fixed width) and the file ids (fixed width). Everything is numpy.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .codec import Reader, Writer
from .errors import IndexUnavailable

PAGE_KEYS = 2048  # fingerprints per page, about: a lookup decodes one page
# share of absent keys that read any file, at most: under 1 % with room for sampling noise and appends
DEFAULT_FPP = 0.008


def fingerprint_bits(n_keys: int, fpp: float) -> int:
    """Bits of a fingerprint so that about ``fpp`` of absent keys match one of ``n_keys``."""
    if not 0 < fpp < 1:
        raise ValueError(f"fpp={fpp} must be between 0 and 1 (exclusive), e.g. {DEFAULT_FPP}")
    return max(8, min(62, math.ceil(math.log2(max(1, n_keys) / fpp))))


def page_bits_for(n_keys: int, fp_bits: int) -> int:
    return max(0, min(fp_bits - 1, int(math.log2(max(1, n_keys) / PAGE_KEYS)) if n_keys > PAGE_KEYS else 0))


def fingerprints(hashes: np.ndarray, fp_bits: int) -> np.ndarray:
    """The top ``fp_bits`` bits of 64-bit hashes."""
    return np.asarray(hashes, np.uint64) >> np.uint64(64 - fp_bits)


def pack_bits(values: np.ndarray, width: int) -> bytes:
    """Non-negative integers in ``width`` bits each, little-endian bit order (value ``i`` at bits
    ``i * width ...``), vectorised: each value is shifted into the 64-bit words it spans."""
    if width == 0 or len(values) == 0:
        return b""
    v = np.asarray(values, np.uint64)
    if width in (8, 16, 32, 64):
        return v.astype(f"<u{width // 8}").tobytes()
    n = len(v)
    pos = np.arange(n, dtype=np.uint64) * np.uint64(width)
    word = (pos >> np.uint64(6)).astype(np.int64)
    off = pos & np.uint64(63)
    words = np.zeros(int(word[-1]) + 2, np.uint64)
    starts = np.flatnonzero(np.concatenate(([True], word[1:] != word[:-1])))
    words[word[starts]] = np.bitwise_or.reduceat(v << off, starts)  # every word holds a value's start
    spill = np.flatnonzero(off + np.uint64(width) > np.uint64(64))  # at most one value per word
    if len(spill):
        words[word[spill] + 1] |= v[spill] >> (np.uint64(64) - off[spill])
    return words.astype("<u8").view(np.uint8)[:(n * width + 7) // 8].tobytes()


def unpack_bits(data: bytes | memoryview, width: int, n: int) -> np.ndarray:
    if width == 0 or n == 0:
        return np.zeros(n, np.uint64)
    nbytes = (n * width + 7) // 8
    raw = np.frombuffer(data, np.uint8)
    if len(raw) < nbytes:
        raise IndexUnavailable("a hashed-key page is truncated (corrupt): rebuild the index")
    if width in (8, 16, 32, 64):
        return raw[:nbytes].view(f"<u{width // 8}").astype(np.uint64)
    buf = np.zeros((nbytes + 15) // 8 * 8, np.uint8)
    buf[:nbytes] = raw[:nbytes]
    words = buf.view("<u8").astype(np.uint64, copy=False)
    pos = np.arange(n, dtype=np.uint64) * np.uint64(width)
    word = (pos >> np.uint64(6)).astype(np.int64)
    off = pos & np.uint64(63)
    out = words[word] >> off
    spill = np.flatnonzero(off + np.uint64(width) > np.uint64(64))
    if len(spill):
        out[spill] |= words[word[spill] + 1] << (np.uint64(64) - off[spill])
    return out & np.uint64((1 << width) - 1)


def group_pairs(fps: np.ndarray, fids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted unique fingerprints, files per fingerprint, and their file ids (sorted, unique per
    fingerprint), from (fingerprint, file id) pairs in any order."""
    fps = np.asarray(fps, np.uint64)
    fids = np.asarray(fids, np.uint64)
    fid_bits = int(fids.max()).bit_length() if len(fids) else 0
    top = int(fps.max()).bit_length() if len(fps) else 0
    if top + fid_bits <= 64:  # one sort of (fingerprint, file id) packed into one word
        both = _sorted_unique((fps << np.uint64(fid_bits)) | fids)
        fps, fids = both >> np.uint64(fid_bits), both & np.uint64((1 << fid_bits) - 1)
    else:
        order = np.lexsort((fids, fps))
        fps, fids = fps[order], fids[order]
        keep = np.ones(len(fps), bool)
        keep[1:] = (fps[1:] != fps[:-1]) | (fids[1:] != fids[:-1])
        fps, fids = fps[keep], fids[keep]
    start = np.ones(len(fps), bool)
    start[1:] = fps[1:] != fps[:-1]
    first = np.flatnonzero(start)
    counts = np.diff(np.append(first, len(fps)))
    return fps[first], counts.astype(np.int64), fids.astype(np.uint32)


def group_packed(packed: np.ndarray, fid_bits: int, fp_bits: int | None = None, fpp: float = DEFAULT_FPP, *,
                 is_sorted: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """:func:`group_pairs` of (hash, file index) pairs packed into one word each: the hash's top
    ``64 - fid_bits`` bits above a ``fid_bits``-bit file index. ``packed`` is sorted in place.

    Returns (fingerprints, files per fingerprint, file indexes, distinct keys, fingerprint bits);
    ``fp_bits`` None sizes the fingerprints for the distinct keys counted here (capped at
    ``64 - fid_bits``, the hash bits the words keep). One sort of all pairs (none when
    ``is_sorted``), plus a sort of the few pairs whose fingerprints collide (their file indexes
    interleave)."""
    n_space = 64 - fid_bits
    fmask = np.uint64((1 << fid_bits) - 1)
    if not len(packed):
        bits = fp_bits if fp_bits is not None else fingerprint_bits(0, fpp)
        return np.empty(0, np.uint64), np.empty(0, np.int64), np.empty(0, np.uint32), 0, bits
    if not is_sorted:
        packed.sort()
    q = _dedup(packed)
    prefix = q >> np.uint64(fid_bits)
    n_keys = 1 + int(np.count_nonzero(prefix[1:] != prefix[:-1]))
    if fp_bits is None:
        fp_bits = min(fingerprint_bits(n_keys, fpp), n_space)
    if fp_bits > n_space:
        raise ValueError(f"{fp_bits} fingerprint bits do not fit beside {fid_bits} file bits")
    fps = prefix >> np.uint64(n_space - fp_bits)
    del prefix
    q &= fmask
    q |= fps << np.uint64(fid_bits)  # (fingerprint, file index): sorted but where fingerprints collide
    down = np.flatnonzero(q[1:] < q[:-1])
    if len(down):  # the runs of the colliding fingerprints: sort their pairs (runs stay in place)
        bad = np.unique(fps[down + 1])
        lo, hi = np.searchsorted(fps, bad, "left"), np.searchsorted(fps, bad, "right")
        lens = hi - lo
        hit = np.repeat(lo - np.cumsum(lens) + lens, lens) + np.arange(int(lens.sum()))
        q[hit] = np.sort(q[hit])
    deduped = _dedup(q)  # two keys of one file with one fingerprint: one pair
    if deduped is not q:
        q = deduped
        fps = q >> np.uint64(fid_bits)
    start = np.ones(len(q), bool)
    start[1:] = fps[1:] != fps[:-1]
    first = np.flatnonzero(start)
    counts = np.diff(np.append(first, len(q))).astype(np.int64)
    return fps[first], counts, (q & fmask).astype(np.uint32), n_keys, fp_bits


def _dedup(s: np.ndarray) -> np.ndarray:
    """A sorted array without its repeated values."""
    keep = np.ones(len(s), bool)
    keep[1:] = s[1:] != s[:-1]
    return s if bool(keep.all()) else s[keep]


def _sorted_unique(a: np.ndarray) -> np.ndarray:
    s = np.sort(a)
    keep = np.ones(len(s), bool)
    keep[1:] = s[1:] != s[:-1]
    return s[keep]


def encode_page(low: np.ndarray, low_space_bits: int, counts: np.ndarray, fids: np.ndarray,
                fid_width: int) -> bytes:
    """One page: ``low`` = the fingerprints' bits below the page bits (sorted, unique)."""
    m = len(low)
    w = Writer()
    w.uvarint(m)
    if m == 0:
        return bytes(w.buf)
    lbits = max(0, low_space_bits - max(0, math.ceil(math.log2(m))))
    upper = (low >> np.uint64(lbits)).astype(np.int64)
    ones = upper + np.arange(m, dtype=np.int64)
    nbits = int(ones[-1]) + 1
    vec = np.zeros(nbits, np.uint8)
    vec[ones] = 1
    cw = int(counts.max() - 1).bit_length()
    w.uvarint(lbits)
    w.uvarint(cw)
    w.blob(np.packbits(vec, bitorder="little").tobytes())
    w.blob(pack_bits(low & np.uint64((1 << lbits) - 1), lbits))
    w.blob(pack_bits(counts - 1, cw))
    w.blob(pack_bits(fids, fid_width))
    return bytes(w.buf)


@dataclass
class Page:
    """A decoded page: sorted low fingerprint bits, and each one's file ids."""

    low: np.ndarray
    starts: np.ndarray  # fids[starts[i]:starts[i + 1]] are fingerprint i's files
    fids: np.ndarray

    def files_of(self, lows: np.ndarray) -> np.ndarray:
        """File ids of the fingerprints among ``lows`` that the page holds."""
        i = np.searchsorted(self.low, lows)
        hit = (i < len(self.low)) & (self.low[np.minimum(i, len(self.low) - 1)] == lows) if len(self.low) else \
            np.zeros(len(lows), bool)
        parts = [self.fids[self.starts[j]:self.starts[j + 1]] for j in i[hit].tolist()]
        return np.unique(np.concatenate(parts)) if parts else np.empty(0, np.uint32)


def decode_page(data: bytes | memoryview, fid_width: int, name: str) -> Page:
    try:
        r = Reader(data)
        m = r.uvarint()
        if m == 0:
            return Page(np.empty(0, np.uint64), np.zeros(1, np.int64), np.empty(0, np.uint32))
        lbits, cw = r.uvarint(), r.uvarint()
        vec, lowb, cntb, fidb = r.blob(), r.blob(), r.blob(), r.blob()
    except (IndexError, ValueError) as exc:
        raise IndexUnavailable(f"hashed-key page of {name} is truncated (corrupt): rebuild the index") from exc
    bits = np.unpackbits(np.frombuffer(vec, np.uint8), bitorder="little")
    ones = np.flatnonzero(bits)
    if len(ones) != m:
        raise IndexUnavailable(f"hashed-key page of {name} has a bad fingerprint vector (corrupt): rebuild the index")
    upper = (ones - np.arange(m)).astype(np.uint64)
    low = (upper << np.uint64(lbits)) | unpack_bits(lowb, lbits, m)
    counts = unpack_bits(cntb, cw, m).astype(np.int64) + 1
    starts = np.zeros(m + 1, np.int64)
    np.cumsum(counts, out=starts[1:])
    fids = unpack_bits(fidb, fid_width, int(starts[-1])).astype(np.uint32)
    return Page(low, starts, fids)


def encode_pages(fps: np.ndarray, counts: np.ndarray, fids: np.ndarray, fp_bits: int, page_bits: int,
                 fid_width: int, first: int = 0, n_pages: int | None = None) -> list[bytes]:
    """Pages ``first .. first + n_pages - 1`` (default: every page) of grouped fingerprints (see
    :func:`group_pairs`; they hold every fingerprint of those pages and no other), in page order."""
    low_bits = fp_bits - page_bits
    if n_pages is None:
        n_pages = (1 << page_bits) - first
    page_of = (fps >> np.uint64(low_bits)).astype(np.int64)
    cuts = np.searchsorted(page_of, np.arange(first, first + n_pages + 1))
    fcuts = np.zeros(len(fps) + 1, np.int64)
    np.cumsum(counts, out=fcuts[1:])
    mask = np.uint64((1 << low_bits) - 1) if low_bits < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    pages = []
    for p in range(n_pages):
        a, b = int(cuts[p]), int(cuts[p + 1])
        pages.append(encode_page(fps[a:b] & mask, low_bits, counts[a:b], fids[fcuts[a]:fcuts[b]], fid_width))
    return pages
