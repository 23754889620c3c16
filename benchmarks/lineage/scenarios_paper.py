"""Scenarios C1-C3 of the seed paper (Volkov et al., 2025, Table 3), as DataFrame-API pipelines.

C1: one transactions table: filter by period, projection, computed fields, write a mart.
C2: transactions + customer reference: prepare, join on customer id, project, write.
C3: C2 plus aggregation by customer and period with several measures.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from benchmarks.lineage.reference import A, Expect, I, T, cols, identity
from benchmarks.lineage.scenario import Ctx, Scenario

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def _c1(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    t = ctx.read("transactions")
    mart = t.where(
        (F.col("txn_date") >= F.lit("2024-01-01").cast("date"))
        & (F.col("txn_date") < F.lit("2024-04-01").cast("date"))
        & (F.col("status") == "BOOKED")
    ).select(
        "txn_id",
        "customer_id",
        "account_id",
        "txn_date",
        "currency",
        "channel",
        "merchant_id",
        (F.col("amount") - F.col("fee")).alias("net_amount"),
        F.round(F.col("amount") * F.col("tax_rate"), 2).alias("tax_amount"),
        (F.col("amount") + F.col("fee") + F.col("amount") * F.col("tax_rate")).alias("gross_amount"),
        (F.year("txn_date") * 100 + F.month("txn_date")).alias("period"),
        F.hour("txn_ts").alias("txn_hour"),
        F.upper(F.col("country")).alias("country_code"),
        F.concat_ws("-", F.col("mcc"), F.col("merchant_id").cast("string")).alias("merchant_key"),
    )
    mart.write.mode("overwrite").parquet(ctx.out("c1_mart"))


C1 = Scenario(
    sid="C1",
    api="df",
    covers="Filter, Project",
    run=_c1,
    group="paper",
    paper=(100, 100),
    expects=[
        Expect(
            "c1_mart",
            {
                **identity("transactions", "txn_id", "customer_id", "account_id", "txn_date", "currency", "channel",
                           "merchant_id"),
                "net_amount": [T("transactions.amount"), T("transactions.fee")],
                "tax_amount": [T("transactions.amount"), T("transactions.tax_rate")],
                "gross_amount": [T("transactions.amount"), T("transactions.fee"), T("transactions.tax_rate")],
                "period": [T("transactions.txn_date")],
                "txn_hour": [T("transactions.txn_ts")],
                "country_code": [T("transactions.country")],
                "merchant_key": [T("transactions.mcc"), T("transactions.merchant_id")],
            },
            {"FILTER": cols("transactions", "txn_date", "status")},
        )
    ],
)


def _c2_join(ctx: Ctx) -> DataFrame:
    from pyspark.sql import functions as F

    t = ctx.read("transactions").where(
        (F.col("txn_date") >= F.lit("2024-01-01").cast("date"))
        & (F.col("txn_date") < F.lit("2024-07-01").cast("date"))
        & (F.col("status") != "REJECTED")
    ).withColumn("net_amount", F.col("amount") - F.col("fee"))
    c = (
        ctx.read("customers")
        .where(F.col("is_active"))
        .select(
            "customer_id",
            F.concat_ws(" ", "first_name", "last_name").alias("customer_name"),
            "birth_date",
            "segment",
            "region",
            F.col("country").alias("home_country"),
            "risk_score",
        )
    )
    return t.join(c, "customer_id", "inner")


def _c2(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    j = _c2_join(ctx)
    out = j.select(
        "txn_id",
        "customer_id",
        "txn_date",
        "net_amount",
        "currency",
        "customer_name",
        "segment",
        "region",
        F.floor(F.datediff("txn_date", "birth_date") / 365.25).cast("int").alias("age_at_txn"),
        (F.col("amount") * F.col("risk_score")).alias("risk_weighted_amount"),
        F.col("country").alias("txn_country"),
        "home_country",
        (F.col("country") != F.col("home_country")).alias("is_cross_border"),
    )
    out.write.mode("overwrite").parquet(ctx.out("c2_mart"))


_C2_INDIRECT = {
    "FILTER": cols("transactions", "txn_date", "status") + cols("customers", "is_active"),
    "JOIN": ["transactions.customer_id", "customers.customer_id"],
}

C2 = Scenario(
    sid="C2",
    api="df",
    covers="Project, Filter, Join",
    run=_c2,
    group="paper",
    paper=(98, 96),
    notes="Using-join on customer_id: the output customer_id is the transactions side's (inner join).",
    expects=[
        Expect(
            "c2_mart",
            {
                **identity("transactions", "txn_id", "customer_id", "txn_date", "currency"),
                "net_amount": [T("transactions.amount"), T("transactions.fee")],
                "customer_name": [T("customers.first_name"), T("customers.last_name")],
                **identity("customers", "segment", "region"),
                "age_at_txn": [T("transactions.txn_date"), T("customers.birth_date")],
                "risk_weighted_amount": [T("transactions.amount"), T("customers.risk_score")],
                "txn_country": [I("transactions.country")],
                "home_country": [I("customers.country")],
                "is_cross_border": [T("transactions.country"), T("customers.country")],
            },
            _C2_INDIRECT,
        )
    ],
)


def _c3(ctx: Ctx) -> None:
    from pyspark.sql import functions as F

    j = _c2_join(ctx)
    agg = j.groupBy("customer_id", F.trunc("txn_date", "month").alias("period"), "segment", "region").agg(
        F.count("txn_id").alias("txn_count"),
        F.round(F.sum("net_amount"), 2).alias("total_net"),
        F.max("amount").alias("max_amount"),
        F.countDistinct("channel").alias("channel_count"),
        F.sum(F.when(F.col("channel") == "online", F.col("amount")).otherwise(F.lit(0.0))).alias("online_amount"),
        (F.sum(F.col("amount") * F.col("risk_score")) / F.sum("amount")).alias("weighted_risk"),
        F.min("txn_date").alias("first_txn_date"),
        F.avg(F.datediff("txn_date", "birth_date")).alias("avg_age_days"),
        F.max(F.col("country") != F.col("home_country")).alias("any_cross_border"),
    )
    agg.write.mode("overwrite").parquet(ctx.out("c3_mart"))


C3 = Scenario(
    sid="C3",
    api="df",
    covers="Filter, Project, Join, Aggregate",
    run=_c3,
    group="paper",
    paper=(95, 92),
    notes=(
        "count(txn_id) and countDistinct(channel) are masking aggregations; the CASE WHEN condition "
        "column (channel) is an INDIRECT CONDITIONAL influence, its value column (amount) DIRECT."
    ),
    expects=[
        Expect(
            "c3_mart",
            {
                "customer_id": [I("transactions.customer_id")],
                "period": [T("transactions.txn_date")],
                **identity("customers", "segment", "region"),
                "txn_count": [A("transactions.txn_id", masked=True)],
                "total_net": [A("transactions.amount"), A("transactions.fee")],
                "max_amount": [A("transactions.amount")],
                "channel_count": [A("transactions.channel", masked=True)],
                "online_amount": [A("transactions.amount")],
                "weighted_risk": [A("transactions.amount"), A("customers.risk_score")],
                "first_txn_date": [A("transactions.txn_date")],
                "avg_age_days": [A("transactions.txn_date"), A("customers.birth_date")],
                "any_cross_border": [A("transactions.country"), A("customers.country")],
            },
            {
                **_C2_INDIRECT,
                "GROUP_BY": cols("transactions", "customer_id", "txn_date") + cols("customers", "segment", "region"),
                "CONDITIONAL": ["transactions.channel"],
            },
        )
    ],
)

PAPER_SCENARIOS = [C1, C2, C3]
