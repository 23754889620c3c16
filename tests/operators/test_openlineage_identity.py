"""Task-run identity equals what Airflow's OpenLineage provider computes (pure Python, no DAG run).

Sources: airflow/providers/openlineage/plugins/macros.py (lineage_job_namespace, lineage_job_name,
lineage_run_id, lineage_parent_id, lineage_root_*), plugins/adapter.py (build_task_instance_run_id,
build_dag_run_id), utils/utils.py (build_task_instance_ol_run_id, build_dag_run_ol_run_id).
"""
from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest

from airflow_provider_lineage.operators._lineage import openlineage_identity as oi

WHEN = dt.datetime(2026, 3, 1, 6, 0, tzinfo=dt.UTC)


def _ti(map_index: int = -1, try_number: int = 1, clear_number: int = 0):
    dag_run = SimpleNamespace(logical_date=WHEN, run_after=WHEN, clear_number=clear_number, conf={})
    ti = SimpleNamespace(dag_id="etl", task_id="spark", try_number=try_number, map_index=map_index, dag_run=dag_run,
                         run_id="scheduled__2026-03-01")
    ti.get_template_context = lambda: {"dag_run": dag_run}
    return ti


@pytest.mark.parametrize("map_index", [-1, 0, 3])
def test_identity_equals_the_providers_formulas(map_index):
    from airflow.providers.openlineage.plugins.adapter import OpenLineageAdapter

    ti = _ti(map_index=map_index, try_number=2, clear_number=1)
    got = oi.task_run_identity(ti)
    assert got.namespace == oi.job_namespace() and got.name == "etl.spark"
    assert got.run_id == OpenLineageAdapter.build_task_instance_run_id(
        dag_id="etl", task_id="spark", try_number=2, logical_date=WHEN, map_index=map_index)
    assert (got.root_name, got.root_run_id) == ("etl", OpenLineageAdapter.build_dag_run_id(
        dag_id="etl", logical_date=WHEN, clear_number=1))


def test_map_index_and_try_make_distinct_deterministic_ids():
    ids = {oi.task_run_identity(_ti(map_index=m, try_number=t)).run_id for m in (-1, 0, 1) for t in (1, 2)}
    assert len(ids) == 6
    assert oi.task_run_identity(_ti(map_index=1)).run_id == oi.task_run_identity(_ti(map_index=1)).run_id


def test_one_failing_macro_costs_only_its_own_value(monkeypatch):
    from airflow.providers.openlineage.plugins import macros

    expected = oi.task_run_identity(_ti(map_index=2))
    monkeypatch.setattr(macros, "lineage_run_id", lambda ti: 1 / 0)
    monkeypatch.setattr(macros, "lineage_job_name", lambda ti: "custom.name")  # a provider answer is kept
    got = oi.task_run_identity(_ti(map_index=2))
    assert got.run_id == expected.run_id  # the same formula without the macro
    assert got.name == "custom.name" and got.root_run_id == expected.root_run_id


def test_without_the_provider_the_same_formula(monkeypatch):
    with_provider = oi.task_run_identity(_ti(map_index=4, try_number=3))
    monkeypatch.setattr(oi, "_macros", lambda: None)
    without = oi.task_run_identity(_ti(map_index=4, try_number=3))
    assert without == with_provider
    assert oi.task_run_identity(_ti(map_index=4, try_number=3)) == without  # not seeded with the current time


def test_namespace_from_the_environment_when_airflow_config_has_none(monkeypatch):
    monkeypatch.setenv("OPENLINEAGE_NAMESPACE", "team-a")
    monkeypatch.setattr(oi, "_macros", lambda: None)
    assert oi.job_namespace() == "team-a"
    assert oi.task_run_identity(_ti()).namespace == "team-a"
