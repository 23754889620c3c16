"""Sieve data-skipping benchmark on TPC-H ``lineitem`` (see benchmarks/sieve/README.md).

    .venv/bin/python benchmarks/sieve/run.py                 # SF1, 200 files, all four layouts
    .venv/bin/python benchmarks/sieve/run.py --scale 10      # SF10
    .venv/bin/python benchmarks/sieve/run.py --quick         # smoke run (small data, few queries)

Compares, per layout and key column, a full Spark read with Parquet filter push-down, file-level
min/max pruning, Sieve and the exact minimal file set; checks every answer against ground truth
computed from the data; prints the figures, writes REPORT.md, a PNG chart and a JSON of all
measurements.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent.parent))

import numpy as np
import pyarrow.parquet as pq
from sieve_data import LAYOUTS, Layout, append_keys, build_layout, describe, load_keys
from sieve_methods import METHODS, Runner, spark_session
from sieve_queries import SWEEP_FRACTIONS, Query, Truth, make_queries
from sieve_scale import MemoryProbe, build_engine, describe_memory, lookup_latency

COLUMNS = {"generated": ("l_orderkey", "l_shipdate"), "adversarial": ("l_shipdate",),
           "late": ("l_shipdate",), "shuffled": ("l_shipdate",), "sparse": ("l_orderkey",)}
KEY_WIDTH = {"l_shipdate": 4, "l_orderkey": 8}


def log(msg: str) -> None:
    print(msg, flush=True)


def loud(msg: str) -> None:
    bar = "!" * 100
    print(f"\n{bar}\n!!! {msg}\n{bar}\n", file=sys.stderr, flush=True)
    print(f"!!! {msg}", flush=True)


def sieve_available() -> str:
    """Empty string when ``airflow_provider_lineage.sieve`` can be used, else why not."""
    try:
        from airflow_provider_lineage.sieve import build, open_index, read  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - ImportError or a half-written module
        return f"{type(exc).__name__}: {exc}"
    return ""


def column_parquet_bytes(files: list[str], column: str) -> tuple[int, int]:
    """(compressed, uncompressed) bytes of one column's chunks over all files, from the footers."""
    comp = unc = 0
    for f in files:
        md = pq.ParquetFile(f).metadata
        ci = md.schema.to_arrow_schema().get_field_index(column)
        for r in range(md.num_row_groups):
            c = md.row_group(r).column(ci)
            comp += c.total_compressed_size
            unc += c.total_uncompressed_size
    return comp, unc


def dir_bytes(path: str) -> int:
    total = 0
    for dp, _, names in os.walk(path):
        for n in names:
            total += os.path.getsize(os.path.join(dp, n))
    return total


