"""Fixtures for the lineage tests: small source datasets and a capture helper on the shared Spark session.

Every test feeds the engine a REAL plan: it performs a write on local Spark inside one long-lived
``CaptureSession`` and analyses the record the listener produced.
"""
from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import PySparkException

from airflow_provider_lineage.capture.listener import CaptureSession, drain
from airflow_provider_lineage.lineage.record import CaptureRecord, collapse_nested


@dataclass
class LineageEnv:
    """Source data (``orders`` and ``customers`` parquet folders, also temp views) and a capture helper."""

    spark: Any
    base: Path
    session: CaptureSession
    orders: str
    customers: str
    _n: Iterator[int]

    def out(self, name: str = "out") -> str:
        """A fresh output folder."""
        return str(self.base / "out" / f"{name}_{next(self._n)}")

    def capture(self, write: Callable[[], Any]) -> CaptureRecord:
        """Run ``write`` (one logical write), return its collapsed capture record."""
        start = len(self.session.records)
        write()
        drain(self.spark)
        recs = collapse_nested(self.session.records[start:])
        assert recs, "the write produced no capture record"
        return recs[-1]

    def write_parquet(self, df: Any, name: str = "out", mode: str = "overwrite") -> CaptureRecord:
        return self.capture(lambda: df.write.mode(mode).parquet(self.out(name)))

    def plan_only(self, df: Any) -> CaptureRecord:
        """Capture the write plan without running the query (the write fails fast: target exists).

        Used for plans whose execution is slow here (Python UDF workers); the failed write's record
        carries the same optimized plan.
        """
        target = self.base / "exists"

        def w() -> None:
            with contextlib.suppress(PySparkException):
                df.write.mode("errorifexists").parquet(str(target))

        rec = self.capture(w)
        assert rec.plans or rec.optimized_plan, rec.capture_error
        return rec


@pytest.fixture(scope="session")
def env(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LineageEnv]:
    base = tmp_path_factory.mktemp("lineage")
    (base / "exists").mkdir()
    orders, customers = str(base / "orders"), str(base / "customers")
    spark.range(12).selectExpr(
        "id", "id % 3 AS cust_id", "CAST(id * 1.5 AS DOUBLE) AS amount", "CONCAT('o', id) AS note",
        "DATE_ADD(DATE'2024-01-01', CAST(id AS INT)) AS day", "ARRAY(id, id + 1) AS tags",
    ).write.parquet(orders)
    spark.range(3).selectExpr(
        "id AS cust_id", "CONCAT('c', id) AS name", "CONCAT('x', id, '@m') AS email"
    ).write.parquet(customers)
    spark.read.parquet(orders).createOrReplaceTempView("orders")
    spark.read.parquet(customers).createOrReplaceTempView("customers")
    with CaptureSession(spark) as session:
        yield LineageEnv(spark, base, session, orders, customers, itertools.count())


@pytest.fixture(autouse=True)
def _lineage_views(request: pytest.FixtureRequest) -> None:
    """Before each test that uses ``env``: its ``orders`` and ``customers`` temp views, (re)registered.

    Temp views live in the shared Spark session: another module on the same worker (the lineage
    benchmark's smoke test registers its own ``customers``) may have replaced them since.
    """
    if "env" not in request.fixturenames:
        return
    lin = request.getfixturevalue("env")
    if not isinstance(lin, LineageEnv):  # a test's own parameter named env
        return
    lin.spark.read.parquet(lin.orders).createOrReplaceTempView("orders")
    lin.spark.read.parquet(lin.customers).createOrReplaceTempView("customers")
    # each test is its own application as far as driver round trips go: forget what earlier tests collected
    drain(lin.spark)
    if lin.session.listener is not None:
        lin.session.listener.driver.clear()
