"""Tables and their files: resolving a table name/path, listing Parquet files, reading keys.

Locations are files. A file is identified by its **absolute local path** (no scheme, no percent
encoding), e.g. ``/data/sales/day=2024-01-01/part-0000.parquet``, or, on an object store, by its
URI in :func:`.fs.normalize` spelling, e.g. ``s3://bucket/sales/day=2024-01-01/part-0000.parquet``
(``s3a://`` is spelled ``s3://``, percent-decoded); :meth:`SieveIndex.candidates` returns exactly
these strings. Spark reads them through :func:`spark_path` (``s3://`` -> ``s3a://``, the Hadoop
connector). A table is a path, a URI of a store :mod:`.fs` reaches, or a catalog table whose
location is one of those.
"""
from __future__ import annotations

import contextvars
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .errors import SieveError
from .files import (
    HIVE_NULL,  # noqa: F401 - re-exported (spark.schema, callers)
    ReadConf,
    data_dirs,
    open_parquet,
    read_spark_column,
    resolve_columns,
    skipped_dir,
    skipped_file,
)
from .files import partition_values as _partition_values
from .fs import (
    is_catalog_name,
    is_dir,
    is_local,
    normalize,
    open_input,
    read_bytes,
    resolve,
    scheme_of,
    store_error,
)
from .keys import KeyType


@dataclass(frozen=True)
class TableRef:
    """A resolved table: ``kind`` is "path" or "catalog"; ``root`` an absolute local directory or a URI."""

    kind: str
    name: str
    root: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(slots=True)
class FileEntry:
    """One data file of a table (a location of the index)."""

    path: str
    size: int
    mtime_ns: int
    partition: dict[str, str] = field(default_factory=dict)
    num_rows: int | None = None
    footer: int | None = None  # checksum of the Parquet footer (:func:`footer_checksum`), when recorded

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def same_version(self, other: FileEntry) -> bool:
        """Same path and same (size, mtime): the file was not rewritten."""
        return self.path == other.path and self.size == other.size and self.mtime_ns == other.mtime_ns


def table_path(path_or_uri: str) -> str:
    """The location of a path or URI as the index spells it (:func:`.fs.normalize`).

    An absolute local path for a path or ``file:`` URI, else ``scheme://bucket/key`` (``s3a://`` and
    ``s3n://`` become ``s3://``; URIs are percent-decoded, as Hadoop writes them). An unknown scheme
    raises SieveError naming the supported ones.
    """
    return normalize(path_or_uri)


local_path = table_path  # the former name (local paths only); kept for callers and tests


def spark_path(path: str) -> str:
    """The path Spark reads a location by: local paths as they are, ``s3://`` as ``s3a://``."""
    if path.startswith("s3://"):
        return "s3a://" + path[len("s3://"):]
    return path


def resolve_table(table: str, spark: Any = None) -> TableRef:
    """Resolve a path/URI (no Spark needed) or a catalog name (needs ``spark``).

    A bare name (``sales``) that is a folder of the working directory is that folder, as
    ``spark.read.parquet("sales")`` reads it, unless ``spark``'s catalog has a table of that name.
    """
    if not is_catalog_name(table) or (os.path.isdir(table) and not _in_catalog(spark, table)):
        return TableRef("path", table, table_path(table))
    if spark is None:
        raise SieveError(f"{table!r} looks like a catalog table name: pass a SparkSession to resolve its "
                         "location, or pass the table's directory path / an explicit index_path")
    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
    except Exception as exc:  # AnalysisException etc.
        raise SieveError(f"catalog table {table!r} cannot be described ({str(exc).splitlines()[0]}): "
                         "check the name and the current database") from exc
    info = {str(r[0]).strip(): str(r[1]).strip() for r in rows if r[0]}
    provider = info.get("Provider", "").lower()
    if provider and provider not in ("parquet", "hive") or info.get("Type") == "VIEW":
        raise SieveError(f"catalog table {table!r} is {provider or info.get('Type')}, not Parquet: "
                         "Sieve indexes Parquet tables only")
    location = info.get("Location")
    if not location:
        raise SieveError(f"catalog table {table!r} has no Location: Sieve needs a file-based Parquet table")
    return TableRef("catalog", table, table_path(location))


def _in_catalog(spark: Any, name: str) -> bool:
    if spark is None:
        return False
    try:
        return bool(spark.catalog.tableExists(name))
    except Exception:  # noqa: BLE001 - a name the catalog cannot parse is no table of it
        return False


