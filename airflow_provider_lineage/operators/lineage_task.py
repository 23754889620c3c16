"""The lineage half of an operator: what ``SparkLineageSubmitOperator`` does after its Spark job, for any entry point.

:class:`LineageTaskMixin` gives another operator (``PySparkLineageOperator``, ``@task.pyspark_lineage``) the same
lineage arguments and the same end of task: the column-lineage summary in the log, XCom ``column_lineage`` and
``lineage_outputs``, the OpenLineage events with the task as parent (through Airflow's OpenLineage provider or
emitted by the task), the guard (diff, tags, policy), the asset events. The methods are
:class:`~.spark_lineage.SparkLineageSubmitOperator`'s own (one implementation, not a copy); an operator using
the mixin sets the lineage arguments with :func:`init_lineage_arguments`, then hands its capture records to
:meth:`LineageTaskMixin.process_records` (records in memory) or ``process_capture_dir`` (a run folder), and
calls ``_publish`` at the end of its ``execute``.
"""
from __future__ import annotations

from airflow_provider_lineage.lineage import events
from airflow_provider_lineage.lineage.record import CaptureRecord
from airflow_provider_lineage.operators.spark_lineage import (
    SparkLineageSubmitOperator,
    init_lineage_arguments,
)

__all__ = ["LINEAGE_TEMPLATE_FIELDS", "LineageTaskMixin", "init_lineage_arguments"]

#: The lineage arguments' templated fields (as ``SparkLineageSubmitOperator``'s).
LINEAGE_TEMPLATE_FIELDS = ("capture_dir", "on_lineage_change", "require_masked", "on_policy_violation")

_S = SparkLineageSubmitOperator


class LineageTaskMixin:
    """``SparkLineageSubmitOperator``'s lineage machinery, for an operator that gets its records another way."""

    lineage_record_limit: int = _S.lineage_record_limit
    #: what :meth:`resolved_deploy_mode` says (``"client"``: records handed back to the task)
    lineage_deploy_mode: str = "client"

    lineage_log = _S.lineage_log
    resolved_emission = _S.resolved_emission
    process_capture_dir = _S.process_capture_dir
    _collect = _S._collect
    _publish = _S._publish
    _publish_assets = _S._publish_assets
    _push_lineage_record = _S._push_lineage_record
    _run_guard = _S._run_guard
    _policy_not_checked = _S._policy_not_checked
    resolved_indirect = _S.resolved_indirect
    _events_transport = _S._events_transport
    _note_provider_event_size = _S._note_provider_event_size
    _self_emit_start = _S._self_emit_start
    get_openlineage_facets_on_start = _S.get_openlineage_facets_on_start
    get_openlineage_facets_on_complete = _S.get_openlineage_facets_on_complete
    get_openlineage_facets_on_failure = _S.get_openlineage_facets_on_failure

    def resolved_deploy_mode(self) -> str:
        return self.lineage_deploy_mode

    def process_records(self, records: list[CaptureRecord], problems: list[str]) -> events.LineageResult:
        """:meth:`process_capture_dir` for records captured in this process (``CaptureSession``)."""
        result = events.analyze(list(records), [events.Problem(p) for p in problems])
        self.lineage_result = result
        self._ol_inputs, self._ol_outputs = events.datasets(result, indirect=self.resolved_indirect())
        self._ol_run_facets = events.run_facets(result)
        return result
