"""Lineage cost: engine time against plan size, and against sqlglot on the 22 TPC-H queries.

* Generated plans (a long withColumn chain, a wide union, a deep join tree) are captured from real
  writes to Parquet of empty copies of the inputs (the plan does not depend on row counts); their size is counted as
  plan nodes + expression nodes of the optimized plan JSON. The engine's ``analyze_record`` is timed on each
  (median of repeats) and
  reported as milliseconds per 1,000 nodes; a flat ms/1k-nodes across sizes means linear cost.
* TPC-H (scale 0.01 from ``tpchgen-cli``): each query's result is written to Parquet under capture;
  ``analyze_record`` is timed against ``sqlglot.lineage.lineage`` called for every output column with
  the schema given (what a SQL-text tool must do), in the same process.

Run alone: ``python benchmarks/lineage/cost.py`` (prints a table); ``run.py`` includes it in REPORT.md.
"""
from __future__ import annotations

import gc
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.lineage.tpch_queries import QUERIES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Fields of a plan node that hold another plan, not expressions of this node (counted once, elsewhere).
_SKIP_FIELDS = frozenset({"analyzedQuery"})


def count_nodes(plan: list[dict[str, Any]] | None) -> tuple[int, int]:
    """``(plan nodes, expression nodes)`` of a TreeNode JSON plan (the optimized plan of a record).

    Plan nodes are the entries of the flattened list; expression nodes are every nested object with
    a ``class`` inside a plan node's fields (sub-query plans inside expressions included).
    """
    if not plan:
        return 0, 0
    exprs = 0

    def walk(value: Any) -> None:
        nonlocal exprs
        if isinstance(value, dict):
            if "class" in value:
                exprs += 1
            for k, v in value.items():
                if k not in _SKIP_FIELDS:
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for node in plan:
        for k, v in node.items():
            if k not in _SKIP_FIELDS and k != "class":
                walk(v)
    return len(plan), exprs


def _best_ms(fn: Callable[[], Any], repeats: int) -> float:
    """Best of ``repeats`` runs with the garbage collector off (as ``timeit`` does).

    The machine is shared with other work; the minimum is the stable estimate of the intrinsic cost.
    """
    times = []
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1000)
    finally:
        if was_enabled:
            gc.enable()
    return min(times)


# --- generated plans ---------------------------------------------------------------------------
def withcolumn_chain(base: DataFrame, n: int) -> DataFrame:
    """``n`` withColumn calls; each new column combines two earlier columns (a chain of Projects)."""
    from pyspark.sql import functions as F

    df = base
    names = ["amount", "fee", "tax_rate"]
    for i in range(n):
        a, b = names[-1], names[-2 if len(names) > 1 else -1]
        df = df.withColumn(f"c{i}", F.col(a) * 2 + F.col(b) - F.lit(i))
        names.append(f"c{i}")
        if len(names) > 6:  # keep expression depth bounded: reference recent columns only
            names = names[:3] + names[-3:]
    return df


def wide_union(base: DataFrame, n: int) -> DataFrame:
    """A union of ``n`` filtered projections of the same input."""
    from pyspark.sql import functions as F

    branches = [
        base.where(F.col("amount") > i).select(
            "txn_id",
            "channel",
            (F.col("amount") + i).alias("v"),
            (F.col("amount") * F.col("tax_rate") - F.col("fee")).alias("w"),
            F.concat_ws("-", "currency", "mcc", F.lit(str(i))).alias("k"),
            F.when(F.col("is_reversal"), -F.col("amount")).otherwise(F.col("fee") * i).alias("s"),
        )
        for i in range(n)
    ]
    df = branches[0]
    for b in branches[1:]:
        df = df.union(b)
    return df


def deep_join(base: DataFrame, other: DataFrame, n: int) -> DataFrame:
    """A left-deep tree of ``n`` joins, each to a renamed projection of ``other``."""
    from pyspark.sql import functions as F

    df = base.select("txn_id", "customer_id", "amount")
    for i in range(n):
        right = other.select(
            F.col("customer_id").alias(f"k{i}"),
            (F.col("risk_score") * i + F.length("email")).alias(f"r{i}"),
            F.concat_ws(" ", "first_name", "last_name", F.lit(str(i))).alias(f"n{i}"),
        )
        df = df.join(right, df["customer_id"] == right[f"k{i}"], "left").drop(f"k{i}")
    return df


