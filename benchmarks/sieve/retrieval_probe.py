"""Could a retrieval structure bring unique keys under 2 B per (key, file) pair? (issue 30, a probe)

With every key in one file (TPC-H ``orders``: 15 M keys over 200 files) the hashed structure stores
per key an Elias-Fano coded fingerprint and a file id: 2.40 B per pair measured. This probe prints,
for the same shape, what each kind of structure needs, and measures the one candidate that could
fit, a 4-wise binary fuse *retrieval* structure (Graf & Lemire, "Binary Fuse Filters", 2022; used
as a static function: each key's slots XOR to ``file id * 2**c + check``, ``c`` check bits from the
key's hash), built here in numpy by peeling in rounds:

* sorted fingerprints (what ``fingerprints.py`` stores): ``log2(1/fpp) + ~2`` bits (Elias-Fano) or
  at best ``log2(1/fpp) + log2(e)`` (entropy-coded gaps), plus the file id (``log2(files)``);
* a retrieval structure: ``ceil(log2(files / fpp))`` bits per slot (absent keys then match with
  probability ``files / 2**bits``) times its slots per key.

It writes nothing into the package and changes no index; the figures go to ``RETRIEVAL_PROBE.md``.

    .venv/bin/python benchmarks/sieve/retrieval_probe.py            # 1 M and 4 M keys
    .venv/bin/python benchmarks/sieve/retrieval_probe.py --keys 200000 --factors 1.075
"""
from __future__ import annotations

import argparse
import functools
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from airflow_provider_lineage.sieve import fuse  # after the checkout is on sys.path

ARITY = fuse.ARITY  # 4-wise binary fuse: the smallest space factor of the family (1.075 in the paper)


