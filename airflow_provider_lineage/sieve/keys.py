"""Order-preserving mapping of column values to integer keys.

Supported column types and their keys:

* integer types (TINYINT..BIGINT, Arrow int8..uint64)      -> the value itself
* DATE                                                       -> days since 1970-01-01
* TIMESTAMP (instant, Parquet ``isAdjustedToUTC=true``)      -> microseconds since the epoch (UTC)
* TIMESTAMP_NTZ (wall clock, Parquet ``isAdjustedToUTC=false``) -> microseconds of the wall clock read as UTC
* DECIMAL(p, s)                                              -> the unscaled value at the column's scale
* STRING / BINARY (Arrow string, large_string, string_view, binary, large_binary, fixed_size_binary)
  -> a *window key* of the value's bytes (UTF-8 for strings, compared unsigned as Spark and Parquet do)

Window keys. Every value of a string column is ``prefix + rest`` or lies below/above all such
values, where ``prefix`` is the common prefix of the column's values learned at build time (from the
Parquet footers' min/max) and stored in the index's KeyType. A value starting with the prefix maps
to ``1 + (BE(rest[:7] zero-padded) << 3 | min(len(rest), 7))``; a value below the prefix's range to
``LOW_KEY`` (0), above it to ``HIGH_KEY`` (2**59 + 1). The map is monotone (a <= b => key(a) <=
key(b)) for every prefix, so a value appended later that does not share the prefix only lands on a
sentinel (false positives, never a lost file). It is one-to-one on values whose rest is shorter
than 7 bytes (short codes: ``exact``); longer values share their key with every value of the same
first 7 bytes after the prefix (``encode`` returns ``exact=False``; ranges widen to whole keys).

Radix keys. When a sample of the column (read at build time) uses at most ``ALPHABET_MAX`` distinct
bytes after the prefix (digits, hex, ``-``) and its values are codes rather than random strings
(:func:`regular_spacing`), the KeyType also stores that sorted ``alphabet`` and
the bytes after the prefix become digits of base ``|alphabet|``: 17 decimal digits instead of 7
bytes, and consecutive codes get consecutive keys (regular spacing keeps segments long). Bytes
outside the alphabet keep the map monotone (see :func:`radix_tables`), so values appended later
with other bytes only cost false positives.

Keys are Python ints (DECIMAL(38, s) needs more than 64 bits); arrays of keys are numpy ``int64``
arrays when every key fits, else numpy ``object`` arrays of Python ints.
"""
from __future__ import annotations

import datetime as dt
import decimal
import functools
from dataclasses import asdict, dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import UnsupportedKeyType

SUPPORTED = ("integer types (tinyint, smallint, int, bigint), date, timestamp, timestamp_ntz, decimal, "
             "string, binary")
EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH_NAIVE = dt.datetime(1970, 1, 1)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_MICRO = dt.timedelta(microseconds=1)
BYTE_KINDS = ("string", "binary")
WINDOW = 7  # bytes of a value (after the learned prefix) that its key tells apart
LEN_BITS = 3  # the low bits of a window key: min(len(rest), WINDOW)
LOW_KEY = 0  # values below every value starting with the prefix
HIGH_KEY = (1 << (8 * WINDOW + LEN_BITS)) + 1  # values above every value starting with the prefix


def unique_sorted(a: np.ndarray) -> np.ndarray:
    """``np.unique`` of a 1-d array, in one pass when it is sorted already (files written in key order).

    Otherwise Arrow's hash ``unique`` first, then a sort of the distinct values only, which is
    faster than ``np.unique``'s sort of every value (integer keys; others take ``np.unique``)."""
    if len(a) > 1 and not bool(np.all(a[1:] >= a[:-1])):
        if a.dtype.kind in "iu":
            return np.sort(pa.array(a).unique().to_numpy())
        return np.unique(a)
    keep = np.ones(len(a), bool)
    keep[1:] = a[1:] != a[:-1]
    return a[keep]


