"""Column-level lineage from Spark's optimized plan (no Airflow imports).

>>> from airflow_provider_lineage.lineage import analyze_record
>>> lin = analyze_record(record)          # a capture record of one write
>>> lin.columns["total"]                  # [FieldEdge(dataset, field, type, subtype, masking), ...]

See ``engine.py`` (driver), ``rules.py`` (one rule per plan node), ``expressions.py`` (expression
rules), ``graph.py`` (composition of transformation types), ``facets.py`` (OpenLineage datasets).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_lineage.lineage.engine import analyze_record
    from airflow_provider_lineage.lineage.model import FieldEdge, LineageError, WriteLineage
    from airflow_provider_lineage.lineage.naming import DatasetRef

__all__ = ["DatasetRef", "FieldEdge", "LineageError", "WriteLineage", "analyze_record"]

# Imported on first use (PEP 562): the capture launcher imports this package's record and model modules in
# the Spark driver before the application starts, on the job's critical path, and needs none of the engine.
_LAZY = {"analyze_record": "engine", "FieldEdge": "model", "LineageError": "model", "WriteLineage": "model",
         "DatasetRef": "naming"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
