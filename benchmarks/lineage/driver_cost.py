"""Driver round trips: what the rule costs in edges and in capture time (docs/engine.md, "What the capture cannot see").

``python benchmarks/lineage/driver_cost.py``

A typical job: read a small config table, ``collect()`` it into a dict, then write five outputs from a bigger
``orders`` table: code constants (``lit("active")``, ``lit(100)``, ``WHERE status = 'open'``), a filter by a config
value, a UDF reading the config dict, a plain projection, and ``createDataFrame`` of the config rows. Each write is
captured twice: after the ``collect()`` and in a run without it (the driver log cleared). Reported per write:
the edges added and from which columns, and which columns are marked ``driver round trip``; and the capture
time of the ``collect()`` itself (its plan walk and engine pass, on the capture's worker thread).

Prints the figures and writes ``benchmarks/lineage/DRIVER.md``.
"""
from __future__ import annotations

import datetime as dt
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from airflow_provider_lineage.capture.listener import CaptureSession, drain
from airflow_provider_lineage.lineage import analyze_record


def _edges(lin) -> set[tuple[str, str, str]]:
    """``(output column or "[rows]", input dataset, input field)`` of every column and dataset-wide edge."""
    out = {(c, e.dataset.name.rsplit("/", 1)[-1], e.field) for c, es in lin.columns.items() for e in es}
    return out | {("[rows]", e.dataset.name.rsplit("/", 1)[-1], e.field) for e in lin.dataset_edges}


def main() -> int:
    spark = (SparkSession.builder.master("local[1]").appName("driver_cost")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    base = Path(tempfile.mkdtemp(prefix="driver_cost_"))
    spark.range(8).selectExpr("CONCAT('k', id) AS key", "CAST(id * 10 AS STRING) AS value") \
        .write.parquet(str(base / "config"))
    spark.range(1000).selectExpr("id", "id % 7 AS cust_id", "CAST(id * 1.5 AS DOUBLE) AS amount",
                                 "IF(id % 2 = 0, 'open', 'closed') AS status", "CONCAT('n', id) AS note") \
        .write.parquet(str(base / "orders"))
    config = spark.read.parquet(str(base / "config"))
    orders = spark.read.parquet(str(base / "orders"))
    rows: list = []
    n = [0]

    def writes(cfg: dict[str, str]):
        @F.udf("string")
        def label(cust_id):
            return cfg.get(f"k{cust_id}", "none")

        return {
            "code constants": orders.where("status = 'open'").select(
                "id", F.lit("active").alias("flag"), (F.col("amount") + F.lit(100)).alias("a")),
            "filter by a config value": orders.where(F.col("amount") > F.lit(float(cfg.get("k3", "0")))).select("id"),
            "UDF reading the config dict": orders.select("id", label("cust_id").alias("label")),
            "plain projection": orders.select("id", "note"),
            "createDataFrame(config rows)": spark.createDataFrame(rows or [("k0", "0")], ["key", "value"]),
        }

    def capture(session, df):
        n[0] += 1
        start = len(session.records)
        df.write.mode("overwrite").parquet(str(base / f"out_{n[0]}"))
        drain(spark)
        return analyze_record(session.records[start:][-1])

    results = {}
    with CaptureSession(spark) as session:
        listener = session.listener
        # without a round trip (same constants: the dict's values as the collect would give them)
        cfg = {f"k{i}": str(i * 10) for i in range(8)}
        before = {name: capture(session, df) for name, df in writes(cfg).items()}
        spent0 = listener.spent_s
        t0 = time.perf_counter()
        rows = config.collect()
        drain(spark)
        wall = time.perf_counter() - t0
        collect_capture_s = listener.spent_s - spent0
        cfg = {r.key: r.value for r in rows}
        after = {name: capture(session, df) for name, df in writes(cfg).items()}
        for name, lin in before.items():
            added = _edges(after[name]) - _edges(lin)
            results[name] = (added, sorted(after[name].approximate_columns))
    spark.stop()

    lines = [
        "# Driver round trips: cost of the rule",
        "",
        (
            f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, Python {platform.python_version()}, "
            "local[1] (shared machine: times are indicative)."
        ),
        "",
        (
            "A config table of 8 rows (`key`, `value`) is `collect()`ed; then five writes from a 1,000-row `orders` "
            "table. "
            "Edges added = edges of the write after the collect minus the same write's edges without it."
        ),
        "",
        "| write | edges added | columns marked `driver round trip` |",
        "|---|---|---|",
    ]
    for name, (added, marked) in results.items():
        shown = ", ".join(f"{c} <- {d}.{f}" for c, d, f in sorted(added)) or "none"
        lines.append(f"| {name} | {len(added)}: {shown} | {', '.join(marked) or 'none'} |")
    lines += [
        "",
        (
            f"Capture time of the `collect()` (plan walk + engine pass, worker thread): "
            f"{collect_capture_s * 1000:.0f} ms; the action's wall time with the drain: {wall * 1000:.0f} ms."
        ),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    (HERE / "DRIVER.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
