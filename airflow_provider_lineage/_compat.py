"""Every use of Airflow internals and every Airflow version difference, behind one tested seam
(``tests/test_compat.py``; the compatibility table in ``benchmarks/compat/`` runs it on Airflow 3.0-3.3).

Version differences:

* ``conf``: the task SDK's configuration (``airflow.sdk.conf``, Airflow >= 3.2); Airflow 3.0 and 3.1
  have only ``airflow.configuration.conf``. ``from airflow_provider_lineage._compat import conf``
  gives whichever this Airflow has (:func:`default_deferrable` reads it).
* task exceptions (``AirflowException``, ``AirflowSkipException``, ``AirflowSensorTimeout``,
  ``AirflowFailException``): in ``airflow.sdk.exceptions`` from 3.2 (3.1 has only
  ``AirflowException`` there), in ``airflow.exceptions`` before: import them from this module.

The operators need two things the Spark provider does not expose publicly: the deploy mode its
hook resolved from the connection and the operator's arguments, and a way to make the operator
build a fresh hook after the application was swapped for the launcher. When a provider release
changes these internals, this module (and its test) is the one place to adapt. Airflow is imported
lazily, so importing this module costs nothing.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow.configuration import AirflowConfigParser
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from airflow.providers.openlineage.extractors import OperatorLineage


def spark_submit_deploy_mode(operator: SparkSubmitOperator) -> str:
    """``"client"`` or ``"cluster"``: what spark-submit will run with for this operator.

    The hook resolves it from the operator's ``deploy_mode`` argument, else the connection's
    ``deploy-mode`` extra, else spark-submit's default (client).
    """
    hook = operator._get_hook()  # airflow internal: SparkSubmitOperator._get_hook
    resolved = hook._connection  # airflow internal: SparkSubmitHook._connection (resolved connection)
    return str(resolved.get("deploy_mode") or "client").lower()


def reset_spark_submit_hook(operator: SparkSubmitOperator) -> None:
    """Make ``operator.execute`` build a new hook, so it submits the current ``application``/``conf``."""
    operator._hook = None  # airflow internal: SparkSubmitOperator caches its hook in _hook


def set_spark_submit_master(hook: Any, master: str) -> None:
    """Make a ``SparkSubmitHook`` submit to ``master`` (``SparkSqlOperator``'s ``master`` argument / ``spark_sql``
    connection rule, which the submit hook's own connection resolution does not follow)."""
    resolved = hook._connection  # airflow internal: SparkSubmitHook._connection (resolved connection)
    resolved["master"] = master
    hook._is_yarn = "yarn" in master  # airflow internal: flags SparkSubmitHook.__init__ derives from the master
    hook._is_yarn_cluster_mode = hook._is_yarn and resolved.get("deploy_mode") == "cluster"
    hook._is_kubernetes = "k8s" in master


def rewrite_spark_submit_command(hook: Any, rewrite: Any) -> None:
    """Make a ``SparkSubmitHook`` pass its spark-submit command through ``rewrite(list) -> list`` before running
    it (``spark-pipelines``' ``--remote local[N]`` in place of ``--master local[N]``)."""
    build = hook._build_spark_submit_command  # airflow internal: SparkSubmitHook._build_spark_submit_command

    def rewritten(application: str) -> list[str]:
        return rewrite(build(application))

    hook._build_spark_submit_command = rewritten


def connection_type(conn_id: str) -> str | None:
    """The ``conn_type`` of connection ``conn_id`` (``None`` when it does not exist)."""
    conn = optional_connection(conn_id)
    return None if conn is None else conn.conn_type


def optional_connection(conn_id: str) -> Any:
    """The Airflow connection ``conn_id``, or ``None`` when it does not exist."""
    from airflow.sdk import BaseHook

    try:
        return BaseHook.get_connection(conn_id)
    except Exception as exc:
        if "isn't defined" in str(exc) or "NotFound" in type(exc).__name__:
            return None
        raise


def openlineage_provider_active() -> bool:
    """Whether Airflow's OpenLineage provider is installed and has a transport (i.e. will emit)."""
    try:
        from airflow.providers.openlineage import conf as ol_conf
    except ImportError:
        return False
    try:
        return not ol_conf.is_disabled()
    except Exception:  # noqa: BLE001 - a broken provider config means "not active": we then emit ourselves
        return False


def openlineage_provider_transport() -> dict[str, Any] | None:
    """The transport config Airflow's OpenLineage provider emits with: ``[openlineage] transport``, else the
    ``transport`` of the file ``[openlineage] config_path`` (or ``$OPENLINEAGE_CONFIG``) names; ``None`` when neither
    is set (the provider then uses openlineage-python's environment: ``OPENLINEAGE_URL`` ...). Read afresh (the
    provider's own ``conf.transport()`` is cached for the process)."""
    import json

    cfg = airflow_conf()
    raw = cfg.get("openlineage", "transport", fallback="") or ""
    if raw.strip():
        value = json.loads(raw)
        return value if isinstance(value, dict) else None
    path = cfg.get("openlineage", "config_path", fallback="") or os.environ.get("OPENLINEAGE_CONFIG", "")
    if path.strip():
        import yaml

        with open(path, encoding="utf-8") as fh:
            loaded = yaml.safe_load(fh) or {}
        transport = loaded.get("transport") if isinstance(loaded, dict) else None
        return transport if isinstance(transport, dict) else None
    return None


def operator_lineage(**fields: Any) -> OperatorLineage | None:
    """An ``OperatorLineage`` for the ``get_openlineage_facets_*`` hooks, or ``None`` when Airflow's
    OpenLineage provider is not installed (then nobody calls the hooks for emission anyway)."""
    try:
        from airflow.providers.openlineage.extractors import OperatorLineage
    except ImportError:
        return None
    return OperatorLineage(**fields)


def airflow_conf() -> AirflowConfigParser:
    """Airflow's configuration: ``airflow.sdk.conf`` where the task SDK has it (3.2+), else
    ``airflow.configuration.conf`` (3.0, 3.1)."""
    try:
        from airflow.sdk import conf
    except ImportError:  # Airflow 3.0 / 3.1
        from airflow.configuration import conf
    return conf


def default_deferrable() -> bool:
    """Airflow's ``[operators] default_deferrable`` (False when unset)."""
    return bool(airflow_conf().getboolean("operators", "default_deferrable", fallback=False))


#: Exceptions a task raises, where each Airflow release has them: the task SDK's
#: ``airflow.sdk.exceptions`` (all from 3.2; only ``AirflowException`` in 3.1; none in 3.0), else
#: ``airflow.exceptions``, which the 3.0/3.1 task runner catches.
EXCEPTIONS = (
    "AirflowException",
    "AirflowSensorTimeout",
    "AirflowSkipException",
    "AirflowFailException",
    "TaskDeferred",
)


def airflow_exception(name: str) -> type[BaseException]:
    """``airflow.sdk.exceptions.<name>`` where this Airflow's task SDK has it, else ``airflow.exceptions.<name>``."""
    import airflow.sdk.exceptions as sdk_exceptions

    found = getattr(sdk_exceptions, name, None)
    if found is None:
        import airflow.exceptions as core_exceptions

        found = getattr(core_exceptions, name)
    return found


def __getattr__(name: str) -> Any:
    # ``from airflow_provider_lineage._compat import conf, AirflowException``: resolved on first use,
    # so importing this module stays free of Airflow.
    if name == "conf":
        return airflow_conf()
    if name in EXCEPTIONS:
        return airflow_exception(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
