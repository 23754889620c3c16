"""Pruned reads: a DataFrame over only the candidate files, equal to a full read's result.

The candidates come from :meth:`.query.SieveIndex.lookup`, the same stale-safe answer as the API
and the CLI: files added or rewritten since the index version are read too (they are unindexed),
removed files are not. No index or an unreadable/corrupt one gives a full read and a
``warnings.warn`` (also logged). Zero candidates give an empty DataFrame with the table's schema
without running a Spark job. A column the table does not have is a :class:`.errors.SieveError`.
"""
from __future__ import annotations

import datetime as dt
import decimal
import logging
import warnings
from typing import Any

from .errors import IndexUnavailable, SieveError
from .keys import KeyType
from .predicates import Eq, In, IsNull, Predicate, Range
from .query import check_freshness, open_index
from .table import TableRef, resolve_table, root_exists, spark_path

log = logging.getLogger(__name__)


class SieveFallbackWarning(UserWarning):
    """A pruned read fell back to a full read (the message says why)."""


def _literal(value: Any, kt: KeyType) -> Any:
    from pyspark.sql import functions as F

    if kt.kind == "timestamp":
        micros, _ = kt.encode(value)
        return F.timestamp_micros(F.lit(micros))
    if kt.kind == "timestamp_ntz":
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        if not isinstance(value, dt.datetime):
            value = dt.datetime.combine(value, dt.time(0))
        return F.lit(value.isoformat(sep=" ")).cast("timestamp_ntz")
    if kt.kind == "date" and isinstance(value, dt.datetime):
        return F.lit(value.isoformat(sep=" ")).cast("timestamp")
    if kt.kind == "date" and isinstance(value, dt.date):
        return F.lit(value.isoformat()).cast("date")  # py4j's java.sql.Date fails before year 1000 or so
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        return F.lit(decimal.Decimal(value))  # beyond BIGINT (uint64, DECIMAL(38) keys): py4j sends a long
    return F.lit(value)


def spark_condition(column: str, pred: Predicate, kt: KeyType) -> Any:
    """The Spark filter for a predicate (same semantics as the index's key mapping)."""
    from pyspark.sql import functions as F

    c = F.col(f"`{column}`")
    if isinstance(pred, IsNull):
        return c.isNull()
    if isinstance(pred, Eq):
        return c == _literal(pred.value, kt)
    if isinstance(pred, In):
        vals = [v for v in pred.values if v is not None]
        if not vals:
            return F.lit(False)
        cond = None
        for v in vals:
            part = c == _literal(v, kt)
            cond = part if cond is None else cond | part
        return cond
    if isinstance(pred, Range):
        cond = F.lit(True)
        if pred.low is not None:
            lit = _literal(pred.low, kt)
            cond = cond & ((c >= lit) if pred.low_inclusive else (c > lit))
        if pred.high is not None:
            lit = _literal(pred.high, kt)
            cond = cond & ((c <= lit) if pred.high_inclusive else (c < lit))
        return cond & c.isNotNull()
    raise SieveError(f"unsupported predicate {pred!r}: use Eq, In, Range or IsNull")


def _full(spark: Any, ref: TableRef) -> Any:
    return spark.table(ref.name) if ref.kind == "catalog" else spark.read.parquet(spark_path(ref.root))


def _warn(msg: str) -> None:
    log.warning(msg)
    warnings.warn(msg, SieveFallbackWarning, stacklevel=3)


