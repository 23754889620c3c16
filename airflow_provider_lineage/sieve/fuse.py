"""A 4-wise binary fuse *retrieval* structure: the keys that are in one file each, mapped to it.

Graf & Lemire, "Binary Fuse Filters: Fast and Smaller Than Xor Filters" (2022), used as a static
function (a retrieval structure) rather than a filter: every key has four slots, one in each of four
consecutive segments, and the slots' XOR is the key's *value*, ``check << fid_bits | file id``,
where ``check`` is ``slot_bits - fid_bits`` bits of the key's own hash. A key that was built in
finds its file exactly (never a false negative); any other key reads four slots whose XOR is
random, so it names a file only when the check bits match and the id is one of the structure's
files: with probability ``files / 2**slot_bits`` (``fpp_of``). The structure stores no keys, only
``slot_bits`` bits a slot and about 1.05-1.125 slots a key (more for fewer keys), which is why it is
smaller than any set of fingerprints with file ids (see ``benchmarks/sieve/RETRIEVAL_PROBE.md``).

Construction is *peeling*: a slot that only one key touches is that key's, the key is removed and
the slots it touched may become such slots in turn; once every key is peeled, the slots are
assigned in reverse order. It fails now and then (a cycle among the keys): then another seed is
tried, then more slots a key (:data:`FACTORS`). The peel runs compiled when numba is installed
(``pip install 'airflow-provider-lineage[fast]'``; 15 M keys in a few seconds) and in numpy rounds
otherwise (ten times slower: the build uses the structure only with numba, see
:func:`compiled`). This module reads and writes no files (see ``storage/fuse.py``).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

ARITY = 4
GOLDEN = 0x9E3779B97F4A7C15
M64 = (1 << 64) - 1
OFFSET_SALT = (101 * GOLDEN) & M64  # a second hash of the key's: its slot in each of the four segments
CHECK_SALT = (7 * GOLDEN) & M64  # the check bits' hash
# (slots a key, seeds tried at it): 1.05 peels at millions of keys (the probe), small sets need more;
# a build starts at the first factor whose key count it reaches (a failed peel costs a whole peel)
FACTORS = ((1.05, 2), (1.06, 2), (1.075, 2), (1.1, 2), (1.125, 4), (1.2, 4), (1.3, 8))
START_AT = ((3_000_000, 1.05), (1_200_000, 1.06), (200_000, 1.075), (20_000, 1.1), (0, 1.125))
MIN_SEGMENT_BITS = 3  # a segment of w-bit slots is a whole number of bytes
MAX_SEGMENT_BITS = 16  # the four slots' offsets are 16-bit fields of one hash
MAX_SLOT_BITS = 32


@dataclass(frozen=True)
class Shard:
    """One peeled table's parameters: its seed, segment length, and the segments a key may start in."""

    seed: int
    segment_length: int
    starts: int
    keys: int

    @property
    def segments(self) -> int:
        return self.starts + ARITY - 1

    @property
    def slots(self) -> int:
        return self.segments * self.segment_length


