"""DAG ``pyspark_lineage_streaming`` for tests/operators/test_pyspark_streaming.py: one ``@task.pyspark_lineage`` task
whose function runs three Structured Streaming queries over ``<data_dir>/src`` (Parquet, one file per micro-batch):

* a file sink with ``availableNow`` (``<data_dir>/file_sink``);
* ``foreachBatch`` with ``availableNow``, the function writing each batch (``<data_dir>/fb``);
* a file sink with a ``processingTime`` trigger that the function leaves running (``<data_dir>/running``).

``params.conn_id``: ``spark_default`` (the in-process session) or ``spark_connect_default`` (a lineage Connect server).
"""
from __future__ import annotations

from typing import Any

import pendulum
from airflow.sdk import DAG, task


def streams(data_dir: str, spark: Any = None) -> str:
    from pyspark.sql import functions as F

    def stream() -> Any:
        return (spark.readStream.schema("id long, v long").option("maxFilesPerTrigger", 1).parquet(f"{data_dir}/src")
                .select((F.col("v") + 1).alias("w"), "id"))

    (stream().writeStream.format("parquet").option("checkpointLocation", f"{data_dir}/ck1")
     .trigger(availableNow=True).start(f"{data_dir}/file_sink").awaitTermination())

    def write(df: Any, _batch: int) -> None:
        df.select("id", (F.col("w") * 10).alias("w10")).write.mode("append").parquet(f"{data_dir}/fb")

    (stream().writeStream.foreachBatch(write).option("checkpointLocation", f"{data_dir}/ck2")
     .trigger(availableNow=True).start().awaitTermination())
    left = (stream().writeStream.format("parquet").queryName("apl_left_running")
            .option("checkpointLocation", f"{data_dir}/ck3").trigger(processingTime="1 second")
            .start(f"{data_dir}/running"))
    left.processAllAvailable()
    return data_dir


with DAG(dag_id="pyspark_lineage_streaming", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
         catchup=False, params={"data_dir": "/tmp", "conn_id": "spark_default"}, tags=["test"]):
    task.pyspark_lineage(
        task_id="streams", conn_id="{{ params.conn_id }}", config_kwargs={"spark.sql.shuffle.partitions": "2"},
        lineage_emission="self",
    )(streams)(data_dir="{{ params.data_dir }}")
