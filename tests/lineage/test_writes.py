"""Write commands on real plans: file writes, tables (saveAsTable, INSERT, CTAS, insertInto by
position), partitioned writes, V2 writes (``noop``) and JDBC (``SaveIntoDataSourceCommand``, Derby)."""
from __future__ import annotations

import contextlib

from pyspark.errors import PySparkException
from pyspark.sql import functions as F

from airflow_provider_lineage.lineage import analyze_record
from tests.lineage.helpers import check_properties, direct, ds_edges, edges, optimized_classes


def test_partitioned_file_write_has_no_sort_edge_from_the_writer(env):
    o = env.spark.read.parquet(env.orders)
    rec = env.capture(
        lambda: o.select("id", "cust_id").write.partitionBy("cust_id").mode("overwrite").parquet(env.out())
    )
    lin = analyze_record(rec)
    check_properties(lin)
    assert [n for n, _ in lin.output_fields] == ["id", "cust_id"]
    assert direct(lin, "cust_id") == {("orders", "cust_id", "IDENTITY")}
    assert lin.dataset_edges == []
    assert lin.output.namespace == "file" and lin.mode == "Overwrite"


def test_string_partition_column_is_identity_through_empty2null(env):
    o = env.spark.read.parquet(env.orders)
    rec = env.capture(lambda: o.select("id", "note").write.partitionBy("note").mode("overwrite").parquet(env.out()))
    assert "Empty2Null" in optimized_classes(rec)  # the plan shape this test feeds
    lin = analyze_record(rec)
    check_properties(lin)
    assert direct(lin, "note") == {("orders", "note", "IDENTITY")}


def test_save_as_table_then_sql_insert_and_ctas(env):
    spark = env.spark
    spark.sql("DROP TABLE IF EXISTS lin_t")
    spark.sql("DROP TABLE IF EXISTS lin_ctas")
    o = spark.read.parquet(env.orders).select("id", "amount")
    lin = analyze_record(env.capture(lambda: o.write.mode("overwrite").saveAsTable("lin_t")))
    assert lin.output.table == "spark_catalog.default.lin_t" and lin.output.name.endswith("/lin_t")
    assert direct(lin, "amount") == {("orders", "amount", "IDENTITY")}
    lin = analyze_record(
        env.capture(lambda: spark.sql("INSERT INTO lin_t SELECT id + 1, amount * 2 FROM lin_t WHERE id < 5"))
    )
    check_properties(lin)
    assert direct(lin, "amount") == {("lin_t", "amount", "TRANSFORMATION")}
    assert ("lin_t", "id", "FILTER") in ds_edges(lin)
    [(ref, _fields)] = lin.inputs
    assert ref.table == "spark_catalog.default.lin_t" and ref == lin.output  # read and written: one identity
    lin = analyze_record(env.capture(lambda: spark.sql(
        "CREATE TABLE lin_ctas USING parquet AS SELECT id % 2 AS k, SUM(amount) AS s FROM lin_t GROUP BY id % 2")))
    check_properties(lin)
    assert lin.output.table == "spark_catalog.default.lin_ctas"
    assert direct(lin, "s") == {("lin_t", "amount", "AGGREGATION")}
    assert direct(lin, "k") == {("lin_t", "id", "TRANSFORMATION")}


def test_failed_ctas_wrapper_record_is_still_analysed(env):
    spark = env.spark
    spark.sql("DROP TABLE IF EXISTS lin_dup")
    spark.sql("CREATE TABLE lin_dup (x BIGINT) USING parquet")

    def w() -> None:
        with contextlib.suppress(PySparkException):
            spark.sql("CREATE TABLE lin_dup USING parquet AS SELECT id AS x FROM orders")

    rec = env.capture(w)
    lin = analyze_record(rec)
    assert direct(lin, "x") == {("orders", "id", "IDENTITY")}


