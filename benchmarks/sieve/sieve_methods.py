"""The four ways to answer a query that the benchmark compares, all ending in the same Spark action.

* ``full``   -- ``spark.read.parquet(root).where(pred)``: Spark lists the table, opens every
  footer and skips row groups by their statistics (Parquet filter push-down).
* ``minmax`` -- per-file min/max read once from the Parquet footers with pyarrow; a query reads
  only the files whose [min, max] meets the predicate (what Delta/Iceberg/Hudi column stats do).
* ``sieve``  -- :func:`airflow_provider_lineage.sieve.read`, end to end: open the index, check it is
  fresh against a listing, look up candidates, read them with Spark.
* ``exact``  -- the minimal file set, known from the data (the ideal no index can beat).

Every method produces a DataFrame and runs ``agg(count(*), sum(l_orderkey * 8 + l_linenumber))``
on it, so all of them pay the same Spark action; an empty file set gives an empty DataFrame with
the table's schema (as Sieve's ``read`` does), not a shortcut.
"""
from __future__ import annotations

import datetime as dt
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from sieve_data import to_date
from sieve_queries import Query

METHODS = ("full", "minmax", "sieve", "exact")
LISTING_THRESHOLD = "100000"


def spark_session(driver_memory: str = "4g") -> Any:
    """One ``local[2]`` session for the whole run (small shuffle, no UI, no progress bars)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("sieve-benchmark")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        # Spark lists more than 32 explicit paths with a distributed job (~1 s here); a pruned read
        # passes its files as explicit paths, so list them on the driver like one folder is.
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", LISTING_THRESHOLD)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def literal(column: str, k: int) -> Any:
    return to_date(k) if column == "l_shipdate" else int(k)


@dataclass
class Outcome:
    seconds: float
    rows: int
    checksum: int
    files: int
    bytes: int
    lookup_seconds: float = 0.0
    paths: list[str] | None = None  # Sieve's candidates (for the superset check)


class Runner:
    """Runs one query by one method and times it end to end (wall clock around the call)."""

    def __init__(self, spark: Any, root: str, column: str, files: list[str], sizes: list[int],
                 index_path: str | None) -> None:
        from pyspark.sql import functions as F

        self.F = F
        self.spark = spark
        self.root = root
        self.column = column
        self.files = files
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.index_path = index_path
        self.schema = spark.read.parquet(files[0]).schema
        self.mins = self.maxs = None

    # ---- min/max from footers -------------------------------------------------------------
    def load_minmax(self) -> float:
        """Per-file min/max of the key column from the Parquet footers (pyarrow); returns seconds."""
        t0 = time.perf_counter()
        mins, maxs = [], []
        for f in self.files:
            md = pq.ParquetFile(f).metadata
            ci = md.schema.to_arrow_schema().get_field_index(self.column)
            lo = hi = None
            for r in range(md.num_row_groups):
                st = md.row_group(r).column(ci).statistics
                if st is None or not st.has_min_max:
                    lo, hi = -2**62, 2**62  # no statistics: the file can never be skipped
                    break
                a, b = st.min, st.max
                if isinstance(a, dt.date):
                    a, b = (a - dt.date(1970, 1, 1)).days, (b - dt.date(1970, 1, 1)).days
                lo = a if lo is None else min(lo, a)
                hi = b if hi is None else max(hi, b)
            mins.append(lo)
            maxs.append(hi)
        self.mins, self.maxs = np.asarray(mins, dtype=np.int64), np.asarray(maxs, dtype=np.int64)
        return time.perf_counter() - t0

    def minmax_spark_seconds(self) -> float:
        """The Spark way to compute the same per-file min/max (scans the key column).

        The same query runs once untimed on the smallest file first, so neither this nor the Sieve
        build after it pays the session's first-job costs (code generation, JIT) in its time.
        """
        F = self.F
        small = self.files[int(np.argmin(self.sizes))]
        (self.spark.read.parquet(small).groupBy(F.input_file_name())
         .agg(F.min(self.column), F.max(self.column)).collect())
        t0 = time.perf_counter()
        (self.spark.read.parquet(self.root).groupBy(F.input_file_name())
         .agg(F.min(self.column), F.max(self.column)).collect())
        return time.perf_counter() - t0

    # ---- DataFrames ----------------------------------------------------------------------
    def condition(self, q: Query) -> Any:
        c = self.F.col(self.column)
        lo, hi = literal(self.column, q.lo), literal(self.column, q.hi)
        return c == self.F.lit(lo) if q.lo == q.hi else (c >= self.F.lit(lo)) & (c <= self.F.lit(hi))

    def predicate(self, q: Query) -> Any:
        from airflow_provider_lineage.sieve import Eq, Range

        lo, hi = literal(self.column, q.lo), literal(self.column, q.hi)
        return Eq(lo) if q.lo == q.hi else Range(lo, hi)

    def _files_df(self, paths: list[str], q: Query) -> Any:
        if not paths:
            return self.spark.createDataFrame([], self.schema)
        return self.spark.read.schema(self.schema).parquet(*paths).where(self.condition(q))

    def _collect(self, df: Any) -> tuple[int, int]:
        F = self.F
        row = df.agg(F.count(F.lit(1)).alias("n"),
                     F.sum(F.col("l_orderkey") * 8 + F.col("l_linenumber")).alias("s")).collect()[0]
        return int(row["n"]), int(row["s"] or 0)

    def run(self, method: str, q: Query, exact: np.ndarray) -> Outcome:
        if method == "full":
            t0 = time.perf_counter()
            n, s = self._collect(self.spark.read.schema(self.schema).parquet(self.root).where(self.condition(q)))
            return Outcome(time.perf_counter() - t0, n, s, len(self.files), int(self.sizes.sum()))
        if method == "minmax":
            t0 = time.perf_counter()
            ids = np.flatnonzero((self.mins <= q.hi) & (self.maxs >= q.lo))
            n, s = self._collect(self._files_df([self.files[i] for i in ids], q))
            return Outcome(time.perf_counter() - t0, n, s, len(ids), int(self.sizes[ids].sum()))
        if method == "exact":
            t0 = time.perf_counter()
            n, s = self._collect(self._files_df([self.files[i] for i in exact], q))
            return Outcome(time.perf_counter() - t0, n, s, len(exact), int(self.sizes[exact].sum()))
        if method == "sieve":
            from airflow_provider_lineage.sieve import open_index, read

            pred = self.predicate(q)
            t0 = time.perf_counter()
            cands = open_index(self.root, self.column, index_path=self.index_path).candidates(pred)
            lookup = time.perf_counter() - t0
            t0 = time.perf_counter()
            n, s = self._collect(read(self.spark, self.root, self.column, pred, index_path=self.index_path))
            seconds = time.perf_counter() - t0
            size = sum(os.path.getsize(c) for c in cands)
            return Outcome(seconds, n, s, len(cands), size, lookup, cands)
        raise ValueError(f"unknown method {method!r}; choose from {METHODS}")

    def missing(self, paths: list[str], exact: np.ndarray) -> list[str]:
        """Files of the exact set that ``paths`` lacks (a false negative if not empty)."""
        have = {os.path.abspath(p) for p in paths}
        return [self.files[i] for i in exact if os.path.abspath(self.files[i]) not in have]

    def floor_seconds(self, repeats: int = 5) -> dict[str, float]:
        """Spark's fixed cost per query: an empty DataFrame's aggregate, and one small file's."""
        q = Query("point", 0, 0, "gap", "floor")
        empty, one = [], []
        smallest = int(np.argmin(self.sizes))
        for _ in range(repeats):
            t0 = time.perf_counter()
            self._collect(self._files_df([], q))
            empty.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            self._collect(self._files_df([self.files[smallest]], q))
            one.append(time.perf_counter() - t0)
        return {"empty_df_agg": float(np.median(empty)), "one_file_read": float(np.median(one))}
