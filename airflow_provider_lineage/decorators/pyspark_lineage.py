"""``@task.pyspark_lineage``: ``@task.pyspark`` that also publishes the column-level lineage of the task's writes.

.. code-block:: python

    from airflow.sdk import task

    @task.pyspark_lineage(conn_id="spark_connect_default")
    def build_mart(spark, data_dir: str) -> int:
        spark.read.parquet(f"{data_dir}/orders").groupBy("customer_id").count() \\
            .write.mode("overwrite").parquet(f"{data_dir}/mart")
        return 1

The same arguments as ``@task.pyspark`` (``conn_id``, ``config_kwargs``) plus the lineage arguments of
``SparkLineageSubmitOperator``; the function gets the session as ``spark`` (declare it last, with a default:
``spark=None``). Registered as the provider's ``task-decorators`` entry ``pyspark_lineage``;
the operator is :class:`~airflow_provider_lineage.operators.pyspark.PySparkLineageOperator`.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from airflow.providers.apache.spark.operators.spark_pyspark import SPARK_CONTEXT_KEYS
from airflow.providers.common.compat.sdk import DecoratedOperator, TaskDecorator, task_decorator_factory

from airflow_provider_lineage.operators.pyspark import PySparkLineageOperator


class _PySparkLineageDecoratedOperator(DecoratedOperator, PySparkLineageOperator):
    custom_operator_name = "@task.pyspark_lineage"
    template_fields: Sequence[str] = tuple(dict.fromkeys((*DecoratedOperator.template_fields,
                                                          *PySparkLineageOperator.template_fields)))

    def __init__(
        self,
        *,
        python_callable: Callable[..., Any],
        conn_id: str | None = None,
        config_kwargs: dict[str, Any] | None = None,
        op_args: Sequence[Any] | None = None,
        op_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs_to_upstream = {"python_callable": python_callable, "op_args": op_args, "op_kwargs": op_kwargs}
        signature = inspect.signature(python_callable)
        parameters = [p.replace(default=None) if p.name in SPARK_CONTEXT_KEYS else p
                      for p in signature.parameters.values()]
        python_callable.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        super().__init__(
            kwargs_to_upstream=kwargs_to_upstream,
            python_callable=python_callable,
            config_kwargs=config_kwargs,
            conn_id=conn_id,
            op_args=op_args,
            op_kwargs=op_kwargs,
            **kwargs,
        )


def pyspark_lineage_task(
    python_callable: Callable[..., Any] | None = None,
    multiple_outputs: bool | None = None,
    **kwargs: Any,
) -> TaskDecorator:
    """``@task.pyspark_lineage``: wrap a function into a :class:`PySparkLineageOperator` task."""
    return task_decorator_factory(
        python_callable=python_callable,
        multiple_outputs=multiple_outputs,
        decorated_operator_class=_PySparkLineageDecoratedOperator,
        **kwargs,
    )