def test_insert_into_by_position_uses_table_column_names(env):
    spark = env.spark
    spark.sql("DROP TABLE IF EXISTS lin_pos")
    spark.sql("CREATE TABLE lin_pos (a BIGINT, b STRING) USING parquet")
    o = spark.read.parquet(env.orders)
    lin = analyze_record(env.capture(lambda: o.select("id", "note").write.insertInto("lin_pos")))
    check_properties(lin)
    assert lin.output_fields == [("a", "bigint"), ("b", "string")]
    assert direct(lin, "a") == {("orders", "id", "IDENTITY")}
    assert direct(lin, "b") == {("orders", "note", "IDENTITY")}


def test_v2_append_data_and_overwrite_by_expression_with_noop(env):
    o = env.spark.read.parquet(env.orders).select("id", (F.col("amount") + 1).alias("a1"))
    for mode, command in (("append", "AppendData"), ("overwrite", "OverwriteByExpression")):
        rec = env.capture(lambda mode=mode: o.write.format("noop").mode(mode).save())
        assert rec.command == command
        lin = analyze_record(rec)
        check_properties(lin)
        assert lin.output is None  # noop persists nothing
        assert direct(lin, "a1") == {("orders", "amount", "TRANSFORMATION")}


def test_jdbc_write_and_read_are_datasets_of_the_database(env):
    url = "jdbc:derby:memory:lineage;create=true"
    opts = {"url": url, "driver": "org.apache.derby.jdbc.EmbeddedDriver"}
    o = env.spark.read.parquet(env.orders).select("id", (F.col("amount") * 2).alias("a2"))
    rec = env.capture(lambda: o.write.format("jdbc").options(dbtable="LIN_OUT", **opts).mode("overwrite").save())
    assert rec.command == "SaveIntoDataSourceCommand"
    lin = analyze_record(rec)
    check_properties(lin)
    assert (lin.output.namespace, lin.output.name) == ("derby:memory:lineage", "LIN_OUT")
    assert direct(lin, "a2") == {("orders", "amount", "TRANSFORMATION")}
    back = env.spark.read.format("jdbc").options(dbtable="LIN_OUT", **opts).load()
    lin = analyze_record(env.write_parquet(back.where("ID > 1")))
    check_properties(lin)
    assert direct(lin, "a2") == {("LIN_OUT", "a2", "IDENTITY")}
    assert lin.inputs[0][0].namespace == "derby:memory:lineage"


def test_merge_into_is_planned_even_when_the_table_cannot_run_it(env):
    """A V1 parquet table rejects MERGE at planning time, after optimisation: the failed write's
    record carries a real ``MergeIntoTable`` plan (no row-level V2 table is available here)."""
    spark = env.spark
    spark.sql("DROP TABLE IF EXISTS lin_merge")
    spark.sql("CREATE TABLE lin_merge (cust_id BIGINT, total DOUBLE) USING parquet")

    def w() -> None:
        with contextlib.suppress(PySparkException):
            spark.sql("MERGE INTO lin_merge t USING orders s ON t.cust_id = s.cust_id "
                      "WHEN MATCHED AND s.note <> 'x' THEN UPDATE SET total = s.amount * 2 "
                      "WHEN NOT MATCHED THEN INSERT (cust_id, total) VALUES (s.cust_id, s.amount)")

    rec = env.capture(w)
    assert rec.command == "MergeIntoTable"
    lin = analyze_record(rec)
    check_properties(lin)
    assert lin.output.table == "spark_catalog.default.lin_merge"
    assert [n for n, _ in lin.output_fields] == ["cust_id", "total"]
    assert direct(lin, "total") == {("lin_merge", "total", "IDENTITY"), ("orders", "amount", "TRANSFORMATION"),
                                    ("orders", "amount", "IDENTITY")}
    assert ("orders", "note", "INDIRECT", "CONDITIONAL") in edges(lin, "total")
    assert ds_edges(lin) == {("lin_merge", "cust_id", "JOIN"), ("orders", "cust_id", "JOIN")}
