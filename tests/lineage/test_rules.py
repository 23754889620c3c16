"""One test per plan shape: real optimized plans from local Spark, analysed by the local rules."""
from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from airflow_provider_lineage.lineage import analyze_record
from tests.lineage.helpers import check_properties, direct, ds_edges, edges, optimized_classes


def lin_of(env, rec):
    lin = analyze_record(rec)
    check_properties(lin)
    assert not lin.approximate, lin.unknown
    return lin


def test_project_filter_identity_transformation_and_masking(env):
    o = env.spark.read.parquet(env.orders)
    df = o.where("amount > 3").select("id", (F.col("amount") + 1).alias("a1"), F.sha2("note", 256).alias("h"),
                                       F.col("id").cast("bigint").alias("same"), F.col("id").cast("string").alias("s"))
    lin = lin_of(env, env.write_parquet(df))
    assert edges(lin, "id") == {("orders", "id", "DIRECT", "IDENTITY")}
    assert edges(lin, "a1") == {("orders", "amount", "DIRECT", "TRANSFORMATION")}
    assert [e.masking for e in lin.columns["h"]] == [True]
    assert direct(lin, "same") == {("orders", "id", "IDENTITY")}  # lossless cast
    assert direct(lin, "s") == {("orders", "id", "TRANSFORMATION")}  # cast changing the type
    assert ds_edges(lin) == {("orders", "amount", "FILTER")}


def test_inner_join_keys_are_join_edges_without_inferred_isnotnull(env):
    o, c = env.spark.read.parquet(env.orders), env.spark.read.parquet(env.customers)
    lin = lin_of(env, env.write_parquet(o.join(c, "cust_id").select("id", "name", "amount")))
    assert edges(lin, "name") == {("customers", "name", "DIRECT", "IDENTITY")}
    assert ds_edges(lin) == {("orders", "cust_id", "JOIN"), ("customers", "cust_id", "JOIN")}


def test_user_isnotnull_filter_is_kept(env):
    o = env.spark.read.parquet(env.orders)
    lin = lin_of(env, env.write_parquet(o.where(F.col("note").isNotNull()).select("id")))
    assert ("orders", "note", "FILTER") in ds_edges(lin)


def test_left_outer_join_and_full_outer_join(env):
    o, c = env.spark.read.parquet(env.orders), env.spark.read.parquet(env.customers)
    for how in ("left", "full"):
        lin = lin_of(env, env.write_parquet(o.join(c, o.cust_id == c.cust_id, how).select(o.id, c.email)))
        assert direct(lin, "email") == {("customers", "email", "IDENTITY")}
        assert ("customers", "cust_id", "JOIN") in ds_edges(lin)


def test_in_subquery_becomes_left_semi_join(env):
    lin = lin_of(env, env.write_parquet(env.spark.sql(
        "SELECT id FROM orders WHERE cust_id IN (SELECT cust_id FROM customers WHERE name <> 'c1')")))
    assert edges(lin, "id") == {("orders", "id", "DIRECT", "IDENTITY")}
    assert {("customers", "cust_id", "JOIN"), ("orders", "cust_id", "JOIN"),
            ("customers", "name", "FILTER")} <= ds_edges(lin)


def test_not_exists_becomes_left_anti_join(env):
    lin = lin_of(env, env.write_parquet(env.spark.sql(
        "SELECT id FROM orders o WHERE NOT EXISTS (SELECT 1 FROM customers c WHERE c.cust_id = o.cust_id)")))
    assert [n for n, _ in lin.output_fields] == ["id"]
    assert ("customers", "cust_id", "JOIN") in ds_edges(lin)


def test_exists_in_a_disjunction_becomes_existence_join(env):
    lin = lin_of(env, env.write_parquet(env.spark.sql(
        "SELECT id FROM orders o WHERE o.amount > 10 OR EXISTS (SELECT 1 FROM customers c WHERE c.cust_id = o.cust_id)"
    )))
    assert edges(lin, "id") == {("orders", "id", "DIRECT", "IDENTITY")}
    assert {("orders", "amount", "FILTER"), ("customers", "cust_id", "FILTER")} <= ds_edges(lin)


def test_aggregate_group_by_and_masked_count(env):
    o = env.spark.read.parquet(env.orders)
    df = o.groupBy("cust_id").agg(F.sum(F.col("amount") * 2).alias("total"), F.count("note").alias("n"),
                                  F.max("day").alias("last"))
    lin = lin_of(env, env.write_parquet(df))
    assert edges(lin, "cust_id") == {("orders", "cust_id", "DIRECT", "IDENTITY")}
    assert edges(lin, "total") == {("orders", "amount", "DIRECT", "AGGREGATION")}
    assert [(e.field, e.masking) for e in lin.columns["n"]] == [("note", True)]
    assert ds_edges(lin) == {("orders", "cust_id", "GROUP_BY")}


