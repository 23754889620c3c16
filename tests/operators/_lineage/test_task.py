"""``LineageTaskMixin``: the one home of the lineage arguments, reached the same way from every lineage operator."""
from __future__ import annotations

import inspect
from typing import Any

import pytest

from airflow_provider_lineage.decorators.pyspark_lineage import _PySparkLineageDecoratedOperator
from airflow_provider_lineage.operators._lineage.task import LINEAGE_TEMPLATE_FIELDS, LineageTaskMixin
from airflow_provider_lineage.operators.pyspark import PySparkLineageOperator
from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator
from airflow_provider_lineage.operators.spark_pipelines import SparkPipelinesLineageOperator
from airflow_provider_lineage.operators.spark_sql import SparkSqlLineageOperator

#: A value other than the default for every lineage argument (the attribute the operator keeps it under: its name).
GIVEN: dict[str, Any] = {
    "lineage_emission": "off", "openlineage_config": {"transport": {"type": "console"}}, "capture_dir": "/srv/cap",
    "capture_drain_timeout": 5.0, "capture_conn_id": "aws_cap", "keep_capture_records": True,
    "capture_record_limit": 1024, "lineage_xcom_key": "written", "asset_alias": "my_writes",
    "indirect_lineage": "fields", "udf_analysis": False, "on_lineage_change": "fail", "require_masked": ["pii"],
    "on_policy_violation": "warn", "sieve_pruning": True,
}


def _fn(spark: Any = None) -> None:
    return None


#: Every lineage operator with the arguments of its own it needs.
OPERATORS: list[tuple[type, dict[str, Any]]] = [
    (SparkLineageSubmitOperator, {"application": "app.py"}),
    (SparkSqlLineageOperator, {"sql": "SELECT 1"}),
    (SparkPipelinesLineageOperator, {}),
    (PySparkLineageOperator, {"python_callable": _fn}),
]


def test_given_covers_every_lineage_argument() -> None:
    names = [p for p in inspect.signature(LineageTaskMixin.__init__).parameters if p not in ("self", "kwargs")]
    assert sorted(names) == sorted(GIVEN)


@pytest.mark.parametrize(("cls", "own"), OPERATORS, ids=lambda v: getattr(v, "__name__", ""))
def test_every_lineage_argument_reaches_the_operator(cls: type, own: dict[str, Any]) -> None:
    op = cls(task_id="t", **own, **GIVEN)
    assert isinstance(op, LineageTaskMixin)
    assert {name: getattr(op, name) for name in GIVEN} == GIVEN
    assert [a.name for a in op.outlets] == ["my_writes"]
    assert set(LINEAGE_TEMPLATE_FIELDS) <= set(op.template_fields)
    assert len(op.template_fields) == len(set(op.template_fields))


@pytest.mark.parametrize(("cls", "own"), OPERATORS, ids=lambda v: getattr(v, "__name__", ""))
def test_default_args_set_lineage_arguments(cls: type, own: dict[str, Any]) -> None:
    # Airflow applies default_args through the signature of each operator class's own __init__
    from airflow.sdk import DAG

    with DAG("apl_default_args", schedule=None, default_args={"lineage_emission": "self", "asset_alias": None,
                                                              "on_lineage_change": "ignore"}):
        op = cls(task_id="t", **own)
    assert (op.lineage_emission, op.asset_alias, op.on_lineage_change) == ("self", None, "ignore")
    assert op.outlets == []


@pytest.mark.parametrize(("cls", "own"), OPERATORS, ids=lambda v: getattr(v, "__name__", ""))
def test_partial_accepts_the_lineage_arguments(cls: type, own: dict[str, Any]) -> None:
    from airflow.sdk import DAG

    with DAG("apl_partial", schedule=None):
        over = "config_kwargs" if cls is PySparkLineageOperator else "conf"
        mapped = cls.partial(task_id="t", **own, **GIVEN).expand(**{over: [{"a": "1"}, {"a": "2"}]})
    assert mapped.partial_kwargs["require_masked"] == ["pii"]


def test_the_decorator_takes_the_lineage_arguments() -> None:
    from airflow.sdk import DAG, task

    with DAG("apl_decorated", schedule=None):
        @task.pyspark_lineage(**GIVEN)
        def job(spark: Any = None) -> None:
            return None

        op = job().operator
    assert isinstance(op, _PySparkLineageDecoratedOperator)
    assert {name: getattr(op, name) for name in GIVEN} == GIVEN


def test_a_bad_value_names_the_fix_in_every_operator() -> None:
    for cls, own in OPERATORS:
        with pytest.raises(ValueError, match="use 'auto'"):
            cls(task_id="t", **own, lineage_emission="both")
        with pytest.raises(ValueError, match="indirect_lineage"):
            cls(task_id="t", **own, indirect_lineage="everywhere")