@dataclass(frozen=True)
class KeyType:
    """How one column maps to integer keys.

    ``kind`` is int | date | timestamp | timestamp_ntz | decimal | string | binary. ``prefix`` (hex)
    is the byte prefix a string/binary column's values shared at build time (see the module doc).
    """

    kind: str
    type_name: str
    precision: int = 0
    scale: int = 0
    width: int = 8  # bytes one value of the attribute takes (for "share of attribute size")
    prefix: str = ""
    alphabet: str = ""  # hex of the sorted bytes seen after the prefix at build time ("" = every byte)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for name in ("prefix", "alphabet"):
            if not d[name]:
                del d[name]  # manifests of non-string indexes stay as older releases wrote them
        return d

    @property
    def prefix_bytes(self) -> bytes:
        return bytes.fromhex(self.prefix)

    @property
    def shares_keys(self) -> bool:
        """True when several values can map to one key (string/binary window keys)."""
        return self.kind in BYTE_KINDS

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
        if self.kind in BYTE_KINDS:
            raw = self._value_bytes(value)
            if self.alphabet:
                return radix_key(raw, self.prefix_bytes, bytes.fromhex(self.alphabet)), False
            return window_key(raw, self.prefix_bytes), window_exact(raw, self.prefix_bytes)
        raise UnsupportedKeyType(f"unknown key kind {self.kind!r}")

    def interval(self, low: Any, high: Any, low_inclusive: bool = True,
                 high_inclusive: bool = True) -> tuple[int | None, int | None]:
        """Inclusive integer key bounds covering every value in the range (None = unbounded).

        ``interval(v, v)`` is empty (low > high) when no value equal to ``v`` has a key. For window
        keys a non-exact bound keeps its whole key (other values share it), an exact one is dropped
        only when the bound is exclusive.
        """
        lo = hi = None
        if low is not None:
            k, exact = self.encode(low)
            if self.shares_keys:
                lo = k + 1 if (exact and not low_inclusive) else k
            else:
                lo = k if (exact and low_inclusive) else k + 1
        if high is not None:
            k, exact = self.encode(high)
            if not high_inclusive and self.alphabet:  # no smaller value shares the key: drop it
                exact = radix_least(self._value_bytes(high), self.prefix_bytes, bytes.fromhex(self.alphabet))
            hi = k if (high_inclusive or not exact) else k - 1
        return lo, hi

    def _value_bytes(self, value: Any) -> bytes:
        if self.kind == "string":
            if not isinstance(value, str):
                raise TypeError(f"column type {self.type_name} needs str values, got {type(value).__name__}")
            return value.encode("utf-8", "surrogatepass")
        if not isinstance(value, bytes | bytearray | memoryview):
            raise TypeError(f"column type {self.type_name} needs bytes values, got {type(value).__name__}")
        return bytes(value)

    def decode(self, key: int) -> Any:
        """Inverse of :meth:`encode` for exact keys (used by the CLI and reports)."""
        if self.kind == "int":
            return key
        if self.kind == "date":
            return EPOCH_DATE + dt.timedelta(days=key)
        if self.kind in ("timestamp", "timestamp_ntz"):
            value = EPOCH_NAIVE + key * _MICRO
            return value.replace(tzinfo=dt.UTC) if self.kind == "timestamp" else value
        if self.kind in BYTE_KINDS:
            raw = (radix_bytes(key, self.prefix_bytes, bytes.fromhex(self.alphabet)) if self.alphabet
                   else window_bytes(key, self.prefix_bytes))
            return raw.decode("utf-8", "replace") if self.kind == "string" else raw
        return decimal.Decimal(key).scaleb(-self.scale)

    def parse(self, text: str) -> Any:
        """Parse a command-line literal into a Python value of this type."""
        if self.kind == "int":
            return int(text)
        if self.kind == "date":
            return dt.date.fromisoformat(text)
        if self.kind in ("timestamp", "timestamp_ntz"):
            return dt.datetime.fromisoformat(text)
        if self.kind == "string":
            return text
        if self.kind == "binary":  # hex digits, optionally 0x-prefixed
            return bytes.fromhex(text.removeprefix("0x").removeprefix("0X"))
        return decimal.Decimal(text)

    # ---- Arrow arrays -> keys ----------------------------------------------------------------
    def keys_of_arrow(self, arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, int]:
        """Sorted unique keys of an Arrow column and its NULL count."""
        if self.kind in BYTE_KINDS:
            return self._window_keys_of(arr)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks() if arr.num_chunks else pa.array([], type=arr.type)
        nulls = arr.null_count
        arr = arr.drop_null() if nulls else arr
        out = self.raw_keys_of_arrow(arr)
        if out is not None:
            return unique_sorted(out), nulls
        if self.kind == "decimal":
            vals = [_unscaled(v, self.scale) for v in arr.unique().to_pylist()]
            return as_key_array(sorted(vals)), nulls
        return as_key_array(sorted(set(arr.to_pylist()))), nulls  # uint64

    def raw_keys_of_arrow(self, arr: pa.Array) -> np.ndarray | None:
        """The int64 keys of a non-string Arrow array without NULLs, in row order (duplicates kept);
        None for decimals and uint64 (keys beyond int64: see :meth:`keys_of_arrow`)."""
        t = arr.type
        if self.kind == "decimal" or pa.types.is_uint64(t):
            return None
        if pa.types.is_date32(t):
            return pc.cast(arr, pa.int32()).to_numpy(zero_copy_only=False).astype(np.int64)
        if pa.types.is_date64(t):
            return pc.cast(arr, pa.int64()).to_numpy(zero_copy_only=False) // 86_400_000
        if pa.types.is_timestamp(t):
            raw = pc.cast(arr, pa.int64()).to_numpy(zero_copy_only=False)
            unit = t.unit
            return raw * 1_000_000 if unit == "s" else raw * 1000 if unit == "ms" else (
                raw if unit == "us" else np.floor_divide(raw, 1000))
        if pa.types.is_integer(t):
            return arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        raise UnsupportedKeyType(f"column holds Arrow type {t} but the index was built for "
                                 f"{self.type_name}: rebuild the index (sieve rebuild)")

    def _window_keys_of(self, arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, int]:
        if not _is_bytes_type(arr.type):
            raise UnsupportedKeyType(f"column holds Arrow type {arr.type} but the index was built for "
                                     f"{self.type_name}: rebuild the index (sieve rebuild)")
        raw = pc.cast(arr, pa.large_binary())  # string_view has no filter/unique kernels
        if isinstance(raw, pa.ChunkedArray):
            raw = raw.combine_chunks() if raw.num_chunks else pa.array([], pa.large_binary())
        nulls = raw.null_count
        raw = raw.drop_null() if nulls else raw
        uniq = raw.unique()
        if self.alphabet:
            return np.unique(radix_keys(uniq, self.prefix_bytes, bytes.fromhex(self.alphabet))), nulls
        return np.unique(window_keys(uniq, self.prefix_bytes)), nulls


