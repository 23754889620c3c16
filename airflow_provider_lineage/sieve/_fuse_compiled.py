"""The compiled (numba) construction of :mod:`.fuse`: imported only when numba is installed.

Module-level functions, so numba caches their machine code beside this file (``cache=True``): a
process pays numba's compilation once per installation, not once per build.
"""
from __future__ import annotations

from typing import Any

import numba
import numpy as np


@numba.njit(cache=True, inline="always")
def splitmix(z: Any) -> Any:
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True, inline="always")
def slot(h: Any, i: int, seg_len: int, starts: int, salts: Any) -> int:
    first = np.int64(((h >> np.uint64(32)) * np.uint64(starts)) >> np.uint64(32))
    return (first + i) * seg_len + np.int64(splitmix(h + salts[i]) & np.uint64(seg_len - 1))


@numba.njit(cache=True)
def build(keys: Any, values: Any, seg_len: int, starts: int, salt: Any, salts: Any, table: Any) -> int:
    """Hash, counting-sort by start segment (nearby keys touch nearby slots), peel, assign."""
    n, m = len(keys), len(table)
    hh0 = np.empty(n, np.uint64)
    first = np.empty(n, np.int64)
    counts = np.zeros(starts + 1, np.int64)
    for k in range(n):
        h = splitmix(keys[k] + salt)
        hh0[k] = h
        f = np.int64(((h >> np.uint64(32)) * np.uint64(starts)) >> np.uint64(32))
        first[k] = f
        counts[f + 1] += 1
    for s in range(starts):
        counts[s + 1] += counts[s]
    hh = np.empty(n, np.uint64)
    vals = np.empty(n, np.uint32)
    for k in range(n):
        at = counts[first[k]]
        counts[first[k]] = at + 1
        hh[at] = hh0[k]
        vals[at] = values[k]
    count = np.zeros(m, np.int32)
    keyx = np.zeros(m, np.int32)
    for k in range(n):
        h = hh[k]
        for i in range(4):
            s = slot(h, i, seg_len, starts, salts)
            count[s] += 1
            keyx[s] ^= np.int32(k)
    queue = np.empty(m, np.int32)
    tail = 0
    for s in range(m):
        if count[s] == 1:
            queue[tail] = s
            tail += 1
    order = np.empty(n, np.int32)
    where = np.empty(n, np.int32)
    head = 0
    done = 0
    while head < tail:
        s = queue[head]
        head += 1
        if count[s] != 1:
            continue
        k = keyx[s]
        order[done] = k
        where[done] = s
        done += 1
        h = hh[k]
        for i in range(4):
            t = slot(h, i, seg_len, starts, salts)
            count[t] -= 1
            keyx[t] ^= k
            if count[t] == 1:
                queue[tail] = t
                tail += 1
    if done != n:
        return done
    for j in range(n - 1, -1, -1):
        k, s = order[j], where[j]
        h = hh[k]
        v = vals[k]
        for i in range(4):
            t = slot(h, i, seg_len, starts, salts)
            if t != s:
                v ^= table[t]
        table[s] = v
    return done



@numba.njit(cache=True)
def pack(table: Any, bits: int, out: Any) -> None:
    """``table``'s values, ``bits`` bits each, into ``out`` (zeroed bytes), little-endian bit order."""
    acc = np.uint64(0)
    have = 0
    o = 0
    for v in table:
        acc |= np.uint64(v) << np.uint64(have)
        have += bits
        while have >= 8:
            out[o] = np.uint8(acc & np.uint64(0xFF))
            o += 1
            acc >>= np.uint64(8)
            have -= 8
    if have > 0:
        out[o] = np.uint8(acc & np.uint64(0xFF))
