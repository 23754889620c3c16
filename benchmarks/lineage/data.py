"""Tiny, deterministic input datasets for the lineage scenarios (tens of rows, 10-20 columns).

Every dataset is a Parquet folder named after the dataset (``<root>/transactions`` ...), so the
engine's dataset identity (an absolute path) ends in the name the references use.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CHANNELS = ["online", "branch", "atm", "mobile"]
CURRENCIES = ["EUR", "USD", "GBP"]
STATUSES = ["BOOKED", "BOOKED", "BOOKED", "PENDING", "REJECTED"]
COUNTRIES = ["DE", "FR", "NL", "US"]
SEGMENTS = ["RETAIL", "VIP", "SME"]
REGIONS = ["NORTH", "SOUTH", "EAST"]

TRANSACTIONS_DDL = (
    "txn_id int, customer_id int, account_id int, txn_date date, txn_ts timestamp, amount double, "
    "fee double, tax_rate double, currency string, channel string, merchant_id int, mcc string, "
    "status string, country string, is_reversal boolean"
)
CUSTOMERS_DDL = (
    "customer_id int, first_name string, last_name string, email string, phone string, birth_date date, "
    "segment string, region string, country string, signup_date date, risk_score double, is_active boolean"
)
FX_DDL = "currency string, rate_to_eur double, rate_date date"
BASKETS_DDL = (
    "basket_id int, customer_id int, skus array<string>, "
    "lines array<struct<sku:string,qty:int,price:double>>"
)
MERCHANTS_DDL = "merchant_id int, merchant_name string, mcc string, city string"


def _transactions() -> list[tuple]:
    rows = []
    base = dt.date(2024, 1, 1)
    for i in range(1, 41):
        day = base + dt.timedelta(days=(i * 7) % 200)
        rows.append(
            (
                i,
                100 + i % 12,
                1000 + i % 15,
                day,
                dt.datetime.combine(day, dt.time(hour=(i * 5) % 24, minute=i % 60)),
                round(10.0 + i * 3.7, 2),
                round(0.5 + (i % 4) * 0.25, 2),
                [0.0, 0.07, 0.19][i % 3],
                CURRENCIES[i % 3],
                CHANNELS[i % 4],
                500 + i % 6,
                ["5411", "5812", "4111"][i % 3],
                STATUSES[i % 5],
                COUNTRIES[i % 4],
                i % 9 == 0,
            )
        )
    return rows


def _customers() -> list[tuple]:
    rows = []
    for i in range(14):
        cid = 100 + i
        rows.append(
            (
                cid,
                f"first{i}",
                f"last{i}",
                f"user{i}@example.com",
                f"+49-555-{i:04d}",
                dt.date(1960 + i * 3, 1 + i % 12, 1 + i % 28),
                SEGMENTS[i % 3],
                REGIONS[i % 3],
                COUNTRIES[(i + 1) % 4],
                dt.date(2020, 1 + i % 12, 1),
                round(0.1 + i * 0.05, 2),
                i % 5 != 0,
            )
        )
    return rows


def _fx() -> list[tuple]:
    return [("EUR", 1.0, dt.date(2024, 1, 1)), ("USD", 0.92, dt.date(2024, 1, 1)), ("GBP", 1.17, dt.date(2024, 1, 1))]


def _baskets() -> list[tuple]:
    rows = []
    for i in range(1, 13):
        skus = [f"A{i}", f"B{i % 3}"] if i % 4 else []
        lines = [(s, 1 + j, 2.5 * (j + 1)) for j, s in enumerate(skus)]
        rows.append((i, 100 + i % 12, skus, lines))
    return rows


def _merchants() -> list[tuple]:
    return [
        (500 + i, f"merchant{i}", ["5411", "5812", "4111"][i % 3], ["Berlin", "Paris", "Amsterdam"][i % 3])
        for i in range(6)
    ]


DATASETS: dict[str, tuple[str, callable]] = {
    "transactions": (TRANSACTIONS_DDL, _transactions),
    "customers": (CUSTOMERS_DDL, _customers),
    "fx_rates": (FX_DDL, _fx),
    "baskets": (BASKETS_DDL, _baskets),
    "merchants": (MERCHANTS_DDL, _merchants),
}


def write_inputs(spark: SparkSession, root: Path) -> dict[str, str]:
    """Write every input dataset as Parquet under ``root`` and return ``{name: path}``."""
    paths: dict[str, str] = {}
    for name, (ddl, rows) in DATASETS.items():
        path = str(root / name)
        spark.createDataFrame(rows(), ddl).coalesce(1).write.mode("overwrite").parquet(path)
        paths[name] = path
    return paths


def register_views(spark: SparkSession, paths: dict[str, str]) -> None:
    """Register each input dataset as a temp view of the same name (for the SQL scenarios)."""
    for name, path in paths.items():
        spark.read.parquet(path).createOrReplaceTempView(name)
