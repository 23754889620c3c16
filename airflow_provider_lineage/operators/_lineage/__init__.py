"""The lineage operators' private helpers: what ``operators/`` modules share without defining an operator.

:mod:`.task` (:class:`~.task.LineageTaskMixin`: the lineage arguments, their templated names and the end of a
lineage task), :mod:`.capture_modes` (where a spark-submit driver leaves its records), :mod:`.remote_capture` and
:mod:`.connect_run` (records on a shared location or a Connect server), :mod:`.guard` and :mod:`.guard_baseline`
(diff, tags, policy), :mod:`.openlineage_identity` (a task run's OpenLineage ids), :mod:`.templating`.
Not public API: import the operators from ``airflow_provider_lineage.operators.<name>``.
"""
