"""Column-level lineage from Spark's optimized plan (no Airflow imports).

>>> from airflow_provider_lineage.lineage import analyze_record
>>> lin = analyze_record(record)          # a capture record of one write
>>> lin.columns["total"]                  # [FieldEdge(dataset, field, type, subtype, masking), ...]

See ``engine.py`` (driver), ``rules.py`` (one rule per plan node), ``expressions.py`` (expression
rules), ``graph.py`` (composition of transformation types), ``facets.py`` (OpenLineage datasets).
"""
from __future__ import annotations

from airflow_provider_lineage.lineage.engine import analyze_record
from airflow_provider_lineage.lineage.model import FieldEdge, LineageError, WriteLineage
from airflow_provider_lineage.lineage.naming import DatasetRef

__all__ = ["DatasetRef", "FieldEdge", "LineageError", "WriteLineage", "analyze_record"]
