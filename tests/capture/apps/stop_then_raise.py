"""Test app: one write, spark.stop(), then an uncaught exception."""
import sys

from pyspark.sql import SparkSession

out = sys.argv[1]
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
spark.range(4).selectExpr("id", "id * 3 AS t").write.mode("overwrite").parquet(out + "/stopped_out")
spark.stop()
raise ValueError("boom from the user application")
