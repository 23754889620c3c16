"""Random keys (issue 30): Sieve's hashed structure against Parquet bloom filters, side by side.

Layout per size: F Parquet files (default 200), each holding K distinct keys (default sizes
K = 2,000 / 10,000 / 100,000), every key in 1-3 random files, two key columns with the same layout:
``u`` (random UUID strings) and ``k`` (random int64), plus a payload. Optionally TPC-H ``orders``
(``tpchgen-cli``): ``o_orderkey`` shuffled over the files plus a UUID column.

Sieve (pyarrow build, CLI defaults: ``structure="auto"``) is measured without Spark: index bytes per
(key, file) pair, files read / exact files for points and IN lists of 10, share of absent keys that
read any file, warm and cold lookup time, build time against a min/max pass (each file's column
read and its min/max taken, the same threads), and a sync after a 1 % append against the build.

With Spark (skip with ``--no-spark``) the same rows are written three times by Spark: without bloom
filters, and with ``parquet.bloom.filter.enabled#col`` at fpp 0.01 and 0.001 (``expected.ndv`` =
the keys per file). ``WHERE col = X`` on present keys runs as a full scan (filter push-down off), with
bloom-filter push-down, and through ``sieve.read`` (Sieve pruning) on the plain table. For each: wall
time, files opened, row groups read and bytes read (from the files' metadata; Spark's stage input
metrics, from its REST API, beside them).

    .venv/bin/python benchmarks/sieve/random_keys.py                       # writes RANDOM_KEYS.md
    .venv/bin/python benchmarks/sieve/random_keys.py --sizes 2000 --no-spark   # smoke run

Exit code 1 when a Sieve answer misses a file holding the key.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent.parent))

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve.fingerprints import DEFAULT_FPP

SEED = 20261125
FAILED: list[str] = []


# ---- data --------------------------------------------------------------------------------------
def layout(n_files: int, per_file: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Key ids of each file: every key in 1-3 distinct random files, ``per_file`` keys per file (about)."""
    n_keys = n_files * per_file // 2
    copies = rng.integers(1, 4, n_keys)
    keys = np.repeat(np.arange(n_keys), copies)
    files = np.empty(len(keys), np.int64)
    # a key's copies go to distinct files: a random first file, then the next ones round the ring
    first = rng.integers(0, n_files, n_keys)
    offset = np.arange(len(keys)) - np.repeat(np.cumsum(copies) - copies, copies)
    files[:] = (np.repeat(first, copies) + offset * rng.integers(1, n_files // 3 + 1)) % n_files
    order = np.argsort(files, kind="stable")
    cuts = np.searchsorted(files[order], np.arange(n_files + 1))
    out = [keys[order[cuts[i]:cuts[i + 1]]] for i in range(n_files)]
    for ids in out:
        rng.shuffle(ids)
    return out


def uuids(n: int, rng: np.random.Generator) -> np.ndarray:
    hi = rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    lo = rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64)
    # str(uuid.UUID(int=hi << 64 | lo)), vectorised: 32 lowercase hex digits, dashes after 8, 12, 16, 20
    raw = np.stack([hi, lo], axis=1).astype(">u8").view(np.uint8).reshape(n, 16)  # big-endian bytes
    digits = np.frombuffer(b"0123456789abcdef", np.uint8)
    hexed = np.stack([digits[raw >> 4], digits[raw & 15]], axis=2).reshape(n, 32)
    out = np.full((n, 36), ord("-"), np.uint8)
    for dashes, (a, b) in enumerate(((0, 8), (8, 12), (12, 16), (16, 20), (20, 32))):
        out[:, a + dashes:b + dashes] = hexed[:, a:b]
    return out.view("S36").ravel()


def write_plain(root: Path, files: list[np.ndarray], u: np.ndarray, k: np.ndarray) -> None:
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for i, ids in enumerate(files):
        pq.write_table(
            pa.table(
                {
                    "u": pa.array(u[ids], pa.binary(36)).cast(pa.string()),
                    "k": pa.array(k[ids], pa.int64()),
                    "v": pa.array(ids, pa.int64()),
                }
            ),
            root / f"part-{i:05d}.parquet",
        )


def _py(v: Any) -> Any:
    """A numpy value as the Python value a query passes (UUIDs are generated as bytes)."""
    v = v.item() if hasattr(v, "item") else v
    return v.decode() if isinstance(v, bytes) else v


# ---- Sieve without Spark ------------------------------------------------------------------------
def footer_pass(root: Path, column: str) -> float:
    """Seconds to read every file's footer and take the column's min/max from its statistics (what a
    min/max index built from Parquet statistics costs: no column data read), the same threads."""
    paths = sorted(str(p) for p in root.glob("*.parquet"))
    t0 = time.perf_counter()

    def one(p: str) -> Any:
        md = pq.ParquetFile(p).metadata
        leaf = next(i for i in range(md.num_columns) if md.schema.column(i).path == column)
        stats = [md.row_group(r).column(leaf).statistics for r in range(md.num_row_groups)]
        return min(s.min for s in stats), max(s.max for s in stats)

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(one, paths))
    return time.perf_counter() - t0


def minmax_pass(root: Path, column: str) -> float:
    """Seconds to read one column of every file and take its min/max (what a min/max index costs
    when it reads the key column, as the segment structure's build does: the target's baseline)."""
    paths = sorted(str(p) for p in root.glob("*.parquet"))
    t0 = time.perf_counter()

    def one(p: str) -> Any:
        col = pq.ParquetFile(p).read(columns=[column]).column(0)
        return pc.min_max(col)

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(one, paths))
    return time.perf_counter() - t0