def _floor_exact(x: Fraction) -> tuple[int, bool]:
    fl = x.numerator // x.denominator
    return fl, fl == x


def _unscaled(v: decimal.Decimal | int, scale: int) -> int:
    if isinstance(v, int):  # an unsigned 64-bit column read as DECIMAL(20, 0), as Spark reads it
        return v * 10**scale
    sign, digits, exp = v.as_tuple()
    n = int("".join(map(str, digits))) if digits else 0
    shift = exp + scale
    n = n * 10**shift if shift >= 0 else n // 10 ** (-shift)
    return -n if sign else n


# ---- window keys (string / binary) ------------------------------------------------------------
def window_key(raw: bytes, prefix: bytes) -> int:
    """The key of a byte string: monotone in unsigned lexicographic byte order, for any ``prefix``."""
    p = len(prefix)
    if raw[:p] != prefix:
        return LOW_KEY if raw < prefix else HIGH_KEY
    rest = raw[p:p + WINDOW]
    return 1 + (int.from_bytes(rest.ljust(WINDOW, b"\0"), "big") << LEN_BITS | len(rest))


def window_exact(raw: bytes, prefix: bytes) -> bool:
    """True when no other byte string has ``raw``'s key (it starts with ``prefix`` and its rest is short)."""
    return raw[:len(prefix)] == prefix and len(raw) - len(prefix) < WINDOW


