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
  client mode does (:mod:`.remote_capture`);
* cluster deploy mode without one (fallback): the driver builds and emits the events itself, as a child
  run of this task (ParentRunFacet), with the same OpenLineage configuration; the task log says what
  this loses.

Publishing follows one rule, *never both*: when Airflow's OpenLineage provider is installed and
configured, the datasets go out through it (``get_openlineage_facets_on_complete``); otherwise the
operator emits START and COMPLETE/FAIL itself with openlineage-python (``OPENLINEAGE_*`` settings /
``openlineage.yml``, else the embedded default file ``$AIRFLOW_HOME/lineage/events.jsonl``).

A capture or lineage problem never fails the task: it is logged and reported as an
``extractionError`` run facet.
"""
from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from airflow_provider_lineage import _compat
from airflow_provider_lineage.capture import launcher as launcher_module
from airflow_provider_lineage.capture.config import STATUS_FILE, LauncherConfig
from airflow_provider_lineage.lineage import events, transport
from airflow_provider_lineage.lineage.logs import PrefixedLogger, get_logger
from airflow_provider_lineage.lineage.model import DEFAULT_INDIRECT, INDIRECT_PLACEMENTS, ParentRun
from airflow_provider_lineage.lineage.naming import asset_uri
from airflow_provider_lineage.lineage.record import read_records
from airflow_provider_lineage.operators import guard, remote_capture

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors import OperatorLineage
    from airflow.sdk import Context

EMISSION_MODES = ("auto", "self", "off")
#: XCom key under which the operator pushes the datasets a task wrote.
XCOM_OUTPUTS_KEY = "lineage_outputs"
#: Asset alias under which the operator publishes an asset event per table it wrote.
DEFAULT_ASSET_ALIAS = "spark_lineage_writes"


#: Size bound of the lineage record the guard computes tags and the policy over (the XCom copy is cut to
#: ``lineage_record_limit``); over it the record says ``truncated`` and a policy fails closed.
GUARD_RECORD_LIMIT = 64 * 1024 * 1024


def _templated(value: Any) -> bool:
    """Whether ``value`` (a string or a list of them) holds a Jinja template (checked after rendering)."""
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, (list, tuple)):
        return any(_templated(v) for v in value)
    return False


def launcher_path() -> str:
    """Absolute path of the launcher script submitted as the spark-submit application."""
    return str(Path(launcher_module.__file__).resolve())


def openlineage_provider_active() -> bool:
    """Whether Airflow's OpenLineage provider is installed and has a transport (i.e. will emit)."""
    return _compat.openlineage_provider_active()