GENERATORS: dict[str, tuple[str, list[int]]] = {
    # name -> (description, size parameters giving roughly 100 / 1,000 / 5,000 nodes)
    "withColumn chain": ("n withColumn calls", [4, 30, 75]),
    "wide union": ("union of n filtered projections", [2, 18, 90]),
    "deep join tree": ("left-deep tree of n left joins", [2, 17, 52]),
}


@dataclass
class CostPoint:
    generator: str
    param: int
    plan_nodes: int
    expr_nodes: int
    analyze_ms: float
    capture_s: float

    @property
    def nodes(self) -> int:
        return self.plan_nodes + self.expr_nodes

    @property
    def ms_per_1k(self) -> float:
        return self.analyze_ms / self.nodes * 1000 if self.nodes else 0.0


@dataclass
class TpchPoint:
    query: int
    nodes: int
    columns: int
    engine_ms: float
    sqlglot_ms: float | None
    sqlglot_error: str | None = None
    sqlglot_all_ms: float | None = None  # one lineage(None, ...) call for all columns, when supported


@dataclass
class CostResults:
    points: list[CostPoint] = field(default_factory=list)
    tpch: list[TpchPoint] = field(default_factory=list)
    tpch_error: str | None = None
    sqlglot_version: str = ""


def _capture_one(spark: SparkSession, write: Callable[[], None]) -> Any:
    from airflow_provider_lineage.capture.listener import CaptureSession, drain
    from airflow_provider_lineage.lineage.record import collapse_nested

    drain(spark)  # events of earlier writes still queued would reach the new listener
    with CaptureSession(spark) as cap:
        write()
        # big plans take the listener a while (plan JSON + relation walk over py4j); wait for it here,
        # the session's own drain gives up after 60 s and then the event would be lost
        drain(spark, 600)
    recs = [r for r in collapse_nested(cap.records) if r.status == "success"]
    if len(recs) != 1:
        errors = cap.listener.errors if cap.listener else []
        raise RuntimeError(
            f"expected one captured write, got {len(recs)}: {[r.command for r in cap.records]}; listener errors "
            f"{errors}"
        )
    return recs[0]


def _empty_copy(spark: SparkSession, path: str, target: Path) -> DataFrame:
    """An empty Parquet copy of ``path`` (same schema): big plans then run in seconds and little memory.

    The plan (and so the lineage work) does not depend on the row count.
    """
    spark.read.parquet(path).limit(0).write.mode("overwrite").parquet(str(target))
    return spark.read.parquet(str(target))


def measure_generated(spark: SparkSession, inputs: dict[str, str], out_root: Path, analyze: Callable[[Any], Any],
                      sizes: dict[str, list[int]] | None = None, log: Callable[[str], None] = print) -> list[CostPoint]:
    base, other = (
        _empty_copy(spark, inputs[name], out_root / f"cost_input_{name}") for name in ("transactions", "customers")
    )
    builders: dict[str, Callable[[int], DataFrame]] = {
        "withColumn chain": lambda n: withcolumn_chain(base, n),
        "wide union": lambda n: wide_union(base, n),
        "deep join tree": lambda n: deep_join(base, other, n),
    }
    points = []
    for name, (_, params) in GENERATORS.items():
        for n in (sizes or {}).get(name, params):
            out = str(out_root / f"cost_{name.replace(' ', '_')}_{n}")
            t0 = time.perf_counter()
            df = builders[name](n)
            rec = _capture_one(spark, lambda df=df, out=out: df.write.mode("overwrite").parquet(out))
            capture_s = time.perf_counter() - t0
            plan_nodes, expr_nodes = count_nodes(rec.optimized_plan)
            analyze(rec)  # warm-up
            total = plan_nodes + expr_nodes
            repeats = 15 if total < 2000 else 7
            ms = _best_ms(lambda rec=rec: analyze(rec), repeats)
            p = CostPoint(name, n, plan_nodes, expr_nodes, ms, capture_s)
            log(f"  {name:<18} n={n:<4} nodes={p.nodes:>6} ({plan_nodes} plan + {expr_nodes} expr)  "
                f"{ms:8.2f} ms  {p.ms_per_1k:6.2f} ms/1k nodes  (capture {capture_s:.1f}s)")
            points.append(p)
            shutil.rmtree(out, ignore_errors=True)
    return points


