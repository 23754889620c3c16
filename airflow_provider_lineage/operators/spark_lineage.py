"""``SparkLineageSubmitOperator``: ``SparkSubmitOperator`` that also publishes column-level lineage.

The operator submits the package's launcher (:mod:`airflow_provider_lineage.capture.launcher`) as
the spark-submit application, with the user's application and arguments after it. The launcher
runs the application unchanged and records every write (plans + schemas). Then:

* client deploy mode (driver on this worker): the launcher writes the records into a run-scoped
  folder; after spark-submit returns, the operator runs the lineage engine over them, logs a
  column-lineage summary, pushes the written datasets to XCom (``lineage_outputs``) and publishes
  the OpenLineage datasets;
* cluster deploy mode (driver elsewhere) with a ``capture_dir`` both sides reach (``s3://``, ``gs://``,
  ``abfs://``, ``hdfs://``, a shared path): the operator ships the capture code with the job (a
  self-contained archive on ``--py-files``, :mod:`airflow_provider_lineage.capture.ship`), the driver
  writes its records there under this attempt's token, and the operator reads them back and does what
  client mode does (:mod:`._lineage.remote_capture`);
* cluster deploy mode without one (fallback): the driver builds and emits the events itself, as a child
  run of this task (ParentRunFacet), with the same OpenLineage configuration; the task log says what
  this loses.

The three are classes in :mod:`._lineage.capture_modes`, one chosen per run.

Publishing follows one rule, *never both*: when Airflow's OpenLineage provider is installed and
configured, the datasets go out through it (``get_openlineage_facets_on_complete``); otherwise the
operator emits START and COMPLETE/FAIL itself with openlineage-python (``OPENLINEAGE_*`` settings /
``openlineage.yml``, else the embedded default file ``$AIRFLOW_HOME/lineage/events.jsonl``).

A capture or lineage problem never fails the task: it is logged and reported as an
``extractionError`` run facet.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from airflow_provider_lineage import _compat
from airflow_provider_lineage.capture import launcher as launcher_module
from airflow_provider_lineage.capture.config import LauncherConfig
from airflow_provider_lineage.operators._lineage import capture_modes, remote_capture
from airflow_provider_lineage.operators._lineage.task import (
    DEFAULT_ASSET_ALIAS,
    EMISSION_MODES,
    GUARD_RECORD_LIMIT,
    LINEAGE_TEMPLATE_FIELDS,
    XCOM_OUTPUTS_KEY,
    LineageTaskMixin,
)

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["DEFAULT_ASSET_ALIAS", "EMISSION_MODES", "GUARD_RECORD_LIMIT", "XCOM_OUTPUTS_KEY",
           "SparkLineageSubmitOperator", "launcher_path", "openlineage_provider_active"]


def launcher_path() -> str:
    """Absolute path of the launcher script submitted as the spark-submit application."""
    return str(Path(launcher_module.__file__).resolve())


def openlineage_provider_active() -> bool:
    """Whether Airflow's OpenLineage provider is installed and has a transport (i.e. will emit)."""
    return _compat.openlineage_provider_active()