class SparkLineageSubmitOperator(SparkSubmitOperator):
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

    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "capture_dir", "on_lineage_change",
                                      "require_masked", "on_policy_violation")
    ui_color = "#e8c1a0"
    #: Size bound (bytes of JSON) of the lineage record kept in XCom ``column_lineage`` for the
    #: column-lineage view; a bigger record is cut with a marker the view shows (see ``lineage.run_record``).
    lineage_record_limit: int = 512 * 1024

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
        super().__init__(**kwargs)
        init_lineage_arguments(
            self, lineage_emission=lineage_emission, openlineage_config=openlineage_config, capture_dir=capture_dir,
            capture_drain_timeout=capture_drain_timeout, capture_conn_id=capture_conn_id,
            keep_capture_records=keep_capture_records, capture_record_limit=capture_record_limit,
            lineage_xcom_key=lineage_xcom_key, asset_alias=asset_alias, indirect_lineage=indirect_lineage,
            udf_analysis=udf_analysis, on_lineage_change=on_lineage_change, require_masked=require_masked,
            on_policy_violation=on_policy_violation, sieve_pruning=sieve_pruning)

    # -- decisions ------------------------------------------------------------------------------

    @property
    def lineage_log(self) -> PrefixedLogger:
        """The task log with the provider's prefix in front of every line."""
        return get_logger(self.log)

    def resolved_emission(self) -> str:
        """``"provider"``, ``"self"`` or ``"off"`` for this run."""
        if self.lineage_emission == "off":
            return "off"
        if self.lineage_emission == "self":
            return "self"
        return "provider" if openlineage_provider_active() else "self"

    def resolved_deploy_mode(self) -> str:
        return _compat.spark_submit_deploy_mode(self)

    # -- execution ------------------------------------------------------------------------------
    def execute(self, context: Context) -> None:
        if not str(self.application).endswith(".py"):
            raise ValueError(
                f"SparkLineageSubmitOperator runs Python applications only, got application={self.application!r}: "
                "use SparkSubmitOperator for JVM applications"
            )
        # the guard's arguments as rendered: a bad one fails the task now, before Spark runs (never "no guard")
        self.guard = guard.Guard(on_lineage_change=self.on_lineage_change, require_masked=self.require_masked,
                                 on_policy_violation=self.on_policy_violation)
        emission = self.resolved_emission()
        deploy_mode = self.resolved_deploy_mode()
        ti = context.get("ti") or context.get("task_instance")
        task_run = _task_run_identity(ti, self)
        user_app, user_args = self.application, list(self.application_args or [])
        created_dir: str | None = None
        launcher_cfg = LauncherConfig(drain_timeout_s=self.capture_drain_timeout, indirect=self.resolved_indirect(),
                                      udf_analysis=self.udf_analysis,
                                      sieve_pruning=self.sieve_pruning)
        remote_cap = remote_capture.plan(self, task_run, deploy_mode, launcher_cfg)
        if remote_cap is not None:
            pass
        elif deploy_mode == "cluster":
            launcher_cfg.emit = emission != "off"
            launcher_cfg.openlineage_config = self._driver_openlineage_config(emission)
            launcher_cfg.job_namespace = task_run.namespace
            launcher_cfg.job_name = f"{task_run.name}.spark"
            launcher_cfg.parent = task_run
        else:
            if self.capture_dir:
                capture_dir = self.capture_dir
            else:
                capture_dir = created_dir = tempfile.mkdtemp(prefix="apl-capture-")
            launcher_cfg.capture_dir = str(Path(capture_dir).resolve())

        client = None
        if emission == "self":
            client = self._self_emit_start(task_run)

        user_py_files, user_conf = self.py_files, self.conf
        self.application = launcher_path()
        self.application_args = [user_app, *user_args]
        self.conf = {**(self.conf or {}), **launcher_cfg.to_spark_conf()}
        if remote_cap is not None or deploy_mode == "cluster":
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
            if remote_cap is not None:
                fetched = remote_capture.fetch(self, remote_cap)
                created_dir = fetched.folder
                result = self.process_capture_dir(fetched.folder, error, extra_problems=fetched.problems,
                                                  status_expected=fetched.status_expected)
            elif deploy_mode == "cluster":
                self.log.info(
                    "cluster deploy mode: the Spark driver emitted the lineage events itself (job %s.spark, "
                    "parent run %s); no datasets are pushed to XCom",
                    task_run.name,
                    task_run.run_id,
                )
                result = events.LineageResult()
                self.lineage_result = result
                self._ol_run_facets = events.run_facets(result)
            else:
                result = self.process_capture_dir(launcher_cfg.capture_dir or "", error)
            self._publish(context, result, emission, client, task_run, error)
        except Exception as exc:  # noqa: BLE001 - lineage never fails the task
            self.lineage_log.warning("lineage publication failed: %r (the task is not affected)", exc)
            self._policy_not_checked(f"the lineage publication failed: {exc!r}")
        finally:
            if created_dir:
                shutil.rmtree(created_dir, ignore_errors=True)
        if error is not None:
            raise error
        if self.guard is not None and self.guard.failure:
            raise _compat.airflow_exception("AirflowFailException")(self.guard.failure)

    def resolved_indirect(self) -> str:
        """Where dataset-wide INDIRECT edges go: ``indirect_lineage``, else Airflow's ``[column_lineage]
        indirect_lineage`` option (raises naming the option when it is not a placement), else chosen by where this
        task's events go (:func:`.transport.auto_indirect`: ``"both"`` for Marquez's endpoint, which ignores the
        facet's dataset-level list; else ``"dataset"``), said once in the task log."""
        if self.indirect_lineage is not None:
            return self.indirect_lineage
        raw = _compat.airflow_conf().get("column_lineage", "indirect_lineage", fallback=None)
        if raw is not None and str(raw).strip():
            value = str(raw).strip().lower()
            if value not in INDIRECT_PLACEMENTS:
                raise ValueError(f"[column_lineage] indirect_lineage = {raw!r} is not one of {INDIRECT_PLACEMENTS}: "
                                 "set it to 'dataset' (compact), 'fields' (what Marquez shows) or 'both', or unset it "
                                 "(then chosen by where the events go)")
            return value
        try:
            value, why = transport.auto_indirect(self._events_transport())
        except Exception as exc:  # noqa: BLE001 - an unreadable transport setting never fails the task
            value, why = DEFAULT_INDIRECT, f"the events' destination could not be read ({exc!r})"
        if getattr(self, "_indirect_said", None) != (value, why):
            self._indirect_said = (value, why)
            self.log.info("lineage: every-row edges (FILTER, JOIN, GROUP_BY, SORT) placed %r: %s (indirect_lineage= "
                          "or [column_lineage] indirect_lineage chooses)", value, why)
        return value

    def _events_transport(self) -> dict[str, Any] | None:
        """The openlineage-python transport config this task's events go through (``None``: the embedded file,
        or emission off)."""
        emission = self.resolved_emission()
        if emission == "off":
            return None
        if self.openlineage_config is not None:
            return self.openlineage_config.get("transport")
        if emission == "provider":
            return _compat.openlineage_provider_transport() or transport.environment_transport()
        return transport.environment_transport() if transport.environment_configured() else None

    def process_capture_dir(self, capture_dir: str, error: BaseException | None = None, *,
                            extra_problems: list[str] | None = None,
                            status_expected: bool = True) -> events.LineageResult:
        """Read the launcher's records in ``capture_dir`` and compute this run's lineage and datasets.

        Sets :attr:`lineage_result` and what :meth:`get_openlineage_facets_on_complete` returns.
        ``extra_problems``: what reading them back from a shared location found (:mod:`.remote_capture`).
        """
        result = self._collect(capture_dir, error, extra_problems, status_expected)
        self.lineage_result = result
        self._ol_inputs, self._ol_outputs = events.datasets(result, indirect=self.resolved_indirect())
        self._ol_run_facets = events.run_facets(result)
        return result

    def _collect(self, capture_dir: str, error: BaseException | None, extra_problems: list[str] | None = None,
                 status_expected: bool = True) -> events.LineageResult:
        problems: list[events.Problem] = [events.Problem(p) for p in extra_problems or []]
        unreadable: list[str] = []
        try:
            records = read_records(capture_dir, unreadable)
        except Exception as exc:  # noqa: BLE001 - lineage never fails the task
            problems.append(events.Problem(f"cannot read capture records in {capture_dir}: {exc!r}"))
            records = []
        for reason in unreadable:  # one bad file never costs the other records
            problems.append(events.Problem(f"unreadable capture record (skipped) {reason}", task=reason.split(": ", 1)[0]))
        status_path = Path(capture_dir) / STATUS_FILE
        if status_path.is_file():
            import json

            try:
                status = json.loads(status_path.read_text(encoding="utf-8"))
                problems += [events.Problem(p) for p in status.get("problems") or []]
            except Exception as exc:  # noqa: BLE001 - lineage never fails the task
                problems.append(events.Problem(f"unreadable launcher status {status_path}: {exc!r}"))
        elif error is None and status_expected:
            problems.append(
                events.Problem(
                    f"the launcher left no status file in {capture_dir}: the application created no SparkSession, "
                    "or the driver could not write there (check the task log for 'airflow-provider-lineage:' lines)"
                )
            )
        result = events.analyze(records, problems)
        result.unreadable = len(unreadable)
        return result

    def _publish_assets(self, context: Context, written: list[dict[str, Any]]) -> None:
        """One asset event per written table under :attr:`asset_alias` (sent by Airflow on success)."""
        from airflow.sdk import Asset, AssetAlias

        for ds in written:
            try:
                uri = asset_uri(ds["namespace"], ds["name"])
                extra = {k: ds[k] for k in ("table", "format", "mode") if ds.get(k)}
                if self.guard is not None and (tagged := self.guard.dataset_tags(ds["namespace"], ds["name"])):
                    extra["column_tags"] = tagged  # the next task (this DAG or another) inherits them
                context["outlet_events"][AssetAlias(self.asset_alias)].add(Asset(uri=uri), extra=extra)
                self.log.info("asset event for %s (alias %s)", uri, self.asset_alias)
            except Exception as exc:  # noqa: BLE001 - lineage never fails the task
                self.lineage_log.warning("could not publish an asset event for %s: %r", ds.get("name"), exc)

    def _publish(
        self,
        context: Context,
        result: events.LineageResult,
        emission: str,
        client: Any,
        task_run: ParentRun,
        error: BaseException | None,
    ) -> None:
        self.log.info("column lineage of %s:\n%s", task_run.name, events.summaries(result))
        written = events.written_datasets(result)
        self._push_lineage_record(context, result, emission, task_run)
        self._policy_not_checked("the lineage record of this run could not be built (see the warnings above)")
        if self.asset_alias and error is None:
            self._publish_assets(context, written)
        if self.lineage_xcom_key:
            try:
                context["ti"].xcom_push(key=self.lineage_xcom_key, value=written)
            except Exception as exc:  # noqa: BLE001 - lineage never fails the task
                self.lineage_log.warning("could not push %s to XCom: %r", self.lineage_xcom_key, exc)
        if emission == "provider":
            self.lineage_destination = "Airflow's OpenLineage provider"
            self.log.info(
                "lineage: %d output / %d input datasets handed to Airflow's OpenLineage provider",
                len(self._ol_outputs),
                len(self._ol_inputs),
            )
            self._note_provider_event_size()
        elif emission == "self" and client is not None:
            failure: BaseException | str | None = error
            if failure is None and self.guard is not None and self.guard.failure:
                failure = self.guard.failure  # the task fails after the write: its event says so
            event = events.build_event(
                "FAIL" if failure is not None else "COMPLETE",
                job_namespace=task_run.namespace,
                job_name=task_run.name,
                run_id=task_run.run_id,
                inputs=self._ol_inputs,
                outputs=self._ol_outputs,
                run_facets=events.run_facets(result, parent=_dag_parent(task_run), error=failure),
                job_facets=events.job_facets(integration="AIRFLOW", job_type="TASK"),
            )
            notes: list[str] = []
            for msg in transport.emit_all(client, [event], notes=notes):
                self.lineage_log.warning("%s", msg)
            for note in notes:  # an event over the transport's size limit, split (see transport.fit_events)
                self.log.info("lineage: %s", note)
            if transport.failure(client) is None:
                self.log.info("lineage: OpenLineage events written to %s", self.lineage_destination)
        else:
            self.lineage_destination = None
            self.log.info("lineage: emission is off (lineage_emission='off')")

    def _note_provider_event_size(self) -> None:
        """Say when the datasets handed to Airflow's OpenLineage provider make an event over the 1 MB body limit of
        the proxies usually in front of an http endpoint: the provider sends it as one request (this package splits
        only the events it emits itself)."""
        try:
            if transport.dataset_list_blind(self._events_transport()) is None:
                return
            from openlineage.client.serde import Serde

            size = sum(len(Serde.to_json(d).encode()) for d in [*self._ol_inputs, *self._ol_outputs])
            if size > transport.HTTP_EVENT_LIMIT:
                self.log.info(
                    "lineage: the datasets handed to Airflow's OpenLineage provider are %d bytes, over %d: its http "
                    "transport sends them in one request, which a proxy in front of Marquez with a smaller body limit "
                    "refuses (raise that limit, set \"compression\": \"gzip\" on the transport, or "
                    "lineage_emission='self', which splits events per share of columns)", size,
                    transport.HTTP_EVENT_LIMIT)
        except Exception as exc:  # noqa: BLE001 - a size note never fails the task
            self.lineage_log.debug("event size not estimated: %r", exc)

    def _push_lineage_record(
        self, context: Context, result: events.LineageResult, emission: str, task_run: ParentRun
    ) -> None:
        """The run's lineage record for the column-lineage view (XCom ``column_lineage``; JSON, bounded)."""
        from airflow_provider_lineage.lineage import run_record

        try:
            record = run_record.build(
                result,
                job_namespace=task_run.namespace,
                job_name=task_run.name,
                run_id=task_run.run_id,
                emission=emission,
                deploy_mode=self.resolved_deploy_mode(),
                # the guard sees every edge (its tags and policy must not follow a cut record); the record kept
                # in XCom is cut to lineage_record_limit below
                limit=max(self.lineage_record_limit, GUARD_RECORD_LIMIT),
            )
            if record.get("status") != "cluster_mode":  # a driver that emitted itself left nothing to compare
                self._run_guard(context, record)
            else:
                self._policy_not_checked("cluster deploy mode: the Spark driver emits the lineage itself and the "
                                         "worker has no column edges to check the policy against (use client mode)")
            record = guard.fit(record, self.lineage_record_limit)
            context["ti"].xcom_push(key=run_record.XCOM_KEY, value=record)
        except Exception as exc:  # noqa: BLE001 - lineage never fails the task
            self.lineage_log.warning("could not keep the lineage record for the UI view: %r", exc)

    def _run_guard(self, context: Context, record: dict[str, Any]) -> None:
        """Diff with the previous run, column tags and policy (see :mod:`.guard`); tags facets on the datasets."""
        try:
            if self.guard is None:  # execute() makes it; a caller of _publish alone (tests) may not have
                self.guard = guard.Guard(on_lineage_change=self.on_lineage_change,
                                         require_masked=self.require_masked,
                                         on_policy_violation=self.on_policy_violation)
            self.guard.run(context["ti"], record, self.log, self.lineage_log)
        except Exception as exc:  # noqa: BLE001 - lineage never fails the task; a policy fails closed
            self.lineage_log.warning("lineage guard not run: %r", exc)
            self._policy_not_checked(f"the lineage guard could not run: {exc!r}")
        try:
            if self.guard is not None:
                self.guard.add_tags_facets([*self._ol_inputs, *self._ol_outputs])
        except Exception as exc:  # noqa: BLE001 - lineage never fails the task
            self.lineage_log.warning("tags facets not added: %r (the task is not affected)", exc)

    def _policy_not_checked(self, reason: str) -> None:
        """With ``require_masked``, a policy the guard could not check fails the task (fail closed)."""
        if self.guard is not None:
            self.guard.not_checked(reason, self.lineage_log)

    def _self_emit_start(self, task_run: ParentRun) -> Any:
        try:
            client, where = transport.client_for(self.openlineage_config)
            self.lineage_destination = where
            event = events.build_event(
                "START",
                job_namespace=task_run.namespace,
                job_name=task_run.name,
                run_id=task_run.run_id,
                run_facets=events.run_facets(None, parent=_dag_parent(task_run)),
                job_facets=events.job_facets(integration="AIRFLOW", job_type="TASK"),
            )
            for msg in transport.emit_all(client, [event]):
                self.lineage_log.warning("%s", msg)
            return client
        except Exception as exc:  # noqa: BLE001 - lineage never fails the task
            self.lineage_log.warning("cannot emit OpenLineage events: %r (the task is not affected)", exc)
            return None

    def _driver_openlineage_config(self, emission: str) -> dict[str, Any] | None:
        """The openlineage-python config the driver uses in cluster mode (same destination as ours)."""
        if self.openlineage_config is not None:
            return self.openlineage_config
        if emission == "provider":
            try:
                from airflow.providers.openlineage import conf as ol_conf

                provider_transport = ol_conf.transport()
                if provider_transport:
                    return {"transport": provider_transport}
            except Exception:  # noqa: BLE001, S110 - lineage never fails the task
                pass
            return None
        if not transport.environment_configured():
            return transport.default_file_config()
        return None  # the driver resolves OPENLINEAGE_* / openlineage.yml in its own environment

    # -- OpenLineage provider hooks -------------------------------------------------------------
    def get_openlineage_facets_on_start(self) -> OperatorLineage | None:
        return _compat.operator_lineage()

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> OperatorLineage | None:
        """Datasets (schema + columnLineage + symlinks) of every write of this run."""
        return _compat.operator_lineage(
            inputs=list(self._ol_inputs),
            outputs=list(self._ol_outputs),
            run_facets=dict(self._ol_run_facets),
        )

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> OperatorLineage | None:
        """Same as on complete: the writes that succeeded before the failure, plus capture problems."""
        return self.get_openlineage_facets_on_complete(task_instance)


