"""Order-preserving mapping of column values to integer keys.

Supported column types and their keys:

* integer types (TINYINT..BIGINT, Arrow int8..uint64)      -> the value itself
* DATE                                                       -> days since 1970-01-01
* TIMESTAMP (instant, Parquet ``isAdjustedToUTC=true``)      -> microseconds since the epoch (UTC)
* TIMESTAMP_NTZ (wall clock, Parquet ``isAdjustedToUTC=false``) -> microseconds of the wall clock read as UTC
* DECIMAL(p, s)                                              -> the unscaled value at the column's scale

Keys are Python ints (DECIMAL(38, s) needs more than 64 bits); arrays of keys are numpy ``int64``
arrays when every key fits, else numpy ``object`` arrays of Python ints.
"""
from __future__ import annotations

import datetime as dt
import decimal
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import UnsupportedKeyType

SUPPORTED = "integer types (tinyint, smallint, int, bigint), date, timestamp, timestamp_ntz, decimal"
EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH_NAIVE = dt.datetime(1970, 1, 1)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_MICRO = dt.timedelta(microseconds=1)


@dataclass(frozen=True)
class KeyType:
    """How one column maps to integer keys. ``kind`` is int | date | timestamp | timestamp_ntz | decimal."""

    kind: str
    type_name: str
    precision: int = 0
    scale: int = 0
    width: int = 8  # bytes one value of the attribute takes (for "share of attribute size")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> KeyType:
        return cls(**d)

    # ---- Python values -> keys -------------------------------------------------------------
    def encode(self, value: Any) -> tuple[int, bool]:
        """Map ``value`` to ``(floor key, exact)``; ``exact`` is False when no key equals the value."""
        if value is None:
            raise ValueError("None is not a key: use IsNull() to ask for NULLs")
        if self.kind == "int":
            if isinstance(value, bool) or not isinstance(value, int | float | decimal.Decimal | Fraction):
                raise TypeError(f"column type {self.type_name} needs int values, got {type(value).__name__}")
            return _floor_exact(Fraction(value))
        if self.kind == "date":
            if isinstance(value, dt.datetime):
                day = value.date()
                return (day - EPOCH_DATE).days, value.time() == dt.time(0) and value.tzinfo is None
            if isinstance(value, dt.date):
                return (value - EPOCH_DATE).days, True
            raise TypeError(f"column type date needs datetime.date values, got {type(value).__name__}")
        if self.kind in ("timestamp", "timestamp_ntz"):
            if isinstance(value, dt.datetime):
                if value.tzinfo is not None:
                    value = value.astimezone(dt.UTC).replace(tzinfo=None)
                return (value - EPOCH_NAIVE) // _MICRO, True
            if isinstance(value, dt.date):
                return (dt.datetime.combine(value, dt.time(0)) - EPOCH_NAIVE) // _MICRO, True
            raise TypeError(f"column type {self.type_name} needs datetime.datetime values, "
                            f"got {type(value).__name__}")
        if self.kind == "decimal":
            if isinstance(value, bool) or not isinstance(value, int | decimal.Decimal | Fraction | float):
                raise TypeError(f"column type {self.type_name} needs decimal.Decimal values, "
                                f"got {type(value).__name__}")
            return _floor_exact(Fraction(value) * 10**self.scale)
        raise UnsupportedKeyType(f"unknown key kind {self.kind!r}")

    def interval(self, low: Any, high: Any, low_inclusive: bool = True,
                 high_inclusive: bool = True) -> tuple[int | None, int | None]:
        """Inclusive integer key bounds covering every value in the range (None = unbounded)."""
        lo = hi = None
        if low is not None:
            k, exact = self.encode(low)
            lo = k if (exact and low_inclusive) else k + 1
        if high is not None:
            k, exact = self.encode(high)
            hi = k if (high_inclusive or not exact) else k - 1
        return lo, hi

    def decode(self, key: int) -> Any:
        """Inverse of :meth:`encode` for exact keys (used by the CLI and reports)."""
        if self.kind == "int":
            return key
        if self.kind == "date":
            return EPOCH_DATE + dt.timedelta(days=key)
        if self.kind in ("timestamp", "timestamp_ntz"):
            value = EPOCH_NAIVE + key * _MICRO
            return value.replace(tzinfo=dt.UTC) if self.kind == "timestamp" else value
        return decimal.Decimal(key).scaleb(-self.scale)

    def parse(self, text: str) -> Any:
        """Parse a command-line literal into a Python value of this type."""
        if self.kind == "int":
            return int(text)
        if self.kind == "date":
            return dt.date.fromisoformat(text)
        if self.kind in ("timestamp", "timestamp_ntz"):
            return dt.datetime.fromisoformat(text)
        return decimal.Decimal(text)

    # ---- Arrow arrays -> keys ----------------------------------------------------------------
    def keys_of_arrow(self, arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, int]:
        """Sorted unique keys of an Arrow column and its NULL count."""
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks() if arr.num_chunks else pa.array([], type=arr.type)
        nulls = arr.null_count
        arr = arr.drop_null() if nulls else arr
        t = arr.type
        if self.kind == "decimal":
            vals = [_unscaled(v, self.scale) for v in arr.unique().to_pylist()]
            return as_key_array(sorted(vals)), nulls
        if pa.types.is_date32(t):
            out = pc.cast(arr, pa.int32()).to_numpy(zero_copy_only=False).astype(np.int64)
        elif pa.types.is_date64(t):
            out = pc.cast(arr, pa.int64()).to_numpy(zero_copy_only=False) // 86_400_000
        elif pa.types.is_timestamp(t):
            raw = pc.cast(arr, pa.int64()).to_numpy(zero_copy_only=False)
            unit = t.unit
            out = raw * 1_000_000 if unit == "s" else raw * 1000 if unit == "ms" else (
                raw if unit == "us" else np.floor_divide(raw, 1000))
        elif pa.types.is_uint64(t):
            return as_key_array(sorted(set(arr.to_pylist()))), nulls
        elif pa.types.is_integer(t):
            out = arr.to_numpy(zero_copy_only=False).astype(np.int64)
        else:
            raise UnsupportedKeyType(f"column holds Arrow type {t} but the index was built for "
                                     f"{self.type_name}: rebuild the index (sieve rebuild)")
        return np.unique(out), nulls


