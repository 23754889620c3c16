"""Shared helpers for sieve tests: small Parquet tables written with pyarrow."""
from __future__ import annotations

import os
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

_counter = [0]


def write_file(path: str, keys: Sequence[int | None], typ: pa.DataType | None = None) -> None:
    """Write one Parquet file with columns ``k`` (the key) and ``v`` (a payload); bump its mtime."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table({"k": pa.array(list(keys), typ or pa.int64()), "v": pa.array(range(len(keys)), pa.int64())}), path)
    _counter[0] += 1
    # Distinct mtimes even within one clock tick, so rewrites are always detected.
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + _counter[0] * 1000))


def exact_files(layout: dict[str, list[int | None]], lo: int | None, hi: int | None) -> set[str]:
    """Files holding a non-null key in [lo, hi]."""
    return {p for p, ks in layout.items()
            if any(k is not None and (lo is None or k >= lo) and (hi is None or k <= hi) for k in ks)}
