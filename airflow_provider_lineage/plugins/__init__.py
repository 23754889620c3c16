"""Airflow UI plugin: column lineage of SparkLineageSubmitOperator tasks inside Airflow's own UI.

A room of the Airflow layer: :mod:`.column_lineage` (the ``AirflowPlugin``), :mod:`.api` (its FastAPI
app: JSON API + static page), :mod:`.store` (records from the metadata DB), :mod:`.graph` (stitching,
paths, search; pure Python) and :mod:`.indexes` (Sieve index badges). The cores never import it.
"""
