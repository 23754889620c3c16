"""Scale figures of the Sieve benchmark: driver memory during the build, lookup latency, SF1 vs SF10.

* :class:`MemoryProbe` wraps the index build. It samples the resident set (``VmRSS``) of the Python
  driver and of the driver JVM (in ``local[*]`` the JVM is driver and executors in one process) every
  20 ms, and reads the JVM heap's peak from ``java.lang.management`` (the heap pools' peaks are
  reset before the build; their sum is an upper bound of the heap in use at any one time).
* :func:`lookup_latency` times ``open_index(...)`` + ``candidates(pred)`` for point queries *cold*
  (a new :class:`SieveIndex` per query: manifest, file table, segment list, the key's segment and a
  listing of the table for the staleness check) and *warm* (the same query again on the opened
  index: its segment is cached, the listing is done again). Wall clock and the thread's CPU time.
* :func:`write_scale_report` writes the "SF10 vs SF1" report from results JSONs of ``run.py``.

Run as a script it measures the lookups again on the indexes the runs left (``--lookups``: the code
of the checkout now, the same point keys) and writes the report::

    .venv/bin/python benchmarks/sieve/sieve_scale.py --large out/scale-sf10-adversarial.json,out/scale-sf10-late.json \
        --small out/scale-sf1-adversarial.json,out/scale-sf1-late.json --lookups --out REPORT_SF10.md
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any, Self

LABEL = {"full": "full read + push-down", "minmax": "min/max pruning", "sieve": "Sieve", "exact": "exact file set"}
METHODS = ("full", "minmax", "sieve", "exact")
LOOKUP_TARGET_MS = 5.0
BUILD_TARGET = 2.0  # build time ÷ a min/max build (Spark scan)
SYNC_TARGET = 0.05  # sync of a 1 % append ÷ a full build


def _rss_bytes(pid: int | str) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class MemoryProbe:
    """Peak RSS of the Python driver and the driver JVM, and the JVM heap peak, over a ``with`` block."""

    def __init__(self, spark: Any, interval: float = 0.02) -> None:
        self.spark = spark
        self.interval = interval
        self.jvm_pid: int | None = None
        self.peaks = {"python_rss": 0, "jvm_rss": 0}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.result: dict[str, Any] = {}

    def _heap_pools(self) -> list[Any]:
        jvm = self.spark.sparkContext._jvm
        pools = jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
        return [p for p in pools if str(p.getType().name()) == "HEAP"]

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peaks["python_rss"] = max(self.peaks["python_rss"], _rss_bytes("self"))
            if self.jvm_pid:
                self.peaks["jvm_rss"] = max(self.peaks["jvm_rss"], _rss_bytes(self.jvm_pid))
            self._stop.wait(self.interval)

    def __enter__(self) -> Self:
        jvm = self.spark.sparkContext._jvm
        try:
            self.jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())
            jvm.java.lang.System.gc()
            for p in self._heap_pools():
                p.resetPeakUsage()
        except Exception:  # noqa: BLE001 - a JVM without these beans only loses the heap figure
            self.jvm_pid = None
        self.result["python_rss_before"] = _rss_bytes("self")
        self.result["jvm_rss_before"] = _rss_bytes(self.jvm_pid) if self.jvm_pid else 0
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        r = self.result
        r["python_rss_peak"] = self.peaks["python_rss"]
        r["jvm_rss_peak"] = self.peaks["jvm_rss"]
        try:
            jvm = self.spark.sparkContext._jvm
            r["jvm_heap_peak"] = int(sum(p.getPeakUsage().getUsed() for p in self._heap_pools()))
            r["jvm_heap_max"] = int(jvm.java.lang.Runtime.getRuntime().maxMemory())
        except Exception as err:  # noqa: BLE001 - see __enter__
            r["jvm_heap_error"] = f"{type(err).__name__}: {err}"
        r["driver_memory_conf"] = self.spark.sparkContext.getConf().get("spark.driver.memory", "1g (default)")


def _time_lookups(root: str, column: str, index_path: str, preds: list[Any], repeats: int,
                  freshness: str) -> dict[str, list[float]]:
    from airflow_provider_lineage.sieve import open_index

    t: dict[str, list[float]] = {"cold_wall": [], "cold_cpu": [], "warm_wall": [], "warm_cpu": []}
    for _ in range(repeats):
        for pred in preds:
            w0, c0 = time.perf_counter(), time.thread_time()
            idx = open_index(root, column, index_path=index_path)
            idx.candidates(pred, freshness=freshness)
            t["cold_wall"].append(time.perf_counter() - w0)
            t["cold_cpu"].append(time.thread_time() - c0)
            w0, c0 = time.perf_counter(), time.thread_time()
            idx.candidates(pred, freshness=freshness)
            t["warm_wall"].append(time.perf_counter() - w0)
            t["warm_cpu"].append(time.thread_time() - c0)
    return t


def lookup_latency(root: str, column: str, index_path: str, preds: list[Any], repeats: int = 3) -> dict[str, Any]:
    """Medians (ms) of cold and warm point lookups, wall clock and thread CPU time.

    Stale-safe (the default ``candidates``: one listing of the table per call, a stat per file),
    checking file names only (``freshness="names"``: no stat per file; blind to files rewritten in
    place) and index-only (``assume_fresh=True`` = ``freshness="none"``, what a caller that has just
    synced may pass: no listing).
    """
    med = lambda xs: statistics.median(xs) * 1000 if xs else float("nan")
    p90 = lambda xs: sorted(xs)[int(0.9 * (len(xs) - 1))] * 1000 if xs else float("nan")
    out: dict[str, Any] = {"queries": len(preds), "repeats": repeats}
    for freshness, tag in (("stat", ""), ("names", "names_"), ("none", "fresh_")):
        t = _time_lookups(root, column, index_path, preds, repeats, freshness)
        for k, xs in t.items():
            out[f"{tag}{k}_ms"] = med(xs)
        out[f"{tag}cold_wall_p90_ms"] = p90(t["cold_wall"])
        out[f"{tag}warm_wall_p90_ms"] = p90(t["warm_wall"])
    out.update(listing_floor(root, repeats=5 * repeats))
    return out


def listing_floor(root: str, repeats: int = 15) -> dict[str, Any]:
    """Medians (ms) of what the staleness checks cost by themselves: the listing a stale-safe lookup
    compares with the index (``list_table_versions``: ``os.scandir`` and a stat per data file), the
    names-only listing (``list_table_paths``: no stat) and a bare ``os.stat`` loop over every data
    file (the system calls alone, the floor of any check that looks at every file)."""
    from airflow_provider_lineage.sieve.table import list_table_paths, list_table_versions

    files = [p for p, _, _ in list_table_versions(root)]
    listing, names, stats = [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        list_table_versions(root)
        listing.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        list_table_paths(root)
        names.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for f in files:
            os.stat(f)
        stats.append(time.perf_counter() - t0)
    return {"listing_ms": statistics.median(listing) * 1000, "names_listing_ms": statistics.median(names) * 1000,
            "stat_loop_ms": statistics.median(stats) * 1000, "listed_files": len(files),
            **c_stat_floor(root, repeats)}


def c_stat_floor(root: str, repeats: int = 15) -> dict[str, Any]:
    """The same walk and stat per data file in C (``stat_floor.c``, compiled here when a C compiler
    is on the PATH): the kernel's share of a stale-safe check, whatever language does it."""
    import shutil
    import subprocess
    import tempfile

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return {}
    source = Path(__file__).resolve().parent / "stat_floor.c"
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "stat_floor")
        subprocess.run([cc, "-O2", "-o", exe, str(source)], check=True)
        out = subprocess.run([exe, root, str(repeats)], check=True, capture_output=True, text=True).stdout.split()
    return {"c_stat_floor_ms": float(out[0]), "c_stat_files": int(out[1])}