def _floor_exact(x: Fraction) -> tuple[int, bool]:
    fl = x.numerator // x.denominator
    return fl, fl == x


def _unscaled(v: decimal.Decimal, scale: int) -> int:
    sign, digits, exp = v.as_tuple()
    n = int("".join(map(str, digits))) if digits else 0
    shift = exp + scale
    n = n * 10**shift if shift >= 0 else n // 10 ** (-shift)
    return -n if sign else n


def as_key_array(values: Any) -> np.ndarray:
    """A numpy array of keys: int64 when all fit, else object (Python ints)."""
    vals = list(values)
    if not vals or (min(vals) >= INT64_MIN and max(vals) <= INT64_MAX):
        return np.asarray(vals, dtype=np.int64)
    return np.asarray(vals, dtype=object)


_INT_WIDTH = {"tinyint": 1, "byte": 1, "smallint": 2, "short": 2, "int": 4, "integer": 4,
              "bigint": 8, "long": 8}


def _decimal_width(precision: int) -> int:
    return 4 if precision <= 9 else 8 if precision <= 18 else 16


def key_type_from_spark(data_type: Any, column: str) -> KeyType:
    """KeyType for a Spark SQL data type; raises UnsupportedKeyType naming the type otherwise."""
    from pyspark.sql import types as T

    name = data_type.simpleString()
    if isinstance(data_type, T.ByteType | T.ShortType | T.IntegerType | T.LongType):
        return KeyType("int", name, width=_INT_WIDTH.get(name, 8))
    if isinstance(data_type, T.DateType):
        return KeyType("date", name, width=4)
    if isinstance(data_type, T.TimestampNTZType):
        return KeyType("timestamp_ntz", name)
    if isinstance(data_type, T.TimestampType):
        return KeyType("timestamp", name)
    if isinstance(data_type, T.DecimalType):
        return KeyType("decimal", name, data_type.precision, data_type.scale,
                       _decimal_width(data_type.precision))
    raise UnsupportedKeyType(
        f"column {column!r} has type {name}, which Sieve cannot index: supported are {SUPPORTED}; "
        "index another column or cast this one into a new column of a supported type")


def key_type_from_arrow(t: pa.DataType, column: str) -> KeyType:
    """KeyType for an Arrow type (as pyarrow reads the Parquet file), mirroring Spark's reading."""
    if pa.types.is_integer(t):
        return KeyType("int", str(t), width=t.bit_width // 8)
    if pa.types.is_date(t):
        return KeyType("date", "date", width=4)
    if pa.types.is_timestamp(t):
        return KeyType("timestamp", "timestamp") if t.tz is not None else KeyType(
            "timestamp_ntz", "timestamp_ntz")
    if pa.types.is_decimal(t):
        return KeyType("decimal", f"decimal({t.precision},{t.scale})", t.precision, t.scale,
                       _decimal_width(t.precision))
    raise UnsupportedKeyType(
        f"column {column!r} has type {t}, which Sieve cannot index: supported are {SUPPORTED}; "
        "index another column or cast this one into a new column of a supported type")
