"""Capture on wide and deep plans (issue 36): width x depth grid, plain vs captured, interleaved.

``python benchmarks/capture/stress.py [--widths 100,500,1200,2000] [--depths 10,80,200] [--pairs 1] [--first-pair 0]``

For each (width, depth) a generated PySpark application reads a Parquet table of ``width`` columns,
derives ``depth`` chained columns (each step uses the previous one twice in a ``when/otherwise``),
unions three filtered copies by name, joins the result with itself on ``id``, aggregates and writes
twice (the wide frame and the aggregate). It runs with ``spark-submit --master local[2]``, plain and
through ``capture/launcher.py`` (order alternating per pair). Reported per cell: the plain wall time, the
added wall time, the driver's heap peak (sum of the heap pools' peak usage, read in the application at
its end) plain and captured, the capture worker's CPU-side time (``analysis_s`` in the launcher's status
file), the bytes of the OpenLineage output datasets built from the records, and whether the lineage is
complete (every written column has edges, nothing approximate, no capture problem). Writes
``benchmarks/capture/STRESS.md`` (linked from ``REPORT.md`` and docs/benchmarks.md).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from airflow_provider_lineage.capture.config import STATUS_FILE
from airflow_provider_lineage.operators.spark_lineage import launcher_path

APP = '''
import json, sys
from pyspark.sql import SparkSession, functions as F
src, out, width, depth = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
spark = (SparkSession.builder.appName(f"stress_{width}x{depth}").config("spark.sql.shuffle.partitions", "2")
         .config("spark.ui.enabled", "false").getOrCreate())
df = spark.read.parquet(src)
prev = "c0"
for k in range(1, depth + 1):
    p = F.col(prev)
    df = df.withColumn(f"d{k}", F.when(p > 0, p - 1).otherwise(p + 1))
    prev = f"d{k}"
parts = [df.where(F.col("c1") % 3 == i) for i in range(3)]
u = parts[0].unionByName(parts[1]).unionByName(parts[2])
right = u.select(F.col("id").alias("rid"), F.col(prev).alias("last"))
j = u.join(right, u["id"] == right["rid"]).drop("rid")
j.write.mode("overwrite").parquet(out + "/wide")
j.groupBy("c2").agg(*[F.sum(F.col(f"c{i}")).alias(f"s{i}") for i in range(3, min(width, 23))],
                    F.max("last").alias("m")).write.mode("overwrite").parquet(out + "/agg")
from py4j.java_gateway import java_import
jvm = spark.sparkContext._jvm
peak = 0
for pool in jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans():
    if str(pool.getType().toString()) == "Heap memory":
        peak += pool.getPeakUsage().getUsed()
with open(out + "/heap.json", "w") as fh:
    json.dump({"heap_peak": peak, "max": jvm.java.lang.Runtime.getRuntime().maxMemory()}, fh)
spark.stop()
'''


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return env


def make_source(work: Path, width: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = 200
    cols = {"id": list(range(rows))}
    for i in range(width):
        cols[f"c{i}"] = [(r * (i + 7)) % 101 - 50 for r in range(rows)]
    path = work / f"src_{width}"
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(cols), path / "part-0.parquet")
    return path


def submit(app: Path, src: Path, out: Path, width: int, depth: int, capture: Path | None,
           driver_memory: str, java_options: str = "") -> tuple[float, int]:
    cmd = ["spark-submit", "--master", "local[2]", "--driver-memory", driver_memory,
           "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2"]
    if java_options:  # e.g. -Xss16m: Spark's own tasks overflow the default stack on 200 nested projections
        cmd += ["--conf", f"spark.driver.extraJavaOptions={java_options}"]
    args = [str(app), str(src), str(out), str(width), str(depth)]
    if capture is not None:
        cmd += ["--conf", f"spark.airflow_lineage.captureDir={capture}", launcher_path(), *args]
    else:
        cmd += args
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:  # kept beside the report: why the job failed (plain or captured)
        (out.parent / f"{out.name}.log").write_text(proc.stdout, encoding="utf-8")
        errors = [ln for ln in proc.stdout.splitlines()
                  if ("Error" in ln or "Exception" in ln) and not ln.startswith("\t")]  # not the stack's lines
        print(f"{out.name}: exit code {proc.returncode}; {' | '.join(errors[:3])[:600]}", file=sys.stderr, flush=True)
    return wall, proc.returncode


def worker_side(capture: Path) -> tuple[int, bool, list[str], float]:
    from openlineage.client.serde import Serde

    from airflow_provider_lineage.lineage import events
    from airflow_provider_lineage.lineage.record import read_records

    started = time.process_time()
    result = events.analyze(read_records(capture))
    _inputs, outputs = events.datasets(result)
    engine_s = time.process_time() - started
    size = sum(len(Serde.to_json(o)) for o in outputs)
    complete = bool(result.lineages) and not result.problems and all(
        not lin.approximate and all(edges for edges in lin.columns.values()) for lin in result.lineages)
    return size, complete, [p.message[:200] for p in result.problems], engine_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="100,500,1200,2000")
    parser.add_argument("--depths", default="10,80,200")
    parser.add_argument("--pairs", type=int, default=1)
    parser.add_argument("--first-pair", type=int, default=0,
                        help="index of the first pair: an odd one runs the captured job first (to repeat a cell the "
                             "other way round)")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--java-options", default="", help="the driver JVM's options, e.g. -Xss16m for depth 200")
    parser.add_argument("--report", type=Path, default=HERE / "STRESS.md")
    args = parser.parse_args(argv)
    widths = [int(x) for x in args.widths.split(",")]
    depths = [int(x) for x in args.depths.split(",")]
    load_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="apl-bench-stress-"))
    app = work / "stress_app.py"
    app.write_text(APP, encoding="utf-8")
    rows = []
    try:
        for width in widths:
            src = make_source(work, width)
            for depth in depths:
                for pair in range(args.first_pair, args.first_pair + args.pairs):
                    order = ["plain", "captured"] if pair % 2 == 0 else ["captured", "plain"]
                    got: dict[str, dict[str, object]] = {}
                    for kind in order:
                        out = work / f"out_{width}_{depth}_{pair}_{kind}"
                        cap = work / f"cap_{width}_{depth}_{pair}" if kind == "captured" else None
                        wall, code = submit(app, src, out, width, depth, cap, args.driver_memory, args.java_options)
                        heap = json.loads((out / "heap.json").read_text()) if (out / "heap.json").exists() else {}
                        got[kind] = {"wall": wall, "code": code, "heap": heap.get("heap_peak")}
                        if cap is not None:
                            status = json.loads((cap / STATUS_FILE).read_text()) if (cap / STATUS_FILE).exists() else {}
                            size, complete, problems, engine_s = worker_side(cap)
                            timings = status.get("timings", {})
                            got[kind].update(analysis=timings.get("analysis_s"), engine=engine_s,
                                             stages={k[len("analysis_"):]: round(v, 2) for k, v in timings.items()
                                                     if k.startswith("analysis_") and k != "analysis_s"},
                                             drain=status.get("timings", {}).get("drain_s"), bytes=size,
                                             complete=complete and not status.get("problems"),
                                             problems=problems + list(status.get("problems", [])))
                    p, c = got["plain"], got["captured"]
                    row = {
                        "width": width,
                        "depth": depth,
                        "first": order[0],
                        "plain_s": p["wall"],
                        "added_s": c["wall"] - p["wall"],
                        "target_s": target_s(p["wall"]),
                        "heap_plain": p["heap"],
                        "heap_captured": c["heap"],
                        "analysis_s": c.get("analysis"),
                        "stages": c.get("stages"),
                        "drain_s": c.get("drain"),
                        "engine_s": c.get("engine"),
                        "bytes": c.get("bytes"),
                        "load": os.getloadavg()[0],
                        "complete": c.get("complete"),
                        "codes": (p["code"], c["code"]),
                        "problems": c.get("problems"),
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    # each cell as it ends: a long grid keeps what ran
                    write_report(args.report, rows, args, load_start)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(write_report(args.report, rows, args, load_start))
    print(f"wrote {args.report}")
    return 0


def _stages(stages: dict[str, float] | None) -> str:
    """`` (walk 1.2, relations 0.1, deliver 0.4)``: where the capture worker's time went."""
    if not stages:
        return ""
    return " (" + ", ".join(f"{k.removesuffix('_s')} {v:.1f}" for k, v in stages.items()) + ")"


