"""Lineage through Python UDF bodies: what each UDF argument does to the UDF's result.

Two halves, both free of Spark and Airflow imports:

* :func:`analyse_udf` runs on the Spark driver (called by ``capture/``, which holds the live function
  objects): a data-flow pass over the function's source (:mod:`.interpreter`), once per distinct function
  (cached by code object and the helpers it reaches), turned into a JSON-able :class:`UdfAnalysis` that travels
  in the capture record (``CaptureRecord.udfs``, keyed by the plan's ``PythonUDF.resultId``). Nothing is pickled:
  names resolve in the snapshot of globals and closure cells taken when PySpark pickled the function
  (:func:`~.source.snapshot`), which is what the executors run. Whatever the body analysis does not model
  exactly widens or falls back to the black box with a reason: it is never less safe than a black box.
* :class:`UdfTable` is the engine's view of those analyses: for a ``PythonUDF`` node of the plan it
  gives the transformation step(s) from each argument expression to the UDF's value
  (:func:`~.expressions.walk_expression` composes them with the rest of the expression).

Per argument: DIRECT ``IDENTITY`` (returned unchanged) / ``TRANSFORMATION`` (masking when every path
goes through a hash), INDIRECT ``CONDITIONAL`` (read by a condition), both, or no edge (never read).
A UDF that cannot be analysed keeps today's edges (every argument DIRECT/TRANSFORMATION) and carries
``analysed=False`` with the reason, which the summary, ``explain`` and the facet's transformation
descriptions show.
"""

from airflow_provider_lineage.lineage.udf.analysis import (
    AGGREGATE,
    FRAME,
    ITERATOR,
    MAP_ITER,
    SCALAR,
    UDF_CLASSES,
    ArgFlow,
    UdfAnalysis,
    analyse_udf,
    cache_key,
    describe,
    fallback,
)
from airflow_provider_lineage.lineage.udf.table import UdfTable, result_id

__all__ = ["AGGREGATE", "FRAME", "ITERATOR", "MAP_ITER", "SCALAR", "UDF_CLASSES", "ArgFlow", "UdfAnalysis", "UdfTable",
           "analyse_udf", "cache_key", "describe", "fallback", "result_id"]
