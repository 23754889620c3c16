"""Test app (issue 27): write datasets one way, read them another, in one application.

argv[1]: a base folder. Folders written: src (2 part files), wh/names_t (a catalog table), out/* (one per
read). A V2 JDBC catalog ``dcat`` over an in-memory Derby database: CTAS + INSERT of ``app.t5``, read back
through the catalog, JDBC ``dbtable`` and JDBC ``query``; ``app.t6`` written by ``dbtable``, read by the
catalog. Tables read through RDDs (``createDataFrame(df.rdd)``).
"""
import glob
import os
import shutil
import sys

from pyspark.sql import SparkSession

base = sys.argv[1]
shutil.rmtree(os.path.join(base, "wh"), ignore_errors=True)
url = "jdbc:derby:memory:names_app;create=true"
driver = "org.apache.derby.jdbc.EmbeddedDriver"
spark = (
    SparkSession.builder.master("local[2]")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.sql.warehouse.dir", os.path.join(base, "wh"))
    .config("spark.sql.catalog.dcat", "org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog")
    .config("spark.sql.catalog.dcat.url", url)
    .config("spark.sql.catalog.dcat.driver", driver)
    .getOrCreate()
)


def out(name: str) -> str:
    return os.path.join(base, "out", name)


src = os.path.join(base, "src")
orders = spark.range(8).selectExpr("id", "CAST(id * 1.5 AS DOUBLE) AS amount")
orders.repartition(2).write.mode("overwrite").parquet(src)
parts = sorted(glob.glob(os.path.join(src, "part-*.parquet")))
spark.read.parquet(*parts).write.mode("overwrite").parquet(out("list"))
spark.read.parquet(os.path.join(src, "*.parquet")).write.mode("overwrite").parquet(out("glob"))

spark.read.parquet(src).write.saveAsTable("names_t")
spark.table("names_t").write.mode("overwrite").parquet(out("by_name"))
spark.read.parquet(os.path.join(base, "wh", "names_t")).write.mode("overwrite").parquet(out("by_folder"))
t = spark.table("names_t")
spark.createDataFrame(t.rdd, t.schema).write.mode("overwrite").parquet(out("table_rdd"))

spark.sql("CREATE NAMESPACE IF NOT EXISTS dcat.app")
spark.read.parquet(src).createOrReplaceTempView("src")
spark.sql("CREATE TABLE dcat.app.t5 AS SELECT id, amount FROM src")
spark.sql("INSERT INTO dcat.app.t5 SELECT id + 100, amount FROM src")
spark.table("dcat.app.t5").write.mode("overwrite").parquet(out("catalog"))
opts = {"url": url, "driver": driver}
spark.read.format("jdbc").options(dbtable='"app"."t5"', **opts).load().write.mode("overwrite").parquet(out("dbtable"))
(spark.read.format("jdbc").options(query='SELECT "id", "amount" * 2 AS "a2" FROM "app"."t5"', **opts).load()
 .write.mode("overwrite").parquet(out("query")))
spark.read.parquet(src).write.format("jdbc").options(dbtable='"app"."t6"', **opts).mode("overwrite").save()
spark.table("dcat.app.t6").write.mode("overwrite").parquet(out("catalog_t6"))
spark.stop()