class SparkLineageSubmitOperator(LineageTaskMixin, SparkSubmitOperator):
    """Submit a PySpark application with spark-submit and publish its column-level lineage.

    Accepts every argument of
    :class:`~airflow.providers.apache.spark.operators.spark_submit.SparkSubmitOperator`
    (``application``, ``application_args``, ``conf``, ``conn_id``, ``deploy_mode`` ...), with the
    same templating and connection handling. ``application`` must be a Python file.

    :param lineage_emission: ``"auto"`` (default): through Airflow's OpenLineage provider when it
        is configured, else emitted by the operator itself; ``"self"``: always emitted by the
        operator (use only when the provider is not configured, or events are sent twice);
        ``"off"``: capture and XCom only, no events.
    :param openlineage_config: openlineage-python client config for self-emission and for the
        driver in cluster mode (e.g. ``{"transport": {"type": "http", "url": ...}}``). Default:
        ``OPENLINEAGE_*`` settings / ``openlineage.yml``, else ``$AIRFLOW_HOME/lineage/events.jsonl``.
    :param capture_dir: where the driver leaves the capture records. Client deploy mode: a local folder
        (default: a fresh temporary folder, removed afterwards; a given folder is kept). Cluster deploy mode,
        or any URI: a location both the driver and this worker reach (``s3://bucket/prefix``, ``gs://``,
        ``abfs://``, ``hdfs://``, a shared path); each attempt writes below its own token sub-folder, removed
        after use unless ``keep_capture_records``. (templated)
    :param capture_conn_id: Airflow connection whose credentials this worker uses to read an object-store
        ``capture_dir`` (login/password, ``endpoint_url``/``region_name`` extras); default: the worker's
        environment. The driver writes with the credentials Spark already has.
    :param keep_capture_records: keep the run's records on the shared location after use.
    :param capture_record_limit: bound (bytes) on one capture record written to / read from a shared location;
        a bigger record is reported and skipped, never read into memory.
    :param capture_drain_timeout: seconds the driver waits at stop/exit for Spark's listener bus to
        deliver the last writes.
    :param lineage_xcom_key: XCom key of the written datasets (``None`` to not push).
    :param asset_alias: name of the :class:`~airflow.sdk.AssetAlias` this task adds to its
        ``outlets``; on success the operator publishes one asset event per table it wrote, with the
        asset URI equal to the OpenLineage dataset (``file:///data/mart``), so DAGs can be scheduled
        on those tables (``schedule=[Asset("file:///data/mart")]``) or on the alias. ``None``: no
        asset events.
    :param indirect_lineage: where dataset-wide INDIRECT edges (FILTER, JOIN, GROUP_BY, SORT) go in the
        ``columnLineage`` facet: ``"dataset"`` (once, in the facet's ``dataset`` list: compact, facet
        1-2-0, openlineage-spark's ``datasetLineageEnabled=true``; Marquez does not show it),
        ``"fields"`` (on every output field: what Marquez shows; one copy per output column) or
        ``"both"``. ``None`` (default): Airflow's ``[column_lineage] indirect_lineage`` option, else
        ``"dataset"``.
    :param udf_analysis: read Python UDF bodies on the driver for exact per-argument edges (default);
        ``False`` keeps UDFs black boxes (every argument DIRECT/TRANSFORMATION).
    :param on_lineage_change: what a change of this task's lineage since its previous successful run
        does (XCom ``lineage_diff``): ``"ignore"`` (logged at info), ``"warn"`` (default: a warning in
        the task log and a "changed" badge on the page) or ``"fail"`` (the task fails after the write,
        with the diff in the message, so downstream tasks do not run on a changed shape); any case.
        (templated; checked after rendering, at task start)
    :param require_masked: tags (e.g. ``["pii"]``, or one tag ``"pii"``) that no output column may receive
        through a path without a masking step; ``None`` (default): the provider setting ``[column_lineage]
        require_masked``, else no policy. Result in XCom ``lineage_policy``. The policy fails closed: tags
        that cannot be computed fully fail it too, with the reason. (templated; checked after rendering)
    :param on_policy_violation: ``"fail"`` (default: the task fails after the write, naming each
        column and its path) or ``"warn"`` (any case). (templated; checked after rendering, at task start)
    :param sieve_pruning: ``True``: in the driver, every Parquet scan of a table with Sieve indexes reads only
        the files the indexes cannot exclude (``airflow_provider_lineage.sieve.spark.enable``; Spark property
        ``spark.airflow_lineage.sievePruning=true``); the application is unchanged.
    """

    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, *LINEAGE_TEMPLATE_FIELDS)
    ui_color = "#e8c1a0"

    def __init__(
        self,
        *,
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
            lineage_emission=lineage_emission, openlineage_config=openlineage_config, capture_dir=capture_dir,
            capture_drain_timeout=capture_drain_timeout, capture_conn_id=capture_conn_id,
            keep_capture_records=keep_capture_records, capture_record_limit=capture_record_limit,
            lineage_xcom_key=lineage_xcom_key, asset_alias=asset_alias, indirect_lineage=indirect_lineage,
            udf_analysis=udf_analysis, on_lineage_change=on_lineage_change, require_masked=require_masked,
            on_policy_violation=on_policy_violation, sieve_pruning=sieve_pruning, **kwargs)

    def resolved_deploy_mode(self) -> str:
        return _compat.spark_submit_deploy_mode(self)

    # -- execution ------------------------------------------------------------------------------
    def execute(self, context: Context) -> None:
        if not str(self.application).endswith(".py"):
            raise ValueError(
                f"SparkLineageSubmitOperator runs Python applications only, got application={self.application!r}: "
                "use SparkSubmitOperator for JVM applications"
            )
        self.start_guard()
        emission = self.resolved_emission()
        deploy_mode = self.resolved_deploy_mode()
        task_run = self.lineage_task_run(context)
        user_app, user_args = self.application, list(self.application_args or [])
        launcher_cfg = LauncherConfig(drain_timeout_s=self.capture_drain_timeout, indirect=self.resolved_indirect(),
                                      udf_analysis=self.udf_analysis, sieve_pruning=self.sieve_pruning)
        mode = capture_modes.choose(self, task_run, deploy_mode, emission)
        mode.configure(launcher_cfg)
        client = self._self_emit_start(task_run) if emission == "self" else None

        user_py_files, user_conf = self.py_files, self.conf
        self.application = launcher_path()
        self.application_args = [user_app, *user_args]
        self.conf = {**(self.conf or {}), **launcher_cfg.to_spark_conf()}
        if mode.ships_capture_code:
            remote_capture.ship(self, user_app, deploy_mode)
        _compat.reset_spark_submit_hook(self)
        error: BaseException | None = None
        try:
            super().execute(context)
        except BaseException as exc:  # noqa: BLE001 - lineage never fails the task
            error = exc
        finally:
            self.application, self.application_args = user_app, user_args
            self.py_files, self.conf = user_py_files, user_conf

        try:
            self._publish(context, mode.collect(error), emission, client, task_run, error)
        except Exception as exc:  # noqa: BLE001 - lineage never fails the task
            self.lineage_log.warning("lineage publication failed: %r (the task is not affected)", exc)
            self._policy_not_checked(f"the lineage publication failed: {exc!r}")
        finally:
            mode.cleanup()
        if error is not None:
            raise error
        if self.guard is not None and self.guard.failure:
            raise _compat.airflow_exception("AirflowFailException")(self.guard.failure)
