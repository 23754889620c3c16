"""Coverage scenarios: one operator or write path each, half SQL and half DataFrame API.

Short names in the references: ``transactions`` (t), ``customers`` (c), ``fx_rates``, ``baskets``,
``merchants``. Every SQL scenario reads the temp views of the same names over the Parquet inputs.
Labelling decisions that are not obvious are in each scenario's ``notes`` (and in REPORT.md).
"""
from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from benchmarks.lineage.reference import A, Expect, I, T, cols, identity
from benchmarks.lineage.scenario import Ctx, Scenario

SCENARIOS: list[Scenario] = []

TX = "transactions"
CU = "customers"


def _add(sid: str, api: str, covers: str, run: Callable[[Ctx], None], expects: list[Expect], **kw) -> None:
    SCENARIOS.append(Scenario(sid=sid, api=api, covers=covers, run=run, expects=expects, **kw))


def _sql(sid: str, query: str) -> Callable[[Ctx], None]:
    """A SQL query whose result is written as Parquet to ``<out>/<sid>``."""

    def run(ctx: Ctx) -> None:
        ctx.sql(query).write.mode("overwrite").parquet(ctx.out(sid))

    run.__doc__ = query
    return run


def _drop(table: str) -> Callable[[Ctx], None]:
    def run(ctx: Ctx) -> None:
        ctx.sql(f"DROP TABLE IF EXISTS {table}")

    return run


def _create(table: str, ddl: str) -> Callable[[Ctx], None]:
    def run(ctx: Ctx) -> None:
        ctx.sql(f"DROP TABLE IF EXISTS {table}")
        ctx.sql(f"CREATE TABLE {table} ({ddl}) USING parquet")

    return run