def partition_values(relative_dir: str) -> dict[str, str]:
    """Partition values of a folder below the table root (``day=2024-01-01/shop=7``), as Spark parses
    them (:func:`.files.partition_values`: unescaped as Spark unescapes, every value a string, a NULL
    keeps Spark's ``__HIVE_DEFAULT_PARTITION__`` name)."""
    return _partition_values(relative_dir)


def list_table_files(table: str | TableRef, spark: Any = None) -> list[FileEntry]:
    """The data files ``spark.read.parquet(root)`` reads, sorted by path, without Spark for paths.

    Spark's rules (:mod:`.files`): no suffix is required; names starting with ``.`` or, unless they
    hold a ``=``, with ``_`` are skipped (also the default index folder ``_sieve``), and so are empty
    files; an unpartitioned table is the files directly under its root, a partitioned one the files in
    its partition folders (:func:`.files.data_dirs`, which raises SieveError where Spark's partition
    discovery fails). A local root is walked with ``os.scandir`` and one ``stat`` per file
    (:func:`_list_local`); an object store is listed through :mod:`pyarrow.fs` (one recursive
    selector: sizes and mtimes come with it, :mod:`.fs`). A missing root lists as no files; an
    unreachable store raises :class:`.fs.StoreError`.
    """
    ref = table if isinstance(table, TableRef) else resolve_table(table, spark)
    local = _local_root(ref)
    if local is not None:
        out = _list_local(local)
    else:
        filesystem, inner = resolve(ref.root)
        out = _list_selector(filesystem, inner, ref.root)
    out.sort(key=_path_of)
    return out


def _list_selector(filesystem: pafs.FileSystem, inner: str, root: str) -> list[FileEntry]:
    """:func:`list_table_files` through one recursive :class:`pyarrow.fs.FileSelector` (object stores)."""
    local = is_local(root)
    try:
        if local and filesystem.get_file_info(inner).type != pafs.FileType.Directory:
            return []
        infos = filesystem.get_file_info(pafs.FileSelector(inner, recursive=True, allow_not_found=True))
    except FileNotFoundError:  # the root vanished while listing
        return []
    except OSError as exc:
        raise store_error(root, exc) from exc
    inner = inner.rstrip("/")
    prefix = inner + "/"
    cut = len(prefix)
    out: list[FileEntry] = []
    # Every stale-safe lookup lists the table: per file only string slicing and one FileEntry; the
    # checks and partition values of a directory are worked out once for all its files.
    dirs: dict[str, bool] = {"": True}  # folder -> not hidden
    by_dir: dict[str, list[FileEntry]] = {}
    # None sizes are directories; empty files are no data for Spark.
    for full, size, mtime in [(i.path, i.size, i.mtime_ns) for i in infos]:
        if not size:
            continue
        rel = full[cut:] if full.startswith(prefix) or not local else os.path.relpath(full, inner).replace(os.sep, "/")
        slash = rel.rfind("/")
        if slash < 0:
            rel_dir, name = "", rel
        else:
            rel_dir, name = rel[:slash], rel[slash + 1:]
        if not name or skipped_file(name):
            continue
        visible = dirs.get(rel_dir)
        if visible is None:
            visible = dirs[rel_dir] = not any(skipped_dir(p) for p in rel_dir.split("/") if p)
        if visible:
            by_dir.setdefault(rel_dir, []).append(FileEntry(full if local else f"{root}/{rel}", size, mtime or 0))
    for rel_dir, part in data_dirs(by_dir).items():
        for entry in by_dir[rel_dir]:
            entry.partition = part
            out.append(entry)
    return out


def _path_of(f: FileEntry) -> str:
    return f.path


_Row = TypeVar("_Row")
_DIR_FD = os.stat in os.supports_dir_fd and os.scandir in os.supports_fd  # POSIX


def _local_root(ref: TableRef) -> str | None:
    """The folder a local table is walked from (:func:`_walk_local`); None on an object store (or
    a platform without ``dir_fd``), which is listed through :mod:`pyarrow.fs`."""
    if not (is_local(ref.root) and _DIR_FD):
        return None
    return resolve(ref.root)[1].rstrip("/") or "/"