def test_aggregate_filter_clause_is_indirect(env):
    lin = lin_of(env, env.write_parquet(env.spark.sql(
        "SELECT cust_id, SUM(amount) FILTER (WHERE note <> 'o1') AS s FROM orders GROUP BY cust_id")))
    assert edges(lin, "s") == {("orders", "amount", "DIRECT", "AGGREGATION"), ("orders", "note", "INDIRECT", "FILTER")}


def test_case_when_if_coalesce_conditions(env):
    o = env.spark.read.parquet(env.orders)
    df = o.select(F.when(F.col("cust_id") == 1, F.col("amount")).otherwise(F.lit(0.0)).alias("cw"),
                  F.expr("IF(id > 3, note, 'x')").alias("i"),
                  F.coalesce("note", F.col("id").cast("string")).alias("co"))
    lin = lin_of(env, env.write_parquet(df))
    assert edges(lin, "cw") == {("orders", "amount", "DIRECT", "TRANSFORMATION"),
                                ("orders", "cust_id", "INDIRECT", "CONDITIONAL")}
    assert edges(lin, "i") == {("orders", "note", "DIRECT", "TRANSFORMATION"),
                               ("orders", "id", "INDIRECT", "CONDITIONAL")}
    assert ("orders", "note", "INDIRECT", "CONDITIONAL") in edges(lin, "co")
    assert ("orders", "id", "DIRECT", "TRANSFORMATION") in edges(lin, "co")


def test_union_matches_columns_by_position(env):
    o, c = env.spark.read.parquet(env.orders), env.spark.read.parquet(env.customers)
    lin = lin_of(env, env.write_parquet(o.select("id", "note").union(c.select("cust_id", "name"))))
    assert direct(lin, "id") == {("orders", "id", "IDENTITY"), ("customers", "cust_id", "IDENTITY")}
    assert direct(lin, "note") == {("orders", "note", "IDENTITY"), ("customers", "name", "IDENTITY")}


def test_intersect_is_semi_join_and_except_all_keeps_only_left_values(env):
    o, c = env.spark.read.parquet(env.orders), env.spark.read.parquet(env.customers)
    lin = lin_of(env, env.write_parquet(o.select("cust_id").intersect(c.select("cust_id"))))
    assert direct(lin, "cust_id") == {("orders", "cust_id", "IDENTITY")}
    assert ("customers", "cust_id", "JOIN") in ds_edges(lin)
    lin = lin_of(env, env.write_parquet(o.select("cust_id").exceptAll(c.select("cust_id"))))
    assert direct(lin, "cust_id") == {("orders", "cust_id", "IDENTITY")}
    assert ("customers", "cust_id", "JOIN") in ds_edges(lin)


def test_window_partition_and_order_are_window_edges_of_that_column(env):
    o = env.spark.read.parquet(env.orders)
    w = Window.partitionBy("cust_id").orderBy("day")
    df = o.select("id", F.row_number().over(w).alias("rn"), F.sum("amount").over(w).alias("running"))
    lin = lin_of(env, env.write_parquet(df))
    assert edges(lin, "rn") == {("orders", "cust_id", "INDIRECT", "WINDOW"), ("orders", "day", "INDIRECT", "WINDOW")}
    assert ("orders", "amount", "DIRECT", "AGGREGATION") in edges(lin, "running")
    assert edges(lin, "id") == {("orders", "id", "DIRECT", "IDENTITY")}


def test_expand_rollup_grouping_sets(env):
    lin = lin_of(env, env.write_parquet(env.spark.sql(
        "SELECT cust_id, note, SUM(amount) AS s, GROUPING_ID() AS g FROM orders GROUP BY ROLLUP(cust_id, note)")))
    assert direct(lin, "cust_id") == {("orders", "cust_id", "IDENTITY")}
    assert direct(lin, "s") == {("orders", "amount", "AGGREGATION")}
    assert lin.columns["g"] == []
    assert {("orders", "cust_id", "GROUP_BY"), ("orders", "note", "GROUP_BY")} <= ds_edges(lin)


