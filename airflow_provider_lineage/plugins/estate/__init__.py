"""The estate index: every lineage task run of every DAG, kept in Airflow's metadata DB, queried across
DAGs and back in time (impact analysis, as-of graphs, diffs).

A room of the Airflow layer (``docs/estate.md`` explains the design):

* :mod:`.schema` the provider-owned tables (``apl_estate_*``), created on first use; a derived index
  that can always be rebuilt from the XCom records, so a schema change is a rebuild, not a migration;
* :mod:`.values` reads an XCom value as plain JSON, also through ``XComObjectStorageBackend``;
* :mod:`.validate` checks a record, :mod:`.ingest` writes one, :mod:`.index` keeps the index in step with
  the XCom rows (new records in, deleted ones out) and re-indexes (``python -m
  airflow_provider_lineage.plugins.estate reindex``);
* the read side: :mod:`.asof` column edges as of an instant, :mod:`.query` traversal, impact, graph, diff,
  :mod:`.lists` search, runs, problems; the endpoints :mod:`.api` and :mod:`.start`;
* the scheduler-side hook that updates the index when a DAG run finishes is :mod:`..dagrun_listener`
  (beside the plugin: it also publishes the guard's tag map).
"""
