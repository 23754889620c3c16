"""``SparkSqlLineageOperator``: ``SparkSqlOperator`` that also publishes the column lineage of every write.

The apache-spark provider's ``SparkSqlOperator`` runs the ``spark-sql`` CLI, whose driver is a JVM program:
nothing Python runs in it to attach capture to. This operator takes the same arguments and runs the same
statements through the capture launcher instead: it submits :mod:`airflow_provider_lineage.capture.launcher`
with :mod:`airflow_provider_lineage.capture.sql_script` (statements split and run in order, as ``spark-sql``
does) as the application, so every write the statements make (``INSERT``, CTAS, ``INSERT OVERWRITE
DIRECTORY``, ``MERGE`` ...) is captured. Everything after the run is :class:`.SparkLineageSubmitOperator`'s:
XCom ``column_lineage`` and ``lineage_outputs``, OpenLineage events with the task as parent, asset events,
the lineage guard.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow_provider_lineage import _compat
from airflow_provider_lineage.capture import sql_script
from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator

#: ``SparkSqlOperator``'s default connection (connection type ``spark_sql``: ``host`` [``port``] is the master).
DEFAULT_CONN_ID = "spark_sql_default"


def sql_script_path() -> str:
    """Absolute path of the application that runs the statements (:mod:`.capture.sql_script`)."""
    return str(Path(sql_script.__file__).resolve())


def parse_conf(conf: dict[str, Any] | str | None) -> dict[str, Any]:
    """``SparkSqlOperator``'s ``conf``: a dict, or ``"k1=v1,k2=v2"`` (what ``SparkSqlHook`` accepts)."""
    if conf is None or conf == "":
        return {}
    if isinstance(conf, dict):
        return dict(conf)
    if not isinstance(conf, str):
        raise TypeError(f"conf must be a dict or a 'key=value,key=value' string, got {type(conf).__name__}")
    out: dict[str, Any] = {}
    for item in conf.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"conf item {item!r} is not 'key=value': give conf as 'k1=v1,k2=v2' or as a dict")
        out[key.strip()] = value.strip()
    return out


class SparkSqlLineageOperator(SparkLineageSubmitOperator):
    """Run Spark SQL statements (like ``SparkSqlOperator``) and publish the column lineage of their writes.

    Same arguments as :class:`~airflow.providers.apache.spark.operators.spark_sql.SparkSqlOperator`, plus the
    lineage arguments of :class:`~airflow_provider_lineage.operators.spark_lineage.SparkLineageSubmitOperator`
    (``lineage_emission``, ``capture_dir``, ``on_lineage_change``, ``require_masked``, ``asset_alias`` ...).

    :param sql: the statements, ``;``-separated, or a ``.sql`` / ``.hql`` file (rendered by Airflow's templating
        from the DAG's template search path, as ``SparkSqlOperator``). (templated)
    :param conf: Spark properties: a dict, or ``"k1=v1,k2=v2"``. (templated)
    :param conn_id: a ``spark_sql`` (or ``spark``) connection whose host [and port] is the master; default
        ``spark_sql_default``; no such connection: ``yarn``, as ``SparkSqlOperator``.
    :param master: the master (``local[2]``, ``yarn``, ``spark://host:7077`` ...), instead of the connection's.
    :param total_executor_cores: (standalone) total cores for all executors.
    :param executor_cores: cores per executor.
    :param executor_memory: memory per executor (``1G``).
    :param keytab: the keytab file for Kerberos.
    :param principal: the Kerberos principal.
    :param name: the Spark application name.
    :param num_executors: the number of executors (YARN).
    :param verbose: pass ``--verbose`` to spark-submit.
    :param yarn_queue: the YARN queue (default: the connection's ``queue`` extra, else ``default``).
    """

    template_fields: Sequence[str] = (*SparkLineageSubmitOperator.template_fields, "sql")
    template_ext: Sequence[str] = (".sql", ".hql")
    template_fields_renderers = {"sql": "sql"}  # noqa: RUF012 - Airflow's class attribute, as SparkSqlOperator
    ui_color = "#e8c1a0"

    def __init__(
        self,
        *,
        sql: str,
        conf: dict[str, Any] | str | None = None,
        conn_id: str = DEFAULT_CONN_ID,
        total_executor_cores: int | None = None,
        executor_cores: int | None = None,
        executor_memory: str | None = None,
        keytab: str | None = None,
        principal: str | None = None,
        master: str | None = None,
        name: str = "default-name",
        num_executors: int | None = None,
        verbose: bool = True,
        yarn_queue: str | None = None,
        **kwargs: Any,
    ) -> None:
        if "application" in kwargs:
            raise TypeError("SparkSqlLineageOperator runs `sql`, not an application: use SparkLineageSubmitOperator "
                            "for a PySpark application")
        super().__init__(
            application=sql_script_path(), conf=conf, conn_id=conn_id,  # type: ignore[arg-type] - a string conf is parsed at run time
            total_executor_cores=total_executor_cores, executor_cores=executor_cores, executor_memory=executor_memory,
            keytab=keytab, principal=principal, name=name, num_executors=num_executors, verbose=verbose,
            yarn_queue=yarn_queue, **kwargs,
        )
        self.sql = sql
        self.master = master

    def _get_hook(self) -> Any:
        hook = super()._get_hook()
        _compat.set_spark_submit_master(hook, self.resolved_master())
        return hook

    def resolved_master(self) -> str:
        """``master``, else the connection's ``host[:port]``, else ``yarn`` (``SparkSqlHook``'s rule)."""
        if self.master:
            return self.master
        conn = _compat.optional_connection(self._conn_id)
        if conn is None or not conn.host:
            return "yarn"
        return f"{conn.host}:{conn.port}" if conn.port else str(conn.host)

    def statements_args(self) -> list[str]:
        """The application arguments: ``-f FILE`` for a (not rendered) ``.sql``/``.hql`` path, else ``-e SQL``."""
        sql = (self.sql or "").strip()
        if not sql:
            raise ValueError("SparkSqlLineageOperator got an empty `sql`: give the statements or a .sql file")
        return ["-f", sql] if sql.endswith((".sql", ".hql")) else ["-e", sql]

    def execute(self, context: Any) -> None:
        given_conf, given_args = self.conf, self.application_args
        self.conf = parse_conf(self.conf)
        self.application_args = self.statements_args()
        try:
            super().execute(context)
        finally:
            self.conf, self.application_args = given_conf, given_args
