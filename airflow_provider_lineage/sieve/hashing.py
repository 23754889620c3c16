"""Hashes of key values for the hashed structure (keys without exploitable order).

XXH64 with seed 42, vectorised with numpy, bit for bit Spark's ``xxhash64``: a string or binary
value hashes its bytes (UTF-8 for strings), every other kind hashes its integer key (see
:mod:`.keys`: days for dates, microseconds for timestamps, the unscaled value for decimals) as one
8-byte little-endian long, as Spark's ``xxhash64(CAST(key AS BIGINT))`` does. So a Spark job can
compute the same hashes as the driver and as a lookup.

The hash is part of the index format: a stored index answers with the fingerprints it was built
with, so this function must never change its output (``tests/sieve/test_hashed.py`` pins reference
values). Whole arrays are hashed at once, in blocks of :data:`BLOCK` values with in-place numpy
operations (no per-value Python), which release the GIL: files are hashed in parallel threads.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .keys import BYTE_KINDS, KeyType

SEED = 42
BLOCK = 1 << 16  # values hashed per block: the block's temporaries stay in the CPU caches
_U = np.uint64
P1, P2, P3, P4, P5 = (_U(11400714785074694791), _U(14029467366897019727), _U(1609587929392839161),
                      _U(9650029242287828579), _U(2870177450012600261))
_MASK64 = (1 << 64) - 1


def _rotl(x: np.ndarray, r: int, tmp: np.ndarray) -> None:
    """x = rotl(x, r) in place (``tmp``: scratch of x's shape)."""
    np.right_shift(x, _U(64 - r), out=tmp)
    np.left_shift(x, _U(r), out=x)
    x |= tmp


def _round(acc: np.ndarray, lane: np.ndarray, tmp: np.ndarray) -> None:
    """acc = rotl(acc + lane * P2, 31) * P1 in place."""
    np.multiply(lane, P2, out=tmp)
    acc += tmp
    _rotl(acc, 31, tmp)
    acc *= P1


def _k1(lane: np.ndarray, out: np.ndarray, tmp: np.ndarray) -> None:
    """out = round(0, lane) = rotl(lane * P2, 31) * P1."""
    np.multiply(lane, P2, out=out)
    _rotl(out, 31, tmp)
    out *= P1


def _avalanche(h: np.ndarray, tmp: np.ndarray) -> None:
    for shift, prime in ((33, P2), (29, P3), (32, None)):
        np.right_shift(h, _U(shift), out=tmp)
        h ^= tmp
        if prime is not None:
            h *= prime


def xxh64_longs(keys: np.ndarray, seed: int = SEED) -> np.ndarray:
    """XXH64 of each int64 as 8 little-endian bytes (Spark's ``xxhash64`` of a bigint)."""
    k = np.ascontiguousarray(np.asarray(keys).astype(np.int64, copy=False)).view(np.uint64)
    out = np.empty(len(k), np.uint64)
    start = _U((seed + int(P5) + 8) & _MASK64)
    tmp = np.empty(min(BLOCK, len(k)), np.uint64)
    with np.errstate(over="ignore"):
        for a in range(0, len(k), BLOCK):
            h, t = out[a:a + BLOCK], tmp[:min(BLOCK, len(k) - a)]
            np.multiply(k[a:a + BLOCK], P2, out=h)  # round(0, k) = rotl(k * P2, 31) * P1
            _rotl(h, 31, t)
            h *= P1
            h ^= start
            _rotl(h, 27, t)
            h *= P1
            h += P4
            _avalanche(h, t)
    return out


def _lanes(m: np.ndarray, pos: int, width: int) -> np.ndarray:
    """Bytes ``pos:pos + width`` of each row of a uint8 matrix as little-endian integers."""
    return np.ascontiguousarray(m[:, pos:pos + width]).view("<u8" if width == 8 else "<u4").ravel().astype(
        np.uint64, copy=False)


def _xxh64_matrix(m: np.ndarray, seed: int = SEED) -> np.ndarray:
    """XXH64 of each row of an (n, length) uint8 matrix (rows of one length)."""
    n, length = m.shape
    s = int(seed)
    out = np.empty(n, np.uint64)
    if n == 0:
        return out
    with np.errstate(over="ignore"):
        for a in range(0, n, BLOCK):
            blk = m[a:a + BLOCK]
            b = len(blk)
            h = out[a:a + b]
            tmp, tmp2 = np.empty(b, np.uint64), np.empty(b, np.uint64)
            pos = 0
            if length >= 32:
                v = [
                    np.full(b, _U((s + int(P1) + int(P2)) & _MASK64), np.uint64),
                    np.full(b, _U((s + int(P2)) & _MASK64), np.uint64),
                    np.full(b, _U(s & _MASK64), np.uint64),
                    np.full(b, _U((s - int(P1)) & _MASK64), np.uint64),
                ]
                while pos + 32 <= length:
                    for i in range(4):
                        _round(v[i], _lanes(blk, pos + 8 * i, 8), tmp)
                    pos += 32
                h[:] = v[0]
                _rotl(h, 1, tmp)
                for i, r in ((1, 7), (2, 12), (3, 18)):
                    np.copyto(tmp2, v[i])
                    _rotl(tmp2, r, tmp)
                    h += tmp2
                for acc in v:  # h = (h ^ round(0, acc)) * P1 + P4
                    _k1(acc, tmp2, tmp)
                    h ^= tmp2
                    h *= P1
                    h += P4
            else:
                h[:] = _U((s + int(P5)) & _MASK64)
            h += _U(length)
            while pos + 8 <= length:
                _k1(_lanes(blk, pos, 8), tmp2, tmp)  # h = rotl(h ^ round(0, lane), 27) * P1 + P4
                h ^= tmp2
                _rotl(h, 27, tmp)
                h *= P1
                h += P4
                pos += 8
            if pos + 4 <= length:
                np.multiply(_lanes(blk, pos, 4), P1, out=tmp2)
                h ^= tmp2
                _rotl(h, 23, tmp)
                h *= P2
                h += P3
                pos += 4
            while pos < length:
                np.multiply(blk[:, pos].astype(np.uint64), P5, out=tmp2)
                h ^= tmp2
                _rotl(h, 11, tmp)
                h *= P1
                pos += 1
            _avalanche(h, tmp)
    return out


def xxh64_binary(arr: pa.Array | pa.ChunkedArray, seed: int = SEED) -> np.ndarray:
    """XXH64 of every value of a string/binary Arrow array without NULLs (Spark's ``xxhash64``)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], pa.large_binary())
    t = arr.type
    if pa.types.is_string(t) or pa.types.is_binary(t):
        width = 4  # 32-bit offsets: read in place
    else:
        if not (pa.types.is_large_binary(t) or pa.types.is_large_string(t)):
            arr = pc.cast(arr, pa.large_binary())
        width = 8
    n = len(arr)
    out = np.empty(n, np.uint64)
    if n == 0:
        return out
    _, off_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(off_buf, np.int32 if width == 4 else np.int64, n + 1, arr.offset * width).astype(
        np.int64)
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.empty(0, np.uint8)
    lens = np.diff(offsets)
    first = int(lens[0])
    if bool((lens == first).all()):  # one length (UUIDs, fixed codes): the values are one matrix, no copy
        base = int(offsets[0])
        return _xxh64_matrix(data[base:base + n * first].reshape(n, first), seed)
    order = np.argsort(lens, kind="stable")
    sorted_lens = lens[order]
    cuts = np.flatnonzero(np.diff(sorted_lens)) + 1
    for idx in np.split(order, cuts):
        length = int(lens[idx[0]])
        if length == 0:
            m = np.empty((len(idx), 0), np.uint8)
        else:
            m = data[offsets[idx][:, None] + np.arange(length)]
        out[idx] = _xxh64_matrix(m, seed)
    return out


def hash_of_value(kt: KeyType, value: Any) -> int | None:
    """The hash of one query value, or None when no value of the column can equal it (e.g. 1.5
    on an integer column). Raises TypeError for a value of the wrong type, as :meth:`KeyType.encode`."""
    if kt.kind in BYTE_KINDS:
        raw = kt._value_bytes(value)
        return int(xxh64_binary(pa.array([raw], pa.large_binary()))[0])
    key, exact = kt.encode(value)
    if not exact:
        return None
    # keys beyond int64 (uint64, DECIMAL(38) unscaled values) hash their low 64 bits, as the build does
    # (:func:`_low_longs`): keys that share them share a hash (a false positive, never a lost file)
    key = ((key + (1 << 63)) % (1 << 64)) - (1 << 63)
    return int(xxh64_longs(np.asarray([key], np.int64))[0])


def _low_longs(keys: np.ndarray) -> np.ndarray:
    """Integer keys as int64: the low 64 bits of keys beyond int64 (uint64, wide decimals), as Spark's cast."""
    if keys.dtype != object:
        return keys.astype(np.int64, copy=False)
    return np.asarray([((k + (1 << 63)) % (1 << 64)) - (1 << 63) for k in keys.tolist()], np.int64)


def hashes_of_arrow(kt: KeyType, col: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, int]:
    """Hashes of a column's distinct non-NULL values (unsorted), and its NULL count."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks else pa.array([], col.type)
    nulls = col.null_count
    if kt.kind in BYTE_KINDS:
        vals = col.drop_null() if nulls else col
        return xxh64_binary(pc.unique(vals)), nulls
    keys, nulls = kt.keys_of_arrow(col)
    return xxh64_longs(_low_longs(keys)), nulls


def hash_batch(kt: KeyType, col: pa.Array) -> tuple[np.ndarray, int, Any, Any]:
    """Hashes of a batch's non-NULL values (duplicates kept, in row order), its NULL count, and its
    smallest and largest value (Arrow scalars' Python values for strings/binary, integer keys
    otherwise; None when the batch holds only NULLs). No per-value Python for ints, dates,
    timestamps, strings and binary."""
    nulls = col.null_count
    vals = col.drop_null() if nulls else col
    if not len(vals):
        return np.empty(0, np.uint64), nulls, None, None
    if kt.kind in BYTE_KINDS:
        mm = pc.min_max(vals)
        return xxh64_binary(vals), nulls, mm["min"].as_py(), mm["max"].as_py()
    keys = kt.raw_keys_of_arrow(vals)
    if keys is None:  # decimals, uint64: distinct values through Python
        keys, _ = kt.keys_of_arrow(vals)
        return xxh64_longs(_low_longs(keys)), nulls, int(keys[0]), int(keys[-1])
    return xxh64_longs(keys), nulls, int(keys.min()), int(keys.max())