class Case:
    """One (layout, key column): build the summaries, run every query by every method, check."""

    def __init__(self, spark: Any, layout: Layout, keys: dict[str, np.ndarray], column: str,
                 args: argparse.Namespace, index_root: Path, sieve_error: str) -> None:
        self.spark, self.layout, self.column, self.args = spark, layout, column, args
        self.name = f"{layout.name}/{column}"
        self.truth = Truth(keys[column], keys["file_id"], keys["rowsum"], len(layout.files))
        self.keys = keys
        self.index_path = str(index_root / layout.root.name / column)
        self.sieve_error = sieve_error
        self.methods = [m for m in METHODS if m != "sieve" or not sieve_error]
        self.runner = Runner(spark, str(layout.root), column, layout.files, layout.sizes, self.index_path)
        self.violations: list[str] = []
        self.out: dict[str, Any] = {"layout": layout.name, "column": column, "files": len(layout.files),
                                    "rows": layout.rows, "bytes": layout.total_bytes,
                                    "root": str(layout.root), "index_path": self.index_path}

    def violation(self, msg: str) -> None:
        msg = f"[{self.name}] {msg}"
        self.violations.append(msg)
        loud(f"CORRECTNESS VIOLATION {msg}")

    # ------------------------------------------------------------------------------------------
    def warm_up_build(self, build: Any) -> None:
        """One untimed build over a copy of the smallest file, as the min/max query is warmed up: the
        timed build then pays no first-use costs of its Spark operators (code generation, JIT)."""
        small = min(self.layout.files, key=os.path.getsize)
        with tempfile.TemporaryDirectory(prefix="sieve-warmup-") as tmp:
            shutil.copy(small, os.path.join(tmp, "part-0.parquet"))
            build(self.spark, tmp, self.column, index_path=os.path.join(tmp, "_idx"), error_bound=self.args.error_bound)

    def build_summaries(self) -> None:
        out = self.out
        out["minmax_footer_seconds"] = self.runner.load_minmax()
        out["minmax_spark_seconds"] = self.runner.minmax_spark_seconds()
        comp, unc = column_parquet_bytes(self.layout.files, self.column)
        out["key_column"] = {"raw_bytes": self.layout.rows * KEY_WIDTH[self.column],
                             "width": KEY_WIDTH[self.column],
                             "parquet_compressed_bytes": comp, "parquet_uncompressed_bytes": unc,
                             "distinct_keys": len(self.truth.unique)}
        log(f"[{self.name}] min/max: footers {out['minmax_footer_seconds']:.2f}s, "
            f"Spark scan {out['minmax_spark_seconds']:.2f}s")
        if self.sieve_error:
            out["sieve_error"] = self.sieve_error
            return
        from airflow_provider_lineage.sieve import build

        shutil.rmtree(self.index_path, ignore_errors=True)
        self.warm_up_build(build)
        try:
            with MemoryProbe(self.spark) as probe:
                t0 = time.perf_counter()
                stats = build(self.spark, str(self.layout.root), self.column, index_path=self.index_path,
                              error_bound=self.args.error_bound)
                out["sieve_build_seconds"] = time.perf_counter() - t0
            out["build_memory"] = probe.result
            out["build_engine"] = build_engine(self.index_path)
        except Exception as exc:  # noqa: BLE001 - any failure is reported, not fatal
            self.sieve_error = f"build failed: {type(exc).__name__}: {exc}"
            out["sieve_error"] = self.sieve_error
            self.methods = [m for m in self.methods if m != "sieve"]
            loud(f"[{self.name}] Sieve build failed, Sieve left out of this case: {exc}")
            return
        st = stats.to_dict()
        kc = out["key_column"]
        idx_bytes = int(st["index_bytes"])
        out["index"] = {
            "stats": st, "index_bytes": idx_bytes, "folder_bytes": dir_bytes(self.index_path),
            "bytes_per_row": idx_bytes / self.layout.rows,
            "bytes_per_distinct_key": idx_bytes / max(1, kc["distinct_keys"]),
            "share_of_raw_column": idx_bytes / kc["raw_bytes"],
            "share_of_parquet_column": idx_bytes / max(1, kc["parquet_compressed_bytes"]),
        }
        log(f"[{self.name}] Sieve build {out['sieve_build_seconds']:.2f}s: {idx_bytes:,} B, "
            f"{st['segments']} segments, {st['blocks']} blocks, "
            f"{out['index']['share_of_raw_column'] * 100:.3f}% of the raw key column; "
            f"{describe_memory(out['build_memory'])}")

    # ------------------------------------------------------------------------------------------
    def check(self, method: str, q: Query, res: Any, exact: np.ndarray) -> None:
        n, s = self.truth.result(q)
        if (res.rows, res.checksum) != (n, s):
            self.violation(f"{method} {q.kind} {q.label}: rows/checksum {res.rows}/{res.checksum} "
                           f"!= truth {n}/{s}")
        if method == "sieve" and res.paths is not None:
            missing = self.runner.missing(res.paths, exact)
            if missing:
                self.violation(f"sieve {q.kind} {q.label}: candidate set misses {len(missing)} file(s) of the "
                               f"exact set, e.g. {missing[:3]}")
        if res.files < len(exact):
            self.violation(f"{method} {q.kind} {q.label}: read {res.files} files < exact {len(exact)}")

    def run_queries(self) -> None:
        a = self.args
        sweep = () if a.no_sweep else SWEEP_FRACTIONS if not a.quick else (0.01, 1.0)
        queries = make_queries(self.layout.name, self.column, self.truth, a.points, a.ranges, sweep)
        # warm-up: JIT, OS page cache, Spark's code caches (untimed)
        for q in queries[: a.warmup]:
            ex = self.truth.exact_files(q)
            for m in self.methods:
                self.safe_run(m, q, ex)
        rows = []
        t_case = time.perf_counter()
        for qi, q in enumerate(queries):
            ex = self.truth.exact_files(q)
            n, _ = self.truth.result(q)
            rec: dict[str, Any] = {"kind": q.kind, "group": q.group, "label": q.label, "lo": q.lo, "hi": q.hi,
                                   "exact_files": len(ex), "exact_bytes": int(self.runner.sizes[ex].sum()),
                                   "rows": n, "all_files_needed": bool(len(ex) == len(self.layout.files)),
                                   "methods": {}}
            order = self.methods[qi % len(self.methods):] + self.methods[: qi % len(self.methods)]
            for m in order:
                res = self.safe_run(m, q, ex)
                if res is None:
                    continue
                self.check(m, q, res, ex)
                rec["methods"][m] = {"seconds": res.seconds, "files": res.files, "bytes": res.bytes,
                                     "lookup_seconds": res.lookup_seconds}
            rows.append(rec)
            if (qi + 1) % 10 == 0 or qi + 1 == len(queries):
                log(f"[{self.name}] {qi + 1}/{len(queries)} queries ({time.perf_counter() - t_case:.0f}s)")
        self.out["queries"] = rows
        # every file needed: repeat the whole-domain query, alternating full and sieve
        whole = queries[-1] if queries and queries[-1].kind == "sweep" else None
        reps: dict[str, list[float]] = {m: [] for m in self.methods}
        ex = self.truth.exact_files(whole) if whole is not None else np.empty(0, np.int64)
        for _ in range(a.repeats_full if whole is not None else 0):
            for m in self.methods:
                res = self.safe_run(m, whole, ex)
                if res is not None:
                    self.check(m, whole, res, ex)
                    reps[m].append(res.seconds)
        self.out["whole_domain_repeats"] = reps
        if "sieve" in self.methods:
            points = [self.runner.predicate(q) for q in queries if q.kind == "point"]
            lk = lookup_latency(str(self.layout.root), self.column, self.index_path, points)
            self.out["lookup_latency"] = lk
            log(f"[{self.name}] lookup (open + candidates) median: cold {lk['cold_wall_ms']:.2f} ms "
                f"(CPU {lk['cold_cpu_ms']:.2f}), warm {lk['warm_wall_ms']:.2f} ms (CPU {lk['warm_cpu_ms']:.2f})")

    def safe_run(self, m: str, q: Query, ex: np.ndarray) -> Any:
        try:
            return self.runner.run(m, q, ex)
        except Exception as exc:  # noqa: BLE001 - recorded as a violation
            self.violation(f"{m} {q.kind} {q.label}: raised {type(exc).__name__}: {str(exc)[:300]}")
            return None

    # ------------------------------------------------------------------------------------------
    def sync_test(self) -> None:
        """Append 1 % of the rows as a new file, sync, check; delete it, sync, check."""
        if "sieve" not in self.methods:
            return
        from airflow_provider_lineage.sieve import sync

        root = self.layout.root
        target = root / "part-99999-append.parquet"
        app = append_keys(self.layout)
        base = self.truth
        n_files = len(self.layout.files) + 1
        grown = Truth(np.concatenate([self.keys[self.column], app[self.column]]),
                      np.concatenate([self.keys["file_id"], np.full(len(app["rowsum"]), n_files - 1, np.int32)]),
                      np.concatenate([self.keys["rowsum"], app["rowsum"]]), n_files)
        probes = [Query("point", int(app[self.column][0]), int(app[self.column][0]), "in-data", "appended key"),
                  Query("range", int(app[self.column][0]), int(app[self.column][0]) + 30, "in-data", "appended range")]
        out: dict[str, Any] = {"append_rows": len(app["rowsum"]),
                               "append_bytes": os.path.getsize(self.layout.append_file)}
        try:
            shutil.copyfile(self.layout.append_file, target)
            t0 = time.perf_counter()
            rep = sync(self.spark, str(root), self.column, index_path=self.index_path)
            out["sync_append_seconds"] = time.perf_counter() - t0
            out["sync_append_report"] = rep.to_dict()
            self._probe(probes, grown, "after append")
            os.remove(target)
            t0 = time.perf_counter()
            rep = sync(self.spark, str(root), self.column, index_path=self.index_path)
            out["sync_delete_seconds"] = time.perf_counter() - t0
            out["sync_delete_report"] = rep.to_dict()
            self._probe(probes, base, "after delete")
        except Exception as exc:  # noqa: BLE001 - recorded as a violation
            self.violation(f"sync test raised {type(exc).__name__}: {str(exc)[:300]}")
        finally:
            if target.exists():
                os.remove(target)
        self.out["sync"] = out
        if "sync_append_seconds" in out:
            log(f"[{self.name}] sync after 1% append {out['sync_append_seconds']:.2f}s "
                f"(full build {self.out.get('sieve_build_seconds', float('nan')):.2f}s), "
                f"after delete {out.get('sync_delete_seconds', float('nan')):.2f}s")

    def _probe(self, probes: list[Query], truth: Truth, when: str) -> None:
        import warnings

        from airflow_provider_lineage.sieve import read

        for q in probes:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                n, s = self.runner._collect(read(self.spark, str(self.layout.root), self.column,
                                                 self.runner.predicate(q), index_path=self.index_path))
            exp = truth.result(q)
            if (n, s) != exp:
                self.violation(f"sieve read {when}, {q.label}: {n}/{s} != truth {exp[0]}/{exp[1]}")
            fell_back = [str(w.message) for w in caught if "full read" in str(w.message)]
            if fell_back:
                self.violation(f"sieve read {when} fell back to a full read: {fell_back[0]}")

    def floor(self) -> None:
        self.out["spark_floor"] = self.runner.floor_seconds()


