"""Spark's pushed filters as Sieve predicates (which files) and Arrow expressions (which rows).

Spark 4.1 hands a Python data source the conjuncts of a ``WHERE`` it can express
(``pyspark.sql.datasource.EqualTo``, ``In``, ``GreaterThan``, ..., values as Python values of the
column's type). A :class:`Cond` is one such conjunct on one top-level column, kept as plain data so
that it crosses to Spark's Python workers with the reader. :func:`predicates` turns a column's
conditions into Sieve predicates for the index (ranges on one column merged into one ``Range``, since
two half-open lookups intersected would keep a file holding keys on both sides but none between);
:func:`expression` gives the same condition as a :mod:`pyarrow.dataset` expression, applied to each
file's rows exactly as Spark's ``WHERE`` would (NULLs never match a comparison).
"""
from __future__ import annotations

import datetime as dt
import decimal
import sys
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..predicates import Eq, In, IsNull, Predicate, Range

# op names: eq, eq_null_safe, in, gt, ge, lt, le, is_null, starts_with
_COMPARE = {"GreaterThan": "gt", "GreaterThanOrEqual": "ge", "LessThan": "lt", "LessThanOrEqual": "le",
            "EqualTo": "eq", "EqualNullSafe": "eq_null_safe", "In": "in", "IsNull": "is_null",
            "StringStartsWith": "starts_with"}


@dataclass(frozen=True)
class Cond:
    """One pushed conjunct: ``column <op> value``."""

    column: str
    op: str
    value: Any = None


def from_spark(f: Any) -> Cond | None:
    """The :class:`Cond` of a ``pyspark.sql.datasource`` filter, or None when it is not one Sieve
    takes (``Not``, ``IsNotNull``, ``StringEndsWith``/``Contains``, nested columns)."""
    op = _COMPARE.get(type(f).__name__)
    attribute = getattr(f, "attribute", None)
    if op is None or not isinstance(attribute, tuple) or len(attribute) != 1:
        return None
    value = getattr(f, "value", None)
    if op == "in":
        value = tuple(value)
    if op == "eq_null_safe" and value is None:
        return Cond(attribute[0], "is_null")
    if op == "starts_with" and not isinstance(value, str):
        return None
    if op in ("eq", "gt", "ge", "lt", "le", "eq_null_safe") and isinstance(value, (list, dict, tuple)):
        return None  # arrays, maps, structs: not index keys
    return Cond(attribute[0], "eq" if op == "eq_null_safe" else op, value)


# ---- what can be decided exactly -------------------------------------------------------------------------
# PySpark decodes a pushed literal with Python's default decimal context (28 digits,
# ``VariantUtils._get_decimal``): a DECIMAL literal of more digits arrives rounded. :func:`exact_decoding`
# decodes them exactly in Spark's planner worker; where it is not in force, such a literal stays with Spark.
DECIMAL_DIGITS = 28
_EXACT_DECODING = False
_PLANNER_MODULE = "pyspark.sql.worker.data_source_pushdown_filters"


def exact_decoding() -> bool:
    """Make the filters Spark's Python planner worker decodes exact (idempotent; called when the planner
    unpickles the data source, before it decodes the filters). DECIMAL literals are decoded with enough
    digits for DECIMAL(38); a filter PySpark cannot decode at all (a DATE or TIMESTAMP literal outside
    Python's datetime range, year 1 to 9999, raises in PySpark 4.1) becomes a placeholder that
    :meth:`..source.SieveReader.pushFilters` hands back to Spark, which evaluates the original filter,
    instead of failing the query. True when the planner's decoder was found (it is in a planner worker)."""
    global _EXACT_DECODING
    found = False
    for name in (_PLANNER_MODULE, "__main__"):
        module = sys.modules.get(name)
        original = getattr(module, "deserializeFilter", None)
        if original is None or not callable(original):
            continue
        found = True
        if getattr(original, "_sieve_exact", False):
            continue

        def deserialize(json_dict: Any, _original: Any = original) -> Any:
            try:
                with decimal.localcontext() as ctx:
                    ctx.prec = 80  # DECIMAL(38, s): every digit kept
                    return _original(json_dict)
            except Exception:  # noqa: BLE001 - undecodable here: Spark keeps the filter
                return Undecodable(tuple(json_dict.get("columnPath") or ("?",)))

        deserialize._sieve_exact = True  # type: ignore[attr-defined]
        module.deserializeFilter = deserialize  # type: ignore[union-attr]
    _EXACT_DECODING = _EXACT_DECODING or found
    return found


class Undecodable:
    """A pushed filter PySpark could not decode (see :func:`exact_decoding`): never taken."""

    def __init__(self, attribute: tuple[str, ...]) -> None:
        self.attribute = attribute

    def __repr__(self) -> str:
        return f"Undecodable({'.'.join(self.attribute)})"