# ---- report -------------------------------------------------------------------------------------
def _f(x: float | None, nd: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float) and math.isinf(x):
        return "∞"
    return f"{x:,.{nd}f}"


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _verdict(ok: bool | None) -> str:
    return "–" if ok is None else ("PASS" if ok else "MISS")


def _case(results: dict[str, Any] | None, layout: str) -> dict[str, Any] | None:
    if not results:
        return None
    return next((c for c in results["cases"] if c["layout"] == layout), None)


def _sub(case: dict[str, Any] | None, kind: str, method: str) -> dict[str, Any]:
    return (case or {}).get("summary", {}).get(kind, {}).get(method, {})


def _gb(b: float | None) -> str:
    return "–" if not b else f"{b / 1e9:.2f} GB" if b >= 1e9 else f"{b / 1e6:.1f} MB"


def _mib(b: float | None) -> str:
    return "–" if not b else f"{b / 2**20:,.0f} MiB"


def scale_rows(case: dict[str, Any] | None, kind: str) -> list[str]:
    """Per method: files/query, bytes/query, median seconds of one query kind."""
    out = []
    for m in METHODS:
        x = _sub(case, kind, m)
        if not x:
            continue
        n = (case or {}).get("summary", {}).get(kind, {}).get("queries", 0) or 1
        out.append(f"| {LABEL[m]} | {x['mean_files']:,.1f} | {_gb(x['bytes'] / n)} | {_f(x['median_s'], 3)} |")
    return out


