"""The schema ``spark.read.format("sieve")`` gives a table: what ``spark.read.parquet`` gives it.

Data columns come from the first data file's footer (in path order, as Spark picks one file when
schemas are not merged): the Spark schema Spark wrote there (``org.apache.spark.sql.parquet.row.metadata``,
parsed as JSON, as Spark itself prefers it), else the Parquet schema mapped as Spark maps it (INT96
and UTC-adjusted timestamps to TIMESTAMP, other timestamps to TIMESTAMP_NTZ, unsigned integers widened).

Partition columns (``key=value`` folders) are typed as Spark's partition inference types them
(``PartitioningUtils.inferPartitionColumnValue``, type inference on unless
``partitionColumnTypeInference`` is off): INT, then BIGINT, then DECIMAL(n, 0) for longer integers
and ``1e3`` or ``1.`` (``java.math.BigDecimal`` without fraction digits), DOUBLE, TIMESTAMP
(``yyyy-MM-dd HH:mm:ss[.S]``), DATE
(``yyyy-MM-dd``), else STRING; ``__HIVE_DEFAULT_PARTITION__`` is NULL. Differing types of one column
are widened as Spark widens them (INT and BIGINT to BIGINT, integers and decimals to a wide enough
DECIMAL, numbers and DOUBLE to DOUBLE, DATE and TIMESTAMP to TIMESTAMP, anything else to STRING), and
a column of NULLs only is STRING. STRING values are unescaped as Spark unescapes them (:func:`..files.unescape`).

No Spark is needed (this runs in Spark's Python planner worker, which has no session).
"""
from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal, localcontext
from typing import Any

import pyarrow as pa

from ..errors import SieveError
from ..files import DEFAULT, HIVE_NULL, ReadConf, open_parquet, zone_of
from ..fs import open_input

SPARK_ROW_METADATA = b"org.apache.spark.sql.parquet.row.metadata"

_INT = re.compile(r"[+-]?[0-9]+\Z")
_DOUBLE = re.compile(r"\s*[+-]?(NaN|Infinity|(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[fFdD]?)\s*\Z")
_TIMESTAMP = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?\Z")
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})\Z")
_BIG_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")  # java.math.BigDecimal's syntax


def _nullable(node: Any) -> Any:
    """A Spark schema's JSON with every field, element and value nullable (Spark's ``asNullable``)."""
    if isinstance(node, dict):
        out = {k: _nullable(v) for k, v in node.items()}
        for key in ("nullable", "containsNull", "valueContainsNull"):
            if key in out:
                out[key] = True
        return out
    if isinstance(node, list):
        return [_nullable(v) for v in node]
    return node


def data_schema(path: str) -> Any:
    """The Spark schema of one Parquet file's columns (footer only), every column nullable as
    ``spark.read.parquet`` makes it (a later file may hold NULLs where this one's writer had none)."""
    from pyspark.sql import types as T

    pf = open_parquet(open_input(path))
    meta = pf.metadata.metadata or {}
    text = meta.get(SPARK_ROW_METADATA)
    if text:
        try:
            parsed = T.StructType.fromJson(_nullable(json.loads(text)))
            if set(parsed.names) == set(pf.schema_arrow.names):
                return parsed
        except (ValueError, KeyError, TypeError):
            pass  # an unreadable Spark schema: the Parquet schema below, as Spark falls back too
    int96 = {pf.schema.column(i).path for i in range(len(pf.schema)) if pf.schema.column(i).physical_type == "INT96"}
    return T.StructType([T.StructField(f.name, _spark_type(f.type, f.name in int96), True) for f in pf.schema_arrow])


def _spark_type(at: pa.DataType, int96: bool = False) -> Any:
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import from_arrow_type

    if pa.types.is_timestamp(at):
        return T.TimestampType() if (at.tz is not None or int96) else T.TimestampNTZType()
    simple = {pa.uint8(): T.ShortType(), pa.uint16(): T.IntegerType(), pa.uint32(): T.LongType(),
              pa.uint64(): T.DecimalType(20, 0), pa.large_string(): T.StringType(),
              pa.large_binary(): T.BinaryType(), pa.date64(): T.DateType()}
    if at in simple:
        return simple[at]
    if pa.types.is_dictionary(at):
        return _spark_type(at.value_type)
    try:
        return from_arrow_type(at, prefer_timestamp_ntz=True)
    except Exception as exc:  # noqa: BLE001 - pyspark's own error types vary by version
        raise SieveError(f"column type {at} has no Spark type here ({exc}): read the table with "
                         "spark.read.parquet") from None