def window_bytes(key: int, prefix: bytes) -> bytes:
    """The least byte string with this key (the value itself for an exact key)."""
    if key <= LOW_KEY:
        return b""
    if key >= HIGH_KEY:
        raise ValueError(f"key {key} stands for every value above prefix {prefix!r}: it has no least value")
    body = key - 1
    return prefix + (body >> LEN_BITS).to_bytes(WINDOW, "big")[: body & ((1 << LEN_BITS) - 1)]


def window_keys(arr: pa.Array, prefix: bytes) -> np.ndarray:
    """Vectorised :func:`window_key` of a null-free string/binary Arrow array (int64, unsorted)."""
    if len(arr) == 0:
        return np.empty(0, np.int64)
    raw = pc.cast(arr, pa.large_binary())
    p = len(prefix)
    rest = pc.binary_slice(raw, p, p + WINDOW) if p else pc.binary_slice(raw, 0, WINDOW)
    keys = 1 + (_big_endian(rest) << LEN_BITS | _lengths(rest))
    return _outside_prefix(raw, prefix, keys).astype(np.int64)


def _outside_prefix(raw: pa.Array, prefix: bytes, keys: np.ndarray) -> np.ndarray:
    """``keys`` where the value starts with ``prefix``, else :data:`LOW_KEY`/:data:`HIGH_KEY` (below/above it)."""
    if not prefix:
        return keys
    pre = pa.scalar(prefix, pa.large_binary())
    starts = pc.equal(pc.binary_slice(raw, 0, len(prefix)), pre).to_numpy(zero_copy_only=False)
    below = pc.less(raw, pre).to_numpy(zero_copy_only=False)
    return np.where(starts, keys, np.where(below, LOW_KEY, HIGH_KEY))


def _lengths(arr: pa.Array) -> np.ndarray:
    offsets = np.frombuffer(arr.buffers()[1], np.int64, count=len(arr) + 1, offset=8 * arr.offset)
    return np.diff(offsets)


def _big_endian(arr: pa.Array) -> np.ndarray:
    """BE value of each (at most WINDOW-byte) element, zero-padded on the right to WINDOW bytes."""
    mat = np.zeros((len(arr), 8), np.uint8)
    mat[:, 8 - WINDOW:] = _byte_matrix(arr, WINDOW)[0]
    return mat.view(">u8").ravel().astype(np.int64)


# ---- radix keys (string / binary over a learned alphabet) --------------------------------------
# Codes over few distinct bytes (digits, hex, '-') waste most of a byte. With the sorted alphabet A
# learned at build time, the bytes after the prefix are digits of base R = |A| (a_i -> i), so 17
# decimal digits fit where the byte window holds 7, and consecutive codes get consecutive keys.
# An end of value counts as a_0; a byte c outside A counts as the largest member below it followed
# by R-1 digits to the end (or, below a_0, as 0 digits to the end). That keeps the map monotone for
# every alphabet (a byte outside it only adds false positives), never one-to-one (exact is False).
ALPHABET_MAX = 48  # larger alphabets keep the byte window
ALPHABET_MIN = 2