def build_engine(index_path: str | None) -> str | None:
    """The engine that built an index (``spark`` or ``pyarrow``: ``build(engine="auto")`` picks by
    table size), read from its manifest; None when the index is gone."""
    from airflow_provider_lineage.sieve import IndexUnavailable
    from airflow_provider_lineage.sieve.storage import IndexStore

    if not index_path or not Path(index_path).exists():
        return None
    try:
        return IndexStore(index_path).load_manifest().build_stats.get("engine")
    except IndexUnavailable:
        return None


def maintenance(case: dict[str, Any] | None) -> dict[str, Any]:
    """Build, min/max build, sync and lookup figures of one case (None where not measured)."""
    c = case or {}
    build = c.get("sieve_build_seconds")
    mm = c.get("minmax_spark_seconds")
    sy = c.get("sync", {})
    lk = c.get("lookup_latency", {})
    mem = c.get("build_memory", {})
    return {
        "build": build,
        "engine": c.get("build_engine") or build_engine(c.get("index_path")),
        "minmax": mm,
        "build_ratio": _ratio(build, mm),
        "sync": sy.get("sync_append_seconds"),
        "sync_ratio": _ratio(sy.get("sync_append_seconds"), build),
        "sync_report": sy.get("sync_append_report", {}),
        "keys_read": sy.get("sync_append_report", {}).get("keys_read"),
        "cold": lk.get("cold_wall_ms"),
        "warm": lk.get("warm_wall_ms"),
        "cold_cpu": lk.get("cold_cpu_ms"),
        "warm_cpu": lk.get("warm_cpu_ms"),
        "fresh_cold": lk.get("fresh_cold_wall_ms"),
        "fresh_warm": lk.get("fresh_warm_wall_ms"),
        "fresh_cold_cpu": lk.get("fresh_cold_cpu_ms"),
        "names_cold": lk.get("names_cold_wall_ms"),
        "names_warm": lk.get("names_warm_wall_ms"),
        "names_cold_cpu": lk.get("names_cold_cpu_ms"),
        "listing": lk.get("listing_ms"),
        "stat_loop": lk.get("stat_loop_ms"),
        "listed": lk.get("listed_files"),
        "names_listing": lk.get("names_listing_ms"),
        "c_floor": lk.get("c_stat_floor_ms"),
        "memory": mem,
        "index_bytes": c.get("index", {}).get("index_bytes"),
        "segments": c.get("index", {}).get("stats", {}).get("segments"),
    }


