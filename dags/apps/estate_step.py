"""``spark-submit estate_step.py SOURCE TARGET STEP``: one step of the estate example chain (tiny).

``scores``: from ``customer_monthly`` (lineage_etl's mart), a score per customer and month;
``flags``: from the scores, a flag per customer.
"""
from __future__ import annotations

import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[2] not in ("scores", "flags"):
        print(__doc__, file=sys.stderr)
        return 2
    source, target, step = argv
    spark = SparkSession.builder.appName(f"estate_{step}").getOrCreate()
    df = spark.read.parquet(source)
    if step == "scores":
        out = df.select("customer_id", "month", F.round(F.col("total_eur") / 100, 1).alias("score"))
    else:
        out = df.where(F.col("score") > 0).select("customer_id", (F.col("score") > 5).alias("high_value"))
    out.coalesce(1).write.mode("overwrite").parquet(target)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
