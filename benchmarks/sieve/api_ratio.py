"""Files read ÷ exact files over the benchmark's query mix, from the Python API (no Spark reads).

    .venv/bin/python benchmarks/sieve/api_ratio.py PACKAGE_ROOT LAYOUT/COLUMN ...
    e.g. .venv/bin/python benchmarks/sieve/api_ratio.py . sparse/l_orderkey generated/l_orderkey

PACKAGE_ROOT is the folder holding ``airflow_provider_lineage`` (an older checkout compares
releases). Uses the SF1, 200-file layouts under ``data/`` (generated if missing).
"""
import os
import shutil
import sys
import time

pkg = sys.argv[1]
sys.path.insert(0, pkg)
sys.path.insert(1, os.path.dirname(os.path.abspath(__file__)))
from pathlib import Path

from sieve_data import build_layout, load_keys
from sieve_queries import Truth, make_queries

from airflow_provider_lineage import sieve as S

print("package:", S.__file__)
for name, column in [x.split("/") for x in sys.argv[2:]]:
    lay = build_layout(name, Path(os.path.dirname(os.path.abspath(__file__))) / "data", 1.0, 200, log=lambda m: None)
    keys = load_keys(lay)
    truth = Truth(keys[column], keys["file_id"], keys["rowsum"], len(lay.files))
    qs = make_queries(name, column, truth, 50, 20)
    ip = f"/tmp/sieve-api-ratio-{os.path.basename(pkg.rstrip('/'))}-{name}-{column}"
    shutil.rmtree(ip, ignore_errors=True)
    t0 = time.time()
    st = S.build(None, str(lay.root), column, index_path=ip)
    idx = S.open_index(str(lay.root), column, index_path=ip)
    pos = {f: i for i, f in enumerate(lay.files)}
    got = want = 0
    per = {}
    for q in qs:
        c = idx.candidates(S.Range(int(q.lo), int(q.hi)))
        e = truth.exact_files(q)
        assert {pos[x] for x in c} >= set(e.tolist()), q
        got += len(c); want += len(e)
        g, w = per.get(q.kind, (0, 0)); per[q.kind] = (g + len(c), w + len(e))
    print(
        f"{name}/{column}: files/exact {got}/{want} = {got / want:.3f}x; per kind "
        + ", ".join(f"{k} {g}/{w}" for k, (g, w) in per.items())
        + f"; index {st.index_bytes:,} B = {st.index_bytes / (lay.rows * 8) * 100:.3f}% of rows x 8 B"
        + f"; build {time.time() - t0:.0f}s",
        flush=True,
    )