# A candidate set covering at least this share of the live files is read as the whole table: one
# directory listing (exactly what a full read does) costs less than per-path handling of an
# explicit file list, and reading a superset of the candidates never changes the answer.
FULL_READ_SHARE = 0.9
_LISTING_THRESHOLD_KEY = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def _read_paths(spark: Any, schema: Any, root: str, files: list[str]) -> Any:
    """Read an explicit file list without Spark's distributed listing job.

    Spark lists more than ``parallelPartitionDiscovery.threshold`` (default 32) explicit paths with
    a distributed job (about a second locally). The file index is built eagerly when the DataFrame
    is created, so the threshold is raised for that call only and restored at once: the caller's
    session keeps its setting (a concurrent read in another thread of the same session may list its
    own paths on the driver meanwhile, which changes nothing but where the listing runs).
    """
    reader = spark.read.schema(schema).option("basePath", root)
    try:
        current = int(spark.conf.get(_LISTING_THRESHOLD_KEY, "32"))
    except (ValueError, TypeError):
        current = 32
    if len(files) <= current:
        return reader.parquet(*files)
    old = spark.conf.get(_LISTING_THRESHOLD_KEY, None)
    spark.conf.set(_LISTING_THRESHOLD_KEY, str(len(files) + 1))
    try:
        return reader.parquet(*files)
    finally:
        if old is None:
            spark.conf.unset(_LISTING_THRESHOLD_KEY)
        else:
            spark.conf.set(_LISTING_THRESHOLD_KEY, old)


def _check_column(schema: Any, table: str, column: str) -> None:
    if column not in schema.names:
        raise SieveError(f"{table} has no column {column!r}; its columns are {', '.join(schema.names)}: "
                         "check the column name")


def read(spark: Any, table: str, column: str, predicate: Predicate, *, index_path: str | None = None,
         full_read_share: float = FULL_READ_SHARE, assume_fresh: bool = False, freshness: str = "stat") -> Any:
    """DataFrame of the rows matching ``predicate``, reading only files the index cannot exclude.

    Safe on a stale index: files added or rewritten since the index version are read as well
    (``freshness`` as in :meth:`.query.SieveIndex.lookup`: ``"names"`` lists paths only and trusts
    that files are never rewritten in place; ``assume_fresh=True`` skips that listing for callers
    that just synced). When the candidates
    are at least ``full_read_share`` of the table's files (all of them with ``1.0``), the table is
    read exactly as a full read would (root + filter), which avoids the per-path overhead of an
    explicit file list; the answer is the same either way. Raises SieveError when the table does
    not exist or has no such column.
    """
    from pyspark.sql import types as T

    freshness = check_freshness("none" if assume_fresh else freshness)  # a wrong value is an error, not a full read
    ref = resolve_table(table, spark)
    if ref.kind == "path" and root_exists(ref.root) is False:
        raise SieveError(f"table path {ref.root} does not exist: check the path")
    try:
        idx = open_index(table, column, index_path=index_path, spark=spark)
        kt = idx.key_type
        answer = idx.lookup(predicate, freshness=freshness)  # one listing of the table (no Spark)
    except (IndexUnavailable, SieveError, OSError) as exc:
        full = _full(spark, ref)
        _check_column(full.schema, table, column)
        _warn(f"Sieve: full read of {table} ({exc})")
        from .keys import key_type_from_spark

        kt = key_type_from_spark(full.schema[column].dataType, column)
        return full.filter(spark_condition(column, predicate, kt))
    files = list(answer.files)
    log.info("Sieve: %s: %s", table, answer.summary())
    live = answer.table_files
    whole = bool(files) and live > 0 and len(files) >= full_read_share * live
    table_df = None  # the plain full read, when it is created anyway (one listing, not two)
    if ref.kind == "catalog":
        table_df = spark.table(ref.name)
        schema = table_df.schema
    elif idx.manifest.schema_json:
        schema = T.StructType.fromJson(__import__("json").loads(idx.manifest.schema_json))
    else:
        table_df = spark.read.parquet(spark_path(ref.root))
        schema = table_df.schema
    # The filter follows the column's Spark type (keys are the same micros for TIMESTAMP and NTZ).
    from .keys import key_type_from_spark

    cond = spark_condition(column, predicate, key_type_from_spark(schema[column].dataType, column)
                           if column in schema.names else kt)
    if not files:
        return spark.createDataFrame([], schema)
    if whole:
        # (Nearly) every file is needed: read the table as a full read would.
        if table_df is None:
            table_df = spark.read.schema(schema).parquet(spark_path(ref.root))
        return table_df.filter(cond)
    return _read_paths(spark, schema, spark_path(ref.root), [spark_path(f) for f in files]).filter(cond)
