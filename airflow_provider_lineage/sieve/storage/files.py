"""The file table of one version: the live data files by file id (binary, checksummed).

Formats (the file's magic names its version; both are read):

* ``SVF1``: ids, paths, sizes, mtimes, row counts, partition values.
* ``SVF2``: the same and a column of Parquet footer checksums (:func:`..table.footer_checksum`),
  written when the index records them (``build(..., freshness="footer")``), for
  ``freshness="footer"`` checks. An index without them keeps writing ``SVF1``, which older code reads.
"""
from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from ..codec import Reader, Writer, seal, unseal
from ..errors import IndexUnavailable
from ..fs import join, relative
from ..table import FileEntry
from .folder import FileRef, Folder

FILE_TABLE_V1 = b"SVF1"  # no footer checksums
FILE_TABLE_V2 = b"SVF2"  # with a footer checksum per file (0 = none recorded, else checksum + 1)


class FileTable(Mapping[int, FileEntry]):
    """The live files of one version by file id, as decoded columns; a :class:`FileEntry` is made
    (once) when an id is looked up, so a point lookup builds only its candidates' entries."""

    def __init__(self, ids: list[int], base: str, paths: list[bytes], sizes: list[int], mtimes: list[int],
                 rows: list[int], parts: list[dict[str, str]] | bytes, footers: list[int] | None = None) -> None:
        self._ids = ids
        self._footers = footers  # checksum + 1 per row (0: none), or None (an SVF1 table)
        self._pos_map: dict[int, int] | None = None
        self._base, self._paths, self._sizes, self._mtimes = base, paths, sizes, mtimes
        self._rows, self._parts_data = rows, parts
        self._made: dict[int, FileEntry] = {}
        self._columns: tuple[list[int], list[str], list[int], list[int]] | None = None
        self._relative_set: frozenset[str] | None = None
        self._version_set: frozenset[tuple[str, int, int]] | None = None

    @property
    def _pos(self) -> dict[int, int]:
        """File id -> row (built when first needed: a lookup on a fresh index may never ask)."""
        if self._pos_map is None:
            self._pos_map = {fid: i for i, fid in enumerate(self._ids)}
        return self._pos_map

    @property
    def _parts(self) -> list[dict[str, str]]:
        """Partition values per row (the JSON column is parsed when an entry is first made)."""
        if isinstance(self._parts_data, bytes):
            try:
                parts = json.loads(self._parts_data.decode())
            except ValueError:
                parts = None
            if not isinstance(parts, list) or len(parts) != len(self._ids):
                raise IndexUnavailable("file table has columns of different lengths (corrupt): rebuild the index")
            self._parts_data = parts
        return self._parts_data

    def __getitem__(self, fid: int) -> FileEntry:
        entry = self._made.get(fid)
        if entry is None:
            entry = self._made[fid] = self._entry(self._pos[fid])
        return entry

    def _entry(self, i: int) -> FileEntry:
        """A new entry of row ``i``."""
        r = self._rows[i]
        footer = None if self._footers is None or self._footers[i] == 0 else self._footers[i] - 1
        return FileEntry(self._base + self._paths[i].decode(), self._sizes[i], self._mtimes[i], self._parts[i],
                         None if r == 0 else r - 1, footer)

    @property
    def records_footers(self) -> bool:
        """True for a table written with footer checksums (``SVF2``)."""
        return self._footers is not None

    def footer_of(self, fid: int) -> int | None:
        """The recorded footer checksum of file ``fid`` (None: none recorded); no FileEntry made."""
        if self._footers is None:
            return None
        v = self._footers[self._pos[fid]]
        return None if v == 0 else v - 1

    def __contains__(self, fid: object) -> bool:
        return fid in self._pos

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def path(self, fid: int) -> str:
        """The absolute path of file ``fid`` (no :class:`FileEntry` made)."""
        if self._columns is not None:
            return self._columns[1][self._pos[fid]]
        return self._base + self._paths[self._pos[fid]].decode()

    @property
    def base(self) -> str:
        """The folder every path is relative to (the table root and a ``/``)."""
        return self._base

    def relative_set(self) -> frozenset[str]:
        """Every file's path relative to :attr:`base` (a names-only check compares with it)."""
        if self._relative_set is None:
            self._relative_set = frozenset(p.decode() for p in self._paths)
        return self._relative_set

    def version_set(self) -> frozenset[tuple[str, int, int]]:
        """Every file's (path, size, mtime_ns): an unchanged table lists exactly this set."""
        if self._version_set is None:
            _, paths, sizes, mtimes = self.columns()
            self._version_set = frozenset(zip(paths, sizes, mtimes))
        return self._version_set

    def columns(self) -> tuple[list[int], list[str], list[int], list[int]]:
        """(ids, absolute paths, sizes, mtimes) of every file, in one order, without FileEntry objects."""
        if self._columns is None:
            self._columns = (self._ids, [self._base + p.decode() for p in self._paths], self._sizes,
                             self._mtimes)
        return self._columns



