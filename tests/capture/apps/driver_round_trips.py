"""Test app (issue 46): values that pass through the driver, written back; run by the launcher (spark-submit)."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

out = sys.argv[1]
spark = (
    SparkSession.builder.appName("driver_round_trips").master("local[1]")
    .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false").getOrCreate()
)
spark.range(3).selectExpr("id AS cust_id", "CONCAT('n', id) AS name", "CONCAT('e', id, '@x.org') AS email") \
    .write.mode("overwrite").parquet(out + "/customers")
customers = spark.read.parquet(out + "/customers")
first = customers.orderBy("cust_id").select("email").first()  # a value returned to the driver
spark.range(2).select("id", F.lit(first["email"]).alias("contact"), F.lit("active").alias("status")) \
    .write.mode("overwrite").parquet(out + "/with_literal")
rows = customers.select("cust_id", "email").collect()
spark.createDataFrame(rows).write.mode("overwrite").parquet(out + "/from_rows")
