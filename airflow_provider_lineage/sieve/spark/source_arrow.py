"""What a ``sieve`` reader worker (:mod:`.source`) does with Arrow: a Spark schema's Arrow form, Parquet leaf column
indexes for row-group statistics, row masks, VARIANT columns and batches conformed to the schema; and the zip
importers a worker drops between tasks. Imports pyarrow and pyspark's types only.
"""
from __future__ import annotations

import json
import sys
from typing import Any

import pyarrow as pa
from pyspark.sql.types import StructType

from ..errors import SieveError


def pc_and(a: Any, b: Any) -> Any:
    """Kleene AND of two row masks (NULL and false both drop the row)."""
    import pyarrow.compute as pc

    return pc.and_kleene(a, b)


def drop_zip_finders() -> None:
    """Forget the cached zip importers of this process (Spark's Python workers and planner workers).

    Spark's Python worker calls ``importlib.invalidate_caches()`` at the start of **every task**
    (``pyspark.worker_util.setup_spark_files``). On Python 3.10-3.12 every ``zipimporter`` in
    ``sys.path_importer_cache`` then re-reads its whole archive (CPython gh-103200, lazy from 3.13
    on), and a worker that imported pyspark from Spark's ``pyspark.zip`` holds one per pyspark
    package it imported (about 15): 70-100 ms of every task here, several times the read of a small
    file. The entries are a cache: an import that needs one later makes a new importer from the
    archive's cached directory, so dropping them changes no import, only the cost of the next task's
    invalidation.
    """
    if sys.version_info >= (3, 13):
        return
    import zipimport

    cache = sys.path_importer_cache
    for key in [k for k, v in cache.items() if isinstance(v, zipimport.zipimporter)]:
        cache.pop(key, None)


_ARROW_SCHEMAS: dict[str, pa.Schema] = {}


def _arrow_schema(schema_json: str) -> pa.Schema:
    """The Arrow schema of a Spark schema (JSON), once per worker process."""
    out = _ARROW_SCHEMAS.get(schema_json)
    if out is None:
        from pyspark.sql.pandas.types import to_arrow_schema

        out = _ARROW_SCHEMAS[schema_json] = to_arrow_schema(StructType.fromJson(json.loads(schema_json)))
    return out


def _leaves(at: pa.DataType) -> int:
    if pa.types.is_struct(at):
        return sum(_leaves(at.field(i).type) for i in range(at.num_fields))
    if pa.types.is_map(at):
        return _leaves(at.key_type) + _leaves(at.item_type)
    if pa.types.is_list(at) or pa.types.is_large_list(at) or pa.types.is_fixed_size_list(at):
        return _leaves(at.value_type)
    return 1


def _leaf_index(schema: pa.Schema) -> dict[str, int]:
    """Top-level primitive column -> its Parquet leaf column index (row-group statistics)."""
    out: dict[str, int] = {}
    i = 0
    for f in schema:
        n = _leaves(f.type)
        if n == 1 and not pa.types.is_nested(f.type):
            out.setdefault(f.name, i)
        i += n
    return out


def _is_variant(t: pa.DataType) -> bool:
    """PySpark's Arrow form of VARIANT: ``struct<value, metadata>``, the metadata field marked."""
    return pa.types.is_struct(t) and t.num_fields == 2 and any(
        (t.field(i).metadata or {}).get(b"variant") == b"true" for i in range(2))


def _variant(name: str, col: Any, target: pa.DataType) -> Any:
    """A VARIANT column as PySpark takes it (``struct<value, metadata>``) from the file's group: an
    unshredded variant is its two binaries; a shredded one (``typed_value``, Spark 4.1's default
    write) has no Python decoder here, so it is a clear error naming the reads that answer."""
    names = [col.type.field(i).name for i in range(col.type.num_fields)]
    if "typed_value" in names or not {"value", "metadata"} <= set(names):
        raise SieveError(f"VARIANT column {name!r} is stored shredded in this file, which the sieve source "
                         "cannot decode: read the table with spark.read.parquet after "
                         "airflow_provider_lineage.sieve.spark.enable(spark) (the same file skipping, through "
                         "Spark's own reader), or with airflow_provider_lineage.sieve.spark.load(...) (it reads "
                         "tables with VARIANT columns through spark.read.parquet), or leave the column out with "
                         ".option('columns', ...)")
    return pa.StructArray.from_arrays([col.field("value"), col.field("metadata")],
                                      fields=[target.field(0), target.field(1)], mask=col.is_null())


def _conform(cols: dict[str, Any], n: int, target: pa.Schema, parts: dict[str, Any]) -> pa.RecordBatch:
    """A batch of the schema's columns, in its order and Arrow types, from a file's columns by schema
    name (partition values, which win over a column the file also stores, and columns a file lacks
    filled in)."""
    arrays = []
    for f in target:
        if f.name in parts:
            arrays.append(pa.repeat(pa.scalar(parts[f.name], type=f.type), n))
        elif f.name in cols:
            col = cols[f.name]
            if pa.types.is_dictionary(col.type):
                col = col.dictionary_decode()
            if col.type != f.type and _is_variant(f.type):
                col = _variant(f.name, col, f.type)
            arrays.append(col if col.type == f.type else col.cast(f.type))
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)