@functools.lru_cache(maxsize=64)
def radix_tables(alphabet: bytes) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(code, mode) per byte value, the base R and the digits W (R**W <= 2**59).

    mode 0: a member (code = its rank); 1: outside, between members (code = rank of the largest member
    below it, then R-1 digits); 2: outside, below every member (code 0, then 0 digits).
    """
    members = sorted(set(alphabet))
    rank = np.searchsorted(np.asarray(members), np.arange(256), "left")  # members below each byte
    member = np.isin(np.arange(256), members)
    code = np.where(member, rank, np.maximum(rank - 1, 0)).astype(np.int64)
    mode = np.where(member, 0, np.where(rank == 0, 2, 1)).astype(np.int64)
    r = len(members)
    w = 1
    while r ** (w + 1) <= 1 << (8 * WINDOW + LEN_BITS):
        w += 1
    return code, mode, r, w


def radix_key(raw: bytes, prefix: bytes, alphabet: bytes) -> int:
    """The key of a byte string over ``alphabet``: monotone in unsigned byte order (see above)."""
    p = len(prefix)
    if raw[:p] != prefix:
        return LOW_KEY if raw < prefix else HIGH_KEY
    code, mode, r, w = radix_tables(alphabet)
    rest = raw[p:p + w]
    key, state = 0, 0
    for j in range(w):
        if state == 1:
            digit = r - 1
        elif state == 2 or j >= len(rest):
            digit, state = 0, 2
        else:
            digit, state = int(code[rest[j]]), int(mode[rest[j]])
        key = key * r + digit
    return 1 + key


def radix_least(raw: bytes, prefix: bytes, alphabet: bytes) -> bool:
    """True when every value with ``raw``'s radix key is >= ``raw`` (members only, at most W of them
    after the prefix, not ending in a_0), so an exclusive upper bound may drop the key."""
    if raw[:len(prefix)] != prefix:
        return False
    rest = raw[len(prefix):]
    _, _, _, w = radix_tables(alphabet)
    members = set(alphabet)
    return len(rest) <= w and all(b in members for b in rest) and (not rest or rest[-1] != min(members))


def radix_bytes(key: int, prefix: bytes, alphabet: bytes) -> bytes:
    """The members spelled by a radix key (trailing a_0 dropped): for display."""
    if key <= LOW_KEY:
        return b""
    if key >= HIGH_KEY:
        raise ValueError(f"key {key} stands for every value above prefix {prefix!r}: it has no least value")
    members = sorted(set(alphabet))
    _, _, r, w = radix_tables(alphabet)
    body, digits = key - 1, []
    for _ in range(w):
        body, d = divmod(body, r)
        digits.append(members[d])
    return prefix + bytes(reversed(digits)).rstrip(bytes([members[0]]))


def radix_keys(arr: pa.Array, prefix: bytes, alphabet: bytes) -> np.ndarray:
    """Vectorised :func:`radix_key` of a null-free string/binary Arrow array (int64, unsorted)."""
    if len(arr) == 0:
        return np.empty(0, np.int64)
    code, mode, r, w = radix_tables(alphabet)
    raw = pc.cast(arr, pa.large_binary())
    p = len(prefix)
    rest = pc.binary_slice(raw, p, p + w)
    mat, lens = _byte_matrix(rest, w)
    col = np.arange(w)
    inside = col < lens[:, None]
    digit = np.where(inside, code[mat], 0)
    state = np.where(inside, mode[mat], 2)  # the end of a value: 0 digits from there on
    escaped = state != 0
    first = np.where(escaped.any(axis=1), escaped.argmax(axis=1), w)
    rows = np.arange(len(arr))
    tail = np.where(state[rows, np.minimum(first, w - 1)] == 1, r - 1, 0)
    digit = np.where(col > first[:, None], tail[:, None], digit)
    powers = np.asarray([r ** (w - 1 - j) for j in range(w)], np.int64)
    keys = 1 + digit.astype(np.int64) @ powers
    return _outside_prefix(raw, prefix, keys).astype(np.int64)


def _byte_matrix(arr: pa.Array, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(n, width) uint8 matrix of each element's first bytes (0 past its end) and the lengths."""
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], np.int64, count=n + 1, offset=8 * arr.offset)
    lens = np.diff(offsets)
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None and data_buf.size else np.zeros(1, np.uint8)
    col = np.arange(width)
    idx = np.minimum(offsets[:-1, None] + col, len(data) - 1)
    return np.where(col < lens[:, None], data[idx], 0).astype(np.int64), lens