def write_scale_report(big: dict[str, Any], small: dict[str, Any] | None, path: Path, note: str = "") -> None:
    """REPORT_SF10.md: the large run, and how each ratio moved from the small run (SF1)."""
    cb = big["config"]
    cs = small["config"] if small else None
    L: list[str] = []
    w = L.append
    w(f"# Sieve at SF{cb['scale']:g} vs SF{cs['scale']:g}" if cs else f"# Sieve at SF{cb['scale']:g}")
    w("")
    w(f"Generated by `benchmarks/sieve/sieve_scale.py` from the results of `run.py` "
      f"(`{big.get('json_path', 'results')}`" + (f"; `{small.get('json_path', 'results')}`" if small else "") + ").")
    for tag, r in (("large", big), ("small", small)):
        if not r:
            continue
        c = r["config"]
        w(f"- SF{c['scale']:g} run ({tag}): started {r['started']}, layouts {', '.join(c['layouts'])}, "
          f"{r.get('total_seconds', 0) / 60:.1f} min; Spark {c['spark']['version']} `{c['spark']['master']}`, "
          f"driver memory {c['spark']['driver_memory']}; {c['machine']['cpus']} CPUs; "
          f"{len(r['violations'])} correctness violation(s).")
    w("")
    w((f"{note} " if note else "") + "File and byte counts are exact. Every answer of every method was "
      "checked against a numpy ground truth, and every Sieve candidate set against the exact file set.")
    w("")
    w("Reproduce: `benchmarks/sieve/run_scale.sh` (SF1 and SF10 on the adversarial and late layouts, "
      "then this report).")
    w("")
    layouts = list(dict.fromkeys(big["config"]["layouts"] + (small["config"]["layouts"] if small else [])))
    for layout in layouts:
        cb_case, cs_case = _case(big, layout), _case(small, layout)
        any_case = cb_case or cs_case
        if any_case is None:
            continue
        w(f"## {layout} / `{any_case['column']}`")
        w("")
        if cb_case is None:
            w(f"**Not measured at SF{cb['scale']:g}** (no results for this layout in the large run); "
              "the smaller run's figures only.")
            w("")
        sizes = []
        for c, r in ((cs_case, small), (cb_case, big)):
            if c:
                sm = c.get("summary", {})
                nq = (f"{sm.get('point', {}).get('queries', 0)} point + "
                      f"{sm.get('range', {}).get('queries', 0)} range queries")
                sizes.append(f"SF{r['config']['scale']:g}: {c['files']:,} files, {c['rows']:,} rows, "
                             f"{_gb(c['bytes'])}, {nq}")
        w("; ".join(sizes) + ".")
        w("")
        for kind in ("point", "range"):
            w(f"**{kind} queries** (means per query; median time):")
            w("")
            head = "| method |"
            sep = "|---|"
            for r in (small, big):
                if r and _case(r, layout):
                    sf = f"SF{r['config']['scale']:g}"
                    head += f" {sf} files | {sf} bytes | {sf} s |"
                    sep += "---:|---:|---:|"
            w(head)
            w(sep)
            for m in METHODS:
                cells = []
                for r in (small, big):
                    c = _case(r, layout)
                    if not c:
                        continue
                    x = _sub(c, kind, m)
                    n = c.get("summary", {}).get(kind, {}).get("queries", 0) or 1
                    cells.append(f"{x['mean_files']:,.1f} | {_gb(x['bytes'] / n)} | {_f(x['median_s'], 3)}"
                                 if x else "– | – | –")
                w(f"| {LABEL[m]} | " + " | ".join(cells) + " |")
            w("")
        w("| ratio (median times) | " + " | ".join(f"SF{r['config']['scale']:g}" for r in (small, big)
                                                    if r and _case(r, layout)) + " |")
        w("|---|" + "---:|" * len([r for r in (small, big) if r and _case(r, layout)]))
        for kind in ("point", "range"):
            for label, a, b in ((f"{kind}: full ÷ Sieve (speed-up)", "full", "sieve"),
                                (f"{kind}: full ÷ exact (the physical limit)", "full", "exact"),
                                (f"{kind}: Sieve ÷ exact (overhead over the ideal)", "sieve", "exact"),
                                (f"{kind}: min/max ÷ Sieve", "minmax", "sieve")):
                cells = []
                for r in (small, big):
                    c = _case(r, layout)
                    if c:
                        cells.append(_f(_ratio(_sub(c, kind, a).get("median_s"), _sub(c, kind, b).get("median_s")))
                                     + "×")
                w(f"| {label} | " + " | ".join(cells) + " |")
        w("")
        fl = [(r, _case(r, layout).get("spark_floor", {})) for r in (small, big) if r and _case(r, layout)]
        if fl:
            w("Spark's fixed cost per query here (an empty DataFrame's aggregate / a one-small-file read): "
              + "; ".join(f"SF{r['config']['scale']:g} {_f(f.get('empty_df_agg', float('nan')) * 1000, 0)} ms / "
                          f"{_f(f.get('one_file_read', float('nan')) * 1000, 0)} ms" for r, f in fl) + ".")
            w("")
        # maintenance and latency
        w("| index, build, sync, lookup | " + " | ".join(f"SF{r['config']['scale']:g}" for r in (small, big)
                                                        if r and _case(r, layout)) + " | target |")
        w("|---|" + "---:|" * len([r for r in (small, big) if r and _case(r, layout)]) + "---|")
        ms = [maintenance(_case(r, layout)) for r in (small, big) if r and _case(r, layout)]
        row = lambda label, cells, target: w(f"| {label} | " + " | ".join(cells) + f" | {target} |")
        row("index size (segments)", [f"{_f(x['index_bytes'], 0)} B ({x['segments']})" for x in ms], "")
        row("Sieve build (engine: `auto` picks pyarrow up to 8 M rows, else Spark)",
            [f"{_f(x['build'])} s ({x['engine'] or '?'})" for x in ms], "")
        row("min/max build (Spark scan, `groupBy(input_file_name())`)", [f"{_f(x['minmax'])} s" for x in ms], "")
        row(
            "build ÷ min/max build",
            [
                f"{_f(x['build_ratio'])}× "
                f"{_verdict(x['build_ratio'] <= BUILD_TARGET) if x['build_ratio'] else ''}"
                for x in ms
            ],
            f"≤ {BUILD_TARGET:g}×",
        )
        row("sync after a 1 % append", [f"{_f(x['sync'])} s (read {_f(x['keys_read'], 0)} keys; "
                                        f"{x['sync_report'].get('segments_covered', 0)} covered, "
                                        f"{x['sync_report'].get('segments_rewritten', 0)} rewritten, "
                                        f"{x['sync_report'].get('segments_rebuilt', 0)} re-segmented/rebuilt, "
                                        f"{x['sync_report'].get('segments_created', 0)} created)" for x in ms], "")
        row("sync ÷ full build", [f"{_f(x['sync_ratio'] * 100 if x['sync_ratio'] is not None else None, 1)} % "
                                  f"{_verdict(x['sync_ratio'] <= SYNC_TARGET) if x['sync_ratio'] is not None else ''}"
                                  for x in ms], f"≤ {SYNC_TARGET * 100:g} %")
        row(
            "lookup, cold: open + candidates (median wall / CPU)",
            [
                f"{_f(x['cold'])} / {_f(x['cold_cpu'])} ms "
                f"{_verdict(x['cold'] < LOOKUP_TARGET_MS) if x['cold'] is not None else ''}"
                for x in ms
            ],
            f"< {LOOKUP_TARGET_MS:g} ms",
        )
        row(
            "lookup, warm: candidates on the open index (median wall / CPU)",
            [
                f"{_f(x['warm'])} / {_f(x['warm_cpu'])} ms "
                f"{_verdict(x['warm'] < LOOKUP_TARGET_MS) if x['warm'] is not None else ''}"
                for x in ms
            ],
            f"< {LOOKUP_TARGET_MS:g} ms",
        )
        row("lookup checking file names only (`freshness=\"names\"`: no stat per file; blind to files "
            "rewritten in place), cold: wall / CPU; warm: wall",
            [f"{_f(x['names_cold'])} / {_f(x['names_cold_cpu'])} ms; {_f(x['names_warm'])} ms "
             f"{_verdict(x['names_cold'] < LOOKUP_TARGET_MS and x['names_warm'] < LOOKUP_TARGET_MS)}"
             if x["names_cold"] is not None else "–" for x in ms], f"< {LOOKUP_TARGET_MS:g} ms")
        row("lookup without the staleness listing (`assume_fresh=True`), cold: wall / CPU; warm: wall",
            [f"{_f(x['fresh_cold'])} / {_f(x['fresh_cold_cpu'])} ms; {_f(x['fresh_warm'])} ms" for x in ms],
            f"< {LOOKUP_TARGET_MS:g} ms")
        row("the staleness checks alone: listing paths, sizes and mtimes / file names only / a bare `os.stat` "
            "of every file / the same walk and stat per file in C (`stat_floor.c`: the system calls alone) "
            "(median)",
            [f"{_f(x['listing'])} / {_f(x['names_listing'])} / {_f(x['stat_loop'])} / {_f(x['c_floor'])} ms "
             f"({_f(x['listed'], 0)} files)" if x["listing"] is not None else "–" for x in ms], "")
        row("build: driver JVM heap peak / max heap",
            [f"{_mib(x['memory'].get('jvm_heap_peak'))} / {_mib(x['memory'].get('jvm_heap_max'))}" for x in ms],
            "bounded with `spark.driver.memory=1g`")
        row("build: driver JVM resident set, peak (before)",
            [f"{_mib(x['memory'].get('jvm_rss_peak'))} ({_mib(x['memory'].get('jvm_rss_before'))})" for x in ms], "")
        row("build: Python driver resident set, peak (before; the benchmark process also holds the "
            "ground-truth key arrays)",
            [f"{_mib(x['memory'].get('python_rss_peak'))} ({_mib(x['memory'].get('python_rss_before'))})"
             for x in ms], "")
        w("")
    w("## How these are measured")
    w("")
    w("- Query times, files and bytes: as in [REPORT.md](REPORT.md#methods-and-metrics) (end to end per query, "
      "warm OS page cache, method order rotated, the same aggregate for every method). *bytes* are whole-file "
      "sizes of the files a method opens.")
    w("- *full ÷ exact* is the speed-up of reading exactly the files that hold a match: no index can beat it, "
      "since Spark still pays its fixed cost per query. *Sieve ÷ exact* is what Sieve costs over that ideal "
      "(opening the index, the staleness listing, the lookup).")
    w("- Lookup latency: `open_index(root, column, index_path=...)` + `.candidates(Eq(key))` for every point "
      "query of the case, 3 rounds. *cold* = a new index object per query (manifest, file table, segment list, "
      "the key's segment header and the one page holding its block read from disk — in the OS page cache — "
      "and one listing of the table for the staleness check); *warm* = the same query again on that opened "
      "index (segment cached, listing done again). Wall clock and the calling thread's CPU time "
      "(`time.thread_time`). The listing (`os.scandir` of the table's folders and a `stat` per data file, "
      "relative to its folder's descriptor) is what "
      "keeps a lookup safe on a stale index; it grows with the number of files (200 adversarial, 2,526 "
      "late). *The staleness checks alone* time that listing (`list_table_versions`), the names-only one "
      "(`list_table_paths`), a bare `os.stat` loop over the same files and the same walk in C "
      "(`stat_floor.c`, compiled by the script when a C compiler is on the PATH): "
      "the system calls any check of every file pays, whatever the index. *Checking file names only* is "
      "`candidates(pred, freshness=\"names\")`: the folders' entries without a stat per file; it sees added, "
      "removed and renamed files but not a file rewritten in place under its old name (safe for Spark, Hive "
      "and table-format writers). *Without the staleness listing* is "
      "`candidates(pred, assume_fresh=True)`, for callers that have just synced.")
    w("- Build: `sieve.build(spark, root, column)` with the default `engine=\"auto\"`: tables up to 8 M rows "
      "are read on the driver with pyarrow (no Spark job), larger ones through the Spark aggregation and one "
      "ordered pass on the driver; both include writing and committing the index. Against the min/max build "
      "`spark.read.parquet(root).groupBy(input_file_name()).agg(min, max).collect()` on the same session.")
    w("- Sync: a 1 % sample of the layout's rows written as one new file, then `sieve.sync(...)` "
      "(copy-on-write); *keys read* is how many distinct keys sync read from data files.")
    w("- Memory: during `sieve.build`, the resident set (`/proc/<pid>/status` VmRSS, sampled every 20 ms) "
      "of the Python driver and of the JVM (driver and executors: `local[2]`), and the JVM heap peak (sum of "
      "the heap pools' peak usage after a reset, an upper bound) against the heap's maximum "
      "(`spark.driver.memory`).")
    w("")
    path.write_text("\n".join(L) + "\n")


