"""A Hive-format table (``CREATE TABLE ... STORED AS PARQUET``, embedded Derby metastore) read through SQL with and
without ``sieve.spark.enable``; one index under the table's ``_sieve/``, one at a custom ``index_path`` named by
``spark.airflow_lineage.sieveIndexPaths``.

``python prune_hive_app.py BASE OUT.json`` (its own process: Hive support is chosen when the JVM starts).
"""

import json
import os
import sys

from pyspark.sql import SparkSession

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve import spark as sieve_spark
from airflow_provider_lineage.sieve.spark import prune

base, out = sys.argv[1], sys.argv[2]
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.warehouse.dir", f"{base}/warehouse")
         .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={base}")
         .enableHiveSupport().getOrCreate())
spark.sql("CREATE TABLE sieve_hive_sales (k BIGINT, v BIGINT) STORED AS PARQUET")
spark.range(0, 600, 1, 6).selectExpr("id AS k", "id DIV 100 AS v").repartitionByRange(6, "k") \
    .sortWithinPartitions("k").createOrReplaceTempView("src")  # six files of contiguous keys
spark.sql("INSERT INTO sieve_hive_sales SELECT k, v FROM src")
desc = {r[0]: r[1] for r in spark.sql("DESCRIBE FORMATTED sieve_hive_sales").collect()}
root = desc["Location"].removeprefix("file:")
S.build(None, root, "k")
custom = f"{base}/indexes/sieve_hive_sales/v"
S.build(None, root, "v", index_path=custom)
result = {"provider": desc.get("Provider"), "serde": desc.get("Serde Library"), "root": root, "cases": {}}
queries = {"k IN (5, 550)": ("k", S.In([5, 550]), None),
           "v = 3": ("v", S.Eq(3), custom)}
for condition, (column, pred, index_path) in queries.items():
    sql = f"SELECT k, v FROM sieve_hive_sales WHERE {condition}"
    spark.conf.set(prune.INDEX_PATHS_CONF, json.dumps({"sieve_hive_sales": {"v": custom}}))
    sieve_spark.enable(spark)
    df = spark.sql(sql)
    pruned = {"files": sorted(os.path.normpath(p.removeprefix("file:")) for p in df.inputFiles()),
              "rows": sorted(map(tuple, df.collect())), "narrowings": prune.narrowings(df),
              "plan": df._jdf.queryExecution().optimizedPlan().toString()[:2000]}
    sieve_spark.disable(spark)
    df = spark.sql(sql)
    plain = {"files": len(df.inputFiles()), "rows": sorted(map(tuple, df.collect()))}
    want = sorted(os.path.normpath(p) for p in S.open_index(root, column, index_path=index_path).candidates(pred))
    result["cases"][condition] = {"pruned": pruned, "plain": plain, "candidates": want}
with open(out, "w") as fh:
    json.dump(result, fh)
spark.stop()