def sieve_case(root: Path, column: str, files: list[np.ndarray], values: np.ndarray, absent: list[Any],
               queries: int, rng: np.random.Generator) -> dict[str, Any]:
    paths = [str(root / f"part-{i:05d}.parquet") for i in range(len(files))]
    where: dict[int, list[str]] = {}
    for p, ids in zip(paths, files, strict=True):
        for i in ids.tolist():
            where.setdefault(i, []).append(p)
    pairs = sum(len(ids) for ids in files)
    shutil.rmtree(root / "_sieve" / column, ignore_errors=True)
    mm = min(minmax_pass(root, column) for _ in range(2))
    footers = min(footer_pass(root, column) for _ in range(2))
    t0 = time.perf_counter()
    stats = S.build(None, str(root), column)
    build_s = time.perf_counter() - t0
    idx = S.open_index(str(root), column)
    sample = rng.choice(len(values), queries, replace=False)
    ratios, in_ratios, warm = [], [], []
    for i in sample.tolist():
        v = _py(values[i])
        t = time.perf_counter()
        got = idx.lookup(S.Eq(v), assume_fresh=True).files
        warm.append(time.perf_counter() - t)
        if not set(where[i]) <= set(got):
            FAILED.append(f"{column}: {v} misses {set(where[i]) - set(got)}")
        ratios.append(len(got) / len(where[i]))
    for _ in range(max(1, queries // 10)):
        ids = rng.choice(len(values), 10, replace=False).tolist()
        vals = [_py(values[i]) for i in ids]
        exact = set().union(*(where[i] for i in ids))
        got = set(idx.candidates(S.In(vals), assume_fresh=True))
        if not exact <= got:
            FAILED.append(f"{column}: IN misses {exact - got}")
        in_ratios.append(len(got) / len(exact))
    absent_hits = sum(1 for v in absent if idx.lookup(S.Eq(v), assume_fresh=True).files)
    # warm: the same index object asked again (its header and the page cached)
    v0 = values[int(sample[0])]
    v0 = _py(v0)
    warm_again = []
    for _ in range(20):
        t = time.perf_counter()
        idx.lookup(S.Eq(v0), assume_fresh=True)
        warm_again.append(time.perf_counter() - t)
    cold = []
    for i in sample[:20].tolist():
        v = _py(values[i])
        t = time.perf_counter()
        S.open_index(str(root), column).lookup(S.Eq(v), assume_fresh=True)
        cold.append(time.perf_counter() - t)
    out = {"column": column, "structure": "hashed + fuse" if stats.fuse_keys else stats.structure, "pairs": pairs,
           "keys": len(values), "fuse_keys": stats.fuse_keys,
            "index_bytes": stats.index_bytes, "bytes_per_pair": stats.index_bytes / pairs,
            "point_ratio": float(np.mean(ratios)), "point_ratio_max": float(np.max(ratios)),
            "in_ratio": float(np.mean(in_ratios)), "absent_share": absent_hits / len(absent),
            "lookup_ms_first": 1000 * statistics.median(warm), "lookup_ms_warm": 1000 * statistics.median(warm_again),
            "open_and_lookup_ms": 1000 * statistics.median(cold), "build_s": build_s, "minmax_s": mm,
            "build_vs_minmax": build_s / mm, "footers_s": footers, "build_vs_footers": build_s / footers}
    if BASELINE_SPARK is not None:
        out.update(spark_baseline(BASELINE_SPARK, root, column, build_s))
    return out


# ---- the build against the project's min/max pass (Spark), and the build a Spark user gets -------
BASELINE_SPARK: Any = None  # --spark-minmax: the session of spark_baseline
BASELINE_RUNS = 3


def spark_baseline(spark: Any, root: Path, column: str, build_s: float, runs: int = BASELINE_RUNS) -> dict[str, Any]:
    """The target's min/max pass as this project defines it (``sync_cost.minmax_scan``: a Spark
    ``groupBy(input_file_name()).agg(min, max)``), and the build as ``sieve.build(spark, root, col)``
    runs it with a session and the default ``engine="auto"`` (the CLI's default too: it starts a
    session): medians of ``runs``, after untimed warm-ups on a copy of the smallest file."""
    from sync_cost import minmax_scan

    warm = root.parent / "warm"
    shutil.rmtree(warm, ignore_errors=True)
    warm.mkdir()
    shutil.copy(min(root.glob("*.parquet"), key=lambda p: p.stat().st_size), warm / "part-0.parquet")
    os.link(warm / "part-0.parquet", warm / "part-1.parquet")
    minmax_scan(spark, warm, column)
    S.build(spark, str(warm), column, structure="hashed")  # two copies of one file: auto would pick segments
    S.build(spark, str(warm), column, index_path=str(warm / "_j"), structure="hashed", engine="spark")
    shutil.rmtree(warm)
    scans = []
    for _ in range(runs):
        t0 = time.perf_counter()
        minmax_scan(spark, root, column)
        scans.append(time.perf_counter() - t0)
    idx = root.parent / "default-index"
    builds: list[float] = []
    while len(builds) < runs and sum(builds) < 60:  # a slow build (the Spark engine) runs once
        shutil.rmtree(idx, ignore_errors=True)
        t0 = time.perf_counter()
        S.build(spark, str(root), column, index_path=str(idx))
        builds.append(time.perf_counter() - t0)
    stats = S.open_index(str(root), column, index_path=str(idx)).manifest.build_stats
    shutil.rmtree(idx)
    mm, default = statistics.median(scans), statistics.median(builds)
    return {"spark_minmax_s": mm, "spark_minmax_runs_s": scans, "build_vs_spark_minmax": build_s / mm,
            "default_build_s": default, "default_build_runs_s": builds, "default_engine": stats.get("engine"),
            "default_build_vs_spark_minmax": default / mm}


def sync_case(root: Path, column: str, per_file: int, n_files: int, rng: np.random.Generator,
              append: Any = None) -> dict[str, Any]:
    """Append 1 % new files (new random keys) to the built index's table and time their sync, each
    repeat from the same built index (its folder restored, untimed); then compact the synced index
    (the build's structure and the sync's), compare with the build time, and remove the new files.

    Before each timed sync (and the compact and the build) the disk is flushed (``os.sync``, untimed): the appended
    files and a restored index are otherwise still being written back when the sync's own fsyncs run, and a
    table's new files have usually reached the disk long before the sync that indexes them.
    ``append(j, n, rng)``: the rows of appended file ``j`` (default: the ``u``/``k``/``v`` layout's)."""
    n_new = max(1, n_files // 100)
    added = []
    for j in range(n_new):
        n = per_file
        ids = np.arange(10**9 + j * n, 10**9 + (j + 1) * n)
        p = root / f"append-{j:03d}.parquet"
        if append is not None:
            pq.write_table(append(j, n, rng), p)
            added.append(p)
            continue
        pq.write_table(pa.table({"u": pa.array(uuids(n, rng), pa.binary(36)).cast(pa.string()),
                                 "k": pa.array(rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)),
                                 "v": pa.array(ids)}), p)
        added.append(p)
    sync, compact = S.sync, S.compact  # imported before the clock starts (an import is no sync cost)
    index = root / "_sieve" / column
    assert (index / "manifest-00000001.json").exists() or any(index.glob("manifest-*.json")), \
        f"no index of {column} at {index}: sync_case needs the default index the Sieve case built"
    built = root / f"_built-{column}"  # the built index, restored before every repeat
    shutil.rmtree(built, ignore_errors=True)
    shutil.copytree(index, built)
    syncs = []
    try:
        for r in range(SYNC_REPEATS):
            if r:
                shutil.rmtree(index)
                shutil.copytree(built, index)
            os.sync()
            t0 = time.perf_counter()
            rep = sync(None, str(root), column)
            syncs.append(time.perf_counter() - t0)
            assert rep.action == "sync" and rep.files_added == n_new, rep
    finally:
        shutil.rmtree(built, ignore_errors=True)
    sync_s = statistics.median(syncs)
    os.sync()
    t0 = time.perf_counter()
    compact(str(root), column)
    compact_s = time.perf_counter() - t0
    os.sync()  # the build too pays for its own writes only
    t0 = time.perf_counter()
    S.build(None, str(root), column)
    build_s = time.perf_counter() - t0
    for p in added:
        p.unlink()
    return {"column": column, "files_added": rep.files_added, "sync_s": sync_s, "sync_first_s": syncs[0],
            "sync_runs_s": syncs, "compact_s": compact_s, "build_s": build_s, "sync_vs_build": sync_s / build_s}


# syncs of the append, each from the built index (median: one fsync stall of this disk takes tens of ms)
SYNC_REPEATS = 7


# ---- Spark ---------------------------------------------------------------------------------------
def spark_session(master: str) -> Any:
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master(master).appName("sieve-random-keys")
            .config("spark.ui.enabled", "true").config("spark.ui.port", "0")
            .config("spark.sql.shuffle.partitions", "8")
            .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "100000")
            .config("spark.driver.memory", "2g").getOrCreate())


