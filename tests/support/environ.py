"""Environment variables a test sets for the length of a run and puts back after it.

:func:`restore_environ` puts back ``{name: os.environ.get(name)}`` taken before (``None`` unsets one): the
operator's own helper (it puts back what pyspark sets for a Spark Connect session), not written twice.
"""
from __future__ import annotations

from airflow_provider_lineage.operators.pyspark import _restore_environ as restore_environ

__all__ = ["restore_environ"]
