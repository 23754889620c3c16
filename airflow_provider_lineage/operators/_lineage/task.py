"""The lineage half of every lineage operator: its arguments, their templated names and the end of the task.

:class:`LineageTaskMixin` is the one home of the lineage arguments (``lineage_emission`` ... ``sieve_pruning``,
meant as :class:`~airflow_provider_lineage.operators.spark_lineage.SparkLineageSubmitOperator`'s docstring says),
of :data:`LINEAGE_TEMPLATE_FIELDS` and of what a lineage task does after its Spark work, for any entry point
(``SparkLineageSubmitOperator`` and its SQL and pipelines siblings, ``PySparkLineageOperator``,
``@task.pyspark_lineage``): the column-lineage summary in the log, XCom ``column_lineage`` and ``lineage_outputs``,
the OpenLineage events with the task as parent (through Airflow's OpenLineage provider or emitted by the task), the
guard (diff, tags, policy), the asset events. As the apache-spark provider's ``ResumableJobMixin``, it comes first
in the bases: ``class SparkLineageSubmitOperator(LineageTaskMixin, SparkSubmitOperator)``; its ``__init__`` takes
the lineage arguments and hands every other one on. An operator then hands its capture records to
:meth:`LineageTaskMixin.process_records` (records in memory) or :meth:`~LineageTaskMixin.process_capture_dir` (a
run folder), and calls ``_publish`` at the end of its ``execute``.

The public operators list the lineage arguments again in their own ``__init__`` (keyword-only, passed on here):
Airflow's ``default_args``, ``partial()``/``expand()`` and IDE help read the signature of each operator class's
own ``__init__``, and a mixin's is not one of them (``tests/operators/test_pyspark.py`` holds the copies equal).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_lineage import _compat
from airflow_provider_lineage import conf as settings
from airflow_provider_lineage.capture.config import STATUS_FILE
from airflow_provider_lineage.lineage import events, transport
from airflow_provider_lineage.lineage.logs import PrefixedLogger, get_logger
from airflow_provider_lineage.lineage.model import DEFAULT_INDIRECT, INDIRECT_PLACEMENTS, ParentRun
from airflow_provider_lineage.lineage.naming import asset_uri
from airflow_provider_lineage.lineage.record import CaptureRecord, read_records
from airflow_provider_lineage.operators._lineage import guard
from airflow_provider_lineage.operators._lineage.openlineage_identity import (
    dag_parent,
    emit_task_start,
    task_run_identity,
)
from airflow_provider_lineage.operators._lineage.templating import is_template

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors import OperatorLineage
    from airflow.sdk import Context

__all__ = ["DEFAULT_ASSET_ALIAS", "EMISSION_MODES", "GUARD_RECORD_LIMIT", "LINEAGE_TEMPLATE_FIELDS",
           "XCOM_OUTPUTS_KEY", "LineageTaskMixin"]

EMISSION_MODES = ("auto", "self", "off")
#: XCom key under which the operator pushes the datasets a task wrote.
XCOM_OUTPUTS_KEY = "lineage_outputs"
#: Asset alias under which the operator publishes an asset event per table it wrote.
DEFAULT_ASSET_ALIAS = "spark_lineage_writes"
#: Size bound of the lineage record the guard computes tags and the policy over (the XCom copy is cut to
#: ``lineage_record_limit``); over it the record says ``truncated`` and a policy fails closed.
GUARD_RECORD_LIMIT = 64 * 1024 * 1024
#: The lineage arguments' templated fields (each operator adds them to its base class's ``template_fields``).
LINEAGE_TEMPLATE_FIELDS = ("capture_dir", "on_lineage_change", "require_masked", "on_policy_violation")


class LineageTaskMixin:
    """The lineage arguments and the end of a lineage task, for an operator that runs the Spark work its own way."""

    #: Size bound (bytes of JSON) of the lineage record kept in XCom ``column_lineage`` for the
    #: column-lineage view; a bigger record is cut with a marker the view shows (see ``lineage.run_record``).
    lineage_record_limit: int = 512 * 1024
    #: what :meth:`resolved_deploy_mode` says (``"client"``: records handed back to the task)
    lineage_deploy_mode: str = "client"

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
        """Check and set the lineage arguments after the operator's own ``__init__`` (``**kwargs``) ran; a bad value
        raises ``ValueError`` naming the fix."""
        super().__init__(**kwargs)
        if indirect_lineage is not None and indirect_lineage not in INDIRECT_PLACEMENTS:
            raise ValueError(f"indirect_lineage={indirect_lineage!r} is not one of {INDIRECT_PLACEMENTS}")
        self.asset_alias = asset_alias
        if asset_alias:
            from airflow.sdk import AssetAlias

            self.outlets = [*self.outlets, AssetAlias(asset_alias)]
        if lineage_emission not in EMISSION_MODES:
            raise ValueError(
                f"lineage_emission={lineage_emission!r} is not one of {EMISSION_MODES}: use 'auto' unless "
                "you need to force self-emission ('self') or switch events off ('off')"
            )
        self.lineage_emission = lineage_emission
        self.openlineage_config = openlineage_config
        self.capture_dir = capture_dir
        self.capture_drain_timeout = capture_drain_timeout
        self.capture_conn_id = capture_conn_id
        self.keep_capture_records = keep_capture_records
        self.capture_record_limit = capture_record_limit
        self.lineage_xcom_key = lineage_xcom_key
        self.indirect_lineage = indirect_lineage
        self.udf_analysis = udf_analysis
        self.sieve_pruning = bool(sieve_pruning)
        # checked now unless templated; every value again after rendering, at task start (start_guard)
        if not is_template(on_lineage_change):
            on_lineage_change = guard.parse_mode("on_lineage_change", on_lineage_change, guard.CHANGE_MODES)
        if not is_template(on_policy_violation):
            on_policy_violation = guard.parse_mode("on_policy_violation", on_policy_violation, guard.POLICY_MODES)
        if not is_template(require_masked):
            require_masked = guard.parse_require_masked(require_masked)
        self.on_lineage_change = on_lineage_change
        self.require_masked = require_masked
        self.on_policy_violation = on_policy_violation
        self.guard: guard.Guard | None = None
        self.lineage_result: events.LineageResult | None = None
        self._ol_inputs: list[Any] = []
        self._ol_outputs: list[Any] = []
        self._ol_run_facets: dict[str, Any] = {}
        self.lineage_destination: str | None = None

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
        return "provider" if _compat.openlineage_provider_active() else "self"

    def resolved_deploy_mode(self) -> str:
        return self.lineage_deploy_mode

    def start_guard(self) -> guard.Guard:
        """The guard from the rendered arguments, at task start: a bad one fails the task before Spark runs (never
        "no guard")."""
        self.guard = guard.Guard(on_lineage_change=self.on_lineage_change, require_masked=self.require_masked,
                                 on_policy_violation=self.on_policy_violation)
        return self.guard

    def lineage_task_run(self, context: Context) -> ParentRun:
        """OpenLineage namespace/name/runId of this task run and its DAG run (the same as the provider's)."""
        ti = context.get("ti") or context.get("task_instance")
        return task_run_identity(ti, dag_id=self.dag_id if self.has_dag() else None, task_id=self.task_id)

    def process_records(self, records: list[CaptureRecord], problems: list[str]) -> events.LineageResult:
        """:meth:`process_capture_dir` for records captured in this process (``CaptureSession``)."""
        result = events.analyze(list(records), [events.Problem(p) for p in problems])
        self.lineage_result = result
        self._ol_inputs, self._ol_outputs = events.datasets(result, indirect=self.resolved_indirect())
        self._ol_run_facets = events.run_facets(result)
        return result

    def resolved_indirect(self) -> str:
        """Where dataset-wide INDIRECT edges go: ``indirect_lineage``, else Airflow's ``[column_lineage]
        indirect_lineage`` option (raises naming the option when it is not a placement), else chosen by where this
        task's events go (:func:`.transport.auto_indirect`: ``"both"`` for Marquez's endpoint, which ignores the
        facet's dataset-level list; else ``"dataset"``), said once in the task log."""
        if self.indirect_lineage is not None:
            return self.indirect_lineage
        configured = settings.indirect_lineage()  # raises naming the option when it is not a placement
        if configured is not None:
            return configured
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
            problems.append(events.Problem(f"unreadable capture record (skipped) {reason}",
                                           task=reason.split(": ", 1)[0]))
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
                run_facets=events.run_facets(result, parent=dag_parent(task_run), error=failure),
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
                self.start_guard()
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
            client, self.lineage_destination = emit_task_start(self.openlineage_config, task_run, self.lineage_log)
            return client
        except Exception as exc:  # noqa: BLE001 - lineage never fails the task
            self.lineage_log.warning("cannot emit OpenLineage events: %r (the task is not affected)", exc)
            return None

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
