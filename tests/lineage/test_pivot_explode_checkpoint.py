"""pivot, explode with and without a cache, checkpoints (issue 7, point 4) on real plans."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from airflow_provider_lineage.lineage import analyze_record
from airflow_provider_lineage.lineage.summary import summarize
from tests.lineage.helpers import check_properties, ds_edges, edges, optimized_classes


def _lin(env, df, approximate=False):
    lin = analyze_record(env.write_parquet(df))
    check_properties(lin)
    assert lin.approximate is approximate, lin.unknown
    return lin


@pytest.mark.parametrize("how", ["values", "no_values", "sql"])
def test_pivot_column_is_conditional_and_not_a_grouping_key(env, how):
    o = env.spark.read.parquet(env.orders).withColumn("kind", F.concat(F.lit("k"), F.col("id") % 2))
    o.createOrReplaceTempView("lin_pivot_src")
    df = {
        "values": lambda: o.groupBy("cust_id").pivot("kind", ["k0", "k1"]).agg(F.sum("amount")),
        "no_values": lambda: o.groupBy("cust_id").pivot("kind").agg(F.sum("amount")),
        "sql": lambda: env.spark.sql("SELECT * FROM (SELECT cust_id, kind, amount FROM lin_pivot_src) "
                                     "PIVOT (SUM(amount) FOR kind IN ('k0', 'k1'))"),
    }[how]()
    lin = _lin(env, df)
    for col in ("k0", "k1"):
        assert edges(lin, col) == {("orders", "amount", "DIRECT", "AGGREGATION"),
                                   ("orders", "id", "INDIRECT", "CONDITIONAL")}
    assert edges(lin, "cust_id") == {("orders", "cust_id", "DIRECT", "IDENTITY")}
    assert ds_edges(lin) == {("orders", "cust_id", "GROUP_BY")}


def test_pivot_with_several_aggregates_and_a_non_numeric_one(env):
    o = env.spark.read.parquet(env.orders)
    lin = _lin(env, o.groupBy("cust_id").pivot("note", ["o1", "o2"])
               .agg(F.sum("amount").alias("s"), F.first("day").alias("d")))
    assert edges(lin, "o1_s") == {("orders", "amount", "DIRECT", "AGGREGATION"),
                                  ("orders", "note", "INDIRECT", "CONDITIONAL")}
    assert edges(lin, "o2_d") == {("orders", "day", "DIRECT", "AGGREGATION"),
                                  ("orders", "note", "INDIRECT", "CONDITIONAL")}
    assert ds_edges(lin) == {("orders", "cust_id", "GROUP_BY")}


def _explode_answer(lin):
    assert edges(lin, "tag") == {("orders", "tags", "DIRECT", "TRANSFORMATION")}
    assert edges(lin, "id") == {("orders", "id", "DIRECT", "IDENTITY")}
    assert ds_edges(lin) == {("orders", "tags", "FILTER")}


def test_explode_is_a_filter_on_the_array_with_or_without_cache(env):
    o = env.spark.read.parquet(env.orders)
    _explode_answer(_lin(env, o.select("id", F.explode("tags").alias("tag"))))
    for cached in (o.select("id", F.explode("tags").alias("tag")).cache(),  # cache after explode
                   o.select("id", "tags").cache()):  # cache before explode
        try:
            df = cached if "tag" in cached.columns else cached.select("id", F.explode("tags").alias("tag"))
            rec = env.write_parquet(df)
            assert "InMemoryRelation" in optimized_classes(rec)
            lin = analyze_record(rec)
            check_properties(lin)
            _explode_answer(lin)
        finally:
            cached.unpersist()


def test_explode_outer_and_arrays_built_in_the_query_filter_nothing(env):
    o = env.spark.read.parquet(env.orders)
    lin = _lin(env, o.select("id", F.explode_outer("tags").alias("tag")))
    assert ds_edges(lin) == set()
    lin = _lin(env, o.select("id", F.explode(F.array("id", "cust_id")).alias("tag")))
    assert ds_edges(lin) == set()


@pytest.mark.parametrize("kind", ["localCheckpoint", "checkpoint"])
def test_checkpoint_is_traced_through_the_checkpointed_plan(env, kind):
    """Spark replaces a checkpointed DataFrame's plan by a LogicalRDD with no link to the plan that computed it;
    the capture saw the checkpoint run (an action on that plan) and traces through it (issue 46)."""
    env.spark.sparkContext.setCheckpointDir(str(env.base / "checkpoints"))
    o = env.spark.read.parquet(env.orders).select("id", (F.col("amount") * 2).alias("a2"))
    cut = o.localCheckpoint() if kind == "localCheckpoint" else o.checkpoint()
    lin = analyze_record(env.write_parquet(cut.select("id", "a2")))
    check_properties(lin)
    assert not lin.approximate, (lin.unknown, lin.approximate_columns)
    assert edges(lin, "a2") == {("orders", "amount", "DIRECT", "TRANSFORMATION")}
    assert "checkpoint" not in summarize(lin)
