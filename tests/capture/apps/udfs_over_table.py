"""Test app: Python and pandas UDFs over a Parquet table scan, inside writes, then toPandas.

pyspark 4.2.0 hangs Arrow-optimised Python UDFs over a table scan (workers wait in
``read_single_udf``); this app is what ``tests/test_environment.py`` submits through the launcher,
with a bounded wait, to prove the pinned pyspark/pyspark-client pair does not.
"""
import json
import sys

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

out = sys.argv[1]
spark = (
    SparkSession.builder.appName("udfs_over_table").master("local[2]")
    .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
    .config("spark.sql.warehouse.dir", out + "/wh").getOrCreate()
)
spark.createDataFrame([(1, "ab@x.org"), (2, None), (3, "cd@y.org")], "id long, email string") \
    .write.mode("overwrite").saveAsTable("contacts")


def mask(e):  # type: ignore[no-untyped-def] - plain Python UDF
    return (e.split("@")[0][:2] + "***") if e else None


@F.pandas_udf("long")
def plus_one(s: pd.Series) -> pd.Series:
    return s + 1


arrow_mask = F.udf(mask, "string", useArrow=True)
plain_mask = F.udf(mask, "string", useArrow=False)
table = spark.table("contacts")
table.select("id", arrow_mask("email").alias("m")).write.mode("overwrite").parquet(out + "/arrow_udf")
table.select("id", plain_mask("email").alias("m")).write.mode("overwrite").parquet(out + "/python_udf")
table.select("id", plus_one("id").alias("n")).write.mode("overwrite").saveAsTable("pandas_udf")
spark.conf.set("spark.sql.execution.pythonUDF.arrow.enabled", "true")  # the session-wide switch too
spark.udf.register("mask_sql", mask, "string")
spark.sql("CREATE TABLE sql_udf USING parquet AS SELECT id, mask_sql(email) AS m FROM contacts")
result = {
    "arrow_udf": sorted(map(tuple, spark.read.parquet(out + "/arrow_udf").collect()), key=str),
    "python_udf": sorted(map(tuple, spark.read.parquet(out + "/python_udf").collect()), key=str),
    "pandas_udf": sorted(map(tuple, spark.table("pandas_udf").collect())),
    "sql_udf": sorted(map(tuple, spark.table("sql_udf").collect()), key=str),
    "to_pandas": spark.table("contacts").select(arrow_mask("email").alias("m")).toPandas()["m"].tolist(),
}
with open(out + "/result.json", "w") as fh:
    json.dump(result, fh)
spark.stop()