def mix(h: np.ndarray, seed: int) -> np.ndarray:
    """SplitMix64 finaliser of ``h + seed * golden``: an independent 64-bit hash per seed."""
    with np.errstate(over="ignore"):
        z = h + np.uint64((seed * 0x9E3779B97F4A7C15) % (1 << 64))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def layout(n: int, factor: float) -> tuple[int, int, int]:
    """(segment length, segments a key may start in, slots) of a 4-wise binary fuse for ``n`` keys."""
    seg_len = 1 << max(1, math.floor(math.log(max(n, 2)) / math.log(2.91) - 0.5))
    capacity = math.ceil(n * factor / seg_len) * seg_len
    starts = max(1, capacity // seg_len - (ARITY - 1))
    return seg_len, starts, (starts + ARITY - 1) * seg_len


def slots_of(h: np.ndarray, seg_len: int, starts: int) -> np.ndarray:
    """The ``ARITY`` slots of each hash: consecutive segments from a start segment, one slot in each."""
    with np.errstate(over="ignore"):
        first = ((h >> np.uint64(32)) * np.uint64(starts)) >> np.uint64(32)
    base = first.astype(np.int64) * seg_len
    return np.stack([base + i * seg_len + (mix(h, 101 + i) & np.uint64(seg_len - 1)).astype(np.int64)
                     for i in range(ARITY)])


def build(h: np.ndarray, values: np.ndarray, factor: float, seed: int) -> tuple[np.ndarray | None, int, int, int]:
    """(table or None when peeling stalls, rounds, segment length, start segments)."""
    n = len(h)
    seg_len, starts, m = layout(n, factor)
    pos = slots_of(mix(h, seed), seg_len, starts)
    flat = pos.reshape(-1)
    count = np.bincount(flat, minlength=m)
    keyx = np.zeros(m, np.int64)  # XOR of the key numbers in each slot: a slot of count 1 names its key
    order = np.argsort(flat, kind="stable")
    fs, ks = flat[order], np.tile(np.arange(n, dtype=np.int64), ARITY)[order]
    first = np.flatnonzero(np.concatenate(([True], fs[1:] != fs[:-1])))
    keyx[fs[first]] = np.bitwise_xor.reduceat(ks, first)
    del order, fs, ks
    rounds = fuse.peel_rounds(pos, count, keyx)  # the package's peeling and assignment, on this probe's slots
    if sum(len(keys) for keys, _slots in rounds) != n:
        return None, len(rounds), seg_len, starts
    table = np.zeros(m, np.uint64)
    fuse.assign_rounds(rounds, pos, values, table)
    return table, len(rounds), seg_len, starts


def build_compiled(h: np.ndarray, values: np.ndarray, factor: float, seed: int
                   ) -> tuple[np.ndarray | None, int, int, int]:
    """:func:`build` with the peeling and the assignment compiled by numba (``--numba``; numba is not a
    dependency of the project: install it beside the probe). The slots come from the same numpy code."""
    n = len(h)
    seg_len, starts, m = layout(n, factor)
    pos = slots_of(mix(h, seed), seg_len, starts)
    table = np.zeros(m, np.uint64)
    peeled = _numba_peel()(pos, values, table)
    return (table if peeled == n else None), 0, seg_len, starts


def build_all_compiled(h: np.ndarray, values: np.ndarray, factor: float, seed: int
                       ) -> tuple[np.ndarray | None, int, int, int]:
    """:func:`build_compiled` with the slots computed in the compiled code as well (the same slots as
    :func:`slots_of`, so the numpy :func:`lookup` reads the table), the keys first sorted by their
    first segment (nearby keys touch nearby slots: the peel's memory access stays local)."""
    n = len(h)
    seg_len, starts, m = layout(n, factor)
    hh = mix(h, seed)
    with np.errstate(over="ignore"):
        first = ((hh >> np.uint64(32)) * np.uint64(starts)) >> np.uint64(32)
    order = np.argsort(first, kind="stable")
    table = np.zeros(m, np.uint64)
    salts = np.asarray([((101 + i) * 0x9E3779B97F4A7C15) % (1 << 64) for i in range(ARITY)], np.uint64)
    pos = _numba_slots()(hh[order], seg_len, starts, salts)
    peeled = _numba_peel()(pos, values[order], table)
    return (table if peeled == n else None), 0, seg_len, starts


@functools.cache
def _numba_slots():
    import numba

    @numba.njit(cache=False)
    def splitmix(z):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))

    @numba.njit(cache=False)
    def slots(hh, seg_len, starts, salts):
        n = len(hh)
        out = np.empty((ARITY, n), np.int64)
        mask = np.uint64(seg_len - 1)
        for k in range(n):
            h = hh[k]
            base = np.int64(((h >> np.uint64(32)) * np.uint64(starts)) >> np.uint64(32)) * seg_len
            for i in range(ARITY):
                z = h + salts[i]
                out[i, k] = base + i * seg_len + np.int64(splitmix(z) & mask)
        return out

    return slots


@functools.cache
def _numba_peel():
    import numba

    @numba.njit(cache=False)
    def peel(pos, values, table):
        arity, n = pos.shape
        m = len(table)
        count = np.zeros(m, np.int32)
        keyx = np.zeros(m, np.int64)
        for k in range(n):
            for i in range(arity):
                s = pos[i, k]
                count[s] += 1
                keyx[s] ^= k
        queue = np.empty(m, np.int64)
        head = tail = 0
        for s in range(m):
            if count[s] == 1:
                queue[tail] = s
                tail += 1
        keys = np.empty(n, np.int64)
        slots = np.empty(n, np.int64)
        done = 0
        while head < tail:
            s = queue[head]
            head += 1
            if count[s] != 1:
                continue
            k = keyx[s]
            keys[done] = k
            slots[done] = s
            done += 1
            for i in range(arity):
                t = pos[i, k]
                count[t] -= 1
                keyx[t] ^= k
                if count[t] == 1:
                    queue[tail] = t
                    tail += 1
        if done != n:
            return done
        for j in range(n - 1, -1, -1):
            k, s = keys[j], slots[j]
            v = values[k]
            for i in range(arity):
                t = pos[i, k]
                if t != s:
                    v ^= table[t]
            table[s] = v
        return done

    return peel


def lookup(table: np.ndarray, h: np.ndarray, seed: int, seg_len: int, starts: int) -> np.ndarray:
    pos = slots_of(mix(h, seed), seg_len, starts)
    out = np.zeros(len(h), np.uint64)
    for i in range(ARITY):
        out ^= table[pos[i]]
    return out


