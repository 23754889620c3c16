"""Moved: the lineage mixin lives in :mod:`airflow_provider_lineage.operators._lineage.task` (re-exported here)."""
from __future__ import annotations

from airflow_provider_lineage.operators._lineage.task import LINEAGE_TEMPLATE_FIELDS, LineageTaskMixin

__all__ = ["LINEAGE_TEMPLATE_FIELDS", "LineageTaskMixin"]