def learn_alphabet(kt: KeyType, sample: pa.Array | pa.ChunkedArray) -> KeyType:
    """``kt`` with the alphabet of the bytes after its prefix in ``sample`` (when it is small)."""
    if kt.kind not in BYTE_KINDS or len(sample) == 0:
        return kt
    raw = pc.cast(sample, pa.large_binary())
    if isinstance(raw, pa.ChunkedArray):
        raw = raw.combine_chunks()
    rest = pc.binary_slice(raw.drop_null().unique(), len(kt.prefix_bytes), len(kt.prefix_bytes) + 32)
    mat, lens = _byte_matrix(rest, 32)
    seen = np.unique(mat[np.arange(32) < lens[:, None]])
    if not ALPHABET_MIN <= len(seen) <= ALPHABET_MAX:
        return kt
    alphabet = bytes(seen.astype(np.uint8).tolist())
    if not regular_spacing(radix_keys(raw.drop_null().unique(), kt.prefix_bytes, alphabet)):
        return kt
    return replace(kt, alphabet=alphabet.hex())


DENSE_SHARE = 0.01  # of the smallest gap's lattice filled
STEP_SHARE = 0.1  # of the gaps equal to the smallest one


def regular_spacing(keys: np.ndarray) -> bool:
    """True when a sample's distinct keys look like codes: they fill at least ``DENSE_SHARE`` of the
    lattice of their smallest gap, or at least ``STEP_SHARE`` of their gaps are that smallest step
    (ids, clerk numbers, clusters of them). Radix keys are then one per value and evenly spaced,
    which keeps Sieve's segments long. Random values (phone numbers, UUIDs) are spread thinly either
    way, and the coarser byte window gives a much smaller index for them (measured in
    benchmarks/sieve/STRING_KEYS.md)."""
    uniq = np.unique(keys)
    if len(uniq) < 3:
        return True
    gaps = np.diff(uniq)
    step = int(gaps.min())
    span = int(uniq[-1]) - int(uniq[0])
    return (len(uniq) - 1) * step >= DENSE_SHARE * span or float(np.mean(gaps == step)) >= STEP_SHARE


def common_prefix(a: bytes, b: bytes) -> bytes:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return a[:n]


def with_bounds(kt: KeyType, low: bytes | None, high: bytes | None, width: int | None = None) -> KeyType:
    """``kt`` with the prefix every value in ``[low, high]`` shares (and the mean value width).

    Any prefix gives correct answers (the map is monotone for each), so bounds that are off, or a
    later value outside them, only cost false positives.
    """
    if kt.kind not in BYTE_KINDS:
        return kt
    prefix = common_prefix(low, high) if low is not None and high is not None else b""
    return replace(kt, prefix=prefix.hex(), width=max(1, width) if width else kt.width)


def _is_bytes_type(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)
            or pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
            or pa.types.is_fixed_size_binary(t))


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
    if isinstance(data_type, T.StringType):
        collation = getattr(data_type, "collation", "UTF8_BINARY")
        if collation != "UTF8_BINARY":
            raise UnsupportedKeyType(
                f"column {column!r} has type {name} with collation {collation}, which Sieve cannot index: "
                "only UTF8_BINARY strings (compared by their bytes) are supported; index a column "
                "cast to the default collation")
        return KeyType("string", "string")
    if isinstance(data_type, T.BinaryType):
        return KeyType("binary", "binary")
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
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return KeyType("string", "string")
    if _is_bytes_type(t):
        return KeyType("binary", "binary", width=t.byte_width if pa.types.is_fixed_size_binary(t) else 8)
    raise UnsupportedKeyType(
        f"column {column!r} has type {t}, which Sieve cannot index: supported are {SUPPORTED}; "
        "index another column or cast this one into a new column of a supported type")
