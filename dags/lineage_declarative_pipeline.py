"""Example DAG: a Spark 4.1 declarative pipeline (``spark-pipelines run``) with the column lineage of every flow.

``prepare`` writes the input table and the pipeline project (``spark-pipeline.yml`` with the flows of
``pipelines/sales_flows/``: a streaming table over the landing folder and two materialized views) under the
``data_dir`` param; ``run_pipeline`` is :class:`SparkPipelinesLineageOperator`, the drop-in for the Spark provider's
``SparkPipelinesOperator``: the same ``pipeline_spec``, ``pipeline_command`` and ``conf``. Each flow's write is
captured in the pipeline's driver and published like any write of ``SparkLineageSubmitOperator``.

Needs pyspark >= 4.1 and ``spark_default`` with a local master (e.g. ``AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type":
"spark", "host": "local[2]"}'``): ``spark-pipelines`` runs the pipeline in a local Spark Connect server.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pendulum
from airflow.sdk import DAG, task

from airflow_provider_lineage.operators.spark_pipelines import SparkPipelinesLineageOperator

HERE = Path(__file__).resolve().parent
DEFAULT_DATA_DIR = os.environ.get("LINEAGE_DEMO_DATA_DIR") or str(
    Path(os.environ.get("AIRFLOW_HOME", os.path.expanduser("~/airflow"))) / "lineage_demo"
)

with DAG(
    dag_id="lineage_declarative_pipeline",
    description="A declarative pipeline (streaming table + materialized views) with the column lineage of every flow",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    params={"data_dir": DEFAULT_DATA_DIR, "rows": 2000},
    tags=["lineage", "example"],
) as dag:

    @task
    def prepare(data_dir: str, rows: int) -> str:
        """The input table and the pipeline project (its storage and data folder are absolute paths)."""
        spec = importlib.util.spec_from_file_location(
            "generate_transactions", HERE / "apps" / "generate_transactions.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.generate(Path(data_dir) / "transactions", rows=int(rows))
        project = Path(data_dir) / "pipeline"
        shutil.rmtree(project / "transformations", ignore_errors=True)
        shutil.copytree(HERE / "pipelines" / "sales_flows", project / "transformations")
        (project / "spark-pipeline.yml").write_text(
            "name: sales_flows\n"
            f"storage: file://{project}/storage\n"
            "libraries:\n  - glob:\n      include: transformations/**\n"
            f"configuration:\n  spark.lineage_demo.data_dir: \"{data_dir}\"\n",
            encoding="utf-8",
        )
        return str(project / "spark-pipeline.yml")

    spec = prepare("{{ params.data_dir }}", "{{ params.rows }}")

    run_pipeline = SparkPipelinesLineageOperator(
        task_id="run_pipeline",
        pipeline_spec="{{ params.data_dir }}/pipeline/spark-pipeline.yml",
        conn_id="spark_default",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},  # tables: ./spark-warehouse
    )

    spec >> run_pipeline
