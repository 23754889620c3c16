"""The file table of one version: the live data files by file id (binary, checksummed)."""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

import numpy as np

from ..codec import Reader, Writer, seal
from ..errors import IndexUnavailable
from ..fs import join, relative
from ..table import FileEntry
from .folder import FileRef, Folder


class FileTable(Mapping[int, FileEntry]):
    """The live files of one version by file id, as decoded columns; a :class:`FileEntry` is made
    (once) when an id is looked up, so a point lookup builds only its candidates' entries."""

    def __init__(self, ids: list[int], base: str, paths: list[bytes], sizes: list[int], mtimes: list[int],
                 rows: list[int], parts: list[dict[str, str]] | bytes) -> None:
        self._ids = ids
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
            i = self._pos[fid]
            r = self._rows[i]
            entry = FileEntry(self._base + self._paths[i].decode(), self._sizes[i], self._mtimes[i],
                              self._parts[i], None if r == 0 else r - 1)
            self._made[fid] = entry
        return entry

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



class FileTableFiles(Folder):
    """Writes and reads ``files-<token>.svf``."""

    def write_file_table(self, files: Mapping[int, FileEntry], root: str) -> FileRef:
        """The live files of one version, column by column (ids, paths, sizes, mtimes, rows)."""
        items = sorted(files.items())
        ids = np.fromiter((fid for fid, _ in items), np.int64, len(items))
        mtimes = np.fromiter((f.mtime_ns for _, f in items), np.int64, len(items))
        dm = np.diff(mtimes, prepend=np.int64(0))
        w = Writer()
        w.uvarint(len(items))
        w.uints(np.diff(ids, prepend=np.int64(-1)) - 1)
        w.blob(b"\0".join(relative(f.path, root).encode() for _, f in items))
        w.uints(np.fromiter((f.size for _, f in items), np.int64, len(items)))
        w.uints(((dm << 1) ^ (dm >> 63)).view(np.uint64))  # zigzag mtime deltas
        w.uints(np.fromiter((0 if f.num_rows is None else f.num_rows + 1 for _, f in items), np.int64,
                            len(items)))
        w.blob(json.dumps([f.partition for _, f in items], separators=(",", ":")).encode())
        return self._write("files", ".svf", seal(b"SVF1", bytes(w.buf)), len(items))

    def read_file_table(self, ref: FileRef, root: str) -> FileTable:
        r = Reader(self._read(ref, b"SVF1"))
        n = r.uvarint()
        ids = np.cumsum(r.uints() + 1, dtype=np.int64) - 1
        blob = r.blob()
        paths = blob.split(b"\0") if n else []
        sizes = r.uints()
        z = r.uints().astype(np.uint64)
        mtimes = np.cumsum(((z >> np.uint64(1)) ^ (np.uint64(0) - (z & np.uint64(1)))).view(np.int64))
        rows = r.uints()
        parts = r.blob()  # partition values: JSON, parsed when an entry is first made
        if not len(ids) == len(paths) == len(sizes) == len(mtimes) == len(rows) == n:
            raise IndexUnavailable(f"file table {ref.name} has columns of different lengths (corrupt): "
                                   "rebuild the index")
        return FileTable(ids.tolist(), join(root, ""), paths, sizes.tolist(), mtimes.tolist(), rows.tolist(), parts)

