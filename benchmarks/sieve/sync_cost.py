"""Build and sync cost of Sieve on every cached layout (issue 11): build vs a min/max scan, and a
sync after a 1 % append vs a full build.

For each layout of ``benchmarks/sieve/data/sf{SCALE}-f200`` (``run.py`` generates and caches them)
and each indexed column: the table's files are hard-linked into a scratch table (the cache stays
untouched), then, on one ``local[2]`` Spark session with ``spark.driver.memory=1g``:

1. min/max: ``spark.read.parquet(root).groupBy(input_file_name()).agg(min, max).collect()``;
2. Sieve build: ``sieve.build(spark, root, column)``, copy-on-write, the default error bound and
   engine (``auto``: pyarrow on the driver up to 8 M rows, else Spark); when that picked pyarrow,
   the same build with ``engine="spark"`` as well;
3. sync after a 1 % append: the layout's append file (a 1 % sample of its rows, one file) is linked
   in and ``sieve.sync(spark, root, column)`` runs; then the file is deleted and synced again;
4. the same append and delete on a merge-on-read index (``mode="mor"``: deltas, no rewrite), then
   8 such appends, each synced, and one ``compact``: the cost per append with compaction paid.

Both Spark queries run once untimed on a copy of the smallest file first (code generation, JIT), and
every build and compaction runs ``--repeats`` times and every sync ``--sync-repeats`` times (median:
a sync takes milliseconds, and one fsync stall of this machine's disk can take 40 ms). The sync
path is warmed up too, by one append and delete synced on that copy. Prints one line per case and
writes ``SYNC.md``.

    .venv/bin/python benchmarks/sieve/sync_cost.py                 # SF1 (all layouts) and SF10
    .venv/bin/python benchmarks/sieve/sync_cost.py --scales 1 --layouts adversarial
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
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(HERE)]

from sync_file_table import timed  # a sibling script, found through HERE on sys.path

COLUMNS = {"generated": ["l_orderkey", "l_shipdate"], "sparse": ["l_orderkey"]}  # as run.py
DEFAULT_COLUMN = "l_shipdate"
SYNC_TARGET = 0.05
BUILD_TARGET = 2.0


def _link_table(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True)
    for f in sorted(src.glob("*.parquet")):
        os.link(f, dst / f.name)


def minmax_scan(spark: Any, root: Path | str, column: str) -> list[Any]:
    """The min/max pass the build targets are measured against: each file's min and max of the
    column, through Spark (``random_keys.py`` imports it)."""
    from pyspark.sql import functions as F

    return spark.read.parquet(str(root)).groupBy(F.input_file_name()).agg(F.min(column), F.max(column)).collect()


def measure(spark: Any, layout_dir: Path, append: Path, column: str, repeats: int, scratch: Path,
            sync_repeats: int = 7) -> dict[str, Any]:
    from sieve_scale import MemoryProbe

    from airflow_provider_lineage import sieve as S

    files = sorted(layout_dir.glob("*.parquet"))
    small = min(files, key=os.path.getsize)
    warm = scratch / "warm"
    warm.mkdir()
    shutil.copy(small, warm / "part-0.parquet")
    minmax = lambda root: minmax_scan(spark, root, column)
    minmax(warm)
    S.build(spark, str(warm), column, index_path=str(warm / "_i"))
    S.build(spark, str(warm), column, index_path=str(warm / "_j"), engine="spark")
    os.link(warm / "part-0.parquet", warm / "part-1.parquet")  # the sync path: an append, then a delete
    S.sync(spark, str(warm), column, index_path=str(warm / "_i"))
    (warm / "part-1.parquet").unlink()
    S.sync(spark, str(warm), column, index_path=str(warm / "_i"))
    root = scratch / "t"
    _link_table(layout_dir, root)
    out: dict[str, Any] = {"files": len(files), "column": column}
    out["minmax_s"], _ = timed(lambda: minmax(root), repeats)
    builds = []
    for mode in ("cow", "mor"):
        idx = str(scratch / f"idx-{mode}")
        with MemoryProbe(spark) as probe:
            t, stats = timed(lambda: (shutil.rmtree(idx, ignore_errors=True),  # noqa: B023
                                        S.build(spark, str(root), column, index_path=idx, mode=mode))[1], repeats)  # noqa: B023
        builds.append(t)
        added = root / "zz-append.parquet"
        appends, deletes, reports = [], [], []
        for _ in range(sync_repeats):
            os.link(append, added)
            t0 = time.perf_counter()
            rep = S.sync(spark, str(root), column, index_path=idx)
            appends.append(time.perf_counter() - t0)
            reports.append(rep.to_dict())
            added.unlink()
            t0 = time.perf_counter()
            S.sync(spark, str(root), column, index_path=idx)
            deletes.append(time.perf_counter() - t0)
        engine = S.open_index(str(root), column, index_path=idx).manifest.build_stats.get("engine")
        out[mode] = {"build_s": t, "engine": engine, "index_bytes": stats.index_bytes, "segments": stats.segments,
                     "sync_append_s": statistics.median(appends), "sync_delete_s": statistics.median(deletes),
                     "sync_append_runs_s": appends, "sync_delete_runs_s": deletes,
                     "append_report": reports[-1], "memory": probe.result}
        if mode == "mor":
            out[mode].update(_mor_series(S, root, column, idx, append, repeats))
    out["build_s"] = out["cow"]["build_s"]
    out["engine"] = out["cow"]["engine"]
    if out["engine"] != "spark":
        idx = str(scratch / "idx-spark")
        with MemoryProbe(spark) as probe:
            out["spark_build_s"], _ = timed(lambda: (shutil.rmtree(idx, ignore_errors=True),
                                                       S.build(spark, str(root), column, index_path=idx,
                                                               engine="spark")), repeats)
        out["spark_memory"] = probe.result
    return out


SERIES = 8  # merge-on-read: appends synced before one compaction (the default max_deltas)


def _mor_series(S: Any, root: Path, column: str, idx: str, append: Path, repeats: int) -> dict[str, Any]:
    """What merge-on-read costs per append once compaction is paid: ``SERIES`` appends, each synced
    (a delta each), then ``compact`` (folds them into the segments); median over ``repeats``."""
    totals, compacts = [], []
    for _ in range(repeats):
        links = [root / f"zz-series-{i}.parquet" for i in range(SERIES)]
        total = 0.0
        for link in links:
            os.link(append, link)
            t0 = time.perf_counter()
            S.sync(None, str(root), column, index_path=idx)
            total += time.perf_counter() - t0
        t0 = time.perf_counter()
        S.compact(str(root), column, index_path=idx)
        compacts.append(time.perf_counter() - t0)
        totals.append(total + compacts[-1])
        for link in links:
            link.unlink()
        S.sync(None, str(root), column, index_path=idx)
        S.compact(str(root), column, index_path=idx)
    return {"series_per_append_s": statistics.median(totals) / SERIES, "series_compact_s": statistics.median(compacts)}


def _fmt(case: dict[str, Any]) -> list[str]:
    cow, mor = case["cow"], case["mor"]
    r = cow["append_report"]
    build_ratio = cow["build_s"] / case["minmax_s"]
    sync_ratio = cow["sync_append_s"] / cow["build_s"]
    mor_ratio = mor["sync_append_s"] / mor["build_s"]
    ok = lambda good: "PASS" if good else "MISS"
    return [f"SF{case['scale']:g}", case["layout"], f"`{case['column']}`", f"{case['files']:,}",
            f"{case['minmax_s']:.2f}", f"{cow['build_s']:.2f} ({case.get('engine') or cow.get('engine')})",
            f"{build_ratio:.2f}× {ok(build_ratio <= BUILD_TARGET)}",
            ("same" if "spark_build_s" not in case else
             f"{case['spark_build_s']:.2f} ({case['spark_build_s'] / case['minmax_s']:.2f}× "
             f"{ok(case['spark_build_s'] / case['minmax_s'] <= BUILD_TARGET)})"),
            f"{cow['sync_append_s']:.3f}", f"{100 * sync_ratio:.1f} % {ok(sync_ratio <= SYNC_TARGET)}" + (
                "" if "spark_build_s" not in case else
                f" ({100 * cow['sync_append_s'] / case['spark_build_s']:.1f} % of the Spark-engine build)"),
            " / ".join(str(r.get(f"segments_{k}", 0)) for k in ("covered", "rewritten", "rebuilt", "created")),
            f"{cow['sync_delete_s']:.3f}", f"{mor['sync_append_s']:.3f} ({100 * mor_ratio:.1f} %)",
            ("–" if "series_per_append_s" not in mor else
             f"{mor['series_per_append_s']:.3f} ({100 * mor['series_per_append_s'] / mor['build_s']:.1f} %; "
             f"compact {mor['series_compact_s']:.3f} s)"),
            f"{mib(cow['memory'].get('jvm_heap_peak'))} / {mib(cow['memory'].get('python_rss_peak'))}"]


def mib(n: int | None) -> str:
    return "?" if not n else f"{n / 2**20:.0f}"


def write_report(cases: list[dict[str, Any]], path: Path, meta: dict[str, Any]) -> None:
    head = ["scale", "layout", "column", "files", "min/max scan s", "Sieve build s (engine auto picked)",
            "build ÷ min/max (≤ 2×)", "Spark-engine build s (÷ min/max)",
            "sync after 1 % append s", "sync ÷ build (≤ 5 %)", "segments covered / rewritten / re-segmented / created",
            "sync after deleting it s", "merge-on-read: sync after the append s (÷ its build)",
            f"merge-on-read, compaction paid: {SERIES} appends synced + one compact, per append s (÷ build)",
            "build peaks MiB: JVM heap (of 1g) / Python RSS"]
    lines = ["# Sieve build and sync cost on every layout", "",
             (f"Generated by `benchmarks/sieve/sync_cost.py` on {meta['started']} in {meta['minutes']:.1f} min: "
             f"Spark {meta['spark']} `local[2]`, `spark.driver.memory=1g`, {meta['cpus']} CPUs, Python "
             f"{platform.python_version()}; median of {meta['repeats']} runs of every build and compaction and of "
             f"{meta.get('sync_repeats', meta['repeats'])} runs of every sync; copy-on-write unless "
             f"said. {meta.get('note', '')}").rstrip(), "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_fmt(c)) + " |" for c in cases]
    lines += [
        "",
        (
            "How: the layout's files hard-linked into a scratch table; min/max = "
            "`spark.read.parquet(root).groupBy(input_file_name()).agg(min, max).collect()`; build = "
            "`sieve.build(spark, root, column)` (engine `auto`: pyarrow on the driver for tables up to 8 M "
            "rows, else the Spark aggregation and the driver's ordered pass; then writing and committing "
            'the index); *Spark-engine build* = the same with `engine="spark"` where `auto` picked pyarrow; sync = '
            '`sieve.sync(spark, root, column)` after linking in the layout\'s '
            "1 % append file (one file; the keys of a 1 % sample of the rows), then after deleting it. Both "
            "Spark queries, both builds and a sync of an append and of a delete ran once untimed on a copy of "
            "the smallest file first. *covered* segments took the "
            "new file as a full file (it holds every key of their range): only the segment list changed; "
            "*rewritten* segments keep "
            "their blocks and gain the new (block, file) pairs (a file holding all or none of each block's "
            "keys, or a budget that absorbs them); *re-segmented* segments are rebuilt from their own "
            "triples plus the new keys (no data file is read again). *Compaction paid*: on the merge-on-read "
            f"index, the append file linked in under {SERIES} names, each synced (one delta each), then "
            "`sieve.compact` folds the deltas into the segments; the total over the "
            f"{SERIES} appends: what merge-on-read costs per append once its deferred work is done."
        ),
    ]
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scales", default="1,10")
    p.add_argument("--layouts", default="adversarial,late,generated,shuffled,sparse")
    p.add_argument("--repeats", type=int, default=3, help="runs of every build and compaction (median)")
    p.add_argument("--sync-repeats", type=int, default=7, help="runs of every sync (median)")
    p.add_argument("--data-dir", type=Path, default=HERE / "data")
    p.add_argument("--report", type=Path, default=HERE / "SYNC.md")
    p.add_argument("--json", type=Path, default=HERE / "out" / "sync_cost.json")
    p.add_argument("--note", default="", help="a sentence about the run's conditions, added to the header")
    p.add_argument("--render", action="store_true", help="only write the report again from --json (no run)")
    a = p.parse_args(argv)
    if a.render:
        saved = json.loads(a.json.read_text())
        write_report(saved["cases"], a.report, saved["meta"])
        print(f"wrote {a.report} from {a.json}", flush=True)
        return 0
    from sieve_methods import spark_session

    started, t_start = time.strftime("%Y-%m-%d %H:%M"), time.perf_counter()
    spark = spark_session("1g")
    cases: list[dict[str, Any]] = []
    try:
        for scale in (float(s) for s in a.scales.split(",")):
            base = a.data_dir / f"sf{scale:g}-f200"
            for layout in a.layouts.split(","):
                src, append = base / layout, base / f"{layout}-append.parquet"
                if not src.is_dir() or not append.is_file():
                    print(f"[sf{scale:g}/{layout}] not cached (run benchmarks/sieve/run.py first): skipped", flush=True)
                    continue
                for column in COLUMNS.get(layout, [DEFAULT_COLUMN]):
                    with tempfile.TemporaryDirectory(prefix="sieve-sync-", dir=a.data_dir) as tmp:
                        case = measure(spark, src, append, column, a.repeats, Path(tmp), a.sync_repeats)
                    case.update(scale=scale, layout=layout)
                    cases.append(case)
                    print(" | ".join(_fmt(case)), flush=True)
    finally:
        version = spark.version
        spark.stop()
    meta = {"started": started, "minutes": (time.perf_counter() - t_start) / 60, "spark": version,
            "cpus": os.cpu_count(), "repeats": a.repeats, "sync_repeats": a.sync_repeats, "note": a.note}
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps({"meta": meta, "cases": cases}, indent=1, default=str))
    write_report(cases, a.report, meta)
    print(f"wrote {a.report} and {a.json}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
