"""The flows of the example declarative pipeline (dags/lineage_declarative_pipeline.py): a streaming table over
the landing folder, and a materialized view over it. The landing folder comes from the spec's configuration."""
from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

spark = SparkSession.active()
DATA_DIR = spark.conf.get("spark.lineage_demo.data_dir")
# a file stream needs its schema up front; a flow function may not read data to infer it
SCHEMA = "txn_id long, customer_id long, channel string, amount double, fx_rate double, status string"


@dp.table(comment="Booked transactions in EUR, appended as files land")
def booked_eur() -> DataFrame:
    return (
        spark.readStream.schema(SCHEMA)
        .parquet(f"{DATA_DIR}/transactions")
        .where(F.col("status") == "BOOKED")
        .select("txn_id", "customer_id", "channel", F.round(F.col("amount") * F.col("fx_rate"), 2).alias("amount_eur"))
    )


@dp.materialized_view(comment="Totals per channel")
def channel_totals() -> DataFrame:
    return spark.read.table("booked_eur").groupBy("channel").agg(F.sum("amount_eur").alias("total_eur"))
