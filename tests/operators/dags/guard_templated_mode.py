"""A DAG whose guard arguments are templates (tests/operators/test_guard_unit.py): ``mode`` and ``tags`` come from
the run's params; the application must never run (a bad mode fails the task at start)."""
from __future__ import annotations

from airflow.sdk import DAG, Param

from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator

with DAG("guard_templated_mode", schedule=None,
         params={"mode": Param("Bogus", type="string"), "tags": Param("pii", type="string"),
                 "app": Param("/nowhere/app.py", type="string")}):
    SparkLineageSubmitOperator(task_id="t", application="{{ params.app }}", on_policy_violation="{{ params.mode }}",
                               require_masked="{{ params.tags }}")
