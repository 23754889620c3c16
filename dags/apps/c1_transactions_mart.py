"""Scenario C1: one transactions table -> filter by period -> projection + computed fields -> mart.

``spark-submit c1_transactions_mart.py TRANSACTIONS_DIR MART_DIR PERIOD_START PERIOD_END``
(dates as ``YYYY-MM-DD``, inclusive). Plain PySpark: it knows nothing about lineage.
"""
from __future__ import annotations

import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def build_mart(spark: SparkSession, transactions: str, start: str, end: str):
    txn = spark.read.parquet(transactions)
    period = txn.where(
        (F.col("txn_date") >= F.lit(start).cast("date"))
        & (F.col("txn_date") <= F.lit(end).cast("date"))
        & (F.col("status") == "BOOKED")
    )
    return period.select(
        F.col("txn_id"),
        F.col("customer_id"),
        F.sha2(F.col("account_id").cast("string"), 256).alias("account_hash"),
        F.col("txn_date"),
        F.date_format("txn_date", "yyyy-MM").alias("txn_month"),
        F.col("channel"),
        F.round(F.col("amount") * F.col("fx_rate"), 2).alias("amount_eur"),
        F.round((F.col("amount") - F.col("fee")) * F.col("fx_rate"), 2).alias("net_amount_eur"),
        (F.col("country") != "NL").alias("is_cross_border"),
        F.when(F.col("amount") >= 500, "large").otherwise("regular").alias("size_band"),
    )


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    transactions, mart, start, end = argv
    spark = (
        SparkSession.builder.appName("c1_transactions_mart")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    build_mart(spark, transactions, start, end).write.mode("overwrite").parquet(mart)
    print(f"c1_transactions_mart: wrote {spark.read.parquet(mart).count()} rows to {mart}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
