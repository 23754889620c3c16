"""What a new process pays before the retrieval structure's compiled build runs (issue 30).

Each run is a fresh Python process: the seconds of ``import numba``, of importing the compiled
module, and of the first call of the build and of the bit packer (numba loads their cached machine
code then; the first run after an install or an edit also compiles them). A Sieve build starts this
in a thread once it plans the structure (``fuse_build.warm_up``). Prints, writes no report (the
figures are quoted in ``docs/sieve.md`` and ``RANDOM_KEYS_TPCH.md``).

    .venv/bin/python benchmarks/sieve/numba_load.py --runs 5
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = """
import json, time
t0 = time.perf_counter()
import numba
t1 = time.perf_counter()
import numpy as np
from airflow_provider_lineage.sieve import _fuse_compiled as C
from airflow_provider_lineage.sieve import fuse as F
t2 = time.perf_counter()
F.build(np.arange(8, dtype=np.uint64), np.zeros(8, np.uint32), fid_bits=1, slot_bits=8)
t3 = time.perf_counter()
C.pack(np.zeros(8, np.uint32), 8, np.zeros(8, np.uint8))
t4 = time.perf_counter()
print(json.dumps({"import_numba": t1 - t0, "modules": t2 - t1, "build_load": t3 - t2, "pack_load": t4 - t3}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="fresh processes")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    for run in range(args.runs):
        out = subprocess.run([sys.executable, "-c", CHILD], check=True, capture_output=True, text=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        total = sum(r.values())
        print(f"run {run + 1}: import numba {r['import_numba']:.2f} s, modules {r['modules']:.2f} s, "
              f"first build (code load) {r['build_load']:.2f} s, first pack {r['pack_load']:.2f} s: "
              f"{total:.2f} s in all (load {load:.1f})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
