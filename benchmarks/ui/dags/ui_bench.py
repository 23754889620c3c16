"""Benchmark DAG of the column-lineage view: 10 tasks, each keeps one synthetic lineage record in XCom
``column_lineage``, as SparkLineageSubmitOperator does (sizes from the run conf)."""
from __future__ import annotations

import pendulum
from airflow.sdk import DAG, task

TASKS = 10

with DAG(dag_id="ui_bench", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC"), catchup=False,
         params={"columns": 200, "edges": 500}) as dag:
    for i in range(TASKS):

        @task(task_id=f"task_{i:02d}")
        def keep(index: int, columns: str, edges: str, **context: object) -> None:
            from airflow_provider_lineage.lineage import run_record
            from benchmarks.ui.synthetic import records

            rec = records(TASKS, int(columns), int(edges))[index]
            context["ti"].xcom_push(key=run_record.XCOM_KEY, value=rec)  # type: ignore[attr-defined]

        keep(i, "{{ params.columns }}", "{{ params.edges }}")
