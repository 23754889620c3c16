"""Hashes of key values for the hashed structure (keys without exploitable order).

XXH64 with seed 42, vectorised with numpy, bit for bit Spark's ``xxhash64``: a string or binary
value hashes its bytes (UTF-8 for strings), every other kind hashes its integer key (see
:mod:`.keys`: days for dates, microseconds for timestamps, the unscaled value for decimals) as one
8-byte little-endian long, as Spark's ``xxhash64(CAST(key AS BIGINT))`` does. So a Spark job can
compute the same hashes as the driver and as a lookup.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .keys import BYTE_KINDS, KeyType

SEED = 42
_U = np.uint64
P1, P2, P3, P4, P5 = (_U(11400714785074694791), _U(14029467366897019727), _U(1609587929392839161),
                      _U(9650029242287828579), _U(2870177450012600261))


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U(r)) | (x >> _U(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    return _rotl(acc + lane * P2, 31) * P1


def _avalanche(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> _U(33))
    h = h * P2
    h = h ^ (h >> _U(29))
    h = h * P3
    return h ^ (h >> _U(32))


def xxh64_longs(keys: np.ndarray, seed: int = SEED) -> np.ndarray:
    """XXH64 of each int64 as 8 little-endian bytes (Spark's ``xxhash64`` of a bigint)."""
    with np.errstate(over="ignore"):
        k = np.asarray(keys).astype(np.int64, copy=False).view(np.uint64)
        h = np.full(len(k), _U(seed) + P5 + _U(8), np.uint64)
        h ^= _round(np.zeros(len(k), np.uint64), k)
        h = _rotl(h, 27) * P1 + P4
        return _avalanche(h)


def _xxh64_matrix(m: np.ndarray, seed: int = SEED) -> np.ndarray:
    """XXH64 of each row of an (n, length) uint8 matrix (rows of one length)."""
    n, length = m.shape
    s = _U(seed)
    with np.errstate(over="ignore"):
        if length >= 32:
            stripes = length // 32
            v = m[:, :stripes * 32].copy().view("<u8").reshape(n, stripes, 4)
            v1 = np.full(n, s + P1 + P2, np.uint64)
            v2 = np.full(n, s + P2, np.uint64)
            v3 = np.full(n, s, np.uint64)
            v4 = np.full(n, s - P1, np.uint64)
            for i in range(stripes):
                v1, v2, v3, v4 = (_round(v1, v[:, i, 0]), _round(v2, v[:, i, 1]), _round(v3, v[:, i, 2]),
                                  _round(v4, v[:, i, 3]))
            h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
            for acc in (v1, v2, v3, v4):
                h = (h ^ _round(np.zeros(n, np.uint64), acc)) * P1 + P4
            pos = stripes * 32
        else:
            h = np.full(n, s + P5, np.uint64)
            pos = 0
        h = h + _U(length)
        while pos + 8 <= length:
            lane = m[:, pos:pos + 8].copy().view("<u8").ravel()
            h = _rotl(h ^ _round(np.zeros(n, np.uint64), lane), 27) * P1 + P4
            pos += 8
        if pos + 4 <= length:
            lane = m[:, pos:pos + 4].copy().view("<u4").ravel().astype(np.uint64)
            h = _rotl(h ^ (lane * P1), 23) * P2 + P3
            pos += 4
        while pos < length:
            h = _rotl(h ^ (m[:, pos].astype(np.uint64) * P5), 11) * P1
            pos += 1
        return _avalanche(h)


def xxh64_binary(arr: pa.Array | pa.ChunkedArray, seed: int = SEED) -> np.ndarray:
    """XXH64 of every value of a string/binary Arrow array without NULLs (Spark's ``xxhash64``)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], pa.large_binary())
    arr = pc.cast(arr, pa.large_binary())
    n = len(arr)
    out = np.empty(n, np.uint64)
    if n == 0:
        return out
    _, off_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(off_buf, np.int64, n + 1, arr.offset * 8)
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.empty(0, np.uint8)
    lens = np.diff(offsets)
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
    if not exact or not -(1 << 63) <= key < (1 << 63):
        return None
    return int(xxh64_longs(np.asarray([key], np.int64))[0])


def hashes_of_arrow(kt: KeyType, col: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, int]:
    """Hashes of a column's distinct non-NULL values (unsorted), and its NULL count."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks else pa.array([], col.type)
    nulls = col.null_count
    if kt.kind in BYTE_KINDS:
        vals = col.drop_null() if nulls else col
        return xxh64_binary(pc.unique(vals)), nulls
    keys, nulls = kt.keys_of_arrow(col)
    if keys.dtype == object:  # beyond int64 (uint64, wide decimals): the low 64 bits, as Spark's cast
        keys = np.asarray([((k + (1 << 63)) % (1 << 64)) - (1 << 63) for k in keys.tolist()], np.int64)
    return xxh64_longs(keys), nulls
