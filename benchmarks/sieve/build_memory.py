"""Peak memory and time of the hashed structure's driver build (issue 30: bounded driver memory).

Builds a Sieve hashed index over a table of random int64 keys (each key in one file, as TPC-H
``o_orderkey`` shuffled) with ``engine="pyarrow"``, each build in a fresh Python process, and prints
its wall time and the process's peak RSS (``VmHWM``, Linux). ``--checkout DIR`` runs the
builds against another checkout of the project (e.g. a ``git worktree`` at an older commit) with
this interpreter, to compare before and after a change on the same table.

    .venv/bin/python benchmarks/sieve/build_memory.py                      # 15 M keys, 200 files
    .venv/bin/python benchmarks/sieve/build_memory.py --checkout /tmp/old  # the same, older code
    .venv/bin/python benchmarks/sieve/build_memory.py --structure pages    # fingerprint pages only
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# Peak RSS: the kernel's VmHWM of the child's own address space. getrusage's ru_maxrss would also count
# the parent's memory at the fork (Linux keeps the high-water mark across exec).
CHILD = """
import json, sys, time
import airflow_provider_lineage.sieve as S
t0 = time.perf_counter()
structure = {"structure": sys.argv[3]} if len(sys.argv) > 3 else {}
S.build(None, sys.argv[1], "k", index_path=sys.argv[2], engine="pyarrow", **structure)
secs = time.perf_counter() - t0
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"seconds": secs, "peak_rss_mb": hwm / 1024, "code": S.__file__}))
"""


def table(data: Path, rows: int, files: int) -> Path:
    """``rows`` distinct random int64 keys in ``files`` Parquet files (written once, reused)."""
    root = data / f"int64-{rows}-{files}"
    if (root / "_DONE").exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(30)
    keys = rng.permutation(np.arange(rows * 4, dtype=np.int64))[:rows]
    for j, part in enumerate(np.array_split(keys, files)):
        pq.write_table(pa.table({"k": part}), root / f"part-{j:05d}.parquet")
    (root / "_DONE").write_text("ok")
    return root


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=15_000_000)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--runs", type=int, default=2, help="builds, each in a fresh process")
    ap.add_argument("--checkout", default=str(ROOT), help="the project checkout whose code builds")
    ap.add_argument("--data", default=str(HERE / "data" / "build_memory"))
    ap.add_argument("--structure", default=None,
                    help="build option (e.g. pages, fuse; default: the build's default, auto)")
    args = ap.parse_args()
    root = table(Path(args.data), args.rows, args.files)
    env = dict(os.environ, PYTHONPATH=str(Path(args.checkout).resolve()))
    load = os.getloadavg()[0]
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as out:
            got = subprocess.run([sys.executable, "-c", CHILD, str(root), out, *filter(None, [args.structure])],
                                 env=env, check=True,
                                 capture_output=True, text=True, cwd=out)  # not the caller's cwd: --checkout's code
        r = json.loads(got.stdout.strip().splitlines()[-1])
        print(f"run {run + 1}: {args.rows:,} keys in {args.files} files, structure {args.structure or 'default'}, "
              f"code {r['code']}: build {r['seconds']:.2f} s, "
              f"peak RSS {r['peak_rss_mb']:.0f} MB (load {load:.1f})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
