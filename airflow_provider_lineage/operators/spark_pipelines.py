"""``SparkPipelinesLineageOperator``: ``SparkPipelinesOperator`` that also publishes the lineage of every flow.

Spark 4.1's declarative pipelines (``spark-pipelines run``) run over Spark Connect: the ``spark-pipelines``
launcher is ``spark-submit --remote local --conf spark.api.mode=connect pyspark/pipelines/cli.py ...``, and
in that Python driver ``SparkSession.builder.getOrCreate()`` starts a local Spark Connect server: a classic
PySpark session (``SparkConnectPlugin`` in ``spark.plugins``) whose SparkContext then runs every flow in a
Connect session of its own. JVM-only hooks (``spark.extraListeners``, ``spark.sql.queryExecutionListeners``)
cannot reach Python capture code; but the classic session is created in Python, in the driver. So this
operator submits the same ``cli.py`` under the capture launcher (:mod:`airflow_provider_lineage.capture.launcher`):
the launcher's ``SparkSession`` hook attaches capture to that session and its SparkContext, where
:mod:`airflow_provider_lineage.capture.streaming` sees every flow: a materialized view's batch write (a write of
a Connect session) and a streaming table's query (one record per flow, from its first micro-batch). Everything
after the run is :class:`.SparkLineageSubmitOperator`'s: XCom ``column_lineage`` and ``lineage_outputs``,
OpenLineage events with the task as parent, asset events, the lineage guard.

What does not work: a ``spark_connect`` connection (the pipeline runs on a remote Connect server, out of
this driver's reach: run the lineage Connect server there, ``python -m airflow_provider_lineage.connect_server``)
and a non-local master (``spark-pipelines`` itself only starts a local Connect server: ``--remote local``).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow_provider_lineage import _compat
from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator

PIPELINE_COMMANDS = ("run", "dry-run")


def pipelines_cli_path() -> str:
    """``pyspark/pipelines/cli.py`` of this worker's pyspark (what ``spark-pipelines`` runs)."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "SparkPipelinesLineageOperator needs pyspark >= 4.1 on the worker (spark-pipelines ships with it)"
        )
    cli = Path(next(iter(spec.submodule_search_locations))) / "pipelines" / "cli.py"
    if not cli.is_file():
        raise RuntimeError(f"{cli} not found: declarative pipelines need pyspark >= 4.1 on the worker")
    return str(cli)


def remote_command(command: list[str]) -> list[str]:
    """``spark-submit --master local[N] ...`` -> ``--remote local[N]`` (what ``spark-pipelines`` runs: a local
    Spark Connect server with N threads), without ``--name``; a non-local master is refused with the fix."""
    out = list(command)
    for i, arg in enumerate(out[:-1]):
        if arg == "--master":
            master = out[i + 1]
            if not master.startswith("local"):
                raise ValueError(
                    f"SparkPipelinesLineageOperator: spark-pipelines runs a pipeline in a local Spark Connect server; "
                    f"master {master!r} is not local. Use a connection whose host is local[N], or a Spark Connect "
                    "server with capture (python -m airflow_provider_lineage.connect_server) for a cluster"
                )
            out[i], out[i + 1] = "--remote", master
    # with --remote, a --name makes spark-submit hand the driver none of the --conf settings (the local Connect
    # server then runs without capture and the default warehouse): spark-pipelines passes none either
    while "--name" in out[:-1]:
        i = out.index("--name")
        del out[i:i + 2]
    return out