def describe_memory(mem: dict[str, Any]) -> str:
    if not mem:
        return ""
    return (f"JVM heap peak {_mib(mem.get('jvm_heap_peak'))} of {_mib(mem.get('jvm_heap_max'))}, "
            f"JVM RSS peak {_mib(mem.get('jvm_rss_peak'))}, Python RSS peak {_mib(mem.get('python_rss_peak'))}")



# ---- command line: merge per-layout runs, re-measure lookups, write the report --------------------
def merge_results(paths: list[str]) -> dict[str, Any] | None:
    """One results dictionary from several runs of run.py (one per layout) at the same scale."""
    runs = [json.loads(Path(p).read_text()) for p in paths if p and Path(p).exists()]
    if not runs:
        return None
    out = dict(runs[0])
    out["config"] = dict(runs[0]["config"])
    out["config"]["layouts"] = [la for r in runs for la in r["config"]["layouts"]]
    out["cases"] = [c for r in runs for c in r["cases"]]
    out["violations"] = [v for r in runs for v in r["violations"]]
    out["total_seconds"] = sum(r.get("total_seconds", 0) for r in runs)
    out["started"] = min(r["started"] for r in runs)
    out["json_path"] = ", ".join(r.get("json_path", "?") for r in runs)
    return out


def point_predicates(case: dict[str, Any]) -> list[Any]:
    """The case's point queries as Sieve predicates (dates for l_shipdate, ints otherwise)."""
    from airflow_provider_lineage.sieve import Eq

    out = []
    for q in case.get("queries", []):
        if q["kind"] == "point":
            k = int(q["lo"])
            out.append(Eq(dt.date(1970, 1, 1) + dt.timedelta(days=k) if case["column"] == "l_shipdate" else k))
    return out


