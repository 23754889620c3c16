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
def slot(base: int, g: Any, i: int, seg_len: int) -> int:
    """Slot ``i`` of a key (``fuse.slots_of``): its start segment's first slot, ``i`` segments on, plus
    the ``i``-th 16-bit field of its second hash ``g``."""
    return base + i * seg_len + np.int64((g >> np.uint64(16 * i)) & np.uint64(seg_len - 1))


@numba.njit(cache=True, inline="always")
def start(h: Any, seg_len: int, starts: int) -> int:
    return np.int64(((h >> np.uint64(32)) * np.uint64(starts)) >> np.uint64(32)) * seg_len


@numba.njit(cache=True, nogil=True)
def build(keys: Any, fids: Any, fid_bits: int, check_bits: int, check_salt: Any, seg_len: int, starts: int,
          salt: Any, offset_salt: Any, table: Any) -> int:
    """Each key's value (check bits above its file id, as ``fuse.values_of``), the keys counting-sorted
    by start segment (nearby keys touch nearby slots), the slots' counts and XORs, the peel (a stack:
    a slot freed by a peeled key is peeled next, while its neighbourhood is in the cache), the
    assignment in reverse. Returns the keys peeled (all of them, or the build failed at this seed)."""
    n, m = len(keys), len(table)
    counts = np.zeros(starts + 1, np.int64)
    for k in range(n):  # counting sort by start segment: count, then place (hashing again: no copy kept)
        h = splitmix(keys[k] + salt)
        counts[np.int64(((h >> np.uint64(32)) * np.uint64(starts)) >> np.uint64(32)) + 1] += 1
    for s in range(starts):
        counts[s + 1] += counts[s]
    hh = np.empty(n, np.uint64)
    vals = np.empty(n, np.uint32)
    for k in range(n):
        h = splitmix(keys[k] + salt)
        f = np.int64(((h >> np.uint64(32)) * np.uint64(starts)) >> np.uint64(32))
        at = counts[f]
        counts[f] = at + 1
        hh[at] = h
        check = splitmix(keys[k] + check_salt) >> np.uint64(64 - check_bits)
        vals[at] = np.uint32((check << np.uint64(fid_bits)) | np.uint64(fids[k]))
    # per slot: the number of keys touching it (high 32 bits) and the XOR of their numbers (low 32 bits),
    # one word, so a slot's update touches one cache line
    cx = np.zeros(m, np.int64)
    one = np.int64(1) << np.int64(32)
    for k in range(n):
        h = hh[k]
        base, g = start(h, seg_len, starts), splitmix(h + offset_salt)
        for i in range(4):
            s = slot(base, g, i, seg_len)
            cx[s] += one
            cx[s] ^= np.int64(k)
    stack = np.empty(m, np.int32)
    order = np.empty(n, np.int32)
    which = np.empty(n, np.uint8)  # which of its four slots a key was peeled at
    done = 0
    for s0 in range(m):
        if cx[s0] >> 32 != 1:
            continue
        stack[0] = s0
        top = 1
        while top > 0:
            top -= 1
            s = stack[top]
            if cx[s] >> 32 != 1:
                continue
            k = cx[s] & np.int64(0xFFFFFFFF)
            order[done] = k
            h = hh[k]
            base, g = start(h, seg_len, starts), splitmix(h + offset_salt)
            for i in range(4):
                t = slot(base, g, i, seg_len)
                if t == s:
                    which[done] = i
                c = (cx[t] - one) ^ k
                cx[t] = c
                if c >> 32 == 1:
                    stack[top] = t
                    top += 1
            done += 1
    if done != n:
        return done
    for j in range(n - 1, -1, -1):
        k = order[j]
        h = hh[k]
        v = vals[k]
        w = which[j]
        s = 0
        base, g = start(h, seg_len, starts), splitmix(h + offset_salt)
        for i in range(4):
            t = slot(base, g, i, seg_len)
            if i == w:
                s = t
            else:
                v ^= table[t]
        table[s] = v
    return done


@numba.njit(cache=True, nogil=True)
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