# --- TPC-H ---------------------------------------------------------------------------------
def tpch_data(root: Path, scale: float = 0.01) -> Path:
    """Generate TPC-H Parquet at ``scale`` with ``tpchgen-cli`` (once) and return the folder."""
    target = root / f"tpch-sf{scale}"
    if (target / "lineitem.parquet").exists():
        return target
    exe = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
    if not Path(exe).exists():
        raise RuntimeError("tpchgen-cli is not installed: ./dev.sh setup installs the dev extra (tpchgen-cli)")
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run([exe, "parquet", "-s", str(scale), f"--output-dir={target}"], check=True, capture_output=True)
    return target


def _sqlglot_type(simple: str) -> str:
    return {"bigint": "BIGINT", "int": "INT", "string": "STRING", "date": "DATE", "double": "DOUBLE"}.get(
        simple, simple.upper()
    )


def measure_tpch(spark: SparkSession, work: Path, analyze: Callable[[Any], Any],
                 log: Callable[[str], None] = print) -> list[TpchPoint]:
    import sqlglot
    from sqlglot.lineage import lineage

    data = tpch_data(work)
    schema: dict[str, dict[str, str]] = {}
    for pq in sorted(data.glob("*.parquet")):
        name = pq.stem
        df = spark.read.parquet(str(pq))
        df.createOrReplaceTempView(name)
        schema[name] = {f.name: _sqlglot_type(f.dataType.simpleString()) for f in df.schema.fields}
    out_root = work / "tpch-out"
    points = []
    for q, sql in QUERIES.items():
        out = str(out_root / f"q{q}")
        rec = _capture_one(spark, lambda sql=sql, out=out: spark.sql(sql).write.mode("overwrite").parquet(out))
        plan_nodes, expr_nodes = count_nodes(rec.optimized_plan)
        analyze(rec)
        engine_ms = _best_ms(lambda rec=rec: analyze(rec), 7)
        columns = sqlglot.parse_one(sql, dialect="spark").named_selects
        sg_ms: float | None = None
        sg_err: str | None = None
        try:
            def run_sqlglot(columns: list[str] = columns, sql: str = sql) -> None:
                for col in columns:
                    lineage(col, sql, schema=schema, dialect="spark")

            run_sqlglot()
            sg_ms = _best_ms(run_sqlglot, 3)
        except Exception as exc:  # noqa: BLE001 - report, do not hide, a query sqlglot cannot trace
            sg_err = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
        sg_all: float | None = None
        try:
            lineage(None, sql, schema=schema, dialect="spark")  # type: ignore[arg-type]
            sg_all = _best_ms(lambda sql=sql: lineage(None, sql, schema=schema, dialect="spark"), 3)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - older sqlglot: no all-columns mode
            sg_all = None
        p = TpchPoint(q, plan_nodes + expr_nodes, len(columns), engine_ms, sg_ms, sg_err, sg_all)
        log(f"  Q{q:<3} nodes={p.nodes:>5} cols={p.columns:<3} engine {engine_ms:8.2f} ms   sqlglot "
            + (f"{sg_ms:8.2f} ms  ratio {engine_ms / sg_ms:5.2f}" if sg_ms else f"failed: {sg_err}"))
        points.append(p)
    shutil.rmtree(out_root, ignore_errors=True)
    return points


def run_cost(spark: SparkSession, inputs: dict[str, str], work: Path, analyze: Callable[[Any], Any],
             log: Callable[[str], None] = print) -> CostResults:
    import sqlglot

    res = CostResults(sqlglot_version=sqlglot.__version__)
    log("cost: generated plans")
    res.points = measure_generated(spark, inputs, work / "out", analyze, log=log)
    log("cost: TPC-H, engine vs sqlglot.lineage")
    try:
        res.tpch = measure_tpch(spark, work, analyze, log=log)
    except Exception as exc:  # noqa: BLE001 - the report says why TPC-H is missing
        res.tpch_error = f"{type(exc).__name__}: {exc}"
        log(f"  TPC-H skipped: {res.tpch_error}")
    return res


def main() -> int:
    from benchmarks.lineage.harness import load_analyzer, make_spark, prepare

    analyze, why = load_analyzer()
    if analyze is None:
        print(why, file=sys.stderr)
        return 2
    work = Path(__file__).resolve().parent / "data" / "work"
    spark = make_spark(work, "lineage-cost")
    ctx = prepare(spark, work)
    run_cost(spark, ctx.inputs, work, analyze)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
