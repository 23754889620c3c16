"""The Python API gives the operator's answer (issue 7, point 4): ``CaptureSession.records`` holds one
record per logical write (wrappers merged), the README example works for every write kind, and each
write kind has the right ``lifecycleStateChange``."""
from __future__ import annotations

import contextlib

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import functions as F

from airflow_provider_lineage.capture.listener import CaptureSession
from airflow_provider_lineage.lineage import LineageError, analyze_record
from airflow_provider_lineage.lineage.explain import explain
from airflow_provider_lineage.lineage.facets import datasets_for
from airflow_provider_lineage.lineage.record import CaptureRecord, OutputInfo, collapse_nested
from tests.lineage.synthetic import node
from tests.lineage.test_engine import HIVE_REL, hive_relation, record


@pytest.fixture(scope="module")
def sales(env):
    return env.spark.read.parquet(env.orders).select("id", (F.col("amount") * 0.9).alias("net_amount"))


@pytest.mark.parametrize("kind", ["parquet", "saveAsTable", "insertInto", "sql_insert", "ctas"])
def test_readme_capture_session_example(env, sales, kind):
    """README: ``with CaptureSession(spark) as cap: df.write...; analyze_record(cap.records[-1])``."""
    spark = env.spark
    env.session.__exit__()  # the env's long-lived session would also see these writes: use a fresh one
    try:
        spark.sql("DROP TABLE IF EXISTS lin_api_t")
        if kind in ("insertInto", "sql_insert"):
            spark.sql("CREATE TABLE lin_api_t (id BIGINT, net_amount DOUBLE) USING parquet")
            sales.createOrReplaceTempView("lin_api_sales")
        writes = {
            "parquet": lambda: sales.write.mode("overwrite").parquet(env.out("api")),
            "saveAsTable": lambda: sales.write.mode("overwrite").saveAsTable("lin_api_t"),
            "insertInto": lambda: sales.write.insertInto("lin_api_t"),
            "sql_insert": lambda: spark.sql("INSERT INTO lin_api_t SELECT * FROM lin_api_sales"),
            "ctas": lambda: spark.sql("CREATE TABLE lin_api_t USING parquet AS SELECT * FROM lin_api_sales"),
        }
        if kind == "ctas":
            sales.createOrReplaceTempView("lin_api_sales")
        with CaptureSession(spark) as cap:
            writes[kind]()
        assert len(cap.records) == 1, [r.command for r in cap.records]
        lin = analyze_record(cap.records[-1])
        assert {(e.field, e.type, e.subtype) for e in lin.columns["net_amount"]} == {
            ("amount", "DIRECT", "TRANSFORMATION")
        }
        text = explain(cap.records[-1], "net_amount")
        assert text.startswith("net_amount: ") and "amount#" in text
        assert len(cap.events) >= len(cap.records)
    finally:
        env.session.__enter__()


def test_bare_wrapper_record_names_the_merged_record():
    wrapper = node("SaveAsV1TableCommand", [], pkg="org.apache.spark.sql.execution.command.", tableDesc=None, mode=None)
    rec = record(wrapper, ["a"], command="SaveAsV1TableCommand", table="spark_catalog.default.t")
    with pytest.raises(LineageError, match="CaptureSession.records"):
        analyze_record(rec)


def test_collapse_nested_does_not_modify_its_input_and_is_idempotent():
    inner = CaptureRecord(
        "InsertIntoHadoopFsRelationCommand",
        "success",
        output=OutputInfo("InsertIntoHadoopFsRelationCommand", location="file:/wh/t", mode="Overwrite"),
    )
    wrap = CaptureRecord("CreateDataSourceTableAsSelectCommand", "success",
                         output=OutputInfo("CreateDataSourceTableAsSelectCommand", location="file:/wh/t",
                                           table="spark_catalog.default.t", mode="ErrorIfExists"))
    [merged] = collapse_nested([inner, wrap])
    assert inner.output.table is None and inner.wrappers == [] and not inner.created
    assert merged.output.table == "spark_catalog.default.t" and merged.output.mode == "ErrorIfExists"
    assert merged.wrappers == ["CreateDataSourceTableAsSelectCommand"] and merged.created
    assert collapse_nested([merged]) == [merged]


def _lifecycle(env, write) -> str | None:
    lin = analyze_record(env.capture(write))
    _ins, [out] = datasets_for([lin])
    facet = out.facets.get("lifecycleStateChange")
    assert lin.lifecycle == (facet.lifecycleStateChange.value if facet else None)
    return lin.lifecycle


