"""What Spark's Parquet source would read: the one place its listing, partition and reading rules live.

The index build, sync, maintenance, :func:`..reader.read` and the ``sieve`` data source all list and
read a table through this module (via :mod:`.table`), so an index maps exactly the rows
``spark.read.parquet(root)`` returns. Each rule follows Spark 4.1's file source and is tested against
Spark itself (``tests/sieve/test_files.py``):

* **Names** (``HadoopFSUtils.shouldFilterOutPathName``, ``PartitioningAwareFileIndex.isDataPath``):
  entries starting with ``.`` or ending in ``._COPYING_`` are skipped, and those starting with ``_``
  unless the name holds a ``=`` (``_p=1/`` is a partition folder); no suffix is required (Hive's
  ``000001_0``, ``.parq``); empty (0-byte) files are not data.
* **Partitions** (``PartitioningUtils.parsePartition``): each folder holding data files is parsed from
  its own name upwards; ``name=value`` pieces are partition columns, the first other name above them
  ends the walk. A table whose folders carry no partition values reads only the files directly under
  its root (a ``sub/`` folder is not read); a partitioned table reads only files in partition folders
  (root files beside ``p=1/`` are not read), and differing roots or column names are Spark's
  "Conflicting directory structures" / "Conflicting partition column names" errors.
* **Values** (``ExternalCatalogUtils.unescapePathName``): ``%XX`` becomes the character with that
  code (``caf%C3%A9`` is ``cafÃ©``, as Spark keeps it), column names likewise.
* **Reading a file**: INT96 timestamps in microseconds (never pyarrow's wrapping nanoseconds), dates and
  timestamps rebased from the hybrid Julian calendar when Spark's rebase rules say so (files written
  by Spark < 3.0 or with ``org.apache.spark.legacyDateTime`` / ``legacyINT96``; other files follow
  ``datetimeRebaseModeInRead`` / ``int96RebaseModeInRead``, where ``EXCEPTION`` reads the values as
  they are), column names resolved under ``spark.sql.caseSensitive``.

Spark's settings are :class:`ReadConf`, with Spark's defaults: no Spark is needed here (the CLI and
the maintenance sensor list tables without one); :func:`ReadConf.from_spark` reads a session's.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import os
import zoneinfo
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .errors import SieveError

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

SPARK_VERSION_KEY = b"org.apache.spark.version"
LEGACY_DATETIME_KEY = b"org.apache.spark.legacyDateTime"
LEGACY_INT96_KEY = b"org.apache.spark.legacyINT96"
TIME_ZONE_KEY = b"org.apache.spark.timeZone"

_MODES = ("EXCEPTION", "CORRECTED", "LEGACY")
_CONF_KEYS = {  # ReadConf field -> (Spark conf, data source option)
    "case_sensitive": ("spark.sql.caseSensitive", "caseSensitive"),
    "int96_rebase": ("spark.sql.parquet.int96RebaseModeInRead", "int96RebaseModeInRead"),
    "datetime_rebase": ("spark.sql.parquet.datetimeRebaseModeInRead", "datetimeRebaseModeInRead"),
    "partition_inference": (
        "spark.sql.sources.partitionColumnTypeInference.enabled",
        "partitionColumnTypeInference",
    ),
    "time_zone": ("spark.sql.session.timeZone", "timeZone"),
}


def local_zone() -> str:
    """The process's time zone by name (what the JVM takes as its default, hence Spark's default
    session time zone): ``$TZ``, else ``/etc/localtime``'s zone, else UTC."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz:
        return tz
    try:
        target = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in target:
            return target.split("zoneinfo/", 1)[1]
    except OSError:
        pass
    return "UTC"


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise SieveError(f"{value!r} is not a boolean: use true or false")
    return text == "true"


