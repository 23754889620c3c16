"""``sieve_pruning=True`` on the lineage operators: the user's Spark code is unchanged and its Parquet scans
of indexed tables read the index's candidates (real Spark ``local[2]``; the launcher's side, a real
``spark-submit``, is in ``tests/sieve/test_spark_prune.py``)."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.capture.config import LauncherConfig
from airflow_provider_lineage.operators.pyspark import PySparkLineageOperator
from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator
from airflow_provider_lineage.operators.spark_sql import SparkSqlLineageOperator
from airflow_provider_lineage.sieve.spark import prune


def _indexed_table(root: str, n_files: int = 6) -> None:
    os.makedirs(root)
    for i in range(n_files):
        keys = list(range(i * 10, i * 10 + 10))
        pq.write_table(pa.table({"k": pa.array(keys, pa.int64())}), os.path.join(root, f"part-{i}.parquet"))
    S.build(None, root, "k")


def test_pyspark_lineage_operator_prunes_its_sessions_scans(spark, tmp_path) -> None:
    root = str(tmp_path / "t")
    _indexed_table(root)

    def files_read(spark: Any) -> int:
        return len(spark.read.parquet(root).where("k = 17").inputFiles())

    op = PySparkLineageOperator(task_id="pruned", python_callable=files_read, sieve_pruning=True)
    assert op.spark_settings()[0]["spark.airflow_lineage.sievePruning"] == "true"
    # the user's function called directly (PythonOperator's runner needs a task context: dag.test() territory)
    op._call = files_read
    assert op._run_local(spark) == 1
    assert not prune.is_enabled(spark)  # a session the task did not create goes back as it came
    plain = PySparkLineageOperator(task_id="plain", python_callable=files_read)
    assert "spark.airflow_lineage.sievePruning" not in plain.spark_settings()[0]
    plain._call = files_read
    assert plain._run_local(spark) == 6


def test_submit_operators_pass_the_property_to_the_launcher() -> None:
    submit = SparkLineageSubmitOperator(task_id="submit", application="/jobs/app.py", sieve_pruning=True)
    sql = SparkSqlLineageOperator(task_id="sql", sql="SELECT 1", sieve_pruning=True)
    assert submit.sieve_pruning and sql.sieve_pruning
    assert not SparkLineageSubmitOperator(task_id="off", application="/jobs/app.py").sieve_pruning
    # what execute() hands the driver (LauncherConfig(..., sieve_pruning=op.sieve_pruning).to_spark_conf())
    assert (
        LauncherConfig(sieve_pruning=submit.sieve_pruning).to_spark_conf()[
            "spark.airflow_lineage.sievePruning"
        ]
        == "true"
    )
