"""Benchmark queries (points, ranges, a selectivity sweep) and their ground truth from the data.

Keys are integers: days since 1970-01-01 for ``l_shipdate`` and the value for ``l_orderkey``. The
ground truth of a query -- the exact set of files holding a matching key, the matching row count
and a row checksum ``sum(l_orderkey * 8 + l_linenumber)`` -- comes from the key columns read with
pyarrow when the layout was written, not from Spark, so every method (the full read included) is
checked against an independent answer.
"""
from __future__ import annotations

import datetime as dt
import zlib
from dataclasses import dataclass

import numpy as np
from sieve_data import ADV_TARGET_START, days, to_date

SWEEP_FRACTIONS = (0.0005, 0.002, 0.01, 0.05, 0.2, 0.5, 1.0)


@dataclass(frozen=True)
class Query:
    """``lo <= key <= hi`` (a point when lo == hi); ``group`` says where the key falls."""

    kind: str  # point | range | sweep
    lo: int
    hi: int
    group: str  # in-data | gap (absent key inside or next to the domain) | mixed
    label: str

    @property
    def width(self) -> int:
        return self.hi - self.lo + 1


def fmt_key(column: str, k: int) -> str:
    return to_date(k).isoformat() if column == "l_shipdate" else str(int(k))


class Truth:
    """Sorted keys with file ids and prefix sums: exact file sets and results in O(log n)."""

    def __init__(self, keys: np.ndarray, file_ids: np.ndarray, rowsum: np.ndarray, n_files: int) -> None:
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.files = file_ids[order]
        self.prefix = np.concatenate([[0], np.cumsum(rowsum[order], dtype=np.int64)])
        self.n_files = n_files
        self.unique = np.unique(self.keys)

    def span(self, lo: int, hi: int) -> tuple[int, int]:
        return int(np.searchsorted(self.keys, lo, "left")), int(np.searchsorted(self.keys, hi, "right"))

    def exact_files(self, q: Query) -> np.ndarray:
        a, b = self.span(q.lo, q.hi)
        if b - a > 4 * self.n_files:
            present = np.zeros(self.n_files, dtype=bool)
            present[self.files[a:b]] = True
            return np.flatnonzero(present)
        return np.unique(self.files[a:b])

    def result(self, q: Query) -> tuple[int, int]:
        a, b = self.span(q.lo, q.hi)
        return b - a, int(self.prefix[b] - self.prefix[a])


def _absent_keys(truth: Truth, rng: np.random.Generator, n: int, column: str) -> list[int]:
    """Keys inside [min, max] that no row holds; if there are none, keys just past the domain."""
    lo, hi = int(truth.unique[0]), int(truth.unique[-1])
    out: list[int] = []
    tries = 0
    while len(out) < n and tries < 200 * n:
        k = int(rng.integers(lo, hi + 1))
        tries += 1
        if truth.unique[np.searchsorted(truth.unique, k)] != k and k not in out:
            out.append(k)
    step = 1 if column == "l_shipdate" else 8
    k = hi + 1
    while len(out) < n:
        out.append(k)
        k += step * 3
    return out


def make_queries(layout: str, column: str, truth: Truth, n_points: int = 50, n_ranges: int = 20,
                 sweep: tuple[float, ...] = SWEEP_FRACTIONS, seed: int = 42) -> list[Query]:
    """Deterministic queries for one layout and key column.

    Points: on the adversarial layout 40 % of the keys fall in the 1999–2006 gap (the first is
    2003-01-01, as in the thesis); elsewhere 20 % are absent keys (inside the domain if it has
    holes, e.g. TPC-H's sparse order keys, else just past its end). The rest are keys the data holds.
    Ranges: 2–31 days for dates (January 2003 among them on the adversarial layout), 32–65,536 keys
    for order keys; the same split between gap and data. Sweep: ranges from the domain minimum of
    growing width, the last one the whole domain (every file holding a key is needed).
    """
    rng = np.random.default_rng([seed, zlib.crc32(f"{layout}/{column}".encode())])
    adversarial = layout == "adversarial" and column == "l_shipdate"
    gap_share = 0.4 if adversarial else 0.2
    out: list[Query] = []
    # ---- points
    n_gap = round(n_points * gap_share)
    if adversarial:
        g_lo, g_hi = days(dt.date(1999, 1, 1)), days(ADV_TARGET_START) - 1
        gap = [days(dt.date(2003, 1, 1))] + [int(k) for k in rng.integers(g_lo, g_hi + 1, size=max(0, n_gap - 1))]
        gap = gap[:n_gap]
    else:
        gap = _absent_keys(truth, rng, n_gap, column)
    present = [int(k) for k in rng.choice(truth.unique, size=n_points - len(gap), replace=len(truth.unique) < n_points)]
    points = [(k, "in-data") for k in present] + [(k, "gap") for k in gap]
    rng.shuffle(points)
    for k, g in points:
        out.append(Query("point", k, k, g, f"= {fmt_key(column, k)}"))
    # ---- ranges
    n_gap_r = round(n_ranges * gap_share)
    for i in range(n_ranges):
        if column == "l_shipdate":
            w = int(rng.integers(2, 32))
        else:
            w = int(2 ** rng.uniform(5, 16))
        if i < n_gap_r:
            if adversarial:
                lo = days(dt.date(2003, 1, 1)) if i == 0 else int(rng.integers(g_lo, g_hi - w + 2))
                w = 31 if i == 0 else w
            else:
                lo = _absent_keys(truth, rng, 1, column)[0]
                # keep a "gap" range inside the hole around lo when the domain has holes
                nxt = truth.unique[min(np.searchsorted(truth.unique, lo), len(truth.unique) - 1)]
                if nxt > lo:
                    w = max(1, min(w, int(nxt - lo)))
            g = "gap"
        else:
            lo = int(rng.choice(truth.unique))
            g = "in-data"
        hi = lo + w - 1
        if g == "gap":
            a, b = truth.span(lo, hi)
            g = "gap" if a == b else "mixed"
        out.append(Query("range", lo, hi, g, f"[{fmt_key(column, lo)}, {fmt_key(column, hi)}]"))
    # ---- sweep
    dmin, dmax = int(truth.unique[0]), int(truth.unique[-1])
    span = dmax - dmin + 1
    for f in sweep:
        hi = dmin + max(1, round(span * f)) - 1 if f < 1 else dmax
        out.append(Query("sweep", dmin, hi, "in-data", f"{f * 100:g}% of domain"))
    return out
