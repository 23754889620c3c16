"""Test app: a DataFrame write and a SQL write on whatever master spark-submit names (no master set here)."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

out = sys.argv[1]
spark = SparkSession.builder.appName("writes_on_any_master").getOrCreate()
spark.range(6).withColumn("v", F.col("id") * 2).write.mode("overwrite").parquet(out + "/df_out")
spark.read.parquet(out + "/df_out").createOrReplaceTempView("src")
spark.sql(f"INSERT OVERWRITE DIRECTORY '{out}/sql_out' USING parquet SELECT id, v + 1 AS w FROM src WHERE id > 2")
print("executors:", spark.sparkContext.getConf().get("spark.master"))
spark.stop()
