"""Test DAG (tests/deployment/test_concurrency.py only): rebuild one Sieve index, with as many runs at
once as the test triggers -- two maintainers of one index racing to commit."""
from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_provider_lineage.operators.sieve import SieveIndexOperator

with DAG(
    dag_id="sieve_race",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=4,
    params={"table": "", "column": "k", "index_path": ""},
):
    SieveIndexOperator(
        task_id="rebuild",
        table="{{ params.table }}",
        columns="{{ params.column }}",
        index_path="{{ params.index_path }}",
        mode="rebuild",
        engine="pyarrow",
        conn_id="spark_default",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},
    )