def layout(n: int, factor: float) -> tuple[int, int]:
    """(segment length, start segments) of a 4-wise binary fuse for ``n`` keys at ``factor`` slots a key
    (the paper's segment length for arity 4)."""
    bits = math.floor(math.log(max(n, 2)) / math.log(2.91) - 0.5)
    seg_len = 1 << max(MIN_SEGMENT_BITS, min(MAX_SEGMENT_BITS, bits))
    capacity = math.ceil(max(n, 1) * factor / seg_len) * seg_len
    return seg_len, max(1, capacity // seg_len - (ARITY - 1))


def slot_bits_for(files: int, fpp: float) -> int:
    """Slot width so that an absent key names a file with probability at most ``fpp`` (``files`` ids)."""
    fid_bits = max(1, (files - 1).bit_length())
    return max(fid_bits + 1, math.ceil(math.log2(files / fpp)))


def fpp_of(files: int, slot_bits: int) -> float:
    """The share of absent keys that name one of ``files`` files."""
    return files / 2.0 ** slot_bits


def mix(h: np.ndarray, salt: int) -> np.ndarray:
    """SplitMix64's finaliser of ``h + salt`` (wrapping): an independent 64-bit hash per salt."""
    with np.errstate(over="ignore"):
        z = h + np.uint64(salt & M64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def seed_salt(seed: int) -> int:
    return ((seed + 1) * GOLDEN) & M64


def values_of(keys: np.ndarray, fids: np.ndarray, fid_bits: int, slot_bits: int) -> np.ndarray:
    """Each key's value: its check bits above its file id (``slot_bits`` bits)."""
    check_bits = slot_bits - fid_bits
    check = mix(keys, CHECK_SALT) >> np.uint64(64 - check_bits)
    return (check << np.uint64(fid_bits)) | fids.astype(np.uint64)


def slots_of(keys: np.ndarray, shard: Shard) -> np.ndarray:
    """The four slots of each key, shape (4, n): the start segment from the key's seeded hash ``h``
    (its top 32 bits times the start segments), the offset in segment ``i`` from bits ``16 i`` to
    ``16 i + 15`` of a second hash of ``h`` (numpy; the compiled build computes the same)."""
    hh = mix(keys, seed_salt(shard.seed))
    with np.errstate(over="ignore"):
        first = ((hh >> np.uint64(32)) * np.uint64(shard.starts)) >> np.uint64(32)
    base = first.astype(np.int64) * shard.segment_length
    g = mix(hh, OFFSET_SALT)
    mask = np.uint64(shard.segment_length - 1)
    return np.stack([base + i * shard.segment_length + ((g >> np.uint64(16 * i)) & mask).astype(np.int64)
                     for i in range(ARITY)])


def build(keys: np.ndarray, fids: np.ndarray, *, fid_bits: int, slot_bits: int, use_compiled: bool | None = None
          ) -> tuple[np.ndarray, Shard]:
    """The slot table (uint32) and shard of distinct ``keys`` (uint64) mapped to their values
    (:func:`values_of` of ``fids``; ``slot_bits`` at most 32): tries :data:`FACTORS`' seeds until one
    peels (always, in practice, by 1.3)."""
    keys = np.ascontiguousarray(keys, np.uint64)
    fids = np.ascontiguousarray(fids, np.uint32)
    n = len(keys)
    compiled = _compiled_build() if (use_compiled if use_compiled is not None else compiled_available()) else None
    values = None if compiled is not None else values_of(keys, fids, fid_bits, slot_bits).astype(np.uint32)
    seed = 0
    start = next(f for at, f in START_AT if n >= at)
    for factor, tries in FACTORS:
        if factor < start:
            continue
        seg_len, starts = layout(n, factor)
        for _ in range(tries):
            shard = Shard(seed, seg_len, starts, n)
            seed += 1
            if n == 0:
                return np.zeros(shard.slots, np.uint32), shard
            table = np.zeros(shard.slots, np.uint32)
            if compiled is not None:
                ok = compiled(keys, fids, fid_bits, slot_bits - fid_bits, np.uint64(CHECK_SALT), seg_len, starts,
                              np.uint64(seed_salt(shard.seed)), np.uint64(OFFSET_SALT), table) == n
            else:
                ok = _peel_numpy(slots_of(keys, shard), values, table)
            if ok:
                return table, shard
    raise ValueError(f"{n} keys did not peel at {FACTORS[-1][0]} slots a key: are they distinct?")


def lookup(table: np.ndarray, shard: Shard, keys: np.ndarray) -> np.ndarray:
    """The XOR of each key's slots (its value if it was built in) from an in-memory table."""
    pos = slots_of(np.ascontiguousarray(keys, np.uint64), shard)
    out = np.zeros(len(keys), np.uint32)
    for i in range(ARITY):
        out ^= table[pos[i]]
    return out


def _peel_numpy(pos: np.ndarray, values: np.ndarray, table: np.ndarray) -> bool:
    """Peels in rounds (every slot of count 1 at once), then assigns in reverse: True when every key peeled."""
    n, m = pos.shape[1], len(table)
    flat = pos.reshape(-1)
    count = np.bincount(flat, minlength=m)
    keyx = np.zeros(m, np.int64)  # XOR of the key numbers in each slot: a slot of count 1 names its key
    np.bitwise_xor.at(keyx, flat, np.tile(np.arange(n, dtype=np.int64), ARITY))
    rounds = peel_rounds(pos, count, keyx)
    if sum(len(ks) for ks, _slots in rounds) != n:
        return False
    assign_rounds(rounds, pos, values, table)
    return True


def peel_rounds(pos: np.ndarray, count: np.ndarray, keyx: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Peels every slot of count 1 at once, then the slots those keys touched, until none is left:
    ``(keys, their slots)`` per round (``count`` and ``keyx``, the XOR of each slot's key numbers, are used up).
    Every key peeled when the rounds hold them all."""
    rounds: list[tuple[np.ndarray, np.ndarray]] = []
    cand = np.flatnonzero(count == 1)
    while len(cand):
        cand = cand[count[cand] == 1]
        if not len(cand):
            break
        ks, at = np.unique(keyx[cand], return_index=True)
        rounds.append((ks, cand[at]))
        touched = pos[:, ks].reshape(-1)
        np.subtract.at(count, touched, 1)
        np.bitwise_xor.at(keyx, touched, np.tile(ks, ARITY))
        cand = np.unique(touched)
    return rounds


def assign_rounds(rounds: list[tuple[np.ndarray, np.ndarray]], pos: np.ndarray, values: np.ndarray,
                  table: np.ndarray) -> None:
    """Fills ``table`` so that each key's slots XOR to its value: the rounds in reverse (a round's keys never
    write a slot another of them reads)."""
    for ks, slot in reversed(rounds):
        v = values[ks].copy()
        for i in range(ARITY):
            v ^= table[pos[i, ks]]
        table[slot] = v ^ table[slot]


@functools.cache
def numba_installed() -> bool:
    """numba can be imported, as far as the installed packages tell (nothing imported: a cheap check)."""
    import importlib.util

    return importlib.util.find_spec("numba") is not None


@functools.cache
def compiled_available() -> bool:
    """numba is importable (the build then uses this structure; see the module doc)."""
    try:
        import numba  # noqa: F401
    except Exception:  # noqa: BLE001 - a broken numba install is no numba
        return False
    return True


def warm_up() -> None:
    """Imports numba and loads the compiled build (about 0.3-1 s in a new process), if installed: a
    build calls it in a thread while it reads the table."""
    if compiled_available():
        build(np.arange(8, dtype=np.uint64), np.zeros(8, np.uint32), fid_bits=1, slot_bits=8)
        from ._fuse_compiled import pack

        pack(np.zeros(8, np.uint32), 8, np.zeros(8, np.uint8))


@functools.cache
def _compiled_build() -> Any:
    from ._fuse_compiled import build

    return build