def _exact_types() -> tuple[Any, ...]:
    from pyspark.sql import types as T

    return (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType, T.DateType, T.TimestampType,
            T.TimestampNTZType, T.StringType, T.BinaryType)


def _value_fits(value: Any, spark_type: Any, at: pa.DataType) -> bool:
    from pyspark.sql import types as T

    if isinstance(value, bool):
        return False
    kinds: list[tuple[Any, tuple[type, ...]]] = [
        (T.DecimalType, (int, decimal.Decimal)), ((T.ByteType, T.ShortType, T.IntegerType, T.LongType), (int,)),
        ((T.TimestampType, T.TimestampNTZType), (dt.datetime,)), (T.DateType, (dt.date,)),
        (T.StringType, (str,)), (T.BinaryType, (bytes, bytearray))]
    for spark_kind, python in kinds:
        if isinstance(spark_type, spark_kind) and not isinstance(value, python):
            return False
    if isinstance(spark_type, T.DateType) and isinstance(value, dt.datetime):
        return False
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            return False
        if len(value.as_tuple().digits) >= DECIMAL_DIGITS and not _EXACT_DECODING:
            return False  # PySpark may have rounded it (28 digits)
    try:
        _scalar(value, at)
    except (pa.ArrowException, OverflowError, ValueError, TypeError):
        return False
    return True


def exact(cond: Cond, spark_type: Any) -> bool:
    """Whether ``cond`` on a column of ``spark_type`` can be decided here exactly as Spark decides it:
    a type whose order is Python's and Arrow's (integers, DECIMAL, DATE, TIMESTAMP, binary strings; not
    FLOAT/DOUBLE, where Spark orders NaN above every value and NaN = NaN, nor collated strings), and
    every literal of the column's own type and range, unchanged by PySpark's decoding. Anything else
    stays with Spark (the scan reads the files and Spark filters): never a guess."""
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import to_arrow_type

    if not isinstance(spark_type, _exact_types()):
        return False
    if isinstance(spark_type, T.StringType) and getattr(spark_type, "collation", "UTF8_BINARY") != "UTF8_BINARY":
        return False
    if cond.op == "is_null":
        return True
    try:
        at = to_arrow_type(spark_type)
    except Exception:  # noqa: BLE001 - no Arrow type: Spark filters
        return False
    if cond.op == "starts_with":
        return isinstance(spark_type, T.StringType) and isinstance(cond.value, str)
    values = cond.value if cond.op == "in" else (cond.value,)
    return all(v is None or _value_fits(v, spark_type, at) for v in values)


def _successor(prefix: str) -> str | None:
    """The least string above every string starting with ``prefix`` (code point order, which is
    UTF-8 byte order), or None when there is none."""
    chars = list(prefix)
    while chars:
        last = ord(chars.pop())
        if last < 0x10FFFF:
            nxt = last + 1
            if 0xD800 <= nxt <= 0xDFFF:
                nxt = 0xE000
            return "".join(chars) + chr(nxt)
    return None


def predicates(conds: list[Cond]) -> list[Predicate]:
    """Sieve predicates whose candidate files, intersected, hold every row matching all ``conds``
    (conditions of one column)."""
    out: list[Predicate] = []
    low: Any = None
    low_inc = True
    high: Any = None
    high_inc = True
    ranged = False
    for c in conds:
        if c.op == "is_null":
            out.append(IsNull())
        elif c.op == "eq":
            out.append(Eq(c.value) if c.value is not None else In([]))
        elif c.op == "in":
            out.append(In([v for v in c.value if v is not None]))
        elif c.op == "starts_with":
            out.append(Range(c.value, _successor(c.value), True, False))
        else:
            ranged = True
            if c.op in ("gt", "ge"):
                inc = c.op == "ge"
                if low is None or _above(c.value, low) or (c.value == low and not inc):
                    low, low_inc = c.value, inc
            else:
                inc = c.op == "le"
                if high is None or _above(high, c.value) or (c.value == high and not inc):
                    high, high_inc = c.value, inc
    if ranged:
        out.append(Range(low, high, low_inc, high_inc))
    return out


def _above(a: Any, b: Any) -> bool:
    try:
        return bool(a > b)
    except TypeError:  # values of one column are of one type; a mix keeps the first bound
        return False


def _scalar(value: Any, at: pa.DataType) -> pa.Scalar:
    if pa.types.is_timestamp(at) and isinstance(value, dt.datetime) and at.tz is None and value.tzinfo is not None:
        # an instant compared with a file's naive (INT96 / UTC) timestamps: in UTC
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    if pa.types.is_dictionary(at):
        at = at.value_type
    return pa.scalar(value, type=at)


