"""Scenario C2/C3, step 1 (load): append one landed day to the warehouse tables.

``spark-submit etl_load.py DATA_DIR DAY``: reads ``DATA_DIR/landing/{transactions,customers}/day=DAY``,
types and cleans the rows, and appends them to ``DATA_DIR/warehouse/transactions`` (two files per
day) and ``DATA_DIR/warehouse/customers``. Plain PySpark: it knows nothing about lineage or indexes.
"""
from __future__ import annotations

import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    data_dir, day = argv
    spark = (SparkSession.builder.appName("etl_load").config("spark.sql.session.timeZone", "UTC").getOrCreate())
    landing, warehouse = f"{data_dir}/landing", f"{data_dir}/warehouse"
    txn = spark.read.parquet(f"{landing}/transactions/day={day}")
    (txn.where(F.col("status") != "CANCELLED")
        .select("txn_id", "customer_id", "txn_date", F.round(F.col("amount"), 2).alias("amount"),
                F.upper(F.col("currency")).alias("currency"), "status")
        .repartition(2, "txn_id")
        .write.mode("append").parquet(f"{warehouse}/transactions"))
    cust = spark.read.parquet(f"{landing}/customers/day={day}")
    (cust.select("customer_id", F.trim(F.col("name")).alias("name"), "segment", "country", "signup_date")
        .coalesce(1)
        .write.mode("append").parquet(f"{warehouse}/customers"))
    print(f"etl_load: appended {day} to {warehouse}/transactions and {warehouse}/customers")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