def summarize(out: dict[str, Any]) -> None:
    """Medians, spreads, file/byte ratios per (kind, group, method); speedups vs full."""
    qs = out.get("queries", [])
    summary: dict[str, Any] = {}
    subsets = {
        "point": lambda r: r["kind"] == "point",
        "point/in-data": lambda r: r["kind"] == "point" and r["group"] == "in-data",
        "point/gap": lambda r: r["kind"] == "point" and r["group"] == "gap",
        "range": lambda r: r["kind"] == "range",
        "range/in-data": lambda r: r["kind"] == "range" and r["group"] == "in-data",
        "range/gap": lambda r: r["kind"] == "range" and r["group"] != "in-data",
        "sweep": lambda r: r["kind"] == "sweep",
        "all-files-needed": lambda r: r["all_files_needed"],
    }
    for name, pick in subsets.items():
        rows = [r for r in qs if pick(r)]
        if not rows:
            continue
        s: dict[str, Any] = {"queries": len(rows), "exact_files": sum(r["exact_files"] for r in rows),
                             "exact_bytes": sum(r["exact_bytes"] for r in rows)}
        for m in METHODS:
            ms = [r["methods"][m] for r in rows if m in r["methods"]]
            if not ms:
                continue
            t = sorted(x["seconds"] for x in ms)
            files = sum(x["files"] for x in ms)
            byts = sum(x["bytes"] for x in ms)
            s[m] = {"median_s": statistics.median(t), "p10_s": float(np.percentile(t, 10)),
                    "p90_s": float(np.percentile(t, 90)), "mean_s": statistics.fmean(t),
                    "files": files, "mean_files": files / len(ms), "bytes": byts,
                    "files_ratio": ratio(files, s["exact_files"]), "bytes_ratio": ratio(byts, s["exact_bytes"]),
                    "max_query_files_ratio": max(ratio(x["files"], r["exact_files"])
                                                 for x, r in zip(ms, [r for r in rows if m in r["methods"]])),
                    "median_lookup_s": statistics.median(x["lookup_seconds"] for x in ms)}
        if "full" in s:
            for m in METHODS:
                if m in s:
                    s[m]["speedup_vs_full"] = s["full"]["median_s"] / s[m]["median_s"]
        summary[name] = s
    out["summary"] = summary