@dataclass(frozen=True)
class ReadConf:
    """The Spark settings that change what a Parquet read returns (defaults: Spark's)."""

    case_sensitive: bool = False
    int96_rebase: str = "EXCEPTION"
    datetime_rebase: str = "EXCEPTION"
    partition_inference: bool = True
    time_zone: str = ""  # "": the process's zone (local_zone()), Spark's default session time zone

    def __post_init__(self) -> None:
        for name in ("int96_rebase", "datetime_rebase"):
            mode = str(getattr(self, name)).upper()
            if mode not in _MODES:
                raise SieveError(
                    f"{_CONF_KEYS[name][0]}={getattr(self, name)!r}: use one of {', '.join(_MODES)}"
                )
            object.__setattr__(self, name, mode)
        zone = self.time_zone or local_zone()
        try:
            zoneinfo.ZoneInfo(zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            if not _offset_zone(zone):
                raise SieveError(
                    f"time zone {zone!r} is unknown: use a region name such as "
                    "'Europe/Berlin' or an offset such as '+02:00'"
                ) from None
        object.__setattr__(self, "time_zone", zone)

    @property
    def tzinfo(self) -> dt.tzinfo:
        return zone_of(self.time_zone)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> ReadConf:
        """From data source options (case-insensitive keys, as ``_CONF_KEYS`` names them)."""
        opts = {str(k).lower(): v for k, v in options.items()}
        kw: dict[str, Any] = {}
        for name, (_, option) in _CONF_KEYS.items():
            value = opts.get(option.lower())
            if value is not None and value != "":
                kw[name] = _bool(value) if name in ("case_sensitive", "partition_inference") else str(value)
        return cls(**kw)

    def to_options(self) -> dict[str, str]:
        """The data source options that carry this configuration."""
        out = {}
        for name, (_, option) in _CONF_KEYS.items():
            value = getattr(self, name)
            out[option] = str(value).lower() if isinstance(value, bool) else str(value)
        return out

    @classmethod
    def from_spark(cls, spark: Any) -> ReadConf:
        """A session's settings (Spark's defaults where it has none)."""
        kw: dict[str, Any] = {}
        for name, (key, _) in _CONF_KEYS.items():
            try:
                value = spark.conf.get(key, None)
            except Exception:  # noqa: BLE001 - a conf Spark does not know: its default
                value = None
            if value is not None and value != "":
                kw[name] = _bool(value) if name in ("case_sensitive", "partition_inference") else str(value)
        return cls(**kw)


DEFAULT = ReadConf()
_current: contextvars.ContextVar[ReadConf | None] = contextvars.ContextVar("sieve_read_conf", default=None)


def current_conf() -> ReadConf:
    """The settings files are read with now: those :func:`reading_as` set (a build or sync with a
    SparkSession: the session's), else Spark's defaults (:data:`DEFAULT`)."""
    conf = _current.get()
    return DEFAULT if conf is None else conf


@contextlib.contextmanager
def reading_as(conf: ReadConf | None) -> Iterator[None]:
    """Read files with ``conf`` inside the block (None: leave the current settings). A context
    variable: threads started with a copy of the context (every reader pool here) see it too."""
    if conf is None:
        yield
        return
    token = _current.set(conf)
    try:
        yield
    finally:
        _current.reset(token)


def spark_read_conf(spark: Any) -> ReadConf | None:
    """:meth:`ReadConf.from_spark` of a session, None without one (path tables built with pyarrow)."""
    return None if spark is None else ReadConf.from_spark(spark)


def _offset_zone(zone: str) -> dt.tzinfo | None:
    text = zone.upper().removeprefix("UTC").removeprefix("GMT") if zone.upper() not in ("Z",) else "+00:00"
    if not text:
        return dt.UTC
    if text[0] not in "+-":
        return None
    sign = -1 if text[0] == "-" else 1
    hh, _, mm = text[1:].partition(":")
    try:
        return dt.timezone(sign * dt.timedelta(hours=int(hh), minutes=int(mm or 0)))
    except ValueError:
        return None


def zone_of(zone: str) -> dt.tzinfo:
    try:
        return zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        got = _offset_zone(zone)
        if got is None:
            raise SieveError(f"time zone {zone!r} is unknown") from None
        return got


# ---- names ---------------------------------------------------------------------------------------
def skipped_dir(name: str) -> bool:
    """A folder Spark's listing does not enter (``shouldFilterOutPathName``)."""
    exclude = (
        (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")
    )
    return exclude and not name.startswith(("_common_metadata", "_metadata"))


def skipped_file(name: str) -> bool:
    """A file name Spark does not read as data (``isDataPath`` after the listing's filter)."""
    return (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")


def unescape(text: str) -> str:
    """Spark's ``unescapePathName``: each ``%XX`` (two hex digits) becomes the character of that code."""
    if "%" not in text:
        return text
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "%" and i + 2 < n and _hex(text[i + 1]) and _hex(text[i + 2]):
            out.append(chr(int(text[i + 1 : i + 3], 16)))
            i += 3
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _hex(c: str) -> bool:
    return c in "0123456789abcdefABCDEF"


# ---- partitions ------------------------------------------------------------------------------------
def _partition_column(piece: str) -> tuple[str, str] | None:
    """(unescaped name, raw value) of one ``name=value`` folder name; None for any other name."""
    if "=" not in piece:
        return None
    name, _, value = piece.partition("=")
    if not name or not unescape(name):
        raise SieveError(
            f"Empty partition column name in {piece!r} (Spark cannot read this table either): "
            "rename the folder"
        )
    if not value:
        raise SieveError(
            f"Empty partition column value in {piece!r} (Spark cannot read this table either): "
            "rename the folder"
        )
    return unescape(name), value


def parse_dir(rel_dir: str) -> tuple[list[tuple[str, str]] | None, str]:
    """(partition columns as (name, raw value) or None, the base folder Spark finds) of a folder
    relative to the table root, as ``PartitioningUtils.parsePartition`` parses it."""
    pieces = rel_dir.split("/") if rel_dir else []
    cols: list[tuple[str, str]] = []
    i = len(pieces)
    while i > 0:
        col = _partition_column(pieces[i - 1])
        if col is None:
            if cols:
                break
        else:
            cols.append(col)
        i -= 1
    if not cols:
        return None, rel_dir
    return cols[::-1], "/".join(pieces[:i])


def partition_values(rel_dir: str) -> dict[str, str]:
    """The partition values of one folder below the table root (``day=2024-01-01/shop=7``): unescaped
    strings as Spark keeps them; a NULL keeps Spark's ``__HIVE_DEFAULT_PARTITION__`` name."""
    cols, _ = parse_dir(rel_dir)
    return {} if cols is None else {name: (raw if raw == HIVE_NULL else unescape(raw)) for name, raw in cols}


def data_dirs(dirs: Iterable[str], case_sensitive: bool = False) -> dict[str, dict[str, str]]:
    """The folders (relative to the root, ``""`` for the root) whose files Spark reads, with their
    partition values, out of every folder that holds data files.

    Raises SieveError where Spark's partition discovery fails (differing base folders or partition
    column names): Spark cannot read such a table either.
    """
    dirs = list(dirs)
    parsed = {d: parse_dir(d) for d in dirs}
    partitioned = {d: cols for d, (cols, _) in parsed.items() if cols is not None}
    if not partitioned:
        return {"": {}} if "" in parsed else {}
    bases = sorted({base.lower() for _, base in parsed.values()})
    if len(bases) > 1:
        shown = ", ".join(repr(b or ".") for b in bases[:5])
        raise SieveError(
            f"Conflicting directory structures: folders {shown} of this table hold data files at "
            "different partition roots, and Spark cannot read it either: move the files into "
            "one partition layout (or read each part separately)"
        )
    names = {tuple(n if case_sensitive else n.lower() for n, _ in cols) for cols in partitioned.values()}
    if len(names) > 1:
        shown = "; ".join(", ".join(n) for n in sorted(names)[:4])
        raise SieveError(
            f"Conflicting partition column names ({shown}): Spark cannot read this table either; "
            "give every partition folder the same columns"
        )
    return {
        d: {name: (raw if raw == HIVE_NULL else unescape(raw)) for name, raw in cols}
        for d, cols in partitioned.items()
    }


# ---- reading one file as Spark reads it ----------------------------------------------------------
def open_parquet(source: Any) -> Any:
    """A :class:`pyarrow.parquet.ParquetFile` that reads INT96 as microseconds (Spark's precision;
    pyarrow's default nanoseconds wrap outside 1677-2262)."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(source, coerce_int96_timestamp_unit="us")


def resolve_columns(
    names: Iterable[str], physical: list[str], case_sensitive: bool | None = None
) -> dict[str, str]:
    """Schema column -> the file's column holding it (absent: the file has no such column, NULLs).

    Case-insensitive (Spark's default) matches ``k`` to a file's ``K``; two file columns that differ
    only in case are ambiguous, as Spark reports. ``case_sensitive`` None: :func:`current_conf`'s.
    """
    if case_sensitive is None:
        case_sensitive = current_conf().case_sensitive
    if case_sensitive:
        have = set(physical)
        return {n: n for n in names if n in have}
    by_lower: dict[str, list[str]] = {}
    for p in physical:
        by_lower.setdefault(p.lower(), []).append(p)
    out = {}
    for n in names:
        got = by_lower.get(n.lower())
        if not got:
            continue
        if len(got) > 1:
            raise SieveError(
                f"Found duplicate field(s) {n!r}: {', '.join(got)} in case-insensitive mode (as "
                "Spark reports): set spark.sql.caseSensitive=true or rewrite the file"
            )
        out[n] = got[0]
    return out


@dataclass(frozen=True)
class Rebase:
    """How one file's dates and timestamps are rebased: ``dates`` / ``timestamps`` (INT64) /
    ``int96`` True means "from the hybrid Julian calendar"; ``zone`` the writer's time zone."""

    dates: bool = False
    timestamps: bool = False
    int96: bool = False
    zone: str = "UTC"

    @property
    def any(self) -> bool:
        return self.dates or self.timestamps or self.int96


def _version_below_3(text: str) -> bool:
    try:
        return int(text.split(".", 1)[0]) < 3
    except ValueError:
        return False


def rebase_of(metadata: Mapping[bytes, bytes] | None, conf: ReadConf | None = None) -> Rebase:
    """Spark's ``DataSourceUtils.datetimeRebaseSpec`` / ``int96RebaseSpec`` for a file's key-value
    metadata: a Spark-written file says itself (before 3.0, or the legacy keys: LEGACY; else
    CORRECTED); another writer's file follows the session's mode (EXCEPTION reads as CORRECTED:
    Spark would refuse ancient values there, this reads them unchanged)."""
    conf = conf or current_conf()
    meta = metadata or {}
    version = meta.get(SPARK_VERSION_KEY)
    if version is not None:
        old = _version_below_3(version.decode(errors="replace"))
        dates = old or LEGACY_DATETIME_KEY in meta
        int96 = old or LEGACY_INT96_KEY in meta
    else:
        dates = conf.datetime_rebase == "LEGACY"
        int96 = conf.int96_rebase == "LEGACY"
    zone = meta.get(TIME_ZONE_KEY)
    return Rebase(dates, dates, int96, zone.decode() if zone else conf.time_zone)


# The first Gregorian day (1582-10-15) and instant (1900-01-01 UTC, with a margin for zone offsets)
# from which the hybrid and proleptic calendars agree.
GREGORIAN_START_DAY = -141427
_DAY_US = 86_400_000_000
_TS_SWITCH_US = -2_208_988_800_000_000 + 2 * _DAY_US


def _days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Proleptic Gregorian days since 1970-01-01 (H. Hinnant's algorithm, every year incl. <= 0)."""
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    mp = (m + 9) % 12
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def julian_to_gregorian_days(days: np.ndarray) -> np.ndarray:
    """Spark's ``rebaseJulianToGregorianDays``: the date a hybrid-calendar day number names, as a
    proleptic Gregorian day number (the same from 1582-10-15 on; Julian leap days roll to 1 March)."""
    days = np.asarray(days, np.int64)
    old = days < GREGORIAN_START_DAY
    if not old.any():
        return days
    jd = days[old] + 2440588  # Julian day number
    c = jd + 32082
    dd = (4 * c + 3) // 1461
    e = c - (1461 * dd) // 4
    m = (5 * e + 2) // 153
    day = e - (153 * m + 2) // 5 + 1
    month = m + 3 - 12 * (m // 10)
    year = dd - 4800 + m // 10
    out = days.copy()
    out[old] = _days_from_civil(year, month, np.ones_like(day)) + day - 1
    return out


def julian_to_gregorian_micros(micros: np.ndarray, zone: str) -> np.ndarray:
    """Spark's ``rebaseJulianToGregorianMicros``: the local date-time an instant shows in the hybrid
    calendar in ``zone``, taken as a proleptic Gregorian local date-time in that zone."""
    micros = np.asarray(micros, np.int64)
    old = micros < _TS_SWITCH_US
    if not old.any():
        return micros
    tz = zone_of(zone)
    out = micros.copy()
    for i in np.flatnonzero(old):
        us = int(micros[i])
        offset = _offset_us(tz, us)
        local = us + offset
        day, tod = divmod(local, _DAY_US)
        gday = int(julian_to_gregorian_days(np.array([day]))[0])
        local2 = gday * _DAY_US + tod
        out[i] = local2 - _local_offset_us(tz, local2)
    return out


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


_JAVA_UTIL_FLOOR_US = -2_208_988_800_000_000  # 1900-01-01T00:00Z


def _offset_us(tz: dt.tzinfo, us: int) -> int:
    """The offset ``java.util.TimeZone`` gives an instant (the hybrid calendar's side of Spark's
    rebase): before 1900 the zone's offset at 1900-01-01, not its local mean time, which
    ``java.util.TimeZone`` does not keep (``java.time``, the other side, does)."""
    at = _EPOCH + dt.timedelta(microseconds=max(us, _JAVA_UTIL_FLOOR_US))
    off = at.astimezone(tz).utcoffset() or dt.timedelta(0)
    return off // dt.timedelta(microseconds=1)


def _local_offset_us(tz: dt.tzinfo, local_us: int) -> int:
    """The zone's offset for a local date-time as ``java.time`` gives it (local mean time included;
    the earlier offset in an overlap)."""
    try:
        naive = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=local_us)
    except OverflowError:
        naive = dt.datetime(1, 1, 2)
    off = naive.replace(tzinfo=tz).utcoffset() or dt.timedelta(0)
    return off // dt.timedelta(microseconds=1)


def rebase_array(col: Any, rebase: Rebase, int96: bool) -> Any:
    """One column (Arrow array / chunked array) as Spark reads it under ``rebase``."""
    t = col.type
    if pa.types.is_date32(t) and rebase.dates:
        return _map_ints(col, pa.int32(), julian_to_gregorian_days, t)
    if pa.types.is_timestamp(t) and (rebase.int96 if int96 else rebase.timestamps):
        unit = {"s": 1_000_000, "ms": 1000, "us": 1, "ns": None}[t.unit]
        if unit is None:
            return col
        return _map_ints(
            col, pa.int64(), lambda a: julian_to_gregorian_micros(a * unit, rebase.zone) // unit, t
        )
    return col


def _map_ints(col: Any, storage: pa.DataType, fn: Any, t: pa.DataType) -> Any:
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array([_map_ints(c, storage, fn, t) for c in col.chunks], type=t)
    ints = col.cast(storage)
    values = np.asarray(ints.fill_null(0).to_numpy(zero_copy_only=False), np.int64)
    mapped = fn(values)
    return pa.array(
        mapped.astype(storage.to_pandas_dtype()),
        type=storage,
        mask=col.is_null().to_numpy(zero_copy_only=False) if col.null_count else None,
    ).cast(t)


def int96_columns(pf: Any) -> set[str]:
    """Top-level columns of a Parquet file stored as INT96."""
    schema = pf.schema
    return {schema.column(i).path for i in range(len(schema)) if schema.column(i).physical_type == "INT96"}


def read_spark_column(pf: Any, column: str, conf: ReadConf | None = None) -> Any | None:
    """One column of a file as Spark reads it (None: the file lacks it, so it holds NULLs): the file
    column matched under ``conf.case_sensitive``, INT96 in microseconds, rebased per Spark's rules
    (``conf``: default :func:`current_conf`)."""
    conf = conf or current_conf()
    found = resolve_columns([column], pf.schema_arrow.names, conf.case_sensitive).get(column)
    if found is None:
        return None
    col = pf.read(columns=[found], use_threads=False).column(0)
    rebase = rebase_of(pf.metadata.metadata, conf)
    if rebase.any:
        col = rebase_array(col, rebase, found in int96_columns(pf))
    return col
