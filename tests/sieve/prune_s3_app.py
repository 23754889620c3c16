"""A Spark driver reading an ``s3a://`` table (moto) with and without ``sieve.spark.enable``.

``python prune_s3_app.py SPEC.json OUT.json``: SPEC holds ``conf`` (Spark settings: the S3A jars and endpoint),
``table`` and ``conditions``; OUT gets, per condition, the files each read lists and the rows each returns.
(Its own process: the S3A jars must be on the driver's classpath when its JVM starts.)
"""

import json
import sys

from pyspark.sql import SparkSession

from airflow_provider_lineage.sieve import spark as sieve_spark
from airflow_provider_lineage.sieve.spark import prune

spec = json.load(open(sys.argv[1]))  # noqa: SIM115
builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
for key, value in spec["conf"].items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
out = {}
for condition in spec["conditions"]:
    sieve_spark.enable(spark)
    df = spark.read.parquet(spec["table"]).where(condition)
    pruned = {"files": sorted(df.inputFiles()), "rows": sorted(map(repr, map(tuple, df.collect()))),
              "narrowings": prune.narrowings(df)}
    sieve_spark.disable(spark)
    df = spark.read.parquet(spec["table"]).where(condition)
    plain = {"files": sorted(df.inputFiles()), "rows": sorted(map(repr, map(tuple, df.collect())))}
    out[condition] = {"pruned": pruned, "plain": plain}
with open(sys.argv[2], "w") as fh:
    json.dump(out, fh)
spark.stop()