def expression(cond: Cond, at: pa.DataType) -> pc.Expression:
    """``cond`` as a filter on a column of Arrow type ``at`` (rows where it is not true are dropped).
    Raises (pyarrow's errors) when a value does not fit the type: the caller keeps the filter in Spark."""
    field = pc.field(cond.column)
    if cond.op == "is_null":
        return field.is_null()
    if cond.op == "in":
        values = [v for v in cond.value if v is not None]
        if not values:
            return pc.scalar(False)
        return field.isin(pa.array([_scalar(v, at).as_py() if pa.types.is_timestamp(at) else v for v in values],
                                   type=at.value_type if pa.types.is_dictionary(at) else at))
    if cond.op == "starts_with":
        return pc.starts_with(field, cond.value)
    if cond.value is None:
        return pc.scalar(False)
    s = _scalar(cond.value, at)
    return {"eq": field == s, "gt": field > s, "ge": field >= s, "lt": field < s, "le": field <= s}[cond.op]


def matches_value(cond: Cond, value: Any) -> bool:
    """Whether a partition column's value (one per file) satisfies ``cond``, as Spark evaluates it."""
    if cond.op == "is_null":
        return value is None
    if value is None:
        return False
    if cond.op == "in":
        return any(v is not None and value == v for v in cond.value)
    if cond.op == "starts_with":
        return isinstance(value, str) and value.startswith(cond.value)
    if cond.value is None:
        return False
    v = cond.value
    return {"eq": value == v, "gt": value > v, "ge": value >= v, "lt": value < v, "le": value <= v}[cond.op]


def mask(cond: Cond, column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """:func:`expression` evaluated on one column's values (true: the row is kept; false or NULL: it is
    dropped), with :mod:`pyarrow.compute` kernels only: no :mod:`pyarrow.dataset` (nor the pandas it
    imports) in Spark's reader workers."""
    at = column.type
    if pa.types.is_dictionary(at):
        column = column.dictionary_decode() if isinstance(column, pa.Array) else pc.cast(column, at.value_type)
        at = at.value_type
    if cond.op == "is_null":
        return pc.is_null(column)
    if cond.op == "in":
        values = [v for v in cond.value if v is not None]
        if not values:
            return pa.array([False] * len(column), pa.bool_())
        return pc.is_in(column, value_set=pa.array(
            [_scalar(v, at).as_py() if pa.types.is_timestamp(at) else v for v in values], type=at))
    if cond.op == "starts_with":
        return pc.starts_with(column, cond.value)
    if cond.value is None:
        return pa.array([False] * len(column), pa.bool_())
    s = _scalar(cond.value, at)
    return {"eq": pc.equal, "gt": pc.greater, "ge": pc.greater_equal, "lt": pc.less,
            "le": pc.less_equal}[cond.op](column, s)


def _stats_type(at: pa.DataType) -> bool:
    # Types whose Parquet min/max order is Spark's order: integers and dates. Not floats (Spark sorts
    # NaN above every value, statistics leave NaN out), strings, decimals or timestamps (writers and
    # time zones differ): their row groups are all read and filtered row by row.
    return pa.types.is_integer(at) or pa.types.is_date(at)


def row_group_may_match(conds: list[Cond], metadata: Any, names: dict[str, int], types: dict[str, pa.DataType]) -> bool:
    """False only when a row group's Parquet statistics prove that no row satisfies all ``conds``
    (``metadata``: :class:`pyarrow.parquet.RowGroupMetaData`; ``names``: column name -> its leaf
    index; ``types``: column name -> Arrow type). Missing statistics, or a type not in
    :func:`_stats_type`, keep the row group."""
    for c in conds:
        i = names.get(c.column)
        if i is None or not _stats_type(types[c.column]):
            continue
        stats = metadata.column(i).statistics
        if stats is None:
            continue
        if c.op == "is_null":
            if stats.has_null_count and stats.null_count == 0:
                return False
            continue
        if stats.has_null_count and stats.null_count == metadata.num_rows:
            return False  # only NULLs: no comparison is true
        if not stats.has_min_max:
            continue
        lo, hi = stats.min, stats.max
        try:
            if c.op == "in":
                values = [v for v in c.value if v is not None]
                if not any(lo <= v <= hi for v in values):
                    return False
            elif c.op in ("eq", "gt", "ge", "lt", "le") and c.value is not None:
                v = c.value
                if not {"eq": lo <= v <= hi, "gt": hi > v, "ge": hi >= v, "lt": lo < v, "le": lo <= v}[c.op]:
                    return False
        except TypeError:  # a value of another type (e.g. a datetime against dates): keep the group
            continue
    return True
