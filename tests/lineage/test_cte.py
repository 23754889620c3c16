"""CTEs in every place Spark SQL accepts them trace like the inlined query (issue 7, point 4).

An inlined CTE keeps its definition's exprIds, so the write plan's relation leaf shares them with the
analyzed plan's ``CTERelationRef``; that reference must never shadow the real relation.
"""
from __future__ import annotations

import pytest

from airflow_provider_lineage.lineage import analyze_record
from tests.lineage.helpers import check_properties, direct, ds_edges, edges


@pytest.fixture(scope="module")
def tables(env):
    spark = env.spark
    for t in ("lin_cte_src", "lin_cte_src2", "lin_cte_dst", "lin_cte_dst2", "lin_cte_ctas"):
        spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.range(5).selectExpr("id AS col1", "id * 2 AS col2").write.saveAsTable("lin_cte_src")
    spark.range(5).selectExpr("id AS col1", "id * 3 AS col3").write.saveAsTable("lin_cte_src2")
    spark.sql("CREATE TABLE lin_cte_dst (col1 BIGINT) USING parquet")
    spark.sql("CREATE TABLE lin_cte_dst2 (a BIGINT, b BIGINT) USING parquet")
    return env


def _lin(env, sql: str):
    lin = analyze_record(env.capture(lambda: env.spark.sql(sql)))
    check_properties(lin)
    assert not lin.approximate, lin.unknown
    return lin


@pytest.mark.parametrize(
    "sql",
    [
        "WITH c AS (SELECT col1 FROM lin_cte_src) INSERT INTO lin_cte_dst SELECT col1 FROM c",
        "INSERT INTO lin_cte_dst (col1) WITH c AS (SELECT col1 FROM lin_cte_src) SELECT col1 FROM c",
        "INSERT INTO lin_cte_dst (WITH c AS (SELECT col1 FROM lin_cte_src) SELECT * FROM c)",
        "with C as (select COL1 from LIN_CTE_SRC) insert into Lin_Cte_Dst select c.Col1 from c",
        "WITH c AS (SELECT col1 FROM lin_cte_src) INSERT OVERWRITE TABLE lin_cte_dst SELECT col1 FROM c",
        "INSERT INTO lin_cte_dst SELECT col1 FROM (WITH c AS (SELECT col1 FROM lin_cte_src) SELECT col1 FROM c) t",
        ("WITH a AS (SELECT col1 FROM lin_cte_src), b AS (SELECT x.col1 FROM a x) INSERT INTO lin_cte_dst "
         "SELECT col1 FROM b"),
    ],
)
def test_cte_before_or_inside_insert_traces_like_the_inlined_query(tables, sql):
    lin = _lin(tables, sql)
    assert edges(lin, "col1") == {("lin_cte_src", "col1", "DIRECT", "IDENTITY")}


def test_cte_column_aliases_and_join_between_ctes(tables):
    lin = _lin(
        tables,
        "WITH a(k, v) AS (SELECT col1, col2 FROM lin_cte_src), b AS (SELECT col1, col3 FROM lin_cte_src2) "
        "INSERT INTO lin_cte_dst2 SELECT a.v, B.col3 FROM a JOIN b ON a.k = b.col1",
    )
    assert direct(lin, "a") == {("lin_cte_src", "col2", "IDENTITY")}
    assert direct(lin, "b") == {("lin_cte_src2", "col3", "IDENTITY")}
    assert ds_edges(lin) == {("lin_cte_src", "col1", "JOIN"), ("lin_cte_src2", "col1", "JOIN")}


def test_cte_self_join_and_union_between_ctes(tables):
    lin = _lin(tables, "WITH c AS (SELECT col1, col2 FROM lin_cte_src) "
                       "INSERT INTO lin_cte_dst2 SELECT c1.col1, c2.col2 FROM c c1 JOIN c c2 ON c1.col1 = c2.col1")
    assert direct(lin, "b") == {("lin_cte_src", "col2", "IDENTITY")}
    lin = _lin(tables, "WITH a AS (SELECT col2 AS x FROM lin_cte_src), b AS (SELECT col3 AS x FROM lin_cte_src2) "
                       "INSERT INTO lin_cte_dst SELECT x FROM a UNION ALL SELECT x FROM b")
    assert direct(lin, "col1") == {("lin_cte_src", "col2", "IDENTITY"), ("lin_cte_src2", "col3", "IDENTITY")}


def test_ctas_with_cte(tables):
    lin = _lin(tables, "CREATE TABLE lin_cte_ctas USING parquet AS "
                       "WITH c AS (SELECT col1, col2 FROM lin_cte_src WHERE col1 > 1) SELECT col2 * 2 AS v FROM c")
    assert direct(lin, "v") == {("lin_cte_src", "col2", "TRANSFORMATION")}
    assert ds_edges(lin) == {("lin_cte_src", "col1", "FILTER")}


def test_recursive_cte_follows_the_loop(tables):
    """``WITH RECURSIVE`` (not inlined: ``UnionLoop``/``UnionLoopRef``): the output is the anchor's
    value and, through the recursion, a transformation of it; the recursion's filter is a FILTER."""
    lin = _lin(tables, "WITH RECURSIVE r(n) AS (SELECT col1 FROM lin_cte_src WHERE col1 = 0 "
                       "UNION ALL SELECT n + 1 FROM r WHERE n < 3) INSERT INTO lin_cte_dst SELECT n FROM r")
    assert direct(lin, "col1") == {("lin_cte_src", "col1", "IDENTITY"), ("lin_cte_src", "col1", "TRANSFORMATION")}
    assert ds_edges(lin) == {("lin_cte_src", "col1", "FILTER")}