# ---- partition columns -------------------------------------------------------------------------
def infer_value_type(raw: str, inference: bool = True) -> Any:
    """Spark's inferred type of one partition folder value (``inferPartitionColumnValue``: INT, BIGINT,
    a DECIMAL without fraction digits as ``java.math.BigDecimal`` reads it, so ``1e3`` and ``1.`` are
    DECIMAL, DOUBLE, TIMESTAMP, DATE, else STRING); every value is STRING without ``inference``."""
    from pyspark.sql import types as T

    if raw == HIVE_NULL:
        return T.NullType()
    if not inference:
        return T.StringType()
    if _INT.match(raw):
        v = int(raw)
        if -(2 ** 31) <= v < 2 ** 31:
            return T.IntegerType()
        if -(2 ** 63) <= v < 2 ** 63:
            return T.LongType()
    if _BIG_DECIMAL.match(raw):
        d = Decimal(raw).as_tuple()
        exponent = int(d.exponent)
        if exponent >= 0 and len(d.digits) + exponent <= 38:  # scale <= 0; precision as Spark counts it
            return T.DecimalType(len(d.digits) + exponent, 0)
    if _DOUBLE.match(raw):
        return T.DoubleType()
    if _timestamp(raw) is not None:
        return T.TimestampType()
    if _date(raw) is not None:
        return T.DateType()
    return T.StringType()


def _timestamp(raw: str) -> dt.datetime | None:
    m = _TIMESTAMP.match(raw)
    if not m:
        return None
    try:
        frac = (m.group(7) or ".0")[1:7].ljust(6, "0")
        return dt.datetime(*(int(m.group(i)) for i in range(1, 7)), int(frac))
    except ValueError:
        return None


def _date(raw: str) -> dt.date | None:
    m = _DATE.match(raw)
    if not m:
        return None
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def _as_decimal(t: Any) -> Any:
    from pyspark.sql import types as T

    if isinstance(t, T.IntegerType):
        return T.DecimalType(10, 0)
    if isinstance(t, T.LongType):
        return T.DecimalType(20, 0)
    return t


def wider(a: Any, b: Any) -> Any:
    """The type two partition values' types widen to (Spark's findWiderTypeForPartitionColumn)."""
    from pyspark.sql import types as T

    if a == b:
        return a
    if isinstance(a, T.NullType):
        return b
    if isinstance(b, T.NullType):
        return a
    integral = (T.IntegerType, T.LongType)
    if isinstance(a, integral) and isinstance(b, integral):
        return T.LongType()
    if isinstance(a, (*integral, T.DecimalType)) and isinstance(b, (*integral, T.DecimalType)):
        da, db = _as_decimal(a), _as_decimal(b)
        scale = max(da.scale, db.scale)
        whole = max(da.precision - da.scale, db.precision - db.scale)
        return T.DecimalType(min(whole + scale, 38), scale)
    numeric = (*integral, T.DecimalType, T.DoubleType)
    if isinstance(a, numeric) and isinstance(b, numeric):
        return T.DoubleType()
    if {type(a), type(b)} == {T.DateType, T.TimestampType}:
        return T.TimestampType()
    return T.StringType()


def partition_types(partitions: list[dict[str, str]], conf: ReadConf = DEFAULT) -> list[tuple[str, Any]]:
    """(name, Spark type) of every partition column, in folder order, over all files' values
    (``spark.sql.sources.partitionColumnTypeInference.enabled`` as ``conf`` says)."""
    from pyspark.sql import types as T

    types: dict[str, Any] = {}
    for part in partitions:
        for name, raw in part.items():
            t = infer_value_type(raw, conf.partition_inference)
            types[name] = wider(types[name], t) if name in types else t
    return [(n, T.StringType() if isinstance(t, T.NullType) else t) for n, t in types.items()]


def partition_value(raw: str, spark_type: Any, time_zone: str = "UTC") -> Any:
    """The Python value of a partition folder value read as ``spark_type`` (None for NULL); a
    TIMESTAMP folder value is a local time of ``time_zone`` (Spark's session time zone)."""
    from pyspark.sql import types as T

    if raw == HIVE_NULL:
        return None
    try:
        if isinstance(spark_type, T.StringType):
            return raw
        if isinstance(spark_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
            return int(raw)
        if isinstance(spark_type, T.DecimalType):
            with localcontext() as ctx:
                ctx.prec = 80  # 38 digits and more: the default 28 would round
                return Decimal(raw).quantize(Decimal(1).scaleb(-spark_type.scale))
        if isinstance(spark_type, (T.DoubleType, T.FloatType)):
            return float(raw.strip().rstrip("fFdD"))
        if isinstance(spark_type, T.DateType):
            got = _date(raw) or (_timestamp(raw).date() if _timestamp(raw) else None)
            if got is None:
                raise ValueError(raw)
            return got
        if isinstance(spark_type, (T.TimestampType, T.TimestampNTZType)):
            ts = _timestamp(raw) or (dt.datetime.combine(_date(raw), dt.time()) if _date(raw) else None)
            if ts is None:
                raise ValueError(raw)
            if isinstance(spark_type, T.TimestampType):
                ts = ts.replace(tzinfo=zone_of(time_zone))
            return ts
        if isinstance(spark_type, T.BooleanType):
            return {"true": True, "false": False}[raw.lower()]
        if isinstance(spark_type, T.BinaryType):
            return raw.encode()
    except (ValueError, KeyError, ArithmeticError):
        pass
    raise SieveError(f"partition value {raw!r} cannot be read as {spark_type.simpleString()}: pass a schema "
                     "whose partition column types fit the folder names (or none, to infer them)")