class ChangedFiles(Mapping[int, FileEntry]):
    """A new version's live files: its base's files minus ``gone`` plus ``added`` (entries by new id).

    Made by a sync, which changes a few files of many: no entry of an unchanged file is made, and
    when the base is a :class:`FileTable` the file table is written from its decoded columns (see
    :meth:`FileTableFiles.write_file_table`). Added entries are the objects given (a sync sets their
    ``num_rows`` once it has read them)."""

    def __init__(self, base: Mapping[int, FileEntry], gone: Iterable[int], added: Mapping[int, FileEntry]) -> None:
        self.base = base
        self.gone = frozenset(fid for fid in gone if _has(base, fid))
        self.added = dict(added)
        clash = sorted(fid for fid in self.added if _has(base, fid) and fid not in self.gone)
        if clash:
            raise ValueError(f"file ids {clash[:5]} are live in the base version already")

    def __getitem__(self, fid: int) -> FileEntry:
        entry = self.added.get(fid)
        if entry is not None:
            return entry
        if fid in self.gone:
            raise KeyError(fid)
        return self.base[fid]  # KeyError if the base has no such file either

    def __contains__(self, fid: object) -> bool:
        return fid in self.added or (isinstance(fid, int) and _has(self.base, fid) and fid not in self.gone)

    def __iter__(self) -> Iterator[int]:
        gone = self.gone
        yield from (fid for fid in self.base if fid not in gone)
        yield from self.added

    def __len__(self) -> int:
        return len(self.base) - len(self.gone) + len(self.added)


class FileTableFiles(Folder):
    """Writes and reads ``files-<token>.svf``."""

    def write_file_table(self, files: Mapping[int, FileEntry], root: str) -> FileRef:
        """The live files of one version, column by column (ids, paths, sizes, mtimes, rows)."""
        cols = _changed_columns(files, root) if isinstance(files, ChangedFiles) else None
        if cols is None:
            items = sorted(files.items())
            cols = _entry_columns([fid for fid, _ in items], [f for _, f in items], root)
        ids, paths, sizes, mtimes, rows, parts, footers = cols
        order = np.argsort(ids, kind="stable")
        if bool((order[1:] < order[:-1]).any()):
            if isinstance(parts, bytes):
                parts = json.loads(parts)
            ids, sizes, mtimes, rows = ids[order], sizes[order], mtimes[order], rows[order]
            footers = None if footers is None else footers[order]
            paths, parts = [paths[i] for i in order.tolist()], [parts[i] for i in order.tolist()]
        dm = np.diff(mtimes, prepend=np.int64(0))
        w = Writer()
        w.uvarint(len(ids))
        w.uints(np.diff(ids, prepend=np.int64(-1)) - 1)
        w.blob(b"\0".join(paths))
        w.uints(sizes)
        w.uints(((dm << 1) ^ (dm >> 63)).view(np.uint64))  # zigzag mtime deltas
        w.uints(rows)
        w.blob(parts if isinstance(parts, bytes) else json.dumps(parts, separators=(",", ":")).encode())
        if footers is None:
            return self._write("files", ".svf", seal(FILE_TABLE_V1, bytes(w.buf)), len(ids))
        w.uints(footers)
        return self._write("files", ".svf", seal(FILE_TABLE_V2, bytes(w.buf)), len(ids))

    def read_file_table(self, ref: FileRef, root: str) -> FileTable:
        raw = self._read_checked(ref)
        magic = FILE_TABLE_V2 if raw[:4] == FILE_TABLE_V2 else FILE_TABLE_V1
        r = Reader(unseal(magic, raw, self._full(ref.name)))
        n = r.uvarint()
        ids = np.cumsum(r.uints() + 1, dtype=np.int64) - 1
        blob = r.blob()
        paths = blob.split(b"\0") if n else []
        sizes = r.uints()
        z = r.uints().astype(np.uint64)
        mtimes = np.cumsum(((z >> np.uint64(1)) ^ (np.uint64(0) - (z & np.uint64(1)))).view(np.int64))
        rows = r.uints()
        parts = r.blob()  # partition values: JSON, parsed when an entry is first made
        footers = r.uints() if magic == FILE_TABLE_V2 else None
        if not len(ids) == len(paths) == len(sizes) == len(mtimes) == len(rows) == n or (
                footers is not None and len(footers) != n):
            raise IndexUnavailable(f"file table {ref.name} has columns of different lengths (corrupt): "
                                   "rebuild the index")
        return FileTable(ids.tolist(), join(root, ""), paths, sizes.tolist(), mtimes.tolist(), rows.tolist(), parts,
                         None if footers is None else footers.tolist())



