"""Two answers that differed from openlineage-spark's own tests (issue 36, item 7), on real plans.

* ``explode(split(a, ' ')) AS a``: the written ``a`` is a token of ``a`` (DIRECT/TRANSFORMATION), not ``a``
  itself: the write's ``Generate`` root does not serialise which child columns it drops, and the child ``a``
  must not be picked by name in place of the generated one.
* ``INTERSECT ALL`` / ``EXCEPT ALL`` (planned as Union + Aggregate + Filter + Generate ``replicaterows``):
  output column i is input column i of the left side (and of the right side for INTERSECT ALL, whose
  values are the same), never the row's other columns; the count only says how many copies of a row exist.
  The row membership test (every column of both sides) is INDIRECT/JOIN, as for INTERSECT / EXCEPT
  (semi / anti join), not GROUP_BY: no output is aggregated.
"""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from airflow_provider_lineage.lineage import analyze_record
from tests.lineage.helpers import check_properties, ds_edges, edges

MEMBERSHIP = {("orders", "cust_id", "JOIN"), ("orders", "note", "JOIN"),
              ("customers", "cust_id", "JOIN"), ("customers", "name", "JOIN")}


def _lin(env, df):
    lin = analyze_record(env.write_parquet(df))
    check_properties(lin)
    assert not lin.approximate, lin.unknown
    return lin


@pytest.mark.parametrize("how", ["sql", "select", "with_column"])
def test_explode_of_split_writes_a_token_of_the_column(env, how):
    o = env.spark.read.parquet(env.orders)
    df = {
        "sql": lambda: env.spark.sql("SELECT explode(split(note, 'o')) AS note FROM orders"),
        "select": lambda: o.select(F.explode(F.split("note", "o")).alias("note")),
        "with_column": lambda: o.select("id", "note").withColumn("note", F.explode(F.split("note", "o"))),
    }[how]()
    lin = _lin(env, df)
    assert edges(lin, "note") == {("orders", "note", "DIRECT", "TRANSFORMATION")}
    assert ds_edges(lin) == {("orders", "note", "FILTER")}  # a null note yields no row
    if how == "with_column":
        assert edges(lin, "id") == {("orders", "id", "DIRECT", "IDENTITY")}


@pytest.mark.parametrize("how", ["sql", "df"])
def test_intersect_all_column_comes_from_the_same_column_of_each_side(env, how):
    o, c = env.spark.read.parquet(env.orders), env.spark.read.parquet(env.customers)
    df = (env.spark.sql("SELECT cust_id, note FROM orders INTERSECT ALL SELECT cust_id, name FROM customers")
          if how == "sql" else o.select("cust_id", "note").intersectAll(c.select("cust_id", "name")))
    lin = _lin(env, df)
    assert edges(lin, "cust_id") == {("orders", "cust_id", "DIRECT", "IDENTITY"),
                                     ("customers", "cust_id", "DIRECT", "IDENTITY")}
    assert edges(lin, "note") == {("orders", "note", "DIRECT", "IDENTITY"), ("customers", "name", "DIRECT", "IDENTITY")}
    assert ds_edges(lin) == MEMBERSHIP


@pytest.mark.parametrize("how", ["sql", "df"])
def test_except_all_column_comes_from_the_left_column_only(env, how):
    o, c = env.spark.read.parquet(env.orders), env.spark.read.parquet(env.customers)
    df = (env.spark.sql("SELECT cust_id, note FROM orders EXCEPT ALL SELECT cust_id, name FROM customers")
          if how == "sql" else o.select("cust_id", "note").exceptAll(c.select("cust_id", "name")))
    lin = _lin(env, df)
    assert edges(lin, "cust_id") == {("orders", "cust_id", "DIRECT", "IDENTITY")}
    assert edges(lin, "note") == {("orders", "note", "DIRECT", "IDENTITY")}
    assert ds_edges(lin) == MEMBERSHIP
