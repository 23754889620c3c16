"""Driver memory the build's segment list holds per segment (issue 11).

A build keeps every closed segment's list entry until it writes the segment list (as columns:
:class:`~airflow_provider_lineage.sieve.sinks.ColumnSink`); everything else it holds is bounded
(one batch, one open segment, one pack). This pushes synthetic (key, file) pairs whose file set
changes every ``--cycle`` keys (at the default error bound 0 a segment closes at every change)
through the real segmenter, sink and index store, and prints the Python heap the finished list
holds per segment (tracemalloc) and the resident set's growth (``/proc/self/status``);
``--sink objects`` measures the per-segment objects the build kept before
(:class:`~airflow_provider_lineage.sieve.sinks.SegmentSink`, which syncs still use).

    .venv/bin/python benchmarks/sieve/segment_memory.py                 # 400k keys -> 25k segments
    .venv/bin/python benchmarks/sieve/segment_memory.py --keys 2000000  # 125k segments
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from airflow_provider_lineage.sieve.model import Segmenter
from airflow_provider_lineage.sieve.sinks import ColumnSink, SegmentSink
from airflow_provider_lineage.sieve.storage import IndexStore


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--keys", type=int, default=400_000)
    p.add_argument("--cycle", type=int, default=16, help="keys between two changes of the file set")
    p.add_argument("--files", type=int, default=8)
    p.add_argument("--batch", type=int, default=200_000, help="pairs per push (as one Arrow batch)")
    p.add_argument("--sink", choices=("columns", "objects"), default="columns")
    a = p.parse_args(argv)
    keys = np.arange(a.keys, dtype=np.int64)
    fids = (keys // a.cycle) % a.files
    with tempfile.TemporaryDirectory() as tmp:
        store = IndexStore(f"{tmp}/idx")
        sink = ColumnSink(store, 0) if a.sink == "columns" else SegmentSink(store, 0)
        seg = Segmenter(0, 1 << 16, sink, 64.0)
        rss0 = rss_bytes()
        tracemalloc.start()
        t0 = time.perf_counter()
        for i in range(0, a.keys, a.batch):
            seg.push_pairs(keys[i:i + a.batch], fids[i:i + a.batch])
        seg.finish()
        seconds = time.perf_counter() - t0
        held, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        n = len(sink) if isinstance(sink, ColumnSink) else len(sink.metas)
        rss = rss_bytes() - rss0
    print(f"{a.keys:,} keys, file set changing every {a.cycle} keys, sink {a.sink}: {n:,} segments in "
          f"{seconds:.1f} s (under tracemalloc)")
    print(f"segment list held: {held / n:,.0f} B per segment ({held / 2**20:.1f} MiB); "
          f"Python heap peak {peak / 2**20:.1f} MiB; resident set grew {rss / 2**20:.1f} MiB "
          f"({rss / n:,.0f} B per segment)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