def _walk_local(root: str) -> Iterator[tuple[str, str, int, list[str]]]:
    """(folder path, folder relative to ``root``, the folder's open descriptor, its data file names)
    for every folder below a local root that holds data files; ``os.scandir`` gives names and kinds
    without a system call per entry. Vanished folders are skipped. Symbolic links are followed, and a
    folder reached twice (a link back up the tree) is walked once."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    pending = [(root, "")]
    seen: set[tuple[int, int]] = set()
    while pending:
        path, rel_dir = pending.pop()
        try:
            fd = os.open(path, flags)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            raise store_error(path, exc) from exc
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            names = []
            with os.scandir(fd) as it:
                for e in it:
                    name = e.name
                    try:
                        if e.is_dir():
                            if not skipped_dir(name):  # hidden, as Spark skips them (also the index folder)
                                pending.append((f"{path}/{name}", f"{rel_dir}/{name}" if rel_dir else name))
                        elif not skipped_file(name):
                            names.append(name)
                    except OSError:  # vanished
                        continue
            if names:
                yield path, rel_dir, fd, names
        finally:
            os.close(fd)


def _list_local(root: str) -> list[FileEntry]:
    """:func:`list_table_files` of a local root (unsorted).

    Syncs and maintenance checks run it (a lookup compares :func:`list_table_versions`, the same
    walk without partition values), so it does the least the kernel allows: names and kinds from
    ``os.scandir``, and one ``stat`` per data file relative to its folder's descriptor (no path walk
    from ``/``). A file that vanishes meanwhile is not listed; a root that is missing or not a
    directory lists as no files.
    """
    by_dir: dict[str, list[FileEntry]] = {}
    for path, rel_dir, fd, names in _walk_local(root):
        by_dir[rel_dir] = _stat_rows(path, fd, names, partial(_entry_row, {}))
    out: list[FileEntry] = []
    for rel_dir, part in data_dirs(d for d, rows in by_dir.items() if rows).items():
        for entry in by_dir[rel_dir]:
            entry.partition = part
            out.append(entry)
    return out


def _stat_rows(path: str, fd: int, names: list[str], row: Callable[[str, os.stat_result], _Row | None]) -> list[_Row]:
    """``row(full path, stat)`` of each file of one folder (open as ``fd``) that still exists; each
    stat is dropped once its row is made (holding them all costs more than the calls); a None row is
    left out."""
    out = []
    stat = os.stat
    prefix = path + "/"
    for name in names:
        try:
            st = stat(name, dir_fd=fd)
        except FileNotFoundError:
            continue
        got = row(prefix + name, st)
        if got is not None:
            out.append(got)
    return out


def _entry_row(part: dict[str, str], path: str, st: os.stat_result) -> FileEntry | None:
    return FileEntry(path, st.st_size, st.st_mtime_ns, part) if st.st_size else None  # empty: no data


def _version_row(path: str, st: os.stat_result) -> tuple[str, int, int]:
    return path, st.st_size, st.st_mtime_ns


def list_table_versions(table: str | TableRef, spark: Any = None) -> list[tuple[str, int, int]]:
    """(path, size, mtime_ns) of every file :func:`list_table_files` lists, unsorted and without
    partition values: what a stale-safe lookup compares with the index version."""
    ref = table if isinstance(table, TableRef) else resolve_table(table, spark)
    root = _local_root(ref)
    if root is None:
        return [(f.path, f.size, f.mtime_ns) for f in list_table_files(ref)]
    by_dir: dict[str, list[tuple[str, int, int]]] = {}
    for path, rel_dir, fd, names in _walk_local(root):
        by_dir[rel_dir] = _stat_rows(path, fd, names, _version_row)
    out: list[tuple[str, int, int]] = []
    for rel_dir in data_dirs(d for d, rows in by_dir.items() if rows):
        out.extend(row for row in by_dir[rel_dir] if row[1])
    return out


def list_local_names(table: TableRef) -> tuple[str, list[str]] | None:
    """(root + "/", the data files' paths relative to it) of a local table, unsorted, without a stat
    per file and without joining each name to the root; None on an object store."""
    root = _local_root(table)
    if root is None:
        return None
    by_dir = {rel_dir: names for _, rel_dir, _, names in _walk_local(root)}
    out: list[str] = []
    for rel_dir in data_dirs(by_dir):
        if rel_dir:
            out.extend([f"{rel_dir}/{name}" for name in by_dir[rel_dir]])
        else:
            out.extend(by_dir[rel_dir])
    return (root if root.endswith("/") else root + "/"), out


def list_table_paths(table: str | TableRef, spark: Any = None) -> list[str]:
    """The paths :func:`list_table_files` lists, without a ``stat`` per file on a local file system
    (the folders' entries only: about a fifth of the cost); unsorted. An object store's listing
    carries sizes anyway, so there it is :func:`list_table_files`. Without a stat, an empty (0-byte)
    file is listed too: readers skip it, as Spark does."""
    ref = table if isinstance(table, TableRef) else resolve_table(table, spark)
    local = list_local_names(ref)
    if local is None:
        return [f.path for f in list_table_files(ref)]
    base, names = local
    return [base + name for name in names]


def root_exists(root: str) -> bool | None:
    """True: a directory (a prefix with objects on a store); False: missing; None: a file, not a folder."""
    if is_dir(root):
        return True
    return None if is_local(root) and os.path.exists(root) else False


def read_schema(path: str) -> pa.Schema:
    """The Arrow schema of one Parquet file (footer only), local or on a store."""
    return open_parquet(open_input(path)).schema_arrow


def spark_uri(path: str) -> str:
    """The string Spark's ``input_file_name()`` gives for a file (Hadoop Path.toUri form).

    ``file://`` + the encoded path for a local file; ``s3a://bucket/key`` (encoded) for ``s3://``,
    ``scheme://`` + the encoded rest for other stores.
    """
    scheme = scheme_of(path)
    prefix, body = (spark_path(f"{scheme}://"), path.split("://", 1)[1]) if scheme else ("file://", path)
    safe = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!~*'(),;:$&+=/@")
    out = []
    for ch in body:
        if ch in safe or ord(ch) > 127:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
    return prefix + "".join(out)


def num_rows(path: str) -> int | None:
    """Row count from the Parquet footer (None if unreadable)."""
    try:
        return pq.ParquetFile(open_input(path)).metadata.num_rows
    except Exception:  # noqa: BLE001 - an unreadable footer only loses the row count
        return None


ROW_COUNT_THREADS = 8  # footers read at once for their row counts (a build's engine choice and partitions)


def footer_rows(files: list[FileEntry]) -> None:
    """Set every file's row count from its Parquet footer (read in a few threads: it is I/O)."""
    if not files:
        return
    # Each read runs in a copy of this context: the caller's storage options (a context variable) hold.
    ctx = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=min(ROW_COUNT_THREADS, len(files))) as pool:
        for f, n in zip(files, pool.map(lambda p: ctx.copy().run(num_rows, p), [f.path for f in files])):
            f.num_rows = n


class NoFooterStatistics(Exception):
    """A row group holding values of the column records no min/max statistics (its values must be read)."""


def footer_min_max(pf: Any, column: str, bounds: Callable[[Any], tuple[Any, Any]]) -> tuple[Any, Any] | None:
    """The smallest and largest value of one column of a Parquet file from its footer's statistics (no
    data read): ``bounds(statistics)`` maps one row group's statistics to its (min, max), which are
    then compared (a mapping that keeps order gives the file's). The column is matched by Spark's
    case rule. None when no row group holds a non-NULL value, or the file lacks the column (only
    NULLs); :class:`NoFooterStatistics` when a row group with values records no min/max. (Sieve keys
    are no floating-point type, so no statistic is NaN.)"""
    md = pf.metadata
    column = resolve_columns([column], pf.schema_arrow.names).get(column, column)  # Spark's case rule
    leaf = next((i for i in range(md.num_columns) if md.schema.column(i).path == column), None)
    if leaf is None:
        return None
    low: Any = None
    high: Any = None
    for rg in range(md.num_row_groups):
        chunk = md.row_group(rg).column(leaf)
        st = chunk.statistics if chunk.is_stats_set else None
        if st is not None and st.has_null_count and st.null_count >= chunk.num_values:
            continue  # only NULLs
        if st is None or not st.has_min_max:
            raise NoFooterStatistics(column)
        lo, hi = bounds(st)
        low = lo if low is None else min(low, lo)
        high = hi if high is None else max(high, hi)
    return None if low is None or high is None else (low, high)


FOOTER_TAIL = 64 * 1024  # bytes read from a file's end at once: most footers fit, so one read per file
FOOTER_THREADS = 16  # footers read at once (I/O: a store's latency, not CPU)


def footer_checksum(path: str) -> int:
    """A 62-bit checksum (BLAKE2b) of a Parquet file's footer: its ``FileMetaData`` (schema, row
    groups, every column chunk's offsets, sizes, encodings and statistics, the writer's key-value
    metadata) with the file's size, read from the end of the file (one read on a local disk, one or two
    ranged GETs on a store). A rewrite changes it unless it keeps the row layout, every column
    chunk's byte size and every statistic (``freshness="footer"``). A file that is no Parquet file
    is checksummed over its last bytes. FileNotFoundError when the file is gone."""
    size, body = _local_footer(path) if is_local(path) else _store_footer(path)
    h = hashlib.blake2b(body, digest_size=8)
    h.update(size.to_bytes(8, "little"))
    return int.from_bytes(h.digest(), "little") >> 2  # 62 bits: + 1 (0 = none) stays an int64 in the file table


def _local_footer(path: str) -> tuple[int, bytes]:
    """(size, footer bytes) of a local file (one read, two for a footer over :data:`FOOTER_TAIL`)."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        fh.seek(max(0, size - FOOTER_TAIL))
        tail = fh.read(FOOTER_TAIL)
        body = _footer_of(tail, size)
        if body is None:  # a footer longer than the tail read
            n = int.from_bytes(tail[-8:-4], "little") + 8
            fh.seek(size - n)
            body = fh.read(n)
    return size, body


def _store_footer(path: str) -> tuple[int, bytes]:
    """(size, footer bytes) of a file on a store (:mod:`.fs`), the same bytes as :func:`_local_footer`."""
    got = _store_tail(path)
    size, tail = int.from_bytes(got[:8], "little"), got[8:]
    body = _footer_of(tail, size)
    if body is None:
        n = int.from_bytes(tail[-8:-4], "little") + 8
        body = read_bytes(path, size - n, n)
    return size, body


def _store_tail(path: str) -> bytes:
    """The size of a file on a store (8 bytes, little-endian) and its last :data:`FOOTER_TAIL` bytes."""
    filesystem, inner = resolve(path)
    try:
        with filesystem.open_input_file(inner) as fh:
            size = fh.size()
            start = max(0, size - FOOTER_TAIL)
            return size.to_bytes(8, "little") + fh.read_at(size - start, start)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise store_error(path, exc) from exc


def _footer_of(tail: bytes, size: int) -> bytes | None:
    """The footer (metadata, its length and the magic) from a file's last bytes; None when the footer
    is longer than ``tail``; ``tail`` itself when the file does not end like a Parquet file."""
    if len(tail) < 8 or tail[-4:] not in (b"PAR1", b"PARE"):
        return tail
    n = int.from_bytes(tail[-8:-4], "little") + 8
    if n > size:
        return tail
    return tail[-n:] if n <= len(tail) else None


def stamp_footers(files: Iterable[FileEntry]) -> None:
    """Set every file's :attr:`FileEntry.footer` (read in a few threads: it is I/O); a file gone
    meanwhile gets None (a lookup then treats it as rewritten; a sync no longer lists it)."""
    files = list(files)
    if not files:
        return
    ctx = contextvars.copy_context()  # each read in a copy: the caller's storage options hold

    def one(path: str) -> int | None:
        try:
            return ctx.copy().run(footer_checksum, path)
        except FileNotFoundError:
            return None

    with ThreadPoolExecutor(max_workers=min(FOOTER_THREADS, len(files))) as pool:
        for f, sum_ in zip(files, pool.map(one, [f.path for f in files])):
            f.footer = sum_


def read_file_keys(
    path: str, column: str, key_type: KeyType, conf: ReadConf | None = None
) -> tuple[np.ndarray, int, int]:
    """Sorted unique keys, NULL count and row count of one Parquet file (pyarrow, one column), the
    column's values as Spark reads them (:func:`.files.read_spark_column`: the name matched under
    ``spark.sql.caseSensitive``, INT96 in microseconds, legacy dates and timestamps rebased; ``conf``
    default: :func:`.files.current_conf`, the session's settings inside a build or sync)."""
    pf = open_parquet(open_input(path))
    col = read_spark_column(pf, column, conf)
    if col is None:
        # Schema evolution: a file without the column holds only NULLs for it.
        n = pf.metadata.num_rows
        return np.empty(0, np.int64), n, n
    keys, nulls = key_type.keys_of_arrow(col)
    return keys, nulls, pf.metadata.num_rows