# --- Project / Filter ------------------------------------------------------------------------
def _project_df(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    ctx.read(TX).select(
        "txn_id",
        F.col("amount").alias("amt"),
        (F.col("amount") * F.col("tax_rate") + F.col("fee")).alias("total_cost"),
        F.col("txn_ts").cast("date").alias("txn_day"),
        F.lit("x").alias("const_col"),
        F.concat("currency", F.lit(":"), "channel").alias("cur_channel"),
    ).write.mode("overwrite").parquet(ctx.out("project_df"))


_add(
    "project_df", "df", "Project", _project_df,
    [Expect("project_df", {
        "txn_id": [I("transactions.txn_id")],
        "amt": [I("transactions.amount")],
        "total_cost": [T("transactions.amount"), T("transactions.tax_rate"), T("transactions.fee")],
        "txn_day": [T("transactions.txn_ts")],
        "const_col": [],
        "cur_channel": [T("transactions.currency"), T("transactions.channel")],
    })],
    notes="A literal-only column has no input.",
)

_add(
    "filter_sql", "sql", "Filter",
    _sql("filter_sql", "SELECT txn_id, customer_id, amount FROM transactions "
         "WHERE amount > 50 AND channel IN ('online', 'mobile') AND NOT is_reversal"),
    [Expect("filter_sql", identity(TX, "txn_id", "customer_id", "amount"),
            {"FILTER": cols(TX, "amount", "channel", "is_reversal")})],
)

# --- Joins -----------------------------------------------------------------------------------
_add(
    "join_inner_sql", "sql", "Join (inner)",
    _sql("join_inner_sql", "SELECT t.txn_id, t.amount, m.merchant_name, m.city FROM transactions t "
         "JOIN merchants m ON t.merchant_id = m.merchant_id AND t.mcc = m.mcc"),
    [Expect("join_inner_sql", {**identity(TX, "txn_id", "amount"), **identity("merchants", "merchant_name", "city")},
            {"JOIN": cols(TX, "merchant_id", "mcc") + cols("merchants", "merchant_id", "mcc")})],
)

_add(
    "join_expr_key_sql", "sql", "Join (on computed keys)",
    _sql("join_expr_key_sql", "SELECT t.txn_id, c.segment, t.amount * c.risk_score AS weighted FROM transactions t "
         "JOIN customers c ON t.customer_id + 0 = c.customer_id AND lower(t.country) = lower(c.country)"),
    [Expect("join_expr_key_sql", {
        "txn_id": [I("transactions.txn_id")],
        "segment": [I("customers.segment")],
        "weighted": [T("transactions.amount"), T("customers.risk_score")],
    }, {"JOIN": cols(TX, "customer_id", "country") + cols(CU, "customer_id", "country")})],
    notes="Join keys computed by expressions: the columns under the expressions are the JOIN influences.",
)


def _join_left_df(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    t, fx = ctx.read(TX), ctx.read("fx_rates")
    t.join(fx, "currency", "left").select(
        "txn_id", "currency", (F.col("amount") * F.col("rate_to_eur")).alias("amount_eur"), "rate_date"
    ).write.mode("overwrite").parquet(ctx.out("join_left_df"))


_add(
    "join_left_df", "df", "Join (left outer)", _join_left_df,
    [Expect("join_left_df", {
        **identity(TX, "txn_id", "currency"),
        "amount_eur": [T("transactions.amount"), T("fx_rates.rate_to_eur")],
        "rate_date": [I("fx_rates.rate_date")],
    }, {"JOIN": ["transactions.currency", "fx_rates.currency"]})],
    notes="Left using-join: the output key is the left side's column.",
)

_add(
    "join_right_sql", "sql", "Join (right outer)",
    _sql("join_right_sql", "SELECT c.customer_id, c.segment, t.txn_id, t.amount FROM transactions t "
         "RIGHT JOIN customers c ON t.customer_id = c.customer_id"),
    [Expect("join_right_sql", {**identity(CU, "customer_id", "segment"), **identity(TX, "txn_id", "amount")},
            {"JOIN": ["transactions.customer_id", "customers.customer_id"]})],
)


def _join_full_df(ctx: Ctx) -> None:
    t, c = ctx.read(TX), ctx.read(CU)
    t.join(c, t.customer_id == c.customer_id, "full").select(
        t.txn_id, t.customer_id.alias("txn_customer_id"), c.customer_id.alias("cust_customer_id"), c.segment, t.amount
    ).write.mode("overwrite").parquet(ctx.out("join_full_df"))


_add(
    "join_full_df", "df", "Join (full outer)", _join_full_df,
    [Expect("join_full_df", {
        "txn_id": [I("transactions.txn_id")],
        "txn_customer_id": [I("transactions.customer_id")],
        "cust_customer_id": [I("customers.customer_id")],
        "segment": [I("customers.segment")],
        "amount": [I("transactions.amount")],
    }, {"JOIN": ["transactions.customer_id", "customers.customer_id"]})],
)


def _join_semi_df(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    t, c = ctx.read(TX), ctx.read(CU)
    t.join(c.where(F.col("segment") == "VIP"), "customer_id", "left_semi").select(
        "txn_id", "customer_id", "amount"
    ).write.mode("overwrite").parquet(ctx.out("join_semi_df"))


_add(
    "join_semi_df", "df", "Join (left semi)", _join_semi_df,
    [Expect("join_semi_df", identity(TX, "txn_id", "customer_id", "amount"),
            {"JOIN": ["transactions.customer_id", "customers.customer_id"], "FILTER": ["customers.segment"]})],
)

_add(
    "join_anti_sql", "sql", "Join (left anti)",
    _sql("join_anti_sql", "SELECT t.txn_id, t.amount FROM transactions t "
         "LEFT ANTI JOIN customers c ON t.customer_id = c.customer_id AND c.is_active"),
    [Expect("join_anti_sql", identity(TX, "txn_id", "amount"),
            {"JOIN": ["transactions.customer_id", "customers.customer_id", "customers.is_active"]})],
    notes="c.is_active is written in the ON clause, so it is labelled JOIN (the optimizer pushes it down as a filter).",
)

_add(
    "in_subquery_sql", "sql", "IN sub-query (-> left semi join)",
    _sql("in_subquery_sql", "SELECT txn_id, customer_id, amount FROM transactions "
         "WHERE customer_id IN (SELECT customer_id FROM customers WHERE segment = 'VIP')"),
    [Expect("in_subquery_sql", identity(TX, "txn_id", "customer_id", "amount"),
            {"JOIN": ["transactions.customer_id", "customers.customer_id"], "FILTER": ["customers.segment"]})],
    notes="IN/EXISTS key equalities are labelled JOIN (the optimizer turns them into semi/anti joins); "
          "the sub-query's own WHERE is FILTER.",
)

_add(
    "exists_sql", "sql", "NOT EXISTS sub-query (-> left anti join)",
    _sql("exists_sql", "SELECT txn_id, amount FROM transactions t WHERE NOT EXISTS "
         "(SELECT 1 FROM customers c WHERE c.customer_id = t.customer_id AND c.is_active)"),
    [Expect("exists_sql", identity(TX, "txn_id", "amount"),
            {"JOIN": ["transactions.customer_id", "customers.customer_id"], "FILTER": ["customers.is_active"]})],
)

# --- Aggregate -------------------------------------------------------------------------------


def _aggregate_df(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    ctx.read(TX).groupBy("customer_id", "currency").agg(
        F.sum("amount").alias("total"),
        F.avg(F.col("amount") - F.col("fee")).alias("avg_net"),
        F.max("txn_ts").alias("last_ts"),
        F.count(F.lit(1)).alias("n"),
    ).write.mode("overwrite").parquet(ctx.out("aggregate_df"))


_add(
    "aggregate_df", "df", "Aggregate", _aggregate_df,
    [Expect("aggregate_df", {
        **identity(TX, "customer_id", "currency"),
        "total": [A("transactions.amount")],
        "avg_net": [A("transactions.amount"), A("transactions.fee")],
        "last_ts": [A("transactions.txn_ts")],
        "n": [],
    }, {"GROUP_BY": cols(TX, "customer_id", "currency")})],
    notes="count(1) reads no column: no DIRECT input.",
)

_add(
    "aggregate_having_sql", "sql", "Aggregate + HAVING",
    _sql("aggregate_having_sql", "SELECT channel, sum(amount) AS total, count(*) AS n FROM transactions "
         "GROUP BY channel HAVING sum(fee) > 1"),
    [Expect("aggregate_having_sql", {
        "channel": [I("transactions.channel")],
        "total": [A("transactions.amount")],
        "n": [],
    }, {"GROUP_BY": ["transactions.channel"], "FILTER": ["transactions.fee"]})],
    notes="HAVING sum(fee) > 1 decides which groups survive: fee is a FILTER influence.",
)

# --- Set operations (by position) ------------------------------------------------------------


def _union_df(ctx: Ctx) -> None:
    t, c = ctx.read(TX), ctx.read(CU)
    t.select("txn_id", "amount").union(c.select("customer_id", "risk_score")).write.mode("overwrite").parquet(
        ctx.out("union_df")
    )


_add(
    "union_df", "df", "Union (by position)", _union_df,
    [Expect("union_df", {
        "txn_id": [I("transactions.txn_id"), I("customers.customer_id")],
        "amount": [I("transactions.amount"), I("customers.risk_score")],
    })],
    notes="Columns are matched by position; names come from the first branch.",
)

_add(
    "union_sql", "sql", "UNION ALL (by position)",
    _sql("union_sql", "SELECT txn_id AS id, amount AS value FROM transactions "
         "UNION ALL SELECT customer_id, risk_score * 100 FROM customers"),
    [Expect("union_sql", {
        "id": [I("transactions.txn_id"), I("customers.customer_id")],
        "value": [I("transactions.amount"), T("customers.risk_score")],
    })],
)

_SET_OP_INDIRECT = {
    "JOIN": cols(TX, "customer_id", "country") + cols(CU, "customer_id", "country"),
    "GROUP_BY": cols(TX, "customer_id", "country"),
}
_SET_OP_NOTE = (
    "Set semantics: values come from the left branch (IDENTITY); every column of both branches is "
    "compared (JOIN); the implicit DISTINCT groups by every left column (GROUP_BY)."
)

_add(
    "intersect_sql", "sql", "INTERSECT (by position)",
    _sql("intersect_sql", "SELECT customer_id, country FROM transactions "
         "INTERSECT SELECT customer_id, country FROM customers"),
    [Expect("intersect_sql", identity(TX, "customer_id", "country"), _SET_OP_INDIRECT)],
    notes=_SET_OP_NOTE,
)


def _except_df(ctx: Ctx) -> None:
    t, c = ctx.read(TX), ctx.read(CU)
    t.select("customer_id", "country").subtract(c.select("customer_id", "country")).write.mode("overwrite").parquet(
        ctx.out("except_df")
    )


_add(
    "except_df", "df", "EXCEPT DISTINCT (subtract)", _except_df,
    [Expect("except_df", identity(TX, "customer_id", "country"), _SET_OP_INDIRECT)],
    notes=_SET_OP_NOTE,
)

# --- Window ----------------------------------------------------------------------------------
_add(
    "window_sql", "sql", "Window",
    _sql("window_sql", "SELECT txn_id, customer_id, amount, "
         "row_number() OVER (PARTITION BY customer_id ORDER BY txn_ts) AS rn, "
         "sum(amount) OVER (PARTITION BY customer_id) AS cust_total FROM transactions"),
    [Expect("window_sql", {
        **identity(TX, "txn_id", "customer_id", "amount"),
        "rn": [],
        "cust_total": [A("transactions.amount")],
    }, {"WINDOW": cols(TX, "customer_id", "txn_ts")})],
    notes="row_number() reads no value: no DIRECT input; partition and order columns are WINDOW influences.",
)


def _window_df(ctx: Ctx) -> None:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.partitionBy("channel").orderBy("amount")
    ctx.read(TX).select(
        "txn_id",
        "channel",
        F.rank().over(w).alias("amount_rank"),
        F.avg("fee").over(Window.partitionBy("channel")).alias("avg_fee"),
    ).write.mode("overwrite").parquet(ctx.out("window_df"))


_add(
    "window_df", "df", "Window", _window_df,
    [Expect("window_df", {
        **identity(TX, "txn_id", "channel"),
        "amount_rank": [],
        "avg_fee": [A("transactions.fee")],
    }, {"WINDOW": cols(TX, "channel", "amount")})],
)

# --- Expand ----------------------------------------------------------------------------------
_add(
    "rollup_sql", "sql", "Expand (ROLLUP)",
    _sql("rollup_sql", "SELECT region, segment, sum(risk_score) AS total_risk, count(*) AS n FROM customers "
         "GROUP BY ROLLUP(region, segment)"),
    [Expect("rollup_sql", {
        **identity(CU, "region", "segment"),
        "total_risk": [A("customers.risk_score")],
        "n": [],
    }, {"GROUP_BY": cols(CU, "region", "segment")})],
)


def _cube_df(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    ctx.read(TX).cube("channel", "currency").agg(
        F.sum("amount").alias("total"), F.grouping_id().alias("gid")
    ).write.mode("overwrite").parquet(ctx.out("cube_df"))


_add(
    "cube_df", "df", "Expand (CUBE)", _cube_df,
    [Expect("cube_df", {
        **identity(TX, "channel", "currency"),
        "total": [A("transactions.amount")],
        "gid": [],
    }, {"GROUP_BY": cols(TX, "channel", "currency")})],
    notes="grouping_id() says which grouping set a row belongs to; it reads no column value.",
)

_add(
    "grouping_sets_sql", "sql", "Expand (GROUPING SETS)",
    _sql("grouping_sets_sql", "SELECT country, channel, sum(amount) AS total FROM transactions "
         "GROUP BY GROUPING SETS ((country), (channel), ())"),
    [Expect("grouping_sets_sql", {
        **identity(TX, "country", "channel"),
        "total": [A("transactions.amount")],
    }, {"GROUP_BY": cols(TX, "country", "channel")})],
)

_add(
    "multi_distinct_sql", "sql", "Expand (several DISTINCT aggregates)",
    _sql("multi_distinct_sql", "SELECT region, count(DISTINCT segment) AS n_segments, "
         "count(DISTINCT country) AS n_countries, sum(risk_score) AS total_risk FROM customers GROUP BY region"),
    [Expect("multi_distinct_sql", {
        "region": [I("customers.region")],
        "n_segments": [A("customers.segment", masked=True)],
        "n_countries": [A("customers.country", masked=True)],
        "total_risk": [A("customers.risk_score")],
    }, {"GROUP_BY": ["customers.region"]})],
)

# --- Generate --------------------------------------------------------------------------------


def _explode_df(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    ctx.read("baskets").select("basket_id", "customer_id", F.explode("skus").alias("sku")).write.mode(
        "overwrite"
    ).parquet(ctx.out("explode_df"))


_add(
    "explode_df", "df", "Generate (explode)", _explode_df,
    [Expect("explode_df", {**identity("baskets", "basket_id", "customer_id"), "sku": [T("baskets.skus")]},
            {"FILTER": ["baskets.skus"]})],
    notes="An element of an array is a TRANSFORMATION of the array column. A non-outer generator drops "
          "rows whose array is empty or null: the array column is a FILTER influence on the whole output.",
)


def _explode_outer_df(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    ctx.read("baskets").select("basket_id", F.explode_outer("skus").alias("sku")).write.mode("overwrite").parquet(
        ctx.out("explode_outer_df")
    )


_add(
    "explode_outer_df", "df", "Generate (explode_outer)", _explode_outer_df,
    [Expect("explode_outer_df", {"basket_id": [I("baskets.basket_id")], "sku": [T("baskets.skus")]})],
    notes="explode_outer keeps rows with empty arrays (sku null): no FILTER influence.",
)

_add(
    "posexplode_sql",
    "sql",
    "Generate (posexplode)",
    _sql("posexplode_sql", "SELECT basket_id, posexplode(skus) AS (pos, sku) FROM baskets"),
    [
        Expect(
            "posexplode_sql",
            {"basket_id": [I("baskets.basket_id")], "pos": [T("baskets.skus")], "sku": [T("baskets.skus")]},
            {"FILTER": ["baskets.skus"]},
        )
    ],
)

_add(
    "inline_sql", "sql", "Generate (inline)",
    _sql("inline_sql", "SELECT basket_id, inline(lines) FROM baskets"),
    [Expect("inline_sql", {
        "basket_id": [I("baskets.basket_id")],
        "sku": [T("baskets.lines")],
        "qty": [T("baskets.lines")],
        "price": [T("baskets.lines")],
    }, {"FILTER": ["baskets.lines"]})],
)

_add(
    "lateral_view_sql", "sql", "Generate (LATERAL VIEW)",
    _sql("lateral_view_sql", "SELECT b.basket_id, b.customer_id, s.sku FROM baskets b "
         "LATERAL VIEW explode(b.skus) s AS sku WHERE s.sku LIKE 'A%'"),
    [Expect("lateral_view_sql", {**identity("baskets", "basket_id", "customer_id"), "sku": [T("baskets.skus")]},
            {"FILTER": ["baskets.skus"]})],
)

# --- Python UDFs -----------------------------------------------------------------------------


def _python_udf_df(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    def risk_band(amount, fee):  # type: ignore[no-untyped-def] - hints would make Spark try Arrow
        return "high" if (amount or 0) + (fee or 0) > 100 else "low"

    # useArrow=False: the classic BatchEvalPython path, whatever spark.sql.execution.pythonUDF.arrow.enabled
    # says (Arrow-optimised UDFs become ArrowEvalPython, which is what the pandas UDF scenario covers).
    band = F.udf(risk_band, "string", useArrow=False)
    ctx.read(TX).select("txn_id", band("amount", "fee").alias("band")).write.mode("overwrite").parquet(
        ctx.out("python_udf_df")
    )


_add(
    "python_udf_df",
    "df",
    "Python UDF (BatchEvalPython)",
    _python_udf_df,
    [
        Expect(
            "python_udf_df",
            {"txn_id": [I("transactions.txn_id")], "band": [T("transactions.amount"), T("transactions.fee")]},
        )
    ],
    notes="A UDF is a black box: its output is a TRANSFORMATION of every argument.",
)


def _times(a: pd.Series, b: pd.Series) -> pd.Series:
    return a * b


def _pandas_udf_df(ctx: Ctx) -> None:
    from pyspark.sql.functions import pandas_udf

    times = pandas_udf(_times, "double")  # type: ignore[call-overload]
    ctx.read(TX).select("txn_id", times("amount", "tax_rate").alias("tax")).write.mode("overwrite").parquet(
        ctx.out("pandas_udf_df")
    )


_add(
    "pandas_udf_df",
    "df",
    "pandas UDF (ArrowEvalPython)",
    _pandas_udf_df,
    [
        Expect(
            "pandas_udf_df",
            {"txn_id": [I("transactions.txn_id")], "tax": [T("transactions.amount"), T("transactions.tax_rate")]},
        )
    ],
)

# --- Sub-queries -----------------------------------------------------------------------------
_add(
    "scalar_subquery_sql", "sql", "Scalar sub-query",
    _sql("scalar_subquery_sql", "SELECT txn_id, amount, amount / (SELECT avg(rate_to_eur) FROM fx_rates "
         "WHERE currency <> 'EUR') AS scaled FROM transactions"),
    [Expect("scalar_subquery_sql", {
        **identity(TX, "txn_id", "amount"),
        "scaled": [T("transactions.amount"), A("fx_rates.rate_to_eur")],
    }, {"FILTER": ["fx_rates.currency"]})],
    notes="The sub-query's WHERE decides the scalar's value: fx_rates.currency is a FILTER influence.",
)

# --- Sort / Limit / Sample / Repartition ------------------------------------------------------


def _sort_limit_df(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    ctx.read(TX).orderBy(F.col("amount").desc()).limit(5).select("txn_id", "customer_id", "amount").write.mode(
        "overwrite"
    ).parquet(ctx.out("sort_limit_df"))


_add(
    "sort_limit_df", "df", "Sort + Limit", _sort_limit_df,
    [Expect("sort_limit_df", identity(TX, "txn_id", "customer_id", "amount"), {"SORT": ["transactions.amount"]})],
)

_add(
    "sort_sql", "sql", "Sort",
    _sql("sort_sql", "SELECT txn_id, channel, amount FROM transactions ORDER BY channel, txn_ts DESC"),
    [Expect("sort_sql", identity(TX, "txn_id", "channel", "amount"), {"SORT": cols(TX, "channel", "txn_ts")})],
)


def _sample_df(ctx: Ctx) -> None:
    ctx.read(TX).sample(fraction=0.5, seed=7).select("txn_id", "amount").write.mode("overwrite").parquet(
        ctx.out("sample_df")
    )


_add(
    "sample_df", "df", "Sample", _sample_df,
    [Expect("sample_df", identity(TX, "txn_id", "amount"))],
    notes="Random sampling reads no column: no INDIRECT influence.",
)


def _repartition_df(ctx: Ctx) -> None:
    ctx.read(TX).repartition(2, "customer_id").select("txn_id", "customer_id", "amount").write.mode(
        "overwrite"
    ).parquet(ctx.out("repartition_df"))


_add(
    "repartition_df", "df", "Repartition", _repartition_df,
    [Expect("repartition_df", identity(TX, "txn_id", "customer_id", "amount"))],
    notes="Repartitioning moves rows between partitions; it changes no value and no row set.",
)

# --- Deduplicate -----------------------------------------------------------------------------


def _dedup_df(ctx: Ctx) -> None:
    ctx.read(TX).dropDuplicates(["customer_id", "channel"]).select("customer_id", "channel", "amount").write.mode(
        "overwrite"
    ).parquet(ctx.out("dedup_df"))


_add(
    "dedup_df", "df", "Deduplicate (dropDuplicates)", _dedup_df,
    [Expect("dedup_df", identity(TX, "customer_id", "channel", "amount"),
            {"GROUP_BY": cols(TX, "customer_id", "channel")})],
    notes="dropDuplicates(subset) keeps one whole row per key: the non-key value is taken as is "
          "(IDENTITY), though Spark rewrites it to first(); the keys group (GROUP_BY).",
)

_add(
    "distinct_sql",
    "sql",
    "Deduplicate (SELECT DISTINCT)",
    _sql("distinct_sql", "SELECT DISTINCT customer_id, currency FROM transactions"),
    [
        Expect(
            "distinct_sql", identity(TX, "customer_id", "currency"), {"GROUP_BY": cols(TX, "customer_id", "currency")}
        )
    ],
)

# --- Cache / temp views / CTEs / local data ---------------------------------------------------


def _cache_df(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    booked = (
        ctx.read(TX)
        .where(F.col("status") == "BOOKED")
        .select("txn_id", "customer_id", (F.col("amount") - F.col("fee")).alias("net"))
        .cache()
    )
    try:
        booked.count()
        booked.groupBy("customer_id").agg(F.sum("net").alias("net_total")).write.mode("overwrite").parquet(
            ctx.out("cache_df")
        )
    finally:
        booked.unpersist()


_add(
    "cache_df", "df", "Cached DataFrame (InMemoryRelation)", _cache_df,
    [Expect("cache_df", {
        "customer_id": [I("transactions.customer_id")],
        "net_total": [A("transactions.amount"), A("transactions.fee")],
    }, {"FILTER": ["transactions.status"], "GROUP_BY": ["transactions.customer_id"]})],
    notes="The cache is transparent: lineage reaches through the InMemoryRelation to the Parquet input.",
)


def _temp_view_sql(ctx: Ctx) -> None:
    ctx.read(TX).where("channel = 'online'").select("txn_id", "customer_id", "amount").createOrReplaceTempView(
        "online_txn"
    )
    ctx.sql(
        "SELECT o.customer_id, sum(o.amount) AS online_total FROM online_txn o GROUP BY o.customer_id"
    ).write.mode("overwrite").parquet(ctx.out("temp_view_sql"))


_add(
    "temp_view_sql", "sql", "Temp view", _temp_view_sql,
    [Expect("temp_view_sql", {
        "customer_id": [I("transactions.customer_id")],
        "online_total": [A("transactions.amount")],
    }, {"FILTER": ["transactions.channel"], "GROUP_BY": ["transactions.customer_id"]})],
)

_add(
    "cte_sql", "sql", "CTE",
    _sql("cte_sql", "WITH booked AS (SELECT * FROM transactions WHERE status = 'BOOKED'), "
         "per_cust AS (SELECT customer_id, sum(amount) AS total FROM booked GROUP BY customer_id) "
         "SELECT p.customer_id, p.total, c.segment FROM per_cust p JOIN customers c ON p.customer_id = c.customer_id"),
    [Expect("cte_sql", {
        "customer_id": [I("transactions.customer_id")],
        "total": [A("transactions.amount")],
        "segment": [I("customers.segment")],
    }, {
        "FILTER": ["transactions.status"],
        "GROUP_BY": ["transactions.customer_id"],
        "JOIN": ["transactions.customer_id", "customers.customer_id"],
    })],
)


def _local_data_df(ctx: Ctx) -> None:
    groups = ctx.spark.createDataFrame(
        [("online", "digital"), ("mobile", "digital"), ("branch", "physical"), ("atm", "physical")],
        "channel string, channel_group string",
    )
    ctx.read(TX).join(groups, "channel").select("txn_id", "channel", "channel_group", "amount").write.mode(
        "overwrite"
    ).parquet(ctx.out("local_data_df"))


_add(
    "local_data_df", "df", "Local data (createDataFrame)", _local_data_df,
    [Expect("local_data_df", {
        **identity(TX, "txn_id", "channel", "amount"),
        "channel_group": [],
    }, {"JOIN": ["transactions.channel"]})],
    notes="Local data is no input dataset: channel_group has no input, and only the transactions side of "
          "the join key is an influence.",
)

# --- Write commands --------------------------------------------------------------------------


def _write_partitioned_df(ctx: Ctx) -> None:
    ctx.read(TX).select("txn_id", "amount", "currency", "txn_date").write.mode("overwrite").partitionBy(
        "currency"
    ).parquet(ctx.out("write_partitioned_df"))


_add(
    "write_partitioned_df", "df", "Write: partitioned Parquet path", _write_partitioned_df,
    [Expect("write_partitioned_df", identity(TX, "txn_id", "amount", "currency", "txn_date"))],
)


def _write_save_as_table_df(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    ctx.read(TX).groupBy("channel").agg(F.sum("fee").alias("fees")).write.mode("overwrite").saveAsTable(
        "write_save_as_table_df"
    )


_add(
    "write_save_as_table_df", "df", "Write: saveAsTable", _write_save_as_table_df,
    [Expect("write_save_as_table_df", {"channel": [I("transactions.channel")], "fees": [A("transactions.fee")]},
            {"GROUP_BY": ["transactions.channel"]})],
    setup=_drop("write_save_as_table_df"),
    teardown=_drop("write_save_as_table_df"),
)


def _write_insert_into_df(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    ctx.read(TX).groupBy("customer_id").agg(F.sum("amount").alias("s")).write.insertInto("write_insert_into_df")


_add(
    "write_insert_into_df", "df", "Write: insertInto (by position, other names)", _write_insert_into_df,
    [Expect("write_insert_into_df", {"k": [I("transactions.customer_id")], "total": [A("transactions.amount")]},
            {"GROUP_BY": ["transactions.customer_id"]})],
    setup=_create("write_insert_into_df", "k int, total double"),
    teardown=_drop("write_insert_into_df"),
    notes="insertInto maps by position: the DataFrame's customer_id/s land in the table's k/total.",
)


def _write_sql_insert(ctx: Ctx) -> None:
    ctx.sql(
        "INSERT INTO write_sql_insert SELECT txn_id, amount - fee, channel FROM transactions WHERE currency = 'EUR'"
    )


_add(
    "write_sql_insert", "sql", "Write: SQL INSERT INTO", _write_sql_insert,
    [Expect("write_sql_insert", {
        "txn_id": [I("transactions.txn_id")],
        "net": [T("transactions.amount"), T("transactions.fee")],
        "channel": [I("transactions.channel")],
    }, {"FILTER": ["transactions.currency"]})],
    setup=_create("write_sql_insert", "txn_id int, net double, channel string"),
    teardown=_drop("write_sql_insert"),
)


def _write_ctas_sql(ctx: Ctx) -> None:
    ctx.sql(
        "CREATE TABLE write_ctas_sql USING parquet AS "
        "SELECT customer_id, max(amount) AS max_amount FROM transactions GROUP BY customer_id"
    )


_add(
    "write_ctas_sql",
    "sql",
    "Write: CTAS",
    _write_ctas_sql,
    [
        Expect(
            "write_ctas_sql",
            {"customer_id": [I("transactions.customer_id")], "max_amount": [A("transactions.amount")]},
            {"GROUP_BY": ["transactions.customer_id"]},
        )
    ],
    setup=_drop("write_ctas_sql"),
    teardown=_drop("write_ctas_sql"),
)


def _write_noop_df(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    ctx.read(TX).select("txn_id", (F.col("amount") * 2).alias("double_amount")).write.format("noop").mode(
        "overwrite"
    ).save()


_add(
    "write_noop_df", "df", "Write: V2 noop format", _write_noop_df,
    [Expect("*", {"txn_id": [I("transactions.txn_id")], "double_amount": [T("transactions.amount")]})],
    notes="The noop sink has no dataset identity; its single output is compared whatever its name.",
)


def _write_writeto_df(ctx: Ctx) -> None:
    ctx.read(TX).select("txn_id", "amount").writeTo("write_writeto_df").using("parquet").create()


_add(
    "write_writeto_df", "df", "Write: DataFrameWriterV2 writeTo().create()", _write_writeto_df,
    [Expect("write_writeto_df", identity(TX, "txn_id", "amount"))],
    setup=_drop("write_writeto_df"),
    teardown=_drop("write_writeto_df"),
)

# --- Masking / CASE WHEN ----------------------------------------------------------------------
_add(
    "masking_sql", "sql", "Masking (sha2, md5)",
    _sql("masking_sql", "SELECT customer_id, sha2(email, 256) AS email_hash, md5(phone) AS phone_md5, "
         "sha2(concat(first_name, last_name), 256) AS name_hash, substr(email, 1, 3) AS email_prefix FROM customers"),
    [Expect("masking_sql", {
        "customer_id": [I("customers.customer_id")],
        "email_hash": [T("customers.email", masked=True)],
        "phone_md5": [T("customers.phone", masked=True)],
        "name_hash": [T("customers.first_name", masked=True), T("customers.last_name", masked=True)],
        "email_prefix": [T("customers.email")],
    })],
)


def _masking_df(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    ctx.read(CU).groupBy("region").agg(
        F.count("email").alias("n_emails"),
        F.countDistinct("phone").alias("n_phones"),
        F.sum("risk_score").alias("risk"),
    ).write.mode("overwrite").parquet(ctx.out("masking_df"))


_add(
    "masking_df", "df", "Masking (count, count distinct)", _masking_df,
    [Expect("masking_df", {
        "region": [I("customers.region")],
        "n_emails": [A("customers.email", masked=True)],
        "n_phones": [A("customers.phone", masked=True)],
        "risk": [A("customers.risk_score")],
    }, {"GROUP_BY": ["customers.region"]})],
)

_add(
    "case_when_sql", "sql", "CASE WHEN (CONDITIONAL)",
    _sql("case_when_sql", "SELECT txn_id, CASE WHEN amount > 100 THEN 'large' WHEN channel = 'atm' THEN 'cash' "
         "ELSE 'small' END AS bucket, CASE WHEN is_reversal THEN -amount ELSE amount END AS signed_amount "
         "FROM transactions"),
    [Expect("case_when_sql", {
        "txn_id": [I("transactions.txn_id")],
        "bucket": [],
        "signed_amount": [T("transactions.amount")],
    }, {"CONDITIONAL": cols(TX, "amount", "channel", "is_reversal")})],
    notes="CASE WHEN conditions are INDIRECT CONDITIONAL; branch values are DIRECT (TRANSFORMATION: the "
          "output is not always that input).",
)


def _case_when_df(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    ctx.read(TX).select(
        "txn_id",
        F.when(F.col("fee") > 1, F.col("fee") * 2).otherwise(F.col("amount") * 0.01).alias("charge"),
        F.when(F.col("country") == "US", F.lit("domestic")).alias("us_flag"),
    ).write.mode("overwrite").parquet(ctx.out("case_when_df"))


_add(
    "case_when_df", "df", "when/otherwise (CONDITIONAL)", _case_when_df,
    [Expect("case_when_df", {
        "txn_id": [I("transactions.txn_id")],
        "charge": [T("transactions.fee"), T("transactions.amount")],
        "us_flag": [],
    }, {"CONDITIONAL": cols(TX, "fee", "country")})],
)
