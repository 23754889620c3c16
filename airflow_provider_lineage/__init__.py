"""Airflow provider: column-level lineage from Spark optimized plans, and Sieve data-skipping indexes.

Cores (no Airflow imports): :mod:`.capture` (runs inside the Spark driver), :mod:`.lineage`
(plan JSON -> column lineage -> OpenLineage) and :mod:`.sieve` (the index).
Airflow layer: :mod:`.operators`, :mod:`.sensors`, :mod:`.triggers`.
"""
from __future__ import annotations

__version__ = "0.2.0"

#: The one ``producer`` URI of every OpenLineage event and facet this package emits.
PRODUCER = f"https://pypi.org/project/airflow-provider-lineage/{__version__}"