def spark_copy(spark: Any, src: Path, dst: Path, bloom: float | None, ndv: int,
               columns: tuple[str, ...] = ("u", "k")) -> int:
    """Rewrite each file of ``src`` as one file of ``dst`` (same rows), with bloom filters or not."""
    shutil.rmtree(dst, ignore_errors=True)
    big = str(1 << 40)
    spark.conf.set("spark.sql.files.maxPartitionBytes", big)
    spark.conf.set("spark.sql.files.openCostInBytes", big)  # one input file per task: one output file each
    w = spark.read.parquet(str(src)).write.mode("overwrite")
    if bloom is not None:
        for col in columns:
            w = (w.option(f"parquet.bloom.filter.enabled#{col}", "true")
                 .option(f"parquet.bloom.filter.expected.ndv#{col}", str(ndv))
                 .option(f"parquet.bloom.filter.fpp#{col}", str(bloom)))
    w.parquet(str(dst))
    spark.conf.unset("spark.sql.files.maxPartitionBytes")
    spark.conf.unset("spark.sql.files.openCostInBytes")
    return sum(p.stat().st_size for p in dst.glob("*.parquet"))


def stage_inputs(spark: Any) -> dict[int, tuple[int, int]]:
    """Stage id -> (input bytes, input records) of every completed stage (Spark's REST API)."""
    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/stages?status=complete"
    with urllib.request.urlopen(url, timeout=30) as r:
        stages = json.load(r)
    return {s["stageId"]: (s.get("inputBytes", 0), s.get("inputRecords", 0)) for s in stages}


def measured(spark: Any, run: Any) -> tuple[float, int, int]:
    before = stage_inputs(spark)
    t0 = time.perf_counter()
    run()
    wall = time.perf_counter() - t0
    time.sleep(0.3)  # the listener bus
    after = stage_inputs(spark)
    new = [v for k, v in after.items() if k not in before]
    return wall, sum(b for b, _ in new), sum(r for _, r in new)


def chunk_bytes(root: Path, column: str) -> tuple[dict[str, int], dict[str, int]]:
    """Per file: compressed bytes of the column's chunks, and the footer's size."""
    chunks, footers = {}, {}
    for p in sorted(root.glob("*.parquet")):
        md = pq.ParquetFile(p).metadata
        leaf = next(i for i in range(md.num_columns) if md.schema.column(i).path == column)
        chunks[p.name] = sum(md.row_group(r).column(leaf).total_compressed_size for r in range(md.num_row_groups))
        footers[p.name] = md.serialized_size
    return chunks, footers


def spark_case(spark: Any, plain: Path, blooms: dict[str, Path], column: str, values: np.ndarray,
               files: list[np.ndarray], queries: int, rng: np.random.Generator,
               per_file_filter: dict[str, float]) -> list[dict[str, Any]]:
    from pyspark.sql import functions as fn

    rows_per_file = statistics.mean(len(x) for x in files)
    sample = rng.choice(len(values), queries, replace=False).tolist()
    out = []
    idx_root = str(plain)
    S.build(None, idx_root, column)

    def full(v: Any) -> Any:
        def go() -> None:
            spark.conf.set("spark.sql.parquet.filterPushdown", "false")
            spark.read.parquet(str(plain)).where(fn.col(column) == v).count()
            spark.conf.set("spark.sql.parquet.filterPushdown", "true")
        return go

    def bloom(path: Path, v: Any) -> Any:
        return lambda: spark.read.parquet(str(path)).where(fn.col(column) == v).count()

    def sieve(v: Any) -> Any:
        return lambda: S.read(spark, idx_root, column, S.Eq(v)).count()

    methods = [("full scan", full, len(files))]
    methods += [(f"bloom fpp {name}", functools.partial(bloom, p), len(files)) for name, p in blooms.items()]
    methods.append(("Sieve", sieve, None))
    idx = S.open_index(idx_root, column)
    chunks, footers = chunk_bytes(plain, column)
    mean_chunk = statistics.mean(chunks.values())
    mean_footer = statistics.mean(footers.values())
    for name, make, opened in methods:
        walls, nbytes, recs, nfiles = [], [], [], []
        for i in sample:
            v = _py(values[i])
            wall, b, r = measured(spark, make(v))
            walls.append(wall)
            nbytes.append(b)
            recs.append(r)
            nfiles.append(opened if opened is not None else len(idx.candidates(S.Eq(v), assume_fresh=True)))
        groups = statistics.mean(recs) / rows_per_file
        files_opened = statistics.mean(nfiles)
        # bytes a reader must fetch: footers of the files it opens, the column chunks of the row groups
        # it reads, plus the bloom filters (bloom) or one index page and header (Sieve)
        computed = files_opened * mean_footer + groups * mean_chunk
        if name.startswith("bloom"):
            computed += len(files) * per_file_filter.get(name, 0.0)
        elif name == "Sieve":
            href = idx.manifest.hashed[0]
            computed += href.header + (href.bytes - href.header) / (1 << idx.hashed.header(href).page_bits)
        out.append({"column": column, "method": name, "wall_s": statistics.median(walls),
                    "files_opened": files_opened, "row_groups_read": groups, "bytes_read": computed,
                    "spark_input_bytes": statistics.mean(nbytes)})
    return out


# ---- report --------------------------------------------------------------------------------------
def fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n:.0f} B"
        n /= 1024
    return str(n)