def probe(n: int, files: int, fpp: float, factors: list[float], seeds: int, rng: np.random.Generator,
          compiled: str = "numpy") -> list[dict]:
    bits = math.ceil(math.log2(files / fpp))
    check_bits = bits - math.ceil(math.log2(files))
    h = rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(1)
    fid = rng.integers(0, files, n).astype(np.uint64)
    check = mix(h, 7) >> np.uint64(64 - check_bits)
    values = (fid << np.uint64(check_bits)) | check
    absent = rng.integers(0, 2**63, 200_000, dtype=np.int64).astype(np.uint64) * np.uint64(2)  # even: not present
    out = []
    for factor in factors:
        for seed in range(seeds):
            t0 = time.perf_counter()
            builder = {"numpy": build, "numba": build_compiled, "numba-all": build_all_compiled}[compiled]
            table, rounds, seg_len, starts = builder(h, values, factor, seed)
            secs = time.perf_counter() - t0
            row = {"keys": n, "factor": factor, "seed": seed, "ok": table is not None, "rounds": rounds,
                   "builder": compiled,
                   "build_s": secs, "slot_bits": bits, "bits_per_key": bits * layout(n, factor)[2] / n,
                   "segment": seg_len}
            if table is not None:
                got = lookup(table, h, seed, seg_len, starts)
                row["false_negatives"] = int(np.count_nonzero(got != values))
                a = lookup(table, absent, seed, seg_len, starts)
                a_fid, a_check = a >> np.uint64(check_bits), a & np.uint64((1 << check_bits) - 1)
                hit = (a_fid < files) & (a_check == (mix(absent, 7) >> np.uint64(64 - check_bits)))
                row["absent_share"] = float(hit.mean())
            out.append(row)
            print(row, flush=True)
            if table is not None:
                break
    return out


