"""Lineage as a guard, the UI side (docs/guard.md): a room of the Airflow layer beside :mod:`..estate` and the
run view (:mod:`..api`).

* :mod:`.view` what the run's "Column lineage" tab shows of the guard (pure Python): the "changed" badge,
  tag chips, "where tags reach unmasked";
* :mod:`.estate` column tags along the estate index (every DAG's edges): ``/api/tags/unmasked`` (cached per
  index sync, filtered per user) and the tag map the scheduler publishes for the workers;
* :mod:`.access` the access rule on tag paths (pure Python): a hop through a dataset the user cannot read
  shows as a count, never a name.

The operator side (diff, tags, policy in the task) is :mod:`airflow_provider_lineage.operators._lineage.guard`.
"""