# (ids, relative paths, sizes, mtimes, rows + 1 or 0, partitions: a list, or a JSON array's bytes,
#  footer checksums + 1 or 0, or None when no file has one: an SVF1 table)
_Columns = tuple[np.ndarray, list[bytes], np.ndarray, np.ndarray, np.ndarray, list[dict[str, str]] | bytes,
                 np.ndarray | None]


def _has(files: Mapping[int, FileEntry], fid: int) -> bool:
    """``fid in files``; in a :class:`FileTable` (ids sorted) without building its id map."""
    if isinstance(files, FileTable) and files._pos_map is None:
        i = bisect.bisect_left(files._ids, fid)
        return i < len(files._ids) and files._ids[i] == fid
    return fid in files


def _entry_columns(ids: list[int], entries: list[FileEntry], root: str) -> _Columns:
    """(ids, relative paths, sizes, mtimes, rows + 1 or 0, partitions, footers + 1 or 0 / None) of entries."""
    n = len(ids)
    footers = None
    if any(f.footer is not None for f in entries):
        footers = np.fromiter((0 if f.footer is None else f.footer + 1 for f in entries), np.int64, n)
    return (
        np.asarray(ids, np.int64).reshape(n),
        [relative(f.path, root).encode() for f in entries],
        np.fromiter((f.size for f in entries), np.int64, n),
        np.fromiter((f.mtime_ns for f in entries), np.int64, n),
        np.fromiter((0 if f.num_rows is None else f.num_rows + 1 for f in entries), np.int64, n),
        [f.partition for f in entries],
        footers,
    )


def _changed_columns(files: ChangedFiles, root: str) -> _Columns | None:
    """The columns of a sync's files from its base's decoded file table (None: the base is no
    :class:`FileTable` of this root, or an entry made from it no longer matches its row)."""
    base = files.base
    if not isinstance(base, FileTable) or base.base != join(root, ""):
        return None
    for fid, entry in base._made.items():  # entries are read, not changed; were one changed, write it
        if fid not in files.gone and entry != base._entry(base._pos[fid]):
            return None
    keep = [i for i, fid in enumerate(base._ids) if fid not in files.gone] if files.gone else None
    ids, paths, sizes = base._ids, base._paths, base._sizes
    mtimes, rows = base._mtimes, base._rows
    old_footers: list[int] = base._footers if base._footers is not None else [0] * len(ids)
    new = _entry_columns(list(files.added), list(files.added.values()), root)
    parts: list[dict[str, str]] | bytes
    if keep is not None:
        ids, paths, sizes = [ids[i] for i in keep], [paths[i] for i in keep], [sizes[i] for i in keep]
        mtimes, rows, parts = [mtimes[i] for i in keep], [rows[i] for i in keep], [base._parts[i] for i in keep]
        old_footers = [old_footers[i] for i in keep]
        parts = parts + list(new[5])
    else:  # nothing removed: the partition column's JSON as read, with the new rows appended (not parsed)
        parts = _append_json(base, list(new[5]))
    footers = None
    if base._footers is not None or new[6] is not None:  # an SVF2 table stays one (even when no file is left)
        added = new[6] if new[6] is not None else np.zeros(len(new[0]), np.int64)
        footers = np.concatenate([np.asarray(old_footers, np.int64), added])
    return (
        np.concatenate([np.asarray(ids, np.int64), new[0]]),
        list(paths) + new[1],
        np.concatenate([np.asarray(sizes, np.int64), new[2]]),
        np.concatenate([np.asarray(mtimes, np.int64), new[3]]),
        np.concatenate([np.asarray(rows, np.int64), new[4]]),
        parts,
        footers,
    )


def _append_json(base: FileTable, more: list[dict[str, str]]) -> list[dict[str, str]] | bytes:
    """``base``'s partition column with rows appended: its JSON array's bytes spliced unparsed, or
    (already parsed) a list."""
    column = base._parts_data
    if isinstance(column, bytes):
        body = column.strip()
        if body.startswith(b"[") and body.endswith(b"]"):  # as written; the table's checksum held
            if not more:
                return body
            tail = json.dumps(more, separators=(",", ":")).encode()
            return tail if body == b"[]" else body[:-1] + b"," + tail[1:]
    return list(base._parts) + more