def test_expand_for_several_distinct_aggregates(env):
    lin = lin_of(env, env.write_parquet(env.spark.sql(
        "SELECT cust_id, COUNT(DISTINCT note) AS a, SUM(DISTINCT amount) AS b FROM orders GROUP BY cust_id")))
    assert direct(lin, "a") == {("orders", "note", "AGGREGATION")}
    assert direct(lin, "b") == {("orders", "amount", "AGGREGATION")}
    assert ds_edges(lin) == {("orders", "cust_id", "GROUP_BY")}  # no grouping on the DISTINCT inputs


def test_generate_explode_posexplode_and_lateral_view(env):
    o = env.spark.read.parquet(env.orders)
    lin = lin_of(env, env.write_parquet(o.select("id", F.posexplode("tags").alias("pos", "tag"))))
    assert direct(lin, "tag") == {("orders", "tags", "TRANSFORMATION")}
    assert direct(lin, "id") == {("orders", "id", "IDENTITY")}
    lin = lin_of(env, env.write_parquet(env.spark.sql(
        "SELECT note, t FROM orders LATERAL VIEW explode(tags) x AS t")))
    assert direct(lin, "t") == {("orders", "tags", "TRANSFORMATION")}
    assert direct(lin, "note") == {("orders", "note", "IDENTITY")}


def test_generate_inline_of_structs(env):
    lin = lin_of(env, env.write_parquet(env.spark.sql(
        "SELECT id, inline(array(named_struct('a', note, 'b', amount))) FROM orders")))
    assert direct(lin, "a") == {("orders", "note", "TRANSFORMATION"), ("orders", "amount", "TRANSFORMATION")}


def test_batch_eval_python_udf(env):
    o = env.spark.read.parquet(env.orders)
    up = F.udf(lambda s: s.upper(), "string")
    rec = env.plan_only(o.select("id", up("note").alias("u")))
    assert "BatchEvalPython" in optimized_classes(rec) or "ArrowEvalPython" in optimized_classes(rec)
    lin = lin_of(env, rec)
    assert direct(lin, "u") == {("orders", "note", "TRANSFORMATION")}


def test_arrow_eval_python_pandas_udf(env):
    import pandas as pd

    def twice(s):  # type hints set below: this module's annotations are strings
        return s * 2

    twice.__annotations__ = {"s": pd.Series, "return": pd.Series}
    twice = F.pandas_udf(twice, "double")

    o = env.spark.read.parquet(env.orders)
    rec = env.plan_only(o.select("id", twice("amount").alias("p")))
    assert "ArrowEvalPython" in optimized_classes(rec)
    lin = lin_of(env, rec)
    assert direct(lin, "p") == {("orders", "amount", "TRANSFORMATION")}


def test_uncorrelated_scalar_subquery_in_project_and_filter(env):
    lin = lin_of(env, env.write_parquet(env.spark.sql(
        "SELECT id, amount - (SELECT MAX(amount) FROM orders WHERE note <> 'o2') AS d FROM orders "
        "WHERE cust_id = (SELECT MIN(cust_id) FROM customers)")))
    assert direct(lin, "d") == {("orders", "amount", "AGGREGATION")} | {("orders", "amount", "TRANSFORMATION")} or \
        direct(lin, "d") == {("orders", "amount", "TRANSFORMATION")}
    assert ("orders", "note", "INDIRECT", "FILTER") in edges(lin, "d")
    assert {("orders", "cust_id", "FILTER"), ("customers", "cust_id", "FILTER")} <= ds_edges(lin)


def test_correlated_scalar_subquery_becomes_join(env):
    lin = lin_of(env, env.write_parquet(env.spark.sql(
        "SELECT id, (SELECT MAX(name) FROM customers c WHERE c.cust_id = o.cust_id) AS cname FROM orders o")))
    assert direct(lin, "cname") == {("customers", "name", "AGGREGATION")}
    assert ("customers", "cust_id", "JOIN") in ds_edges(lin) or ("customers", "cust_id", "GROUP_BY") in ds_edges(lin)


def test_sort_limit_sample_repartition(env):
    o = env.spark.read.parquet(env.orders)
    df = o.orderBy(F.col("amount").desc()).limit(5).sample(0.9, seed=1).repartition(2, "cust_id").select("id")
    lin = lin_of(env, env.write_parquet(df))
    assert edges(lin, "id") == {("orders", "id", "DIRECT", "IDENTITY")}
    assert ("orders", "amount", "SORT") in ds_edges(lin)