# -- identities (operators/openlineage_identity.py) -------------------------------------------------
def _task_run_identity(ti: Any, op: Any) -> ParentRun:
    """OpenLineage namespace/name/runId of this task run and its DAG run (same as the provider's)."""
    from airflow_provider_lineage.operators.openlineage_identity import task_run_identity

    return task_run_identity(ti, dag_id=op.dag_id if op.has_dag() else None, task_id=op.task_id)


def _dag_parent(task_run: ParentRun) -> ParentRun | None:
    """The parent of the task run's own events: the DAG run."""
    from airflow_provider_lineage.operators.openlineage_identity import dag_parent

    return dag_parent(task_run)


def init_lineage_arguments(
    op: Any,
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
) -> None:
    """Check and set the lineage arguments on ``op`` after ``BaseOperator.__init__``: one implementation for
    :class:`SparkLineageSubmitOperator` and every other entry point (``operators/lineage_task.py``). The
    arguments mean what :class:`SparkLineageSubmitOperator`'s docstring says; a bad value raises ``ValueError``."""
    if indirect_lineage is not None and indirect_lineage not in INDIRECT_PLACEMENTS:
        raise ValueError(f"indirect_lineage={indirect_lineage!r} is not one of {INDIRECT_PLACEMENTS}")
    op.asset_alias = asset_alias
    if asset_alias:
        from airflow.sdk import AssetAlias

        op.outlets = [*op.outlets, AssetAlias(asset_alias)]
    if lineage_emission not in EMISSION_MODES:
        raise ValueError(
            f"lineage_emission={lineage_emission!r} is not one of {EMISSION_MODES}: use 'auto' unless "
            "you need to force self-emission ('self') or switch events off ('off')"
        )
    op.lineage_emission = lineage_emission
    op.openlineage_config = openlineage_config
    op.capture_dir = capture_dir
    op.capture_drain_timeout = capture_drain_timeout
    op.capture_conn_id = capture_conn_id
    op.keep_capture_records = keep_capture_records
    op.capture_record_limit = capture_record_limit
    op.lineage_xcom_key = lineage_xcom_key
    op.indirect_lineage = indirect_lineage
    op.udf_analysis = udf_analysis
    op.sieve_pruning = bool(sieve_pruning)
    # checked now unless templated; every value again after rendering, at task start (execute)
    if not _templated(on_lineage_change):
        on_lineage_change = guard.parse_mode("on_lineage_change", on_lineage_change, guard.CHANGE_MODES)
    if not _templated(on_policy_violation):
        on_policy_violation = guard.parse_mode("on_policy_violation", on_policy_violation, guard.POLICY_MODES)
    if not _templated(require_masked):
        require_masked = guard.parse_require_masked(require_masked)
    op.on_lineage_change = on_lineage_change
    op.require_masked = require_masked
    op.on_policy_violation = on_policy_violation
    op.guard = None
    op.lineage_result = None
    op._ol_inputs = []
    op._ol_outputs = []
    op._ol_run_facets = {}
    op.lineage_destination = None
