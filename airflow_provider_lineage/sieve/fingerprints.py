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
DEFAULT_FPP = 0.005  # share of absent keys that read any file


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
    """Non-negative integers in ``width`` bits each, little-endian bit order."""
    if width == 0 or len(values) == 0:
        return b""
    v = np.asarray(values, np.uint64)
    bits = ((v[:, None] >> np.arange(width, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)
    return np.packbits(bits.ravel(), bitorder="little").tobytes()


def unpack_bits(data: bytes | memoryview, width: int, n: int) -> np.ndarray:
    if width == 0 or n == 0:
        return np.zeros(n, np.uint64)
    raw = np.frombuffer(data, np.uint8)
    if len(raw) * 8 < n * width:
        raise IndexUnavailable("a hashed-key page is truncated (corrupt): rebuild the index")
    bits = np.unpackbits(raw, count=n * width, bitorder="little").reshape(n, width).astype(np.uint64)
    return (bits << np.arange(width, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)


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
                 fid_width: int) -> list[bytes]:
    """Every page of grouped fingerprints (see :func:`group_pairs`), in page order."""
    low_bits = fp_bits - page_bits
    page_of = (fps >> np.uint64(low_bits)).astype(np.int64)
    cuts = np.searchsorted(page_of, np.arange((1 << page_bits) + 1))
    fcuts = np.zeros(len(fps) + 1, np.int64)
    np.cumsum(counts, out=fcuts[1:])
    mask = np.uint64((1 << low_bits) - 1) if low_bits < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    pages = []
    for p in range(1 << page_bits):
        a, b = int(cuts[p]), int(cuts[p + 1])
        pages.append(encode_page(fps[a:b] & mask, low_bits, counts[a:b], fids[fcuts[a]:fcuts[b]], fid_width))
    return pages