def test_deduplicate_becomes_aggregate_with_first(env):
    o = env.spark.read.parquet(env.orders)
    lin = lin_of(env, env.write_parquet(o.dropDuplicates(["cust_id"]).select("cust_id", "note")))
    assert direct(lin, "cust_id") == {("orders", "cust_id", "IDENTITY")}
    assert direct(lin, "note") == {("orders", "note", "AGGREGATION")}
    assert ds_edges(lin) == {("orders", "cust_id", "GROUP_BY")}


def test_cached_dataframe_traced_through_in_memory_relation(env):
    o = env.spark.read.parquet(env.orders)
    cached = o.where("id > 2").select("id", (F.col("amount") * 2).alias("a2")).cache()
    try:
        rec = env.write_parquet(cached.select("id", "a2"))
        assert "InMemoryRelation" in optimized_classes(rec)
        lin = lin_of(env, rec)
        assert direct(lin, "a2") == {("orders", "amount", "TRANSFORMATION")}
        assert ("orders", "id", "FILTER") in ds_edges(lin)
    finally:
        cached.unpersist()


def test_temp_view_and_cte_are_inlined(env):
    env.spark.read.parquet(env.orders).where("amount > 1").createOrReplaceTempView("big_orders")
    lin = lin_of(env, env.write_parquet(env.spark.sql(
        "WITH x AS (SELECT cust_id, amount * 2 AS a2 FROM big_orders) SELECT cust_id, a2 FROM x")))
    assert direct(lin, "a2") == {("orders", "amount", "TRANSFORMATION")}
    assert ("orders", "amount", "FILTER") in ds_edges(lin)


def test_local_relation_and_range_have_no_input_dataset(env):
    df = env.spark.createDataFrame([(1, "a")], "x INT, y STRING").crossJoin(env.spark.range(2))
    lin = lin_of(env, env.write_parquet(df))
    assert lin.inputs == []
    assert all(v == [] for v in lin.columns.values())


def test_local_data_joined_with_a_file_keeps_the_file_edges(env):
    o = env.spark.read.parquet(env.orders)
    m = env.spark.createDataFrame([(0, "zero")], "cust_id LONG, label STRING")
    lin = lin_of(env, env.write_parquet(o.join(m, "cust_id").select("id", "label")))
    assert lin.columns["label"] == []
    assert [ref.name.rsplit("/", 1)[-1] for ref, _ in lin.inputs] == ["orders"]
    assert ("orders", "cust_id", "JOIN") in ds_edges(lin)


def test_with_column_chain_collapses_into_one_project(env):
    o = env.spark.read.parquet(env.orders).select("id", "amount")
    df = o
    for i in range(200):
        df = (
            df.withColumn("amount", F.col("amount") + 1)
            if i % 2
            else df.withColumn("id", F.col("id") + F.col("amount"))
        )
    lin = lin_of(env, env.plan_only(df))
    assert direct(lin, "id") == {("orders", "id", "TRANSFORMATION"), ("orders", "amount", "TRANSFORMATION")}
    assert direct(lin, "amount") == {("orders", "amount", "TRANSFORMATION")}


def test_union_of_60_branches(env):
    # One SQL statement: chained DataFrame.unionAll calls re-analyse the growing plan each time
    # (quadratic, ~45 s for 60 branches here), which tests Spark's analyser, not the engine.
    env.spark.read.parquet(env.orders).createOrReplaceTempView("orders_60")
    df = env.spark.sql(" UNION ALL ".join(f"SELECT id, amount + {i} AS amount FROM orders_60" for i in range(60)))
    lin = lin_of(env, env.plan_only(df))
    assert direct(lin, "amount") == {("orders", "amount", "TRANSFORMATION")}


def test_masking_functions(env):
    o = env.spark.read.parquet(env.orders)
    df = o.select(F.expr("mask(note)").alias("m"), F.hash("note").alias("h"), F.xxhash64("note").alias("x"),
                  F.crc32("note").alias("c"), F.sha1("note").alias("s1"), F.md5("note").alias("m5"),
                  F.upper("note").alias("plain"))
    lin = lin_of(env, env.write_parquet(df))
    for col in ("m", "h", "x", "c", "s1", "m5"):
        assert [(e.field, e.masking) for e in lin.columns[col]] == [("note", True)], col
    assert [e.masking for e in lin.columns["plain"]] == [False]


def test_user_sort_within_partitions_before_a_write_is_a_sort_edge(env):
    o = env.spark.read.parquet(env.orders)
    lin = lin_of(env, env.write_parquet(o.sortWithinPartitions("day").select("id")))
    assert ds_edges(lin) == {("orders", "day", "SORT")}
