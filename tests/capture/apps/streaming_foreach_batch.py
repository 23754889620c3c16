"""Test app: two ``foreachBatch`` queries over a Parquet source of two files (one per micro-batch with
``maxFilesPerTrigger=1``): ``availableNow`` (two micro-batches) writing ``fb_available``, ``once`` (one) writing
``fb_once``. The source is written first (batch writes, also captured)."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

out = sys.argv[1]
spark = (
    SparkSession.builder.appName("streaming_foreach_batch").master("local[1]")
    .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false").getOrCreate()
)
for part in range(2):
    spark.range(part * 3, part * 3 + 3).withColumn("v", F.col("id") * 2).coalesce(1).write.mode("append") \
        .parquet(out + "/src")


def stream():
    return (spark.readStream.schema("id long, v long").option("maxFilesPerTrigger", 1).parquet(out + "/src")
            .select((F.col("v") + 1).alias("w"), "id"))


def writer(target):
    def write(df, batch_id):
        df.select("id", (F.col("w") * 10).alias("w10")).write.mode("append").parquet(target)
    return write


(stream().writeStream.foreachBatch(writer(out + "/fb_available")).option("checkpointLocation", out + "/ck1")
 .trigger(availableNow=True).start().awaitTermination())
(stream().writeStream.foreachBatch(writer(out + "/fb_once")).option("checkpointLocation", out + "/ck2")
 .trigger(once=True).start().awaitTermination())
