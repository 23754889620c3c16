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
        pq.write_table(pa.table({"u": pa.array(u[ids], pa.binary(36)).cast(pa.string()), "k": pa.array(k[ids], pa.int64()),
                                 "v": pa.array(ids, pa.int64())}), root / f"part-{i:05d}.parquet")


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
    out = {"column": column, "structure": stats.structure, "pairs": pairs, "keys": len(values),
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
    builds = []
    for _ in range(runs):
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


def sync_case(root: Path, column: str, per_file: int, n_files: int, rng: np.random.Generator) -> dict[str, Any]:
    """Append 1 % new files (new random keys), sync, compare with the build time; then remove them."""
    n_new = max(1, n_files // 100)
    added = []
    for j in range(n_new):
        n = per_file
        ids = np.arange(10**9 + j * n, 10**9 + (j + 1) * n)
        p = root / f"append-{j:03d}.parquet"
        pq.write_table(pa.table({"u": pa.array(uuids(n, rng), pa.binary(36)).cast(pa.string()),
                                 "k": pa.array(rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)),
                                 "v": pa.array(ids)}), p)
        added.append(p)
    sync, compact = S.sync, S.compact  # imported before the clock starts (an import is no sync cost)
    t0 = time.perf_counter()
    rep = sync(None, str(root), column)
    sync_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    compact(str(root), column)
    compact_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    S.build(None, str(root), column)
    build_s = time.perf_counter() - t0
    for p in added:
        p.unlink()
    return {"column": column, "files_added": rep.files_added, "sync_s": sync_s, "compact_s": compact_s,
            "build_s": build_s, "sync_vs_build": sync_s / build_s}


# ---- Spark ---------------------------------------------------------------------------------------
def spark_session(master: str) -> Any:
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master(master).appName("sieve-random-keys")
            .config("spark.ui.enabled", "true").config("spark.ui.port", "0")
            .config("spark.sql.shuffle.partitions", "8")
            .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "100000")
            .config("spark.driver.memory", "2g").getOrCreate())


def spark_copy(spark: Any, src: Path, dst: Path, bloom: float | None, ndv: int) -> int:
    """Rewrite each file of ``src`` as one file of ``dst`` (same rows), with bloom filters or not."""
    shutil.rmtree(dst, ignore_errors=True)
    big = str(1 << 40)
    spark.conf.set("spark.sql.files.maxPartitionBytes", big)
    spark.conf.set("spark.sql.files.openCostInBytes", big)  # one input file per task: one output file each
    w = spark.read.parquet(str(src)).write.mode("overwrite")
    if bloom is not None:
        for col in ("u", "k"):
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
    lines = ["# Random keys: Sieve's hashed structure vs Parquet bloom filters (issue 30)", "",
             (f"`benchmarks/sieve/random_keys.py {' '.join(sys.argv[1:])}` — {platform.machine()}, "
             f"{os.cpu_count()} CPUs, load average at start {load}; wall {wall:.0f} s. Machine shared with "
             "other engineers' jobs: timings are noisy, ratios less so."), "",
             (f"Layout: {args.files} Parquet files, K distinct keys per file, every key in 1-3 random files; "
             "columns `u` (UUID strings) and `k` (random int64) with the same layout. Sieve: pyarrow build "
             "with the defaults (`structure=\"auto\"`, fpp 0.005). Exact = the files holding the key."), "",
             "## Sieve (no Spark)", "",
             ("| K/file | column | structure | (key, file) pairs | index | B/pair | point ÷ exact (max) | IN(10) ÷ exact "
             "| absent keys reading a file | lookup ms (first / warm) | open + lookup ms | build s | min/max pass s "
             "| build ÷ min/max | footer pass s | build ÷ footers |"),
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
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
              "| K/file | column | files added | sync s | compact s | build s | sync ÷ build |", "|---|---|---|---|---|---|---|"]
    for r in results:
        for c in r["sync"]:
            lines.append(f"| {r['per_file']:,} | {c['column']} | {c['files_added']} | {c['sync_s']:.3f} | "
                         f"{c['compact_s']:.3f} | {c['build_s']:.2f} | {c['sync_vs_build']:.1%} |")
    if any(r.get("spark") for r in results):
        lines += ["", "## Through Spark: `WHERE col = X` on present keys (medians)", "",
                  ("Bloom-filter bytes: the Spark-written table's size minus the same rows written without "
                  "bloom filters, per (key, file) pair. Files opened: bloom filters and a full scan open every "
                  "file's footer; Sieve opens the candidates only. Row groups read: rows the scan read ÷ rows "
                  "per file (one row group per file here). Bytes read: what the reader must fetch, from the "
                  "files' metadata: the footers of the files it opens, the bloom filters (bloom) or the index "
                  "header and one page (Sieve), and the column chunks of the row groups it reads; Spark's own "
                  "stage input bytes beside it."), "",
                  ("| K/file | column | method | extra bytes/pair | wall s | files opened | row groups read | bytes read "
                  "| Spark input bytes |"),
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in results:
            for c in r.get("spark", []):
                extra = r["bloom_bytes_per_pair"].get(c["method"], r["sieve_bytes_per_pair"].get(c["column"])
                                                      if c["method"] == "Sieve" else None)
                ex = "" if extra is None else f"{extra:.2f}"
                lines.append(f"| {r['per_file']:,} | {c['column']} | {c['method']} | {ex} | {c['wall_s']:.2f} | "
                             f"{c['files_opened']:.1f} | {c['row_groups_read']:.1f} | {fmt_bytes(c['bytes_read'])} | "
                             f"{fmt_bytes(c['spark_input_bytes'])} |")
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
    args = ap.parse_args()
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
            files = layout(args.files, per_file, rng)
            n_keys = args.files * per_file // 2
            u = uuids(n_keys, rng)
            k = rng.integers(-(2**63), 2**63 - 1, n_keys, dtype=np.int64)
            root = data / f"k{per_file}" / "plain"
            write_plain(root, files, u, k)
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
                base = data / f"k{per_file}"
                plain_bytes = spark_copy(spark, root, base / "spark-plain", None, per_file)
                blooms = {}
                res["bloom_bytes_per_pair"] = {}
                pairs = sum(len(x) for x in files)
                for fpp in ("0.01", "0.001"):
                    p = base / f"spark-bloom-{fpp}"
                    nbytes = spark_copy(spark, root, p, float(fpp), per_file)
                    blooms[fpp] = p
                    # both columns carry a filter sized by the same NDV: half the growth is one column's
                    res["bloom_bytes_per_pair"][f"bloom fpp {fpp}"] = (nbytes - plain_bytes) / 2 / pairs
                res["sieve_bytes_per_pair"] = {c["column"]: c["bytes_per_pair"] for c in res["sieve"]}
                print(json.dumps(res["bloom_bytes_per_pair"]), flush=True)
                res["spark"] = []
                vals = {"u": u, "k": k}
                for col in ("u", "k"):
                    filt = {m: b * pairs / args.files for m, b in res["bloom_bytes_per_pair"].items()}
                    for c in spark_case(spark, base / "spark-plain", blooms, col, vals[col], files,
                                        args.spark_queries, rng, filt):
                        print(json.dumps(c), flush=True)
                        res["spark"].append(c)
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
