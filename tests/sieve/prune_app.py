"""A user's PySpark application that knows nothing of Sieve: read a table with a filter, write the result.

``spark-submit launcher.py prune_app.py TABLE OUT``; writes ``OUT/result.json`` (files read, rows).
"""

import json
import sys

from pyspark.sql import SparkSession

table, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.getOrCreate()
df = spark.read.parquet(table).where("k = 17")
files = len(df.inputFiles())
df.write.mode("overwrite").parquet(out + "/selected")
with open(out + "/result.json", "w") as fh:
    json.dump({"files": files, "rows": df.count()}, fh)
spark.stop()