def ratio(a: float, b: float) -> float:
    if b == 0:
        return 1.0 if a == 0 else float("inf")
    return a / b


def main(argv: list[str] | None = None, spark: Any = None) -> int:
    """Run the benchmark; returns 0, or 1 when any correctness check failed.

    ``spark``: an existing session to reuse (tests); it is left running. Otherwise one is made and stopped.
    """
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=float, default=None, help="TPC-H scale factor (default 1; --quick: 0.05)")
    p.add_argument("--files", type=int, default=None, help="files per layout (default 200; --quick: 20); "
                   "the late layout has one file per arrival day instead")
    p.add_argument("--layouts", default=",".join(LAYOUTS), help=f"comma list of {', '.join(LAYOUTS)}")
    p.add_argument("--quick", action="store_true", help="smoke run: small data, 8 points, 4 ranges, 2 sweep steps")
    p.add_argument("--points", type=int, default=None, help="point queries per case (default 50)")
    p.add_argument("--ranges", type=int, default=None, help="range queries per case (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed queries per method before timing")
    p.add_argument("--repeats-full", type=int, default=None, help="extra whole-domain runs per method (default 3)")
    p.add_argument("--late-days-per-file", type=int, default=None,
                   help="arrival days per file in the late layout (default 1; --quick: 30)")
    p.add_argument("--error-bound", type=int, default=None, help="Sieve error bound e (default: the product default)")
    p.add_argument("--no-sieve", action="store_true", help="baselines only")
    p.add_argument("--no-sweep", action="store_true", help="no selectivity sweep (and no whole-domain repeats)")
    p.add_argument("--data-dir", default=str(HERE / "data"), help="where data and indexes live (cached)")
    p.add_argument("--report", default=str(HERE / "REPORT.md"))
    p.add_argument("--chart", default=str(HERE / "sieve_benchmark.png"))
    p.add_argument("--json", default=str(HERE / "out" / "results.json"))
    p.add_argument("--note", default="", help="a sentence about the run's conditions, added to the report")
    p.add_argument("--from-json", default=None, help="only re-render the report and chart from a results JSON")
    p.add_argument("--driver-memory", default="4g", help="spark.driver.memory of the run's session (default 4g)")
    p.add_argument("--scale-report", default=None,
                   help="also write the scale report (e.g. REPORT_SF10.md) of this run vs --compare-json")
    p.add_argument("--compare-json", default=None, help="results JSON of the smaller run (e.g. SF1) to compare with")
    a = p.parse_args(argv)
    if a.error_bound is None:
        from airflow_provider_lineage.sieve.build import DEFAULT_ERROR_BOUND

        a.error_bound = DEFAULT_ERROR_BOUND
    if a.from_json:
        from sieve_report import write_chart, write_report

        results = json.loads(Path(a.from_json).read_text())
        write_chart(results, Path(a.chart))
        write_report(results, Path(a.report), Path(a.chart))
        log(f"wrote {a.report}, {a.chart} from {a.from_json}")
        write_scale(a, results)
        return 1 if results["violations"] else 0
    a.scale = a.scale if a.scale is not None else (0.05 if a.quick else 1.0)
    a.files = a.files or (20 if a.quick else 200)
    a.points = a.points if a.points is not None else (8 if a.quick else 50)
    a.ranges = a.ranges if a.ranges is not None else (4 if a.quick else 20)
    a.repeats_full = a.repeats_full if a.repeats_full is not None else (1 if a.quick else 3)
    a.late_days_per_file = a.late_days_per_file or (30 if a.quick else 1)
    a.warmup = min(a.warmup, 1) if a.quick else a.warmup
    layouts = [x.strip() for x in a.layouts.split(",") if x.strip()]
    bad = [x for x in layouts if x not in LAYOUTS]
    if bad:
        p.error(f"unknown layout(s) {bad}: choose from {', '.join(LAYOUTS)}")

    t_start = time.perf_counter()
    data_dir = Path(a.data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    sieve_error = "disabled with --no-sieve" if a.no_sieve else sieve_available()
    if sieve_error:
        loud(f"Sieve is not available ({sieve_error}): running the baselines only")
    own_session = spark is None
    spark = spark or spark_session(a.driver_memory)
    listing = spark.conf.get("spark.sql.sources.parallelPartitionDiscovery.threshold")
    results: dict[str, Any] = {
        "version": 1, "started": time.strftime("%Y-%m-%d %H:%M:%S"), "json_path": rel(a.json),
        "config": {"scale": a.scale, "files": a.files, "layouts": layouts, "quick": a.quick, "points": a.points,
                   "ranges": a.ranges, "warmup": a.warmup, "repeats_full": a.repeats_full,
                   "late_days_per_file": a.late_days_per_file, "error_bound": a.error_bound,
                   "spark": {"version": spark.version, "master": spark.sparkContext.master,
                             "driver_memory": spark.sparkContext.getConf().get("spark.driver.memory", "default (1g)"),
                             "parallel_listing_threshold": listing},
                   "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                               "python": platform.python_version()}},
        "sieve_error": sieve_error, "layouts": {}, "cases": [], "violations": [], "note": a.note,
    }
    index_root = data_dir / f"sf{a.scale:g}-f{a.files}" / "_indexes"
    for name in layouts:
        lay = build_layout(name, data_dir, a.scale, a.files, a.late_days_per_file, log=log)
        results["layouts"][name] = describe(lay)
        keys = load_keys(lay)
        for column in COLUMNS[name]:
            case = Case(spark, lay, keys, column, a, index_root, sieve_error)
            t0 = time.perf_counter()
            try:
                case.build_summaries()
                case.run_queries()
                case.sync_test()
                case.floor()
            except Exception as exc:  # noqa: BLE001 - keep the other cases; the report shows what broke
                case.violation(f"case aborted: {type(exc).__name__}: {str(exc)[:500]}")
            case.out["methods"] = case.methods
            case.out["sieve_error"] = case.sieve_error
            case.out["violations"] = case.violations
            case.out["seconds"] = time.perf_counter() - t0
            summarize(case.out)
            results["cases"].append(case.out)
            results["violations"].extend(case.violations)
            print_case(case.out)
            Path(a.json).parent.mkdir(parents=True, exist_ok=True)
            Path(a.json).write_text(json.dumps(results, indent=1, default=str))  # partial, per case
    results["total_seconds"] = time.perf_counter() - t_start
    if own_session:
        spark.stop()

    from sieve_report import write_chart, write_report  # matplotlib only once everything is measured

    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(results, indent=1, default=str))
    write_chart(results, Path(a.chart))
    write_report(results, Path(a.report), Path(a.chart))
    log(f"\nwrote {a.report}, {a.chart}, {a.json} in {results['total_seconds'] / 60:.1f} min")
    write_scale(a, results)
    if results["violations"]:
        loud(f"{len(results['violations'])} CORRECTNESS VIOLATION(S): see the report")
        return 1
    log("correctness: every answer matched the ground truth; every Sieve candidate set contained the exact set")
    return 0


def rel(path: str) -> str:
    """``path`` relative to the checkout when it is inside it (for reports)."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(HERE.parent.parent))
    except ValueError:
        return str(p)


def write_scale(a: argparse.Namespace, results: dict[str, Any]) -> None:
    """The scale report (``--scale-report``) of this run against ``--compare-json`` (if given)."""
    if not a.scale_report:
        return
    from sieve_scale import write_scale_report

    small = json.loads(Path(a.compare_json).read_text()) if a.compare_json else None
    write_scale_report(results, small, Path(a.scale_report))
    log(f"wrote {a.scale_report}")


def print_case(out: dict[str, Any]) -> None:
    s = out.get("summary", {})
    log(f"\n=== {out['layout']} / {out['column']}: {out['files']} files, {out['rows']:,} rows ===")
    log(f"{'subset':<18}{'method':<8}{'median s':>10}{'p10–p90 s':>16}{'files/q':>10}{'×exact':>9}{'speedup':>9}")
    for name, sub in s.items():
        for m in METHODS:
            if m not in sub:
                continue
            x = sub[m]
            log(f"{name:<18}{m:<8}{x['median_s']:>10.3f}{x['p10_s']:>8.3f}–{x['p90_s']:<7.3f}"
                f"{x['mean_files']:>10.1f}{x['files_ratio']:>9.2f}{x.get('speedup_vs_full', 0):>9.1f}")
    if "index" in out:
        i = out["index"]
        log(f"index: {i['index_bytes']:,} B = {i['bytes_per_row']:.4f} B/row, "
            f"{i['share_of_raw_column'] * 100:.3f}% of rows×width, "
            f"{i['share_of_parquet_column'] * 100:.2f}% of the compressed Parquet column")


if __name__ == "__main__":
    sys.exit(main())