def remeasure_lookups(results: dict[str, Any]) -> None:
    """Lookup latency of every case again, with the code of the checkout now (no Spark needed)."""
    for c in results["cases"]:
        if "index_path" not in c or not Path(c["index_path"]).exists():
            continue
        c["lookup_latency"] = lookup_latency(c["root"], c["column"], c["index_path"], point_predicates(c))
        c["lookup_latency"]["measured"] = "after the run (sieve_scale.py --lookups)"
        lk = c["lookup_latency"]
        print(f"[{c['layout']}/{c['column']}] lookup median: cold {lk['cold_wall_ms']:.2f} ms (CPU "
              f"{lk['cold_cpu_ms']:.2f}), warm {lk['warm_wall_ms']:.2f} ms (CPU {lk['warm_cpu_ms']:.2f})", flush=True)


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here.parent.parent))
    p = argparse.ArgumentParser(description="The SF10 vs SF1 report from run.py's results JSONs.")
    p.add_argument("--large", required=True, help="comma list of results JSONs of the large run (e.g. SF10)")
    p.add_argument("--small", default="", help="comma list of results JSONs of the small run (e.g. SF1)")
    p.add_argument("--lookups", action="store_true", help="measure lookup latency again on the runs' indexes")
    p.add_argument("--out", default=str(here / "REPORT_SF10.md"))
    p.add_argument("--note", default="", help="a sentence about this run's conditions, added to the header")
    a = p.parse_args(argv)
    big = merge_results(a.large.split(","))
    if big is None:
        p.error(f"none of {a.large} exists")
    small = merge_results(a.small.split(",")) if a.small else None
    if a.lookups:
        for r in (small, big):
            if r:
                remeasure_lookups(r)
    write_scale_report(big, small, Path(a.out), a.note)
    print(f"wrote {a.out}")
    return 1 if big["violations"] or (small and small["violations"]) else 0


if __name__ == "__main__":
    sys.exit(main())
