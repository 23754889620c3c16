"""One dataset, one name, on real Spark (local[2], the shared session): every reader names a dataset as
its writer published it, whichever API each used (list/glob of files vs folder, table name vs location,
V2 JDBC catalog CTAS/append/read vs JDBC options vs JDBC query, a table read through an RDD).

One test, many writes: Spark sessions are the expensive part here (tests/README: CI budget).
"""
from __future__ import annotations

import glob
import os

from airflow_provider_lineage.lineage.engine import analyze_record
from airflow_provider_lineage.lineage.events import analyze
from airflow_provider_lineage.lineage.naming import identity_problem

DERBY = "jdbc:derby:memory:names27;create=true"
DRIVER = "org.apache.derby.jdbc.EmbeddedDriver"


def _in(rec):
    return [ref.key for ref, _ in analyze_record(rec).inputs]


def _out(rec):
    return analyze_record(rec).output.key


def test_readers_name_datasets_as_their_writers(env, spark):
    # -- files: folder written, read as a list of its part files and as a glob ---------------------
    src = env.out("src")
    w = env.capture(lambda: spark.read.parquet(env.orders).repartition(2).write.parquet(src))
    published = _out(w)
    parts = sorted(glob.glob(os.path.join(src, "part-*.parquet")))
    assert len(parts) == 2
    assert _in(env.write_parquet(spark.read.parquet(*parts))) == [published]
    assert _in(env.write_parquet(spark.read.parquet(os.path.join(src, "*.parquet")))) == [published]

    # -- catalog table vs its folder --------------------------------------------------------------------
    spark.sql("DROP TABLE IF EXISTS names27_t")
    t = env.capture(lambda: spark.read.parquet(env.orders).write.saveAsTable("names27_t"))
    table_ds = analyze_record(t).output
    assert table_ds.table == "spark_catalog.default.names27_t"
    by_name = env.write_parquet(spark.table("names27_t"))
    assert _in(by_name) == [table_ds.key]
    loc = spark.sql("DESCRIBE TABLE EXTENDED names27_t").where("col_name = 'Location'").collect()[0].data_type
    assert _in(env.write_parquet(spark.read.parquet(loc))) == [table_ds.key]

    # -- a table and a folder through an RDD (LogicalRDDVisitor) ----------------------------------------
    df = spark.table("names27_t")
    assert _in(env.write_parquet(spark.createDataFrame(df.rdd, df.schema))) == [table_ds.key]
    df = spark.read.parquet(src)
    assert _in(env.write_parquet(spark.createDataFrame(df.rdd, df.schema))) == [published]

    # -- V2 JDBC catalog: CTAS, append, read; the same table through JDBC options and a JDBC query ----
    spark.conf.set("spark.sql.catalog.dcat27", "org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog")
    spark.conf.set("spark.sql.catalog.dcat27.url", DERBY)
    spark.conf.set("spark.sql.catalog.dcat27.driver", DRIVER)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS dcat27.app")
    spark.sql("DROP TABLE IF EXISTS dcat27.app.t5")
    ctas = env.capture(lambda: spark.sql("CREATE TABLE dcat27.app.t5 AS SELECT id, amount FROM orders"))
    append = env.capture(lambda: spark.sql("INSERT INTO dcat27.app.t5 SELECT id + 100, amount FROM orders"))
    jdbc_ds = ("derby:memory:names27", "app.t5")
    overwrite = env.capture(lambda: spark.sql("INSERT OVERWRITE dcat27.app.t5 SELECT id, amount FROM orders"))
    spark.sql("DROP TABLE IF EXISTS dcat27.app.t7")
    rtas = env.capture(lambda: spark.sql("CREATE OR REPLACE TABLE dcat27.app.t7 AS SELECT id FROM orders"))
    assert overwrite.command in ("OverwriteByExpression", "OverwritePartitionsDynamic"), overwrite.command
    # RTAS on a non-staging catalog runs its write as an inner OverwriteByExpression/AppendData: one record
    assert rtas.command in ("ReplaceTableAsSelect", "OverwriteByExpression", "AppendData"), rtas.command
    assert _out(ctas) == jdbc_ds and _out(append) == jdbc_ds and _out(overwrite) == jdbc_ds
    assert _out(rtas) == ("derby:memory:names27", "app.t7")
    assert analyze_record(ctas).output.table is None  # JdbcHandler emits no symlink
    assert _in(env.write_parquet(spark.table("dcat27.app.t5"))) == [jdbc_ds]
    opts = {"url": DERBY, "driver": DRIVER}
    by_options = spark.read.format("jdbc").options(dbtable='"app"."t5"', **opts).load()
    assert _in(env.write_parquet(by_options)) == [jdbc_ds]
    by_query = (
        spark.read.format("jdbc").options(query='SELECT "id", "amount" * 2 AS "a2" FROM "app"."t5"', **opts).load()
    )
    q = analyze_record(env.write_parquet(by_query))
    assert [ref.key for ref, _ in q.inputs] == [jdbc_ds]
    assert {(e.dataset.name, e.field) for e in q.columns["a2"]} == {("app.t5", "amount")}

    # -- dbtable write vs catalog read ------------------------------------------------------------------
    wr = env.capture(lambda: spark.read.parquet(env.orders).select("id").write.format("jdbc")
                     .options(dbtable='"app"."t6"', **opts).mode("overwrite").save())
    assert _out(wr) == ("derby:memory:names27", "app.t6")
    assert _in(env.write_parquet(spark.table("dcat27.app.t6"))) == [("derby:memory:names27", "app.t6")]

    # -- every identity is a name, never plan text; the record carries the driver's environment ------
    for rec in (w, t, ctas, append, wr):
        lin = analyze_record(rec)
        for ref in [lin.output, *(r for r, _ in lin.inputs)]:
            assert identity_problem(ref.namespace, ref.name) is None, ref
        assert "default_fs" in rec.environment
    assert not [p for p in analyze([ctas, append]).problems if "left out" in p.message]