def target_s(plain_s: float) -> float:
    """Issue 36's target for the added wall time: 10 % of the plain job's + 5 s."""
    return 0.10 * plain_s + 5


def _cell_summary(rows: list[dict]) -> list[str]:
    """Per cell over its pairs: the mean plain and captured wall time and the verdict on the means.

    One pair of a long job mostly measures the plain job's own spread; a cell run both ways round is judged on
    the mean of its pairs (target: 10 % of the mean plain time + 5 s). Empty when no cell has two pairs.
    """
    cells: dict[tuple[int, int], list[dict]] = {}
    for r in rows:
        cells.setdefault((r["width"], r["depth"]), []).append(r)
    if all(len(v) < 2 for v in cells.values()):
        return []
    lines = [
        "",
        "Per cell over its pairs (the verdict is on the means):",
        "",
        "| width | depth | pairs | plain mean (s) | captured mean (s) | added (s) | target (s) | meets | complete |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (width, depth), rs in cells.items():
        plain = sum(r["plain_s"] for r in rs) / len(rs)
        captured = sum(r["plain_s"] + r["added_s"] for r in rs) / len(rs)
        target = target_s(plain)
        lines.append(f"| {width} | {depth} | {len(rs)} | {plain:.1f} | {captured:.1f} | {captured - plain:+.1f} | "
                     f"{target:.1f} | {'yes' if captured - plain <= target else 'no'} | "
                     f"{'yes' if all(r['complete'] for r in rs) else 'no'} |")
    return lines


def write_report(report: Path, rows: list[dict], args: argparse.Namespace, load_start: float) -> str:
    mb = 1024 * 1024
    lines = [
        "# Capture on wide and deep plans",
        "",
        (
            f"Generated by `benchmarks/capture/stress.py` on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; "
            f"{platform.machine()}, {os.cpu_count()} CPUs, 1-min load average {load_start:.1f} at the start and "
            f"as given per cell at each cell's end, Python {platform.python_version()}; `spark-submit --master "
            f"local[2] "
            f"--driver-memory {args.driver_memory}`{' with ' + repr(args.java_options) if args.java_options else ''}, "
            f"{args.pairs} interleaved pair(s) per cell "
            f"({'the plain job first' if args.first_pair % 2 == 0 else 'the captured job first'}, then alternating). "
            f"Job: see the script's "
            "docstring. *Capture worker*: the driver's capture thread, all writes; *wait at exit*: how long the "
            "driver waited for it after the application's last line; *engine*: the operator's analysis of the "
            "records after spark-submit (CPU s, not on the job's wall time)."
        ),
        "",
        (
            "| width | depth | plain (s) | added (s) | target (s) | heap peak plain / captured (MiB) | capture worker "
            "(s) "
            "| wait at exit (s) | engine (s) | event bytes | lineage complete | exit codes | load | first |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        hp = f"{(r['heap_plain'] or 0) / mb:.0f} / {(r['heap_captured'] or 0) / mb:.0f}"
        lines.append(
            f"| {r['width']} | {r['depth']} | {r['plain_s']:.1f} | {r['added_s']:+.1f} | {r['target_s']:.1f} | "
            f"{hp} | {r['analysis_s'] or 0:.2f}{_stages(r.get('stages'))} | {r['drain_s'] or 0:.2f} | "
            f"{r['engine_s'] or 0:.2f} | "
            f"{r['bytes'] or 0:,} | {'yes' if r['complete'] else 'no'} | {r['codes'][0]} / {r['codes'][1]} | "
            f"{r['load']:.1f} | {r.get('first', 'plain')} |"
        )
    lines += _cell_summary(rows)
    problems = [f"- {r['width']}x{r['depth']}: {p}" for r in rows for p in (r["problems"] or [])]
    if problems:
        lines += ["", "Problems reported:", *problems]
    text = "\n".join(lines) + "\n"
    report.write_text(text, encoding="utf-8")
    return text


if __name__ == "__main__":
    raise SystemExit(main())