def write_report(path: Path, args: argparse.Namespace, results: list[dict[str, Any]], load: str, wall: float) -> None:
    lines = [
        "# Random keys: Sieve's hashed structure vs Parquet bloom filters (issue 30)",
        "",
        (
            f"`benchmarks/sieve/random_keys.py {' '.join(sys.argv[1:])}` — {platform.machine()}, "
            f"{os.cpu_count()} CPUs, load average at start {load}; wall {wall:.0f} s. Machine shared with "
            "other engineers' jobs: timings are noisy, ratios less so."
        ),
        "",
        (
            f"Layout: {args.files} Parquet files, K distinct keys per file, every key in 1-3 random files; "
            "columns `u` (UUID strings) and `k` (random int64) with the same layout. Sieve: pyarrow build "
            f'with the defaults (`structure="auto"`, fpp {DEFAULT_FPP}; hashed + fuse: the one-file keys in the '
            "retrieval structure). Exact = the files holding the key."
        ),
        "",
        "## Sieve (no Spark)",
        "",
        (
            "| K/file | column | structure | (key, file) pairs | index | B/pair | point ÷ exact (max) | IN(10) ÷ exact "
            "| absent keys reading a file | lookup ms (first / warm) | open + lookup ms | build s | min/max pass s "
            "| build ÷ min/max | footer pass s | build ÷ footers |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for c in r["sieve"]:
            lines.append(f"| {r['per_file']:,} | {c['column']} | {c['structure']} | {c['pairs']:,} | "
                         f"{fmt_bytes(c['index_bytes'])} | {c['bytes_per_pair']:.2f} | {c['point_ratio']:.3f} "
                         f"({c['point_ratio_max']:.2f}) | {c['in_ratio']:.3f} | {c['absent_share']:.2%} | "
                         f"{c['lookup_ms_first']:.2f} / {c['lookup_ms_warm']:.2f} | {c['open_and_lookup_ms']:.1f} | "
                         f"{c['build_s']:.2f} | {c['minmax_s']:.2f} | {c['build_vs_minmax']:.2f} | "
                         f"{c['footers_s']:.3f} | {c['build_vs_footers']:.1f} |")
    if any("spark_minmax_s" in c for r in results for c in r["sieve"]):
        lines += ["", "## Build against each min/max pass", "",
                  ("Spark min/max scan: `sync_cost.minmax_scan` (the project's min/max pass); default build: "
                   "`sieve.build(spark, root, col)` with the session (engine auto); medians of "
                   f"{BASELINE_RUNS} runs."), "",
                  ("| K/file | column | build s (no Spark) | default build s (engine) | Spark min/max s | "
                   "column read s | footer pass s | build ÷ Spark min/max | default build ÷ Spark min/max | "
                   "build ÷ column read | build ÷ footers |"), "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in results:
            for c in r["sieve"]:
                if "spark_minmax_s" in c:
                    lines.append(f"| {r['per_file']:,} | {c['column']} | {c['build_s']:.2f} | "
                                 f"{c['default_build_s']:.2f} ({c['default_engine']}) | {c['spark_minmax_s']:.2f} | "
                                 f"{c['minmax_s']:.2f} | {c['footers_s']:.3f} | {c['build_vs_spark_minmax']:.2f} | "
                                 f"{c['default_build_vs_spark_minmax']:.2f} | {c['build_vs_minmax']:.1f} | "
                                 f"{c['build_vs_footers']:.0f} |")
    lines += ["", "## Sync of a 1 % append (new files with new keys)", "",
              (f"Each of {SYNC_REPEATS} syncs starts from the built index (its folder restored, untimed) "
               "after an `os.sync()` (untimed), so it pays for its own writes only; compact merges the "
               "build's structure and the sync's."), "",
              (f"| K/file | column | files added | sync s (median of {SYNC_REPEATS}) | first sync s | compact s | "
               "build s | sync ÷ build |"), "|---|---|---|---|---|---|---|---|"]
    for r in results:
        for c in r["sync"]:
            lines.append(f"| {r['per_file']:,} | {c['column']} | {c['files_added']} | {c['sync_s']:.3f} | "
                         f"{c['sync_first_s']:.3f} | "
                         f"{c['compact_s']:.3f} | {c['build_s']:.2f} | {c['sync_vs_build']:.1%} |")
    if any(r.get("spark") for r in results):
        lines += [
            "",
            "## Through Spark: `WHERE col = X` on present keys (medians)",
            "",
            (
                "Bloom-filter bytes: the Spark-written table's size minus the same rows written without "
                "bloom filters, per (key, file) pair. Files opened: bloom filters and a full scan open every "
                "file's footer; Sieve opens the candidates only. Row groups read: rows the scan read ÷ rows "
                "per file (one row group per file here). Bytes read: what the reader must fetch, from the "
                "files' metadata: the footers of the files it opens, the bloom filters (bloom) or the index "
                "header and one page (Sieve), and the column chunks of the row groups it reads; Spark's own "
                "stage input bytes beside it."
            ),
            "",
            (
                "| K/file | column | method | extra bytes/pair | wall s | files opened | row groups read | bytes read "
                "| Spark input bytes |"
            ),
            "|---|---|---|---|---|---|---|---|---|",
        ]
        lines += spark_rows([r for r in results if r.get("spark")])
    if len(results) > 1:
        a, b = results[0], results[-1]
        lines += ["", "## Growth", "", (f"From K = {a['per_file']:,} to {b['per_file']:,} per file "
                  f"({b['per_file'] / a['per_file']:.0f}× the pairs):"), ""]
        for ca, cb in zip(a["sieve"], b["sieve"], strict=True):
            lines.append(f"* `{ca['column']}`: index {fmt_bytes(ca['index_bytes'])} → {fmt_bytes(cb['index_bytes'])} "
                         f"({cb['index_bytes'] / ca['index_bytes']:.1f}×), B/pair {ca['bytes_per_pair']:.2f} → "
                         f"{cb['bytes_per_pair']:.2f}, build {ca['build_s']:.2f} s → {cb['build_s']:.2f} s, "
                         f"open + lookup {ca['open_and_lookup_ms']:.1f} → {cb['open_and_lookup_ms']:.1f} ms")
    lines += ["", f"False negatives: {len(FAILED)}.", ""]
    path.write_text("\n".join(lines))


# ---- TPC-H (issue 30): orders with o_orderkey shuffled plus a UUID column; customer.c_phone -------
TPCH_TARGETS = {"bytes_per_pair": 2.0, "point_ratio": 1.05, "in_ratio": 1.05, "absent_share": 0.01,
                "lookup_ms_warm": 1.0, "build_vs_minmax": 1.2, "sync_vs_build": 0.05}
PHONE_TARGET = 1.1  # c_phone-like codes: files read ÷ exact


def tpch_source(data: Path, scale: float) -> Path:
    """TPC-H ``orders`` and ``customer`` at ``scale`` from ``tpchgen-cli`` (generated once, cached)."""
    from sieve_data import tpchgen_binary

    out = data / f"tpch-sf{scale:g}-keys"
    if not (out / "DONE").exists():
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        cmd = [tpchgen_binary(), "parquet", "-s", f"{scale:g}", "--tables", "orders,customer",
               "--output-dir", str(out), "--no-progress", "-q"]
        print(f"[data] {' '.join(cmd)}", flush=True)
        subprocess.run(cmd, check=True)
        (out / "DONE").write_text("ok")
    return out


def read_plain(path: Path) -> pa.Table:
    """A tpchgen-cli table with its ``string_view`` columns as plain strings (what Spark and the
    hashing read)."""
    t = pq.read_table(path)
    return pa.table({n: c.cast(pa.string()) if pa.types.is_string_view(c.type) else c
                     for n, c in zip(t.column_names, t.columns, strict=True)})


def write_shuffled(root: Path, table: pa.Table, n_files: int, rng: np.random.Generator,
                   tag: dict[str, Any]) -> list[np.ndarray]:
    """The table's rows in a random order, cut into ``n_files`` files of equal size (one row group
    each); per file, the row numbers (in ``table``) it holds. Reused when ``_meta.json`` matches ``tag``
    (the permutation is drawn either way, so the row numbers agree)."""
    perm = rng.permutation(table.num_rows)
    files = np.array_split(perm, n_files)
    meta = root / "_meta.json"  # "_": Spark and Sieve skip it
    if meta.exists() and json.loads(meta.read_text()) == tag:
        return files
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for i, ids in enumerate(files):
        pq.write_table(table.take(pa.array(ids)), root / f"part-{i:05d}.parquet", row_group_size=len(ids))
    meta.write_text(json.dumps(tag))
    return files


def absent_ints(present: np.ndarray, n: int, rng: np.random.Generator) -> list[int]:
    """``n`` integers inside the column's range that it does not hold (TPC-H order keys are sparse:
    8 used in every 32)."""
    lo, hi = int(present.min()), int(present.max())
    cand = rng.integers(lo, hi, 4 * n)
    cand = cand[~np.isin(cand, present)]
    return [int(x) for x in np.unique(cand)[:n]]


def absent_phones(present: np.ndarray, n: int, rng: np.random.Generator) -> list[str]:
    """``n`` phone numbers in TPC-H's format (country code 10-34, then 3-3-4 random digits) that
    the column does not hold."""
    have = set(present.tolist())
    out: list[str] = []
    while len(out) < n:
        c, a, b, d = (int(rng.integers(10, 35)), int(rng.integers(100, 1000)), int(rng.integers(100, 1000)),
                      int(rng.integers(1000, 10000)))
        p = f"{c}-{a}-{b}-{d}"
        if p not in have:
            out.append(p)
    return out


def orders_append(orders: pa.Table, rng: np.random.Generator) -> Any:
    """Rows of an appended orders file: random existing orders with fresh order keys (above the
    largest) and fresh UUIDs (``sync_case``'s ``append``)."""
    top = int(pc.max(orders.column("o_orderkey")).as_py())

    def make(j: int, n: int, r: np.random.Generator) -> pa.Table:
        t = orders.take(pa.array(rng.integers(0, orders.num_rows, n)))
        keys = np.arange(top + 1 + j * n, top + 1 + (j + 1) * n, dtype=np.int64)
        t = t.set_column(t.column_names.index("o_orderkey"), "o_orderkey", pa.array(keys))
        return t.set_column(t.column_names.index("o_uuid"), "o_uuid",
                            pa.array(uuids(n, r), pa.binary(36)).cast(pa.string()))
    return make


def tpch_cases(args: argparse.Namespace) -> dict[str, Any]:
    """SF ``--tpch`` orders (o_orderkey shuffled, o_uuid) and customer.c_phone in ``--files`` shuffled
    files: ``sieve_case`` for each column, ``sync_case`` for the two orders columns."""
    scale, n_files = float(args.tpch), args.files
    data = Path(args.data)
    src = tpch_source(data, scale)
    out: dict[str, Any] = {"scale": scale, "files": n_files, "cases": [], "sync": []}
    wanted = set(args.tpch_cases.split(","))
    if wanted & {"orders", "orders-spark"}:
        rng = np.random.default_rng([SEED, 1, n_files, int(scale * 1000)])
        t0 = time.perf_counter()
        orders = read_plain(src / "orders.parquet")
        u = uuids(orders.num_rows, rng)
        orders = orders.append_column("o_uuid", pa.array(u, pa.binary(36)).cast(pa.string()))
        root = data / f"tpch-sf{scale:g}-orders-{n_files}"
        files = write_shuffled(root, orders, n_files, rng, {"scale": scale, "files": n_files, "seed": SEED, "v": 1})
        out["orders_rows"] = orders.num_rows
        out["orders_bytes"] = sum(p.stat().st_size for p in root.glob("*.parquet"))
        print(f"[data] orders SF{scale:g}: {orders.num_rows:,} rows in {n_files} files "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
        if not args.data_only and "orders" in wanted:
            orders_cases(args, out, root, orders, files, u, rng)
        if not args.data_only and "orders-spark" in wanted:
            vals = {"o_orderkey": orders.column("o_orderkey").to_numpy(), "o_uuid": u}
            out["spark"] = [orders_spark(args, root, files, vals, rng)]
        del orders, u
    if "phone" in wanted:
        rng = np.random.default_rng([SEED, 2, n_files, int(scale * 1000)])
        customer = read_plain(src / "customer.parquet")
        root = data / f"tpch-sf{scale:g}-customer-{n_files}"
        files = write_shuffled(root, customer, n_files, rng, {"scale": scale, "files": n_files, "seed": SEED, "v": 1})
        if args.data_only:
            return out
        phones = customer.column("c_phone").to_numpy(zero_copy_only=False)
        out["phone_rows"] = customer.num_rows
        out["phone_distinct"] = len(pc.unique(customer.column("c_phone")))
        del customer
        for structure in ("auto", "hashed"):
            c = sieve_case(root, "c_phone", files, phones, absent_phones(phones, 4000, rng), args.queries, rng) \
                if structure == "auto" else forced_hashed_case(root, files, phones, args.queries, rng)
            c["table"], c["asked"] = "customer", structure
            print(json.dumps(c), flush=True)
            out["cases"].append(c)
            if c["structure"] == "hashed":
                break  # auto picked the hashed structure: forcing it would build the same index
    return out


def orders_cases(args: argparse.Namespace, out: dict[str, Any], root: Path, orders: pa.Table,
                 files: list[np.ndarray], u: np.ndarray, rng: np.random.Generator) -> None:
    keys = orders.column("o_orderkey").to_numpy()
    for col, vals, absent in (("o_orderkey", keys, absent_ints(keys, 4000, rng)),
                              ("o_uuid", u, [str(uuid.uuid4()) for _ in range(4000)])):
        c = sieve_case(root, col, files, vals, absent, args.queries, rng)
        c["table"] = "orders"
        print(json.dumps(c), flush=True)
        out["cases"].append(c)
    append = orders_append(orders, rng)
    for col in ("o_orderkey", "o_uuid"):
        c = sync_case(root, col, len(files[0]), args.files, rng, append=append)
        print(json.dumps(c), flush=True)
        out["sync"].append(c)


def orders_spark(args: argparse.Namespace, root: Path, files: list[np.ndarray], vals: dict[str, np.ndarray],
                 rng: np.random.Generator) -> dict[str, Any]:
    """The Spark comparison (as :func:`spark_only`) on the shuffled orders: Spark's copies without and
    with bloom filters on ``o_orderkey`` and ``o_uuid`` (``expected.ndv`` = rows per file)."""
    base = root.parent / f"{root.name}-spark"
    res: dict[str, Any] = {"per_file": len(files[0])}
    spark = spark_session(args.master)
    try:
        spark_side(spark, root, base / "plain", lambda fpp: base / f"bloom-{fpp}", vals, files, args.spark_queries,
                   rng, res, index_bytes=True)
    finally:
        if spark is not BASELINE_SPARK:
            spark.stop()
    return res


def forced_hashed_case(root: Path, files: list[np.ndarray], phones: np.ndarray, queries: int,
                       rng: np.random.Generator) -> dict[str, Any]:
    """``sieve_case`` with the index built as ``structure="hashed"`` (when auto picked segments)."""
    build = S.build
    S.build = functools.partial(build, structure="hashed")
    try:
        return sieve_case(root, "c_phone", files, phones, absent_phones(phones, 4000, rng), queries, rng)
    finally:
        S.build = build


def _mark(value: float, target: float) -> str:
    return "met" if value <= target else "**not met**"


def write_tpch_report(path: Path, args: argparse.Namespace, res: dict[str, Any], load: tuple[str, str],
                      wall: float) -> None:
    scale = res["scale"]
    lines = [
        f"# Random keys on TPC-H SF{scale:g}: `o_orderkey` shuffled, a UUID column, `c_phone` (issue 30)",
        "",
        (
            f"`benchmarks/sieve/random_keys.py {' '.join(sys.argv[1:])}` — {platform.machine()}, "
            f"{os.cpu_count()} CPUs; `uptime` at the start: {load[0]}; at the end: {load[1]}; wall {wall:.0f} s. "
            "Timed under `flock /work/wt/bench.lock` (no other benchmark at the same time), but the machine "
            "is shared: timings follow its load, ratios less so."
        ),
        "",
        (
            f"Data: `tpchgen-cli parquet -s {scale:g} --tables orders,customer`, string columns as plain "
            f"strings; each table's rows in a random order cut into {res['files']} Parquet files of equal "
            "size (one row group each), so no file's min/max prunes anything. `orders` gets a column "
            "`o_uuid` (a random UUID string per row). Every key is in one file (`o_orderkey` and "
            "`o_uuid` are unique). Sieve: pyarrow build with the defaults "
            f'(`structure="auto"`, fpp {DEFAULT_FPP}; hashed + fuse: the one-file keys in the retrieval structure), '
            "the benchmark's `sieve_case` and `sync_case` (see `RANDOM_KEYS.md` for what they measure). "
            "Absent keys: order keys inside the column's range that TPC-H leaves unused (8 in every 32 are "
            "used), random UUIDs, phone numbers of TPC-H's format that no customer has."
        ),
        "",
    ]
    if "orders_rows" in res:
        lines.append(f"`orders`: {res['orders_rows']:,} rows, {fmt_bytes(res['orders_bytes'])} of Parquet.")
    if "phone_rows" in res:
        lines.append(f"`customer`: {res['phone_rows']:,} rows, {res['phone_distinct']:,} distinct `c_phone` values.")
    lines += [
        "",
        "## Sieve",
        "",
        (
            "| table | column | structure | (key, file) pairs | index | B/pair | point ÷ exact (max) | IN(10) ÷ exact "
            "| absent keys reading a file | lookup ms (first / warm) | open + lookup ms | build s | min/max pass s "
            "| build ÷ min/max | footer pass s | build ÷ footers |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in res["cases"]:
        name = c["column"] + (" (forced hashed)" if c.get("asked") == "hashed" else "")
        lines.append(f"| {c['table']} | {name} | {c['structure']} | {c['pairs']:,} | {fmt_bytes(c['index_bytes'])} | "
                     f"{c['bytes_per_pair']:.2f} | {c['point_ratio']:.3f} ({c['point_ratio_max']:.2f}) | "
                     f"{c['in_ratio']:.3f} | {c['absent_share']:.2%} | {c['lookup_ms_first']:.2f} / "
                     f"{c['lookup_ms_warm']:.2f} | {c['open_and_lookup_ms']:.1f} | {c['build_s']:.2f} | "
                     f"{c['minmax_s']:.2f} | {c['build_vs_minmax']:.2f} | {c['footers_s']:.3f} | "
                     f"{c['build_vs_footers']:.1f} |")
    if any("spark_minmax_s" in c for c in res["cases"]):
        lines += [
            "",
            "## Build against each min/max pass",
            "",
            (
                "Spark min/max scan: `sync_cost.minmax_scan` (the project's min/max pass: a Spark "
                "`groupBy(input_file_name()).agg(min, max)`); default build: `sieve.build(spark, root, col)` "
                f"with that session (engine auto); medians of {BASELINE_RUNS} runs (a build over 60 s runs once)."
            ),
            "",
            (
                "| column | build s (no Spark) | default build s (engine) | Spark min/max s | column read s | "
                "footer pass s | build ÷ Spark min/max | default build ÷ Spark min/max | build ÷ column read |"
            ),
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for c in res["cases"]:
            if "spark_minmax_s" in c:
                lines.append(f"| {c['column']} | {c['build_s']:.2f} | {c['default_build_s']:.2f} "
                             f"({c['default_engine']}) | {c['spark_minmax_s']:.2f} | {c['minmax_s']:.2f} | "
                             f"{c['footers_s']:.3f} | {c['build_vs_spark_minmax']:.2f} | "
                             f"{c['default_build_vs_spark_minmax']:.2f} | {c['build_vs_minmax']:.1f} |")
    if res["sync"]:
        n = len(res["sync"][0].get("sync_runs_s", [0]))
        lines += [
            "",
            "## Sync of a 1 % append (2 new files of random existing orders with fresh keys and UUIDs)",
            "",
            f"| column | files added | sync s (median of {n}) | first sync s | compact s | build s | sync ÷ build |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in res["sync"]:
            lines.append(f"| {c['column']} | {c['files_added']} | {c['sync_s']:.3f} | "
                         f"{c.get('sync_first_s', c['sync_s']):.3f} | {c['compact_s']:.3f} | "
                         f"{c['build_s']:.2f} | {c['sync_vs_build']:.1%} |")
    if res.get("spark"):
        r = res["spark"][0]
        lines += ["", "## Through Spark: `WHERE col = X` on present keys (medians)", "",
                  (f"As in `RANDOM_KEYS_SPARK.md`: Spark rewrites the {res['files']} files without bloom filters and "
                   f"with them on both key columns (`expected.ndv` = {r['per_file']:,}, the rows per file) at fpp "
                   f"0.01 and 0.001; {args.spark_queries} present keys per column and method, Spark `{args.master}`. "
                   "Spark's writes (s): " + ", ".join(f"{k} {v:.1f}" for k, v in r["copy_s"].items()) + "."), "",
                  ("| rows/file | column | method | extra bytes/pair | wall s | files opened | row groups read "
                   "| bytes read | Spark input bytes |"), "|---|---|---|---|---|---|---|---|---|"]
        lines += spark_rows(res["spark"])
    lines += ["", "## Against the issue's targets", "", "| column | target | measured | |", "|---|---|---|---|"]
    sync = {c["column"]: c for c in res["sync"]}
    for c in res["cases"]:
        if c["table"] == "orders":
            rows = [("B/pair ≤ 2", c["bytes_per_pair"], 2.0, "{:.2f}"),
                    ("point ÷ exact ≤ 1.05", c["point_ratio"], 1.05, "{:.3f}"),
                    ("IN(10) ÷ exact ≤ 1.05", c["in_ratio"], 1.05, "{:.3f}"),
                    ("absent keys reading a file ≤ 1 %", c["absent_share"], 0.01, "{:.2%}"),
                    ("lookup warm ≤ 1 ms", c["lookup_ms_warm"], 1.0, "{:.2f} ms"),
                    ("build ≤ 1.2× min/max pass (column read)", c["build_vs_minmax"], 1.2, "{:.1f}×")]
            if "spark_minmax_s" in c:
                rows += [("build ≤ 1.2× min/max pass (Spark scan)", c["build_vs_spark_minmax"], 1.2, "{:.2f}×"),
                         ("default build (with Spark) ≤ 1.2× Spark min/max", c["default_build_vs_spark_minmax"], 1.2,
                          "{:.2f}×")]
            if c["column"] in sync:
                rows.append(("sync of 1 % ≤ 5 % of build", sync[c["column"]]["sync_vs_build"], 0.05, "{:.1%}"))
        else:
            rows = [("c_phone point ÷ exact ≤ 1.1", c["point_ratio"], PHONE_TARGET, "{:.3f}"),
                    ("c_phone IN(10) ÷ exact ≤ 1.1", c["in_ratio"], PHONE_TARGET, "{:.3f}"),
                    ("B/pair ≤ 2", c["bytes_per_pair"], 2.0, "{:.2f}")]
        for name, v, t, f in rows:
            lines.append(f"| {c['column']}{' (hashed)' if c.get('asked') == 'hashed' else ''} | {name} | "
                         f"{f.format(v)} | {_mark(v, t)} |")
    lines += ["", f"False negatives: {len(FAILED)} (every point and IN answer held the exact files).", ""]
    path.write_text("\n".join(lines))


def layout_data(n_files: int, per_file: int, rng: np.random.Generator, root: Path
                ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """One size's layout, its UUID and int64 keys, and the plain Parquet files under ``root``."""
    files = layout(n_files, per_file, rng)
    n_keys = n_files * per_file // 2
    u = uuids(n_keys, rng)
    k = rng.integers(-(2**63), 2**63 - 1, n_keys, dtype=np.int64)
    write_plain(root, files, u, k)
    return files, u, k


def spark_side(spark: Any, root: Path, plain: Path, bloom_dir: Any, vals: dict[str, np.ndarray],
               files: list[np.ndarray], queries: int, rng: np.random.Generator, res: dict[str, Any], *,
               index_bytes: bool = False) -> None:
    """Spark's three copies of ``root`` (``plain`` without bloom filters, ``bloom_dir(fpp)`` with them at
    fpp 0.01 and 0.001, on every column of ``vals``) and ``spark_case`` on each column; sets ``pairs``,
    ``copy_s``, ``bloom_bytes_per_pair`` and ``spark`` of ``res``, and with ``index_bytes`` each column's
    ``sieve_bytes_per_pair`` from the index its Sieve case built on ``plain``."""
    per_file = res["per_file"]
    cols = tuple(vals)
    pairs = res["pairs"] = sum(len(x) for x in files)
    t0 = time.perf_counter()
    plain_bytes = spark_copy(spark, root, plain, None, per_file, cols)
    res["copy_s"] = {"no bloom filters": time.perf_counter() - t0}
    res["bloom_bytes_per_pair"] = {}
    blooms = {}
    for fpp in ("0.01", "0.001"):
        p = bloom_dir(fpp)
        t0 = time.perf_counter()
        nbytes = spark_copy(spark, root, p, float(fpp), per_file, cols)
        res["copy_s"][f"bloom fpp {fpp}"] = time.perf_counter() - t0
        blooms[fpp] = p
        # every column carries a filter sized by the same NDV: each column's share of the growth
        res["bloom_bytes_per_pair"][f"bloom fpp {fpp}"] = (nbytes - plain_bytes) / len(cols) / pairs
    print(json.dumps(res["bloom_bytes_per_pair"]), flush=True)
    res["spark"] = []
    for col in cols:
        filt = {m: b * pairs / len(files) for m, b in res["bloom_bytes_per_pair"].items()}
        for c in spark_case(spark, plain, blooms, col, vals[col], files, queries, rng, filt):
            print(json.dumps(c), flush=True)
            res["spark"].append(c)
        if index_bytes:
            res.setdefault("sieve_bytes_per_pair", {})[col] = S.open_index(str(plain), col).stats().index_bytes / pairs


# ---- Spark only (the bloom-filter comparison at given sizes, without the no-Spark cases) ----------
def spark_only(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The Spark part of :func:`main` for ``--spark-sizes`` alone: the layout, three Spark-written
    copies and ``spark_case`` on both columns; Sieve's bytes per pair from the index it builds."""
    rng = np.random.default_rng([SEED, 3])
    data = Path(args.data)
    spark = spark_session(args.master)
    results = []
    try:
        for per_file in (int(s) for s in args.spark_sizes.split(",")):
            print(f"== Spark: {args.files} files x {per_file:,} keys", flush=True)
            base = data / f"k{per_file}"
            root = base / "plain"
            files, u, k = layout_data(args.files, per_file, rng, root)
            res: dict[str, Any] = {"per_file": per_file}
            spark_side(spark, root, base / "spark-plain", lambda fpp, b=base: b / f"spark-bloom-{fpp}",
                       {"u": u, "k": k}, files, args.spark_queries, rng, res, index_bytes=True)
            results.append(res)
            out = Path(args.spark_json)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(results, indent=1))
    finally:
        spark.stop()
    return results


def spark_rows(results: list[dict[str, Any]]) -> list[str]:
    """The rows of RANDOM_KEYS.md's Spark table for these results."""
    lines = []
    for r in results:
        for c in r["spark"]:
            extra = r["bloom_bytes_per_pair"].get(c["method"], r["sieve_bytes_per_pair"].get(c["column"])
                                                  if c["method"] == "Sieve" else None)
            ex = "" if extra is None else f"{extra:.2f}"
            lines.append(f"| {r['per_file']:,} | {c['column']} | {c['method']} | {ex} | {c['wall_s']:.2f} | "
                         f"{c['files_opened']:.1f} | {c['row_groups_read']:.1f} | {fmt_bytes(c['bytes_read'])} | "
                         f"{fmt_bytes(c['spark_input_bytes'])} |")
    return lines


def write_spark_report(path: Path, args: argparse.Namespace, results: list[dict[str, Any]], load: tuple[str, str],
                       wall: float) -> None:
    """RANDOM_KEYS_SPARK.md: the Spark comparison at every size of one run, and its growth."""
    results = sorted(results, key=lambda r: r["per_file"])
    lines = ["# Random keys through Spark: Sieve pruning vs Parquet bloom filters vs a full scan (issue 30)", "",
             (f"`benchmarks/sieve/random_keys.py {' '.join(sys.argv[1:])}` — {platform.machine()}, "
              f"{os.cpu_count()} CPUs, Spark `{args.master}`; `uptime` at the start: {load[0]}; at the end: "
              f"{load[1]}; wall {wall:.0f} s. Every size ran in this one run, so the growth compares like with "
              "like. Timed under `flock /work/wt/bench.lock` (no other benchmark at the same time), but the "
              "machine is shared: wall times follow its load."), "",
             (f"Layout (as in `RANDOM_KEYS.md`): {args.files} Parquet files, K distinct keys per file, every key in "
              "1-3 random files; columns `u` (UUID strings) and `k` (random int64). Spark rewrites the rows "
              "three times, one output file per input file: without bloom filters, and with "
              "`parquet.bloom.filter.enabled#col` (both columns, `expected.ndv` = K) at fpp 0.01 and 0.001. "
              f"`WHERE col = X` on {args.spark_queries} present keys per column and method (medians): full scan "
              "(filter push-down off), bloom-filter push-down, and `sieve.read` (Sieve pruning, index built "
              "with the defaults: `structure=\"auto\"`, fpp 0.005) on the table without bloom filters."), "",
             ("Extra bytes/pair: bloom filters, the table's size minus the same rows written without them, per "
              "(key, file) pair and column; Sieve, the index's bytes per pair. Files opened: bloom filters and a "
              "full scan open every file's footer; Sieve opens its candidates. Row groups read: rows the scan "
              "read ÷ rows per file (one row group per file). Bytes read: what the reader must fetch, from the "
              "files' metadata (the footers of the files it opens, the bloom filters or the index header and "
              "one page, the column chunks of the row groups it reads); Spark's stage input bytes beside it."), "",
             ("| K/file | column | method | extra bytes/pair | wall s | files opened | row groups read | bytes read "
              "| Spark input bytes |"),
             "|---|---|---|---|---|---|---|---|---|"]
    lines += spark_rows(results)
    lines += ["", "Spark's write of the 200 files (seconds, all columns): "
              + "; ".join(f"K = {r['per_file']:,}: " + ", ".join(f"{name} {s:.1f}" for name, s in r["copy_s"].items())
                          for r in results if "copy_s" in r) + ".", ""]
    if len(results) > 1:
        a, b = results[0], results[-1]
        grow = b["pairs"] / a["pairs"]
        lines += ["## Growth", "", (f"From K = {a['per_file']:,} to {b['per_file']:,} per file ({grow:.0f}× the "
                  "(key, file) pairs); per column and method, wall time and bytes read:"), "",
                  "| column | method | " + " | ".join(f"wall s K={r['per_file']:,}" for r in results) + " | "
                  + " | ".join(f"bytes read K={r['per_file']:,}" for r in results) + " | extra bytes/pair |",
                  "|---|---|" + "---|" * (2 * len(results) + 1)]
        for c in a["spark"]:
            cells = [next(x for x in r["spark"] if x["column"] == c["column"] and x["method"] == c["method"])
                     for r in results]
            extras = []
            for r in results:
                e = r["bloom_bytes_per_pair"].get(c["method"], r["sieve_bytes_per_pair"].get(c["column"])
                                                  if c["method"] == "Sieve" else None)
                extras.append("" if e is None else f"{e:.2f}")
            lines.append(f"| {c['column']} | {c['method']} | " + " | ".join(f"{x['wall_s']:.2f}" for x in cells)
                         + " | " + " | ".join(fmt_bytes(x["bytes_read"]) for x in cells) + " | "
                         + (" → ".join(extras) if any(extras) else "") + " |")
    lines += ["", f"False negatives: {len(FAILED)}.", ""]
    path.write_text("\n".join(lines))


def uptime() -> str:
    return subprocess.run(["uptime"], check=False, capture_output=True, text=True).stdout.strip()


def run_tpch(args: argparse.Namespace) -> int:
    global BASELINE_SPARK
    if args.spark_minmax and "orders-spark" in args.tpch_cases.split(","):
        # the min/max baseline's session has no UI, and the Spark comparison reads its stages' input bytes
        raise SystemExit("run --tpch-cases orders-spark in a run of its own, without --spark-minmax")
    start = uptime()
    t0 = time.perf_counter()
    if args.spark_minmax and not args.data_only:
        from sieve_methods import spark_session as baseline_session

        BASELINE_SPARK = baseline_session("1g")
    try:
        res = tpch_cases(args)
    finally:
        if BASELINE_SPARK is not None:
            BASELINE_SPARK.stop()
            BASELINE_SPARK = None
    if args.data_only:
        return 0
    write_tpch_report(Path(args.tpch_report), args, res, (start, uptime()), time.perf_counter() - t0)
    out = Path(args.spark_json).parent / f"random_keys_tpch_sf{float(args.tpch):g}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print(f"wrote {args.tpch_report} and {out}; false negatives: {len(FAILED)}")
    for f in FAILED[:10]:
        print("FALSE NEGATIVE:", f)
    return 1 if FAILED else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="2000,10000,100000", help="distinct keys per file, comma-separated")
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--queries", type=int, default=200, help="Sieve point queries per case")
    ap.add_argument("--spark-queries", type=int, default=5, help="Spark queries per method and case")
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--spark-minmax", action="store_true",
                    help="also time the Spark min/max scan and the build with a session (engine auto), "
                         "even with --no-spark (sync_cost.py's session: local[2], 1 GB driver)")
    ap.add_argument("--spark-sizes", default=None, help="sizes run through Spark (default: all)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--data", default=str(HERE / "data" / "random_keys"))
    ap.add_argument("--report", default=str(HERE / "RANDOM_KEYS.md"))
    ap.add_argument("--tpch", default=None, metavar="SF",
                    help="instead of the layouts: TPC-H at this scale (orders: o_orderkey shuffled + o_uuid; "
                         "customer: c_phone) in --files shuffled files; writes --tpch-report")
    ap.add_argument("--tpch-cases", default="orders,phone",
                    help="with --tpch, comma-separated: orders, phone, orders-spark (the Spark comparison on orders)")
    ap.add_argument("--data-only", action="store_true", help="with --tpch: write the shuffled files, measure nothing")
    ap.add_argument("--tpch-report", default=str(HERE / "RANDOM_KEYS_TPCH.md"))
    ap.add_argument("--spark-only", action="store_true",
                    help="only the Spark comparison at --spark-sizes (results to --spark-json, rows printed)")
    ap.add_argument("--spark-report", default=str(HERE / "RANDOM_KEYS_SPARK.md"))
    ap.add_argument("--spark-json", default=str(HERE / "out" / "random_keys_spark.json"))
    args = ap.parse_args()
    if args.tpch is not None:
        return run_tpch(args)
    if args.spark_only:
        args.spark_sizes = args.spark_sizes or args.sizes
        start, t0 = uptime(), time.perf_counter()
        results = spark_only(args)
        print("\n".join(spark_rows(results)))
        write_spark_report(Path(args.spark_report), args, results, (start, uptime()), time.perf_counter() - t0)
        print(f"wrote {args.spark_report} and {args.spark_json}; false negatives: {len(FAILED)}")
        return 1 if FAILED else 0
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    t_start = time.perf_counter()
    rng = np.random.default_rng(SEED)
    data = Path(args.data)
    spark = None if args.no_spark else spark_session(args.master)
    global BASELINE_SPARK
    if args.spark_minmax:
        from sieve_methods import spark_session as baseline_session

        BASELINE_SPARK = spark if spark is not None else baseline_session("1g")
    spark_sizes = {int(s) for s in (args.spark_sizes or args.sizes).split(",")}
    results = []
    try:
        for per_file in (int(s) for s in args.sizes.split(",")):
            print(f"== {args.files} files x {per_file:,} keys", flush=True)
            root = data / f"k{per_file}" / "plain"
            files, u, k = layout_data(args.files, per_file, rng, root)
            absent_u = [str(uuid.uuid4()) for _ in range(4000)]
            absent_k = [int(x) for x in rng.integers(-(2**63), 2**63 - 1, 4000, dtype=np.int64)]
            res: dict[str, Any] = {"per_file": per_file, "sieve": [], "sync": []}
            for col, vals, absent in (("u", u, absent_u), ("k", k, absent_k)):
                c = sieve_case(root, col, files, vals, absent, args.queries, rng)
                print(json.dumps(c), flush=True)
                res["sieve"].append(c)
            for col in ("u", "k"):
                c = sync_case(root, col, per_file, args.files, rng)
                print(json.dumps(c), flush=True)
                res["sync"].append(c)
            if spark is not None and per_file in spark_sizes:
                res["sieve_bytes_per_pair"] = {c["column"]: c["bytes_per_pair"] for c in res["sieve"]}
                base = data / f"k{per_file}"
                spark_side(spark, root, base / "spark-plain", lambda fpp, b=base: b / f"spark-bloom-{fpp}",
                           {"u": u, "k": k}, files, args.spark_queries, rng, res)
            results.append(res)
            write_report(Path(args.report), args, results, load, time.perf_counter() - t_start)
    finally:
        if spark is not None:
            spark.stop()
        if BASELINE_SPARK is not None and BASELINE_SPARK is not spark:
            BASELINE_SPARK.stop()
    print(f"wrote {args.report}; false negatives: {len(FAILED)}")
    for f in FAILED[:10]:
        print("FALSE NEGATIVE:", f)
    return 1 if FAILED else 0


if __name__ == "__main__":
    raise SystemExit(main())
