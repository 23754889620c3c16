"""Tables and their files: resolving a table name/path, listing Parquet files, reading keys.

Locations are files. A file is identified by its **absolute local path** (no scheme, no percent
encoding), e.g. ``/data/sales/day=2024-01-01/part-0000.parquet``; :meth:`SieveIndex.candidates`
returns exactly these strings, and Spark reads them as given. Tables must live on a local/POSIX
file system (a path, a ``file:`` URI, or a catalog table whose location is one of those).
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .errors import SieveError
from .keys import KeyType


@dataclass(frozen=True)
class TableRef:
    """A resolved table: ``kind`` is "path" or "catalog"; ``root`` an absolute local directory."""

    kind: str
    name: str
    root: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass
class FileEntry:
    """One data file of a table (a location of the index)."""

    path: str
    size: int
    mtime_ns: int
    partition: dict[str, str] = field(default_factory=dict)
    num_rows: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def same_version(self, other: FileEntry) -> bool:
        """Same path and same (size, mtime): the file was not rewritten."""
        return self.path == other.path and self.size == other.size and self.mtime_ns == other.mtime_ns


def is_catalog_name(table: str) -> bool:
    return "/" not in table and not table.startswith("file:")


def local_path(path_or_uri: str) -> str:
    """Absolute local path of a path or ``file:`` URI (percent-decoded for URIs)."""
    if path_or_uri.startswith("file:"):
        return os.path.abspath(unquote(urlparse(path_or_uri).path))
    if "://" in path_or_uri:
        raise SieveError(f"{path_or_uri!r}: only local/POSIX tables are supported (a path or a file: URI); "
                         "copy the table to a local or mounted file system")
    return os.path.abspath(path_or_uri)


def resolve_table(table: str, spark: Any = None) -> TableRef:
    """Resolve a path/URI (no Spark needed) or a catalog name (needs ``spark``)."""
    if not is_catalog_name(table):
        return TableRef("path", table, local_path(table))
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
    return TableRef("catalog", table, local_path(location))


HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def partition_values(relative_dir: str) -> dict[str, str]:
    """Hive partition values of a directory below the table root (``day=2024-01-01/shop=7``).

    Parsed by :class:`pyarrow.dataset.HivePartitioning` (URI-decoded, as Spark writes them); every
    value stays a string, and a NULL partition keeps Spark's ``__HIVE_DEFAULT_PARTITION__`` name.
    """
    names = [piece.split("=", 1)[0] for piece in relative_dir.split("/") if "=" in piece]
    if not names:
        return {}
    schema = pa.schema([(unquote(n), pa.string()) for n in dict.fromkeys(names)])
    expr = ds.HivePartitioning(schema, null_fallback=HIVE_NULL).parse(f"/{relative_dir}/")  # a trailing / or the last piece is taken for a file name
    keys = ds.get_partition_keys(expr)
    return {name: (HIVE_NULL if keys.get(name) is None else str(keys[name])) for name in schema.names}


def list_table_files(table: str | TableRef, spark: Any = None) -> list[FileEntry]:
    """All ``*.parquet`` data files under the table root, sorted by path, without Spark for paths.

    Listed through :mod:`pyarrow.fs` (one recursive selector: sizes and mtimes come with it).
    Directories and files whose names start with ``_`` or ``.`` are skipped (Spark does the same),
    which also skips the default index folder ``_sieve``. A missing root lists as no files.
    """
    ref = table if isinstance(table, TableRef) else resolve_table(table, spark)
    root = ref.root
    fs = pafs.LocalFileSystem()
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        return []
    try:
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    except FileNotFoundError:  # the root vanished while listing
        return []
    out: list[FileEntry] = []
    for info in infos:
        if info.type != pafs.FileType.File or not info.base_name.endswith(".parquet"):
            continue
        rel_dir, _, name = os.path.relpath(info.path, root).replace(os.sep, "/").rpartition("/")
        if any(piece.startswith(("_", ".")) for piece in [*rel_dir.split("/"), name] if piece):
            continue
        out.append(FileEntry(info.path, info.size, info.mtime_ns, partition_values(rel_dir) if rel_dir else {}))
    out.sort(key=lambda f: f.path)
    return out


def spark_uri(path: str) -> str:
    """The string Spark's ``input_file_name()`` gives for a local file (Hadoop Path.toUri form)."""
    safe = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!~*'(),;:$&+=/@")
    out = []
    for ch in path:
        if ch in safe or ord(ch) > 127:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
    return "file://" + "".join(out)


def num_rows(path: str) -> int | None:
    """Row count from the Parquet footer (None if unreadable)."""
    try:
        return pq.ParquetFile(path).metadata.num_rows
    except Exception:  # noqa: BLE001 - an unreadable footer only loses the row count
        return None


def read_file_keys(path: str, column: str, key_type: KeyType) -> tuple[np.ndarray, int, int]:
    """Sorted unique keys, NULL count and row count of one Parquet file (pyarrow, one column)."""
    pf = pq.ParquetFile(path)
    if column not in pf.schema_arrow.names:
        # Schema evolution: a file without the column holds only NULLs for it.
        n = pf.metadata.num_rows
        return np.empty(0, np.int64), n, n
    col = pf.read(columns=[column]).column(column)
    keys, nulls = key_type.keys_of_arrow(col)
    return keys, nulls, pf.metadata.num_rows
