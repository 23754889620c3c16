"""DAG ``guard_baseline`` for tests/operators/test_guard_baseline.py: no Spark, the guard's baseline only.

``probe`` (and ``shard``, mapped over two map indexes) keeps a small lineage record (XCom
``column_lineage``, what SparkLineageSubmitOperator keeps) after running the guard on it, as the operator
does: the guard pushes ``lineage_diff`` whose ``previous_run_id`` is the baseline it found. The param
``fail_shard`` makes that map index fail after keeping its record (a failed run is never a baseline).
"""
from __future__ import annotations

import logging

import pendulum
from airflow.sdk import DAG, get_current_context, task

log = logging.getLogger("guard_baseline")


def _record(name: str) -> dict:
    return {"format": "airflow-provider-lineage/column-lineage", "version": 1, "status": "ok",
            "datasets": [{"namespace": "file", "name": "/nowhere/in", "table": None, "fields": [["id", "int"]]},
                         {"namespace": "file", "name": f"/nowhere/{name}", "table": None, "fields": [["id", "int"]]}],
            "inputs": [0], "outputs": [1], "edges": [[1, "id", 0, "id", "DIRECT", "IDENTITY", 0]],
            "dataset_edges": [], "problems": []}


def _keep(name: str, fail: bool) -> None:
    from airflow_provider_lineage.operators._lineage import guard

    ti = get_current_context()["ti"]
    record = _record(name)
    guard.Guard(on_lineage_change="warn", require_masked=None, on_policy_violation="warn").run(ti, record, log, log)
    ti.xcom_push(key="column_lineage", value=record)
    if fail:
        raise RuntimeError("failing on purpose (params.fail_shard): this run is no baseline")


with DAG(dag_id="guard_baseline", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
         catchup=False, params={"fail_shard": -1}, tags=["test"]):

    @task
    def probe() -> None:
        _keep("guard-baseline-probe", False)

    @task
    def shard(n: int) -> None:
        _keep("guard-baseline-shard-" + "ab"[n], get_current_context()["params"]["fail_shard"] == n)

    probe()
    shard.expand(n=[0, 1])