def parts(n: int, factor: float, rng: np.random.Generator) -> list[tuple[str, float]]:
    """Seconds of each step of the ``numba-all`` build for ``n`` keys (``--parts``), and the peel of
    the keys in their own order for comparison."""
    h = rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64)
    values = rng.integers(0, 1 << 15, n).astype(np.uint64)
    seg_len, starts, m = layout(n, factor)
    salts = np.asarray([((101 + i) * 0x9E3779B97F4A7C15) % (1 << 64) for i in range(ARITY)], np.uint64)
    out = []
    t0 = time.perf_counter()
    hh = mix(h, 0)
    out.append(("the keys' hash (numpy)", time.perf_counter() - t0))
    t0 = time.perf_counter()
    with np.errstate(over="ignore"):
        order = np.argsort(((hh >> np.uint64(32)) * np.uint64(starts)) >> np.uint64(32), kind="stable")
    out.append(("sort by first segment (numpy argsort)", time.perf_counter() - t0))
    for label, keys, vals in (("sorted", hh[order], values[order]), ("in their own order", hh, values)):
        t0 = time.perf_counter()
        pos = _numba_slots()(keys, seg_len, starts, salts)
        out.append((f"slots, compiled (keys {label})", time.perf_counter() - t0))
        t0 = time.perf_counter()
        ok = _numba_peel()(pos, vals, np.zeros(m, np.uint64)) == n
        out.append((f"peel and assignment, compiled (keys {label}){'' if ok else ' (did not peel)'}",
                    time.perf_counter() - t0))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", default="1000000,4000000", help="key counts, comma-separated")
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--fpp", type=float, default=0.01, help="the issue's bound on absent keys reading a file")
    ap.add_argument("--factors", default="1.05,1.06,1.075", help="slots per key to try, comma-separated")
    ap.add_argument("--seeds", type=int, default=2, help="seeds tried per factor before it counts as failed")
    ap.add_argument("--numba", action="store_true",
                    help="also build with the peeling compiled by numba (not a project dependency: install it)")
    ap.add_argument("--parts", type=int, default=None, metavar="KEYS",
                    help="with --numba: time each step of the numba-all build for KEYS keys (1.075 slots/key) and "
                         "print them; writes no report")
    ap.add_argument("--report", default=str(HERE / "RETRIEVAL_PROBE.md"))
    args = ap.parse_args()
    load = os.getloadavg()
    rng = np.random.default_rng(30)
    factors = [float(f) for f in args.factors.split(",")]
    if args.numba:  # compile once before the clock (the probe times the peeling, not numba's compiler)
        _numba_peel()(np.zeros((ARITY, 1), np.int64), np.zeros(1, np.uint64), np.zeros(1, np.uint64))
        _numba_slots()(np.zeros(1, np.uint64), 2, 1, np.zeros(ARITY, np.uint64))
    if args.parts:
        if not args.numba:
            ap.error("--parts needs --numba")
        for label, secs in parts(args.parts, 1.075, rng):
            print(f"{label}: {secs:.2f} s")
        return 0
    builders = ["numpy", "numba", "numba-all"] if args.numba else ["numpy"]
    rows = [r for n in (int(x) for x in args.keys.split(",")) for compiled in builders
            for r in probe(n, args.files, args.fpp, factors, args.seeds, rng, compiled)]
    f, files = args.fpp, args.files
    fid_bits, fid_mixed = math.ceil(math.log2(files)), math.log2(files)
    ef = math.log2(1 / f) + 2 + fid_bits
    entropy = math.log2(1 / f) + math.log2(math.e) + fid_mixed
    lines = [
        "# Unique keys under 2 B per pair? A retrieval probe (issue 30)",
        "",
        (
            f"`benchmarks/sieve/retrieval_probe.py {' '.join(sys.argv[1:])}` — {platform.machine()}, "
            f"{os.cpu_count()} CPUs, load average {load[0]:.1f} at the start (shared machine: build seconds "
            "follow it). Random 64-bit hashes stand for the keys, each in one of "
            f"{files} files; absent-key share from 200,000 other hashes."
        ),
        "",
        f"## What each structure needs per key ({files} files, absent keys reading a file ≤ {f:.0%})",
        "",
        "| structure | bits per key | B per pair |",
        "|---|---|---|",
        (
            f"| sorted fingerprints, Elias-Fano + {fid_bits}-bit file id (the hashed structure) | ≈ {ef:.1f} | "
            f"≈ {ef / 8:.2f} |"
        ),
        (
            f"| sorted fingerprints, entropy-coded gaps + file id in {fid_mixed:.2f} bits (a lower bound for any "
            f"set of fingerprints) | {entropy:.2f} | {entropy / 8:.3f} |"
        ),
        (
            f"| retrieval, {rows[0]['slot_bits']}-bit slots (file id and check bits), ideal (1 slot per key) | "
            f"{rows[0]['slot_bits']} | {rows[0]['slot_bits'] / 8:.3f} |"
        ),
        "",
        (
            "The hashed structure measured 2.40 B (19.2 bits) per pair at TPC-H SF10, with fpp 0.005 "
            "(32-bit fingerprints for 15 M keys); the first row is its shape at this fpp. No encoding of a "
            "fingerprint set gets under 16 bits with a margin: the second row is the bound. A retrieval "
            "structure pays its slot width times its slots per key."
        ),
        "",
        "## 4-wise binary fuse retrieval: numpy peeling in rounds (and numba with `--numba`)",
        "",
        (
            "Build s: the slots (numpy) and the peeling and assignment; rounds: numpy's peeling rounds (0 for "
            "numba, which peels one slot at a time)."
        ),
        "",
        (
            "| keys | builder | slots per key | seed | peeled | rounds | segment | bits per key | B per pair | "
            "false negatives | absent keys reading a file | build s |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['keys']:,} | {r['builder']} | {r['factor']} | {r['seed']} | {'yes' if r['ok'] else 'no'} | "
            f"{r['rounds']:,} | "
            f"{r['segment']:,} | {r['bits_per_key']:.2f} | {r['bits_per_key'] / 8:.3f} | "
            f"{r.get('false_negatives', '')} | "
            f"{'' if 'absent_share' not in r else format(r['absent_share'], '.2%')} | {r['build_s']:.1f} |"
        )
    lines += ["", "False negatives must be 0 wherever peeling succeeded.", ""]
    Path(args.report).write_text("\n".join(lines))
    print(f"wrote {args.report}")
    return 1 if any(r.get("false_negatives") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
