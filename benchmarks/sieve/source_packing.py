"""``format("sieve")`` with its candidate files packed into tasks as Spark packs them (issue 49 item 7), against the
earlier one task per file and against ``spark.read.parquet``, on full and wide scans.

A table of F files (pyarrow, ``k`` int64 sorted across files, ``v`` int64, ``u`` a string), indexed on ``k``;
each query computes ``count(*)`` and ``sum(v)``; every answer is checked against ``spark.read.parquet``. Methods:
``parquet`` (the native reader), ``sieve packed`` (the session's ``spark.sql.files.*`` settings), ``sieve one
per file`` (``openCostInBytes`` above ``maxPartitionBytes``: the earlier rule). Median of ``--repeats`` after a
warm-up of each method. Writes the section between the ``source-packing`` markers of SPARK_SOURCE.md.

    .venv/bin/python benchmarks/sieve/source_packing.py [--files 200 --rows 10000 --repeats 3]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve import spark as sieve_spark

BEGIN, END = "<!-- source-packing:begin -->", "<!-- source-packing:end -->"


def write_table(root: Path, files: int, rows: int) -> None:
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for i in range(files):
        k = pa.array(range(i * rows, (i + 1) * rows), pa.int64())
        pq.write_table(pa.table({"k": k, "v": pa.array(range(rows), pa.int64()),
                                 "u": pa.array([f"u{i}-{j}" for j in range(rows)])}), root / f"part-{i:05d}.parquet")
    S.build(None, str(root), "k")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--rows", type=int, default=10_000, help="rows per file")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--data", default=str(HERE / "data" / "source_packing"))
    ap.add_argument("--report", default=str(HERE / "SPARK_SOURCE.md"))
    args = ap.parse_args()
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as fn

    root = Path(args.data)
    write_table(root, args.files, args.rows)
    spark = (SparkSession.builder.master(args.master).config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    sieve_spark.register(spark)
    start, t0 = uptime(), time.monotonic()
    total = args.files * args.rows
    queries = [("full scan", None), ("range 50 %", f"k < {total // 2}"), ("range 10 %", f"k < {total // 10}")]
    methods = {
        "parquet": lambda: spark.read.parquet(str(root)),
        "sieve packed": lambda: spark.read.format("sieve").load(str(root)),
        "sieve one per file": lambda: spark.read.format("sieve").option("openCostInBytes", str(1 << 40))
        .option("maxPartitionBytes", "1").load(str(root)),
    }
    rows_out, failed = [], 0
    for name, where in queries:
        times: dict[str, float] = {}
        tasks: dict[str, int] = {}
        answers = {}
        for method, make in methods.items():
            def run(make: Any = make, where: str | None = where) -> Any:
                df = make() if where is None else make().where(where)
                return df, df.agg(fn.count("*").alias("n"), fn.sum("v").alias("s")).collect()[0]
            run()  # warm-up
            samples = []
            for _ in range(args.repeats):
                t = time.perf_counter()
                df, answer = run()
                samples.append(time.perf_counter() - t)
            times[method] = statistics.median(samples)
            tasks[method] = df.rdd.getNumPartitions()
            answers[method] = tuple(answer)
        if len(set(answers.values())) != 1:
            failed += 1
        rows_out.append((name, answers["parquet"][0], tasks, times))
        print(name, tasks, {m: round(s, 2) for m, s in times.items()}, flush=True)
    end = uptime()
    spark.stop()
    lines = [BEGIN, "## Packing candidate files into tasks (issue 49 item 7)", "",
             (f"`benchmarks/sieve/source_packing.py`: Spark `{args.master}`, {args.files} files of {args.rows:,} rows "
             f"(`k` sorted across files, `v`, `u` a string), indexed on `k`; `count(*)` and `sum(v)`; median of "
             f"{args.repeats} after a warm-up of each method; wall {time.monotonic() - t0:.0f} s. `uptime` at the "
             f"start: {start}; at the end: {end} (a shared machine: compare within a row). *tasks*: input "
             "partitions. *packed*: the session's `spark.sql.files.*` settings (Spark's defaults here); "
             "*one per file*: the earlier rule."), "",
             ("| query | rows | tasks parquet / packed / one per file | parquet s | sieve packed s | "
             "sieve one per file s | packed ÷ parquet |"), "|---|---|---|---|---|---|---|"]
    for name, n, tasks, times in rows_out:
        lines.append(f"| {name} | {n:,} | {tasks['parquet']} / {tasks['sieve packed']} / "
                     f"{tasks['sieve one per file']} | {times['parquet']:.2f} | {times['sieve packed']:.2f} | "
                     f"{times['sieve one per file']:.2f} | {times['sieve packed'] / times['parquet']:.2f}× |")
    lines += ["", f"Answers that differed from the native reader's: {failed}.", END]
    report = Path(args.report)
    text = report.read_text() if report.exists() else ""
    section = "\n".join(lines)
    if BEGIN in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _m: section, text, flags=re.DOTALL)
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    report.write_text(text)
    print(section)
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    sys.exit(main())