def test_lifecycle_of_each_write_kind(env, sales):
    spark = env.spark
    for t in ("lin_lc", "lin_lc2", "lin_lc3", "lin_lc4"):
        spark.sql(f"DROP TABLE IF EXISTS {t}")
    sales.createOrReplaceTempView("lin_lc_sales")
    path = env.out("lc")
    expected = [
        ("file errorifexists", lambda: sales.write.parquet(path), "CREATE"),
        ("file append", lambda: sales.write.mode("append").parquet(path), None),
        ("file overwrite", lambda: sales.write.mode("overwrite").parquet(path), "OVERWRITE"),
        ("CTAS", lambda: spark.sql("CREATE TABLE lin_lc USING parquet AS SELECT * FROM lin_lc_sales"), "CREATE"),
        ("CTAS IF NOT EXISTS", lambda: spark.sql(
            "CREATE TABLE IF NOT EXISTS lin_lc2 USING parquet AS SELECT * FROM lin_lc_sales"), "CREATE"),
        ("INSERT INTO", lambda: spark.sql("INSERT INTO lin_lc SELECT * FROM lin_lc_sales"), None),
        ("INSERT OVERWRITE", lambda: spark.sql("INSERT OVERWRITE TABLE lin_lc SELECT * FROM lin_lc_sales"),
         "OVERWRITE"),
        ("insertInto", lambda: sales.write.insertInto("lin_lc"), None),
        ("insertInto overwrite", lambda: sales.write.insertInto("lin_lc", overwrite=True), "OVERWRITE"),
        ("saveAsTable new", lambda: sales.write.saveAsTable("lin_lc3"), "CREATE"),
        ("saveAsTable append existing", lambda: sales.write.mode("append").saveAsTable("lin_lc3"), None),
        ("saveAsTable overwrite", lambda: sales.write.mode("overwrite").saveAsTable("lin_lc3"), "OVERWRITE"),
        ("saveAsTable append new", lambda: sales.write.mode("append").saveAsTable("lin_lc4"), "CREATE"),
    ]
    got = [(name, _lifecycle(env, w)) for name, w, _ in expected]
    assert got == [(name, want) for name, _, want in expected]


def test_lifecycle_of_jdbc_and_merge(env, sales):
    opts = {"url": "jdbc:derby:memory:lifecycle;create=true", "driver": "org.apache.derby.jdbc.EmbeddedDriver"}
    assert _lifecycle(env, lambda: sales.write.format("jdbc").options(dbtable="LC", **opts).save()) == "CREATE"
    assert (
        _lifecycle(env, lambda: sales.write.format("jdbc").options(dbtable="LC", **opts).mode("append").save()) is None
    )
    spark = env.spark
    spark.sql("DROP TABLE IF EXISTS lin_lc_merge")
    spark.sql("CREATE TABLE lin_lc_merge (id BIGINT, net_amount DOUBLE) USING parquet")

    def merge() -> None:
        with contextlib.suppress(PySparkException):
            spark.sql("MERGE INTO lin_lc_merge t USING lin_lc_sales s ON t.id = s.id "
                      "WHEN MATCHED THEN UPDATE SET net_amount = s.net_amount")

    sales.createOrReplaceTempView("lin_lc_sales")
    assert analyze_record(env.capture(merge)).lifecycle is None


HIVE = "org.apache.spark.sql.hive.execution."


def test_lifecycle_of_hive_ctas_and_insert_overwrite():
    """No Hive session here: records in the listener's shape. Hive CTAS posts InsertIntoHiveTable (into
    the table it just created), then the CreateHiveTableAsSelectCommand wrapper with the save mode."""
    def insert(mode):
        plan = node("InsertIntoHiveTable", [hive_relation()], pkg=HIVE, table=None, partition=None, query=0,
                    overwrite=mode == "Overwrite", ifPartitionNotExists=False, outputColumnNames=["a", "p"])
        return record(plan, ["a", "p"], command="InsertIntoHiveTable", rels=(HIVE_REL,), location="file:/wh/db.db/dst",
                      table="spark_catalog.db.dst", format="hive", mode=mode)

    def ctas(mode):
        plan = node("CreateHiveTableAsSelectCommand", [hive_relation()], pkg=HIVE, tableDesc=None, query=0,
                    outputColumnNames=["a", "p"], mode=None)
        return record(plan, ["a", "p"], command="CreateHiveTableAsSelectCommand", rels=(HIVE_REL,),
                      location="file:/wh/db.db/dst", table="spark_catalog.db.dst", format="hive", mode=mode)

    assert analyze_record(ctas("ErrorIfExists")).lifecycle == "CREATE"  # the wrapper alone (failed inner)
    assert analyze_record(ctas(None)).lifecycle == "CREATE"  # older listener: no mode on Hive commands
    [merged] = collapse_nested([insert("Overwrite"), ctas("ErrorIfExists")])
    lin = analyze_record(merged)
    assert lin.lifecycle == "CREATE"
    _ins, [out] = datasets_for([lin])
    assert out.facets["lifecycleStateChange"].lifecycleStateChange.value == "CREATE"
    [merged] = collapse_nested([insert(None), ctas(None)])  # records of the older listener
    assert analyze_record(merged).lifecycle == "CREATE"
    assert analyze_record(insert("Overwrite")).lifecycle == "OVERWRITE"  # INSERT OVERWRITE TABLE
    assert analyze_record(insert("Append")).lifecycle is None
