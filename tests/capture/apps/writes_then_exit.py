"""Test app: DataFrame + SQL writes, one failed write (caught), no spark.stop(); exit code from argv."""
import json
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

out = sys.argv[1]
with open(out + "/argv.json", "w") as fh:
    json.dump({"argv": sys.argv, "name": __name__, "path0": sys.path[0]}, fh)
spark = (
    SparkSession.builder.appName("writes_then_exit").master("local[1]")
    .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
    .config("spark.sql.warehouse.dir", out + "/wh").getOrCreate()
)
spark.range(6).withColumn("v", F.col("id") * 2).write.mode("overwrite").parquet(out + "/df_out")
spark.read.parquet(out + "/df_out").createOrReplaceTempView("src")
spark.sql(f"INSERT OVERWRITE DIRECTORY '{out}/sql_out' USING parquet SELECT id, v + 1 AS w FROM src WHERE id > 2")
try:
    spark.range(3).write.mode("errorifexists").parquet(out + "/df_out")  # exists: the write fails
except Exception as exc:  # noqa: BLE001 - the test expects this write to fail; any error will do
    print("expected failure:", type(exc).__name__)
code = int(sys.argv[2]) if len(sys.argv) > 2 else 0
if code:
    sys.exit(code)
