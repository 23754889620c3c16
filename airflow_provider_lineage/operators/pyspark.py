"""``PySparkLineageOperator``: ``PySparkOperator`` (``@task.pyspark``) that also publishes column-level lineage.

The task's Python function gets a ``spark`` session, as with the apache-spark provider's operator, built the
same way from ``conn_id`` (its host, port and extras) and ``config_kwargs``. Then:

* a ``spark`` connection (or none: ``local[*]``): the session is created in this worker and every write it
  runs is captured in process (:class:`~airflow_provider_lineage.capture.listener.CaptureSession`, Python UDF
  bodies read as the launcher does);
* a ``spark_connect`` connection (``sc://``): the session is remote. On a lineage Connect server
  (``python -m airflow_provider_lineage.connect_server``) it is tagged with this task run, its writes are
  captured on the server and read back from ``capture_dir`` (the task's argument, else the connection's extra
  ``capture_dir``, else the server's own), as in cluster deploy mode (:mod:`.connect_run`).

Either way the task ends like :class:`~.spark_lineage.SparkLineageSubmitOperator`: the column-lineage summary in
the log, XCom ``column_lineage`` and ``lineage_outputs``, OpenLineage events with the task as parent, the guard
and the asset events (:mod:`._lineage.task`). The function's return value is the task's, as before. A capture
or lineage problem never fails the task: it is logged and reported as an ``extractionError`` run facet.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.operators.spark_pyspark import PySparkOperator

from airflow_provider_lineage import _compat
from airflow_provider_lineage.lineage import events
from airflow_provider_lineage.operators._lineage.task import (
    DEFAULT_ASSET_ALIAS,
    LINEAGE_TEMPLATE_FIELDS,
    XCOM_OUTPUTS_KEY,
    LineageTaskMixin,
)

if TYPE_CHECKING:
    from airflow.sdk import Context

#: Connection extras that configure the lineage, not Spark (not passed on as Spark properties).
LINEAGE_EXTRAS = ("capture_dir",)


class PySparkLineageOperator(LineageTaskMixin, PySparkOperator):
    """Run a Python function with a Spark session and publish the column-level lineage of its writes.

    Accepts every argument of
    :class:`~airflow.providers.apache.spark.operators.spark_pyspark.PySparkOperator` (``python_callable``,
    ``conn_id``, ``config_kwargs``, ``op_args``, ``op_kwargs`` ...) with the same meaning, and the lineage
    arguments of :class:`~airflow_provider_lineage.operators.spark_lineage.SparkLineageSubmitOperator`
    (``lineage_emission``, ``openlineage_config``, ``capture_dir``, ``capture_conn_id``, ``capture_drain_timeout``,
    ``keep_capture_records``, ``capture_record_limit``, ``lineage_xcom_key``, ``asset_alias``,
    ``indirect_lineage``, ``udf_analysis``, ``on_lineage_change``, ``require_masked``, ``on_policy_violation``,
    ``sieve_pruning``: Parquet scans of tables with Sieve indexes read only the index's candidate files).

    :param python_callable: the function; its ``spark`` parameter receives the session.
    :param conn_id: a ``spark`` connection (master in host/port, Spark properties in the extras) or a
        ``spark_connect`` one (``sc://host:port``); ``None``: ``local[*]``. (templated)
    :param config_kwargs: Spark properties for the session, over the connection's. (templated)
    :param capture_dir: Spark Connect only: the lineage Connect server's ``--capture-dir`` as this worker reaches
        it (default: the connection's extra ``capture_dir``, else the location the server reports). (templated)
    :param capture_drain_timeout: seconds this task waits for the last writes' records at the end (Spark's
        listener bus locally; the server's status over Spark Connect).
    """

    template_fields: Sequence[str] = (*PySparkOperator.template_fields, *LINEAGE_TEMPLATE_FIELDS)
    ui_color = "#e8c1a0"

    def __init__(
        self,
        *,
        python_callable: Callable[..., Any],
        conn_id: str | None = None,
        config_kwargs: dict[str, Any] | None = None,
        lineage_emission: str = "auto",
        openlineage_config: dict[str, Any] | None = None,
        capture_dir: str | None = None,
        capture_drain_timeout: float = 60.0,
        capture_conn_id: str | None = None,
        keep_capture_records: bool = False,
        capture_record_limit: int = 32 * 1024 * 1024,
        lineage_xcom_key: str | None = XCOM_OUTPUTS_KEY,
        asset_alias: str | None = DEFAULT_ASSET_ALIAS,
        indirect_lineage: str | None = None,
        udf_analysis: bool = True,
        on_lineage_change: str = "warn",
        require_masked: list[str] | str | None = None,
        on_policy_violation: str = "fail",
        sieve_pruning: bool = False,
        **kwargs: Any,
    ) -> None:
        # the lineage arguments are LineageTaskMixin's (checked and set there); listed here for Airflow's
        # default_args / partial() and IDE help, which read this class's own signature
        super().__init__(
            python_callable=python_callable, conn_id=conn_id, config_kwargs=config_kwargs,
            lineage_emission=lineage_emission, openlineage_config=openlineage_config, capture_dir=capture_dir,
            capture_drain_timeout=capture_drain_timeout, capture_conn_id=capture_conn_id,
            keep_capture_records=keep_capture_records, capture_record_limit=capture_record_limit,
            lineage_xcom_key=lineage_xcom_key, asset_alias=asset_alias, indirect_lineage=indirect_lineage,
            udf_analysis=udf_analysis, on_lineage_change=on_lineage_change, require_masked=require_masked,
            on_policy_violation=on_policy_violation, sieve_pruning=sieve_pruning, **kwargs)
        self._capture_records: list[Any] | None = None
        self._capture_problems: list[str] = []
        self._capture_folder: str | None = None
        self._capture_fetched: Any = None
        self._task_run: Any = None

    # -- the session (the same settings as PySparkOperator.execute_callable) --------------------------
    def spark_settings(self) -> tuple[dict[str, str], dict[str, Any]]:
        """``(Spark properties, connection extras)``: the provider's rules, the lineage extras left out."""
        from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

        conf: dict[str, str] = {"spark.app.name": f"{self.dag_id}-{self.task_id}"}
        url = "local[*]"
        extras: dict[str, Any] = {}
        if self.conn_id:
            conn = _connection(self.conn_id)
            extras = dict(conn.extra_dejson or {})
            if conn.conn_type == SparkConnectHook.conn_type:  # the connection's password is the server's token
                url = _token_over_loopback(SparkConnectHook(self.conn_id).get_connection_url())
            elif conn.port:
                url = f"{conn.host}:{conn.port}"
            elif conn.host:
                url = conn.host
            for key, value in extras.items():
                if key not in LINEAGE_EXTRAS and key != SparkConnectHook.PARAM_USE_SSL:
                    conf[key] = str(value)
        if url.startswith("sc://"):
            conf["spark.remote"] = url
        for key, value in (self.config_kwargs or {}).items():
            conf[key] = str(value)
        if not conf.get("spark.remote") and not conf.get("spark.master"):
            conf["spark.master"] = url
        if getattr(self, "sieve_pruning", False):
            conf["spark.airflow_lineage.sievePruning"] = "true"
        return conf, extras

    def execute_callable(self) -> Any:
        from pyspark import SparkConf
        from pyspark.sql import SparkSession

        conf, extras = self.spark_settings()
        remote = conf.get("spark.remote")
        self.lineage_deploy_mode = "connect" if remote else "client"
        if remote:
            # the settings alone: SparkConf() would also load a JVM's properties this process already has (a
            # local session's spark.master), which a Spark Connect session refuses
            builder = SparkSession.builder
            for key, value in conf.items():
                builder = builder.config(key, value)
            return self._run_connect(builder.create(), remote, self.capture_dir or extras.get("capture_dir"))
        spark_conf = SparkConf()
        for key, value in conf.items():
            spark_conf.set(key, value)
        existing = _active_session()
        spark = SparkSession.builder.config(conf=spark_conf).getOrCreate()
        try:
            return self._run_local(spark)
        finally:
            if existing is None or not spark._jsparkSession.equals(existing):
                spark.stop()  # as PySparkOperator; a session this task did not create stays

    def _call(self, spark: Any) -> Any:
        self.op_kwargs = {**self.op_kwargs, "spark": spark}
        return super(PySparkOperator, self).execute_callable()  # PythonOperator's: the user's function

    def _run_local(self, spark: Any) -> Any:
        from airflow_provider_lineage.capture.listener import CaptureSession
        from airflow_provider_lineage.capture.udfs import UdfRegistry

        udfs = UdfRegistry()
        udfs.enabled = bool(self.udf_analysis)
        capture = None
        try:
            udfs.install()
            capture = CaptureSession(spark, drain_timeout_s=float(self.capture_drain_timeout), udfs=udfs)
            capture.__enter__()
        except Exception as exc:  # noqa: BLE001 - lineage never fails the task
            self._capture_problems.append(f"could not attach the capture listener to the SparkSession: {exc!r}")
            capture = None
        streams = self._attach_streaming(spark, capture) if capture is not None else None
        if getattr(self, "sieve_pruning", False):
            from airflow_provider_lineage.sieve.spark.prune import enable_from_conf

            spark.conf.set("spark.airflow_lineage.sievePruning", "true")  # also for a session this task did not create
            pruning = enable_from_conf(spark)
        else:
            pruning = False
        try:
            return self._call(spark)
        finally:
            if capture is not None:
                try:
                    capture.__exit__(None, None, None)
                    self._finish_streaming(spark, streams)
                    self._capture_records = list(capture.records)
                    self._capture_problems += list(getattr(capture.listener, "errors", []) or [])
                except Exception as exc:  # noqa: BLE001 - lineage never fails the task
                    self._capture_problems.append(f"could not finish the capture: {exc!r}")
            udfs.uninstall()
            if pruning:
                from airflow_provider_lineage.sieve.spark.prune import disable

                disable(spark)  # a session this task did not create goes back as it came

    def _attach_streaming(self, spark: Any, capture: Any) -> Any:
        """The SparkContext's Structured Streaming capture (one record per query, as the launcher's), its records
        handed to ``capture`` like the session listener's; ``None`` when it could not attach."""
        from airflow_provider_lineage.capture import streaming

        try:
            streams = streaming.install(spark, capture._on_record, capture.listener)
            streams.other_sessions = False  # the task's session only; its streaming queries run on clones of it
            return streams
        except Exception as exc:  # noqa: BLE001 - lineage never fails the task
            self._capture_problems.append(f"could not attach the streaming capture; streaming writes are not "
                                          f"captured: {exc!r}")
            return None

    def _finish_streaming(self, spark: Any, streams: Any) -> None:
        """After the listener bus drained: queries still running are handed over as such; the capture detached."""
        if streams is None:
            return
        try:
            for record in streams.finish([spark._jsparkSession]):
                if record.streaming.get("state") == "running":
                    self.lineage_log.info("streaming query %s still running at the end of the task",
                                          record.streaming.get("name") or record.streaming.get("query_id"))
            self._capture_problems += list(streams.errors)
        except Exception as exc:  # noqa: BLE001 - lineage never fails the task
            self._capture_problems.append(f"could not hand over the running streaming queries: {exc!r}")
        finally:
            streams.unregister()

    def _run_connect(self, spark: Any, url: str, capture_dir: str | None) -> Any:
        from airflow_provider_lineage.operators._lineage.connect_run import ConnectRun

        task_run = self._task_run
        run = ConnectRun(self, f"{task_run.namespace}/{task_run.name}/{task_run.run_id}" if task_run else "unknown")
        active = run.begin(spark, capture_dir, _redacted(url))
        try:
            return self._call(spark)
        finally:
            try:
                if active:
                    run.end(spark)
            finally:
                spark.stop()
                if active:
                    run.wait_status()
                fetched = run.fetch()
                if fetched is not None:
                    self._capture_fetched = fetched
                    self._capture_folder = fetched.folder
                else:
                    self._capture_problems += run.problems
                    self._capture_records = []

    # -- the task -------------------------------------------------------------------------------------
    def execute(self, context: Context) -> Any:
        self.start_guard()
        emission = self.resolved_emission()
        task_run = self.lineage_task_run(context)
        self._task_run = task_run
        client = self._self_emit_start(task_run) if emission == "self" else None
        error: BaseException | None = None
        value: Any = None
        saved = {k: os.environ.get(k) for k in _CONNECT_ENV}
        try:
            value = super().execute(context)
        except BaseException as exc:  # noqa: BLE001 - lineage first, then the task's own error
            error = exc
        finally:
            _restore_environ(saved)
        try:
            result = self._lineage_of_run(error)
            self._publish(context, result, emission, client, task_run, error)
        except Exception as exc:  # noqa: BLE001 - lineage never fails the task
            self.lineage_log.warning("lineage publication failed: %r (the task is not affected)", exc)
            self._policy_not_checked(f"the lineage publication failed: {exc!r}")
        finally:
            if self._capture_folder:
                shutil.rmtree(self._capture_folder, ignore_errors=True)
        if error is not None:
            raise error
        if self.guard is not None and self.guard.failure:
            raise _compat.airflow_exception("AirflowFailException")(self.guard.failure)
        return value

    def _lineage_of_run(self, error: BaseException | None) -> events.LineageResult:
        if self._capture_fetched is not None:
            fetched = self._capture_fetched
            return self.process_capture_dir(fetched.folder, error, extra_problems=fetched.problems,
                                            status_expected=fetched.status_expected)
        if self._capture_records is None:
            self._capture_problems.append("no Spark session was created: nothing captured")
        return self.process_records(self._capture_records or [], self._capture_problems)


def _connection(conn_id: str) -> Any:
    from airflow.sdk import BaseHook

    return BaseHook.get_connection(conn_id)


def _active_session() -> Any:
    """The JVM session a worker already has (``None``: this task creates the SparkContext)."""
    try:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        if SparkContext._active_spark_context is None:
            return None
        session = SparkSession.getActiveSession()
        return session._jsparkSession if session is not None else None
    except Exception:  # noqa: BLE001 - no classic pyspark: nothing shared
        return None


def _token_over_loopback(url: str) -> str:
    """``sc://127.0.0.1:P/;token=...`` as ``sc://localhost:P/;token=...`` (without ``use_ssl``): PySpark sends a token
    without TLS to the host named ``localhost`` only, and would otherwise open a TLS channel the server does not
    speak (the lineage Connect server on loopback, docs/lineage.md "Securing the Connect server")."""
    import urllib.parse

    head, sep, params = url.partition(";")
    names = {p.split("=", 1)[0].lower() for p in params.split(";") if p}
    if "token" not in names or "use_ssl" in names:
        return url
    parts = urllib.parse.urlsplit(head)
    host = (parts.hostname or "").strip("[]")
    if host not in ("127.0.0.1", "::1"):
        return url
    netloc = "localhost" + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc)) + sep + params


def _redacted(url: str) -> str:
    """``sc://host:port/;user_id=...;token=...`` without the token (for the log)."""
    head, _, params = url.partition(";")
    kept = [p for p in params.split(";") if p and not p.lower().startswith("token=")]
    return ";".join([head, *kept]) if kept else head


#: What pyspark's ``SparkSession.builder.remote(...).getOrCreate()`` sets in ``os.environ`` and never unsets for
#: a remote server: left behind, every later ``spark-submit`` of this process (the next task of a ``dag.test()``)
#: starts in Spark Connect mode and fails with CONNECT_URL_NOT_SET.
_CONNECT_ENV = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")


def _restore_environ(saved: dict[str, str | None]) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