class SparkPipelinesLineageOperator(SparkLineageSubmitOperator):
    """Run a Spark declarative pipeline (like ``SparkPipelinesOperator``) and publish the lineage of every flow.

    Same arguments as :class:`~airflow.providers.apache.spark.operators.spark_pipelines.SparkPipelinesOperator`,
    plus the lineage arguments of :class:`~airflow_provider_lineage.operators.spark_lineage.SparkLineageSubmitOperator`.

    :param pipeline_spec: the pipeline spec (``spark-pipeline.yml``); default: found from the working folder, as
        ``spark-pipelines`` does. (templated)
    :param pipeline_command: ``"run"`` (default) or ``"dry-run"`` (validates the graph, writes nothing).
    :param conf: Spark properties. (templated)
    :param conn_id: a ``spark`` connection whose host is ``local[N]`` (default ``spark_default``).
    :param num_executors: the number of executors.
    :param executor_cores: cores per executor.
    :param executor_memory: memory per executor.
    :param driver_memory: the driver's memory (``2G``).
    :param verbose: pass ``--verbose`` to spark-submit.
    :param env_vars: environment variables of the run. (templated)
    :param deploy_mode: ``client`` (the pipeline's Connect server runs in the driver).
    :param yarn_queue: the YARN queue.
    :param keytab: the keytab file for Kerberos. (templated)
    :param principal: the Kerberos principal. (templated)
    """

    template_fields: Sequence[str] = (*SparkLineageSubmitOperator.template_fields, "pipeline_spec")
    ui_color = "#e8c1a0"

    def __init__(
        self,
        *,
        pipeline_spec: str | None = None,
        pipeline_command: str = "run",
        conf: dict[Any, Any] | None = None,
        conn_id: str = "spark_default",
        num_executors: int | None = None,
        executor_cores: int | None = None,
        executor_memory: str | None = None,
        driver_memory: str | None = None,
        verbose: bool = False,
        env_vars: dict[str, Any] | None = None,
        deploy_mode: str | None = None,
        yarn_queue: str | None = None,
        keytab: str | None = None,
        principal: str | None = None,
        **kwargs: Any,
    ) -> None:
        if "application" in kwargs:
            raise TypeError("SparkPipelinesLineageOperator runs `pipeline_spec`, not an application: use "
                            "SparkLineageSubmitOperator for a PySpark application")
        if pipeline_command not in PIPELINE_COMMANDS:
            raise ValueError(f"pipeline_command={pipeline_command!r} is not one of {PIPELINE_COMMANDS} "
                             "('init' creates a project: run it once by hand)")
        super().__init__(
            application="pipelines/cli.py", conf=conf, conn_id=conn_id, num_executors=num_executors,
            executor_cores=executor_cores, executor_memory=executor_memory, driver_memory=driver_memory,
            verbose=verbose, env_vars=env_vars, deploy_mode=deploy_mode, yarn_queue=yarn_queue, keytab=keytab,
            principal=principal, name=kwargs.pop("name", "spark-pipelines"), **kwargs,
        )
        self.pipeline_spec = pipeline_spec
        self.pipeline_command = pipeline_command

    def _get_hook(self) -> Any:
        # pyspark 4.1's local Connect server keeps only part of the --conf settings when there are several
        # (PYSPARK_REMOTE_INIT_CONF_*): the launcher's settings also go by environment, which it reads too
        from airflow_provider_lineage.capture.config import _KEYS, ENV_PREFIX, PREFIX

        lineage_env = {ENV_PREFIX + _KEYS[k[len(PREFIX):]]: str(v) for k, v in dict(self.conf or {}).items()
                       if k.startswith(PREFIX) and k[len(PREFIX):] in _KEYS}
        if lineage_env:
            self.env_vars = {**(self.env_vars or {}), **lineage_env}
        hook = super()._get_hook()
        _compat.rewrite_spark_submit_command(hook, remote_command)
        return hook

    def pipeline_args(self) -> list[str]:
        """``cli.py``'s arguments: the command and ``--spec``."""
        return [self.pipeline_command, *(["--spec", str(self.pipeline_spec)] if self.pipeline_spec else [])]

    def execute(self, context: Any) -> None:
        if _compat.connection_type(self._conn_id) == "spark_connect":
            raise ValueError(
                f"SparkPipelinesLineageOperator: connection {self._conn_id!r} is a Spark Connect server, where the "
                "pipeline's flows run out of this task's reach. Start that server with capture "
                "(python -m airflow_provider_lineage.connect_server) and use SparkPipelinesOperator, or give a "
                "`spark` connection whose host is local[N] to run the pipeline in the task with capture"
            )
        given = self.application, self.application_args, self.conf
        self.application = pipelines_cli_path()
        self.application_args = self.pipeline_args()
        self.conf = {**(self.conf or {}), "spark.api.mode": "connect"}
        given_env = self.env_vars
        try:
            super().execute(context)
        finally:
            self.application, self.application_args, self.conf = given
            self.env_vars = given_env
