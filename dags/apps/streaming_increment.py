"""An incremental load as Structured Streaming run to completion: every new file of the transactions folder
since the last run, booked ones converted to EUR, appended to the mart. ``trigger(availableNow=True)``: the query reads
what is there now (in micro-batches of at most two files) and stops, so Airflow schedules it like a batch
job; the
checkpoint remembers what was read.

Usage: streaming_increment.py TRANSACTIONS_DIR MART_DIR CHECKPOINT_DIR
"""
from __future__ import annotations

import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main(transactions: str, mart: str, checkpoint: str) -> None:
    spark = SparkSession.builder.appName("streaming_increment").getOrCreate()
    schema = spark.read.parquet(transactions).schema  # a file stream needs its schema up front
    increments = (
        spark.readStream.schema(schema).option("maxFilesPerTrigger", 2).parquet(transactions)
        .where(F.col("status") == "BOOKED")
        .select("txn_id", "customer_id", "txn_date",
                F.round(F.col("amount") * F.col("fx_rate"), 2).alias("amount_eur"),
                F.sha2(F.col("account_id").cast("string"), 256).alias("account_hash"))
    )
    query = (increments.writeStream.format("parquet").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start(mart))
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
