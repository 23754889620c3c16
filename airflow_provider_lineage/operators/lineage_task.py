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

from typing import Any

from airflow_provider_lineage.lineage import events
from airflow_provider_lineage.lineage.model import INDIRECT_PLACEMENTS
from airflow_provider_lineage.lineage.record import CaptureRecord
from airflow_provider_lineage.operators import guard
from airflow_provider_lineage.operators.spark_lineage import (
    DEFAULT_ASSET_ALIAS,
    EMISSION_MODES,
    XCOM_OUTPUTS_KEY,
    SparkLineageSubmitOperator,
)

#: The lineage arguments' templated fields (as ``SparkLineageSubmitOperator``'s).
LINEAGE_TEMPLATE_FIELDS = ("capture_dir", "on_lineage_change", "require_masked", "on_policy_violation")

_S = SparkLineageSubmitOperator


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
    indirect_lineage: str = "both",
    udf_analysis: bool = True,
    on_lineage_change: str = "warn",
    require_masked: list[str] | None = None,
    on_policy_violation: str = "fail",
) -> None:
    """Validate and set ``SparkLineageSubmitOperator``'s lineage arguments on ``op`` (after ``BaseOperator.__init__``).

    The arguments mean what they mean there (see its docstring); a bad value raises ``ValueError`` naming it.
    """
    if indirect_lineage not in INDIRECT_PLACEMENTS:
        raise ValueError(f"indirect_lineage={indirect_lineage!r} is not one of {INDIRECT_PLACEMENTS}")
    if lineage_emission not in EMISSION_MODES:
        raise ValueError(
            f"lineage_emission={lineage_emission!r} is not one of {EMISSION_MODES}: use 'auto' unless "
            "you need to force self-emission ('self') or switch events off ('off')"
        )
    for name, value, allowed in (("on_lineage_change", on_lineage_change, guard.CHANGE_MODES),
                                 ("on_policy_violation", on_policy_violation, guard.POLICY_MODES)):
        if "{{" not in value and value not in allowed:
            raise ValueError(f"{name}={value!r} is not one of {allowed}")
    op.asset_alias = asset_alias
    if asset_alias:
        from airflow.sdk import AssetAlias

        op.outlets = [*op.outlets, AssetAlias(asset_alias)]
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
    op.on_lineage_change = on_lineage_change
    op.require_masked = require_masked
    op.on_policy_violation = on_policy_violation
    op.guard = None
    op.lineage_result = None
    op._ol_inputs = []
    op._ol_outputs = []
    op._ol_run_facets = {}
    op.lineage_destination = None


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
        self._ol_inputs, self._ol_outputs = events.datasets(result, indirect=self.indirect_lineage)
        self._ol_run_facets = events.run_facets(result)
        return result
