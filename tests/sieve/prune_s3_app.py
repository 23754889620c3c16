"""A Spark driver reading an ``s3a://`` table (moto) with and without ``sieve.spark.enable``.

``python prune_s3_app.py SPEC.json OUT.json``: SPEC holds ``conf`` (Spark settings: the S3A jars and endpoint),
``table`` and ``conditions``; OUT gets, per condition, the files each read lists and the rows each returns. With
``quiet`` (``[table, condition]`` pairs none of whose columns has an index folder), OUT's ``quiet`` counts the Python
side's decisions they asked for; with ``later`` (``{"table", "condition", "build", "column", "wait"}``) OUT's ``later``
gives the calls and narrowings of the condition before and after an index is built for the table (``build``).
(Its own process: the S3A jars must be on the driver's classpath when its JVM starts.)
"""

import json
import sys
import time

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
calls = []
decide = prune.decide


def counted(req):
    calls.append(req)
    return decide(req)


prune.decide = counted
sieve_spark.enable(spark)
out["quiet"] = []
for table, condition in spec.get("quiet", []):
    del calls[:]
    df = spark.read.parquet(table).where(condition)
    rows = len(df.collect())  # plans (and so runs the rule) first
    out["quiet"].append({"condition": condition, "calls": len(calls), "rows": rows})
later = spec.get("later")
if later:
    out["later"] = []
    for step in ("before", "after"):
        if step == "after":
            from airflow_provider_lineage import sieve as S

            S.build(None, later["build"], later["column"])
            time.sleep(later["wait"])  # the rule's per-root memory of "no index here" expires
        del calls[:]
        df = spark.read.parquet(later["table"]).where(later["condition"])
        narrowings, rows = prune.narrowings(df), len(df.collect())
        out["later"].append({"calls": len(calls), "narrowings": narrowings, "rows": rows})
sieve_spark.disable(spark)
with open(sys.argv[2], "w") as fh:
    json.dump(out, fh)
spark.stop()
