"""On-disk layout of one index (one table, one column) and its atomic, versioned commits.

Folder (default ``<table_root>/_sieve/<column>/``)::

    manifest-00000007.json    versioned manifest (JSON + crc32 of its canonical body)
    files-<token>.svf         the live data files (id, relative path, size, mtime, partition,
                              rows) of one version (binary, checksummed; named by the manifest)
    segments-<token>.svl      sorted segment list: per segment key range, blocks, budget, file,
                              crc, location set and full files (binary, checksummed)
    seg-<token>.svs           segment pack: the segments one writer wrote, back to back, each
                              one self-contained ((block, file id, counter) triples in pages) and
                              named in the list by (pack, offset, length, crc)
    delta-<token>.svd         merge-on-read deltas: sorted (key, file id) records
    .tmp-*                    in-flight writes (ignored; a crash leaves only these)

Every data file is immutable and named by a random token; a commit publishes manifest N+1 by
put-if-absent (:func:`.fs.put_if_absent`): on a local/mounted folder a hard link of a fully written
temp file to ``manifest-{N+1}.json`` (the link fails if the name exists: rename-if-absent), on S3 a
``PutObject`` with ``If-None-Match: *``, on GCS an upload with ``if_generation_match=0``; stores
without a conditional create refuse to commit (:class:`.fs.UnsafeCommit`). So of two writers
racing from base N exactly one wins, and a crash at any point leaves version N intact. After a
commit the last ``keep_versions`` manifests are kept and files no kept manifest references are
deleted (files no manifest references at all only after an hour: another writer's in-flight files).

The folder may be a local path or an object-store URI (``s3://bucket/table/_sieve/col``); on an
object store data files are written with one PUT each (an object appears whole or not at all), so
no temp names are needed there.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import json
import os
import re
import secrets
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np
import pyarrow.fs as pafs
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from .codec import ZLIB_LEVEL, Reader, Writer, inflate, seal, seal_raw, unseal, unseal_raw
from .errors import CommitConflict, IndexNotWritable, IndexUnavailable
from .fs import (
    StoreError,
    check_commit_supported,
    is_local,
    join,
    normalize,
    put_if_absent,
    relative,
    resolve,
    store_error,
)
from .keys import KeyType
from .model import Segment, block_span
from .table import FileEntry, TableRef

MANIFEST_FORMAT = "sieve-manifest"
MANIFEST_VERSION = 6  # 2: the file dictionary lives in a files-*.svf file; 3: segments keep holes;
# 4: paged segment files, a columnar segment list; 5: segments packed into shared files; 6: the
# segment list records each segment's full files (SVL6)
READABLE_VERSIONS = (5, 6)  # a v5 index reads as one without full files (and a sync writes v6)
_MANIFEST_RE = re.compile(r"^manifest-(\d{8})\.json$")
ORPHAN_GRACE_SECONDS = 3600.0
PACK_BYTES = 8 << 20  # a segment pack is written out when it reaches this size
REPACK_MIN_LIVE = 0.5  # updates copy the live segments out of packs with less live data than this
SMALL_PACK_BYTES = 256 << 10  # ... and merge the packs under this size once there are more than
MAX_SMALL_PACKS = 16  # this many (each update writes one small pack: the file count stays bounded)


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


@dataclass(frozen=True)
class FileRef:
    """A checksummed index file, or (segments) the byte range ``[offset, offset + bytes)`` of a pack."""

    name: str
    bytes: int
    crc32: int
    records: int = 0
    offset: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SegmentMeta:
    """One entry of the sorted segment list."""

    s_min: int
    s_max: int
    b_size: int
    b_count: int
    budget: int  # s.E = e * b_count
    used: int  # s.e: extra false positives taken by updates since the segment was formed
    n_keys: int
    file: FileRef
    locations: np.ndarray  # sorted unique file ids present in the segment (uint32), full ones included
    # Files holding *every* key of [s_min, s_max] (sorted uint32), recorded here instead of in the
    # segment's blocks: a sync adds such a file without rewriting the segment (see sync.py). Every
    # key of the range that a lookup asks for is in each of them: they answer any overlapping key.
    full: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint32))


@dataclass
class Manifest:
    """Everything one index version consists of (JSON, checksummed)."""

    version: int
    created: str
    table: TableRef
    column: str
    key_type: KeyType
    mode: str
    error_bound: int
    max_segment_keys: int
    gap_factor: float
    keep_versions: int
    files: Mapping[int, FileEntry]  # live files by file id (paths relative to table root on disk)
    next_file_id: int
    null_files: list[int]
    segment_list: FileRef | None
    deltas: list[FileRef] = field(default_factory=list)
    dead_files: list[int] = field(default_factory=list)  # removed, maybe still inside segments (mor)
    schema_json: str | None = None
    build_stats: dict[str, Any] = field(default_factory=dict)
    file_table: FileRef | None = None  # set by IndexStore.commit / load_manifest
    packs: list[str] | None = None  # the segment packs the segment list names (set by IndexStore.commit)

    def to_json(self) -> str:
        if self.file_table is None:
            raise ValueError("write the file table first (IndexStore.commit does)")
        body = {
            "format": MANIFEST_FORMAT, "format_version": MANIFEST_VERSION, "version": self.version,
            "created": self.created, "table": self.table.to_dict(), "column": self.column,
            "key_type": self.key_type.to_dict(), "mode": self.mode, "error_bound": self.error_bound,
            "max_segment_keys": self.max_segment_keys, "gap_factor": self.gap_factor,
            "keep_versions": self.keep_versions, "next_file_id": self.next_file_id,
            "file_table": self.file_table.to_dict(),
            "null_files": sorted(self.null_files),
            "segment_list": self.segment_list.to_dict() if self.segment_list else None,
            "deltas": [d.to_dict() for d in self.deltas], "dead_files": sorted(self.dead_files),
            "schema": self.schema_json, "build_stats": self.build_stats,
        }
        if self.packs is not None:
            body["packs"] = sorted(self.packs)
        canon = json.dumps(body, sort_keys=True, separators=(",", ":"))
        body["checksum"] = zlib.crc32(canon.encode())
        return json.dumps(body, sort_keys=True, indent=1)

    @classmethod
    def from_json(cls, text: str, what: str) -> Manifest:
        try:
            body = json.loads(text)
            crc = body.pop("checksum")
        except (ValueError, KeyError, AttributeError) as exc:
            raise IndexUnavailable(f"{what} is not a valid manifest ({exc}): rebuild the index") from exc
        canon = json.dumps(body, sort_keys=True, separators=(",", ":"))
        if zlib.crc32(canon.encode()) != crc:
            raise IndexUnavailable(f"{what} failed its checksum (corrupt): rebuild the index")
        if body.get("format") != MANIFEST_FORMAT or body.get("format_version") not in READABLE_VERSIONS:
            raise IndexUnavailable(f"{what} has format {body.get('format')} v{body.get('format_version')}; "
                                   f"this code reads {MANIFEST_FORMAT} v{READABLE_VERSIONS[0]} to "
                                   f"v{MANIFEST_VERSION}: rebuild the index")
        table = TableRef(**body["table"])
        return cls(
            version=body["version"], created=body["created"], table=table, column=body["column"],
            key_type=KeyType.from_dict(body["key_type"]), mode=body["mode"],
            error_bound=body["error_bound"], max_segment_keys=body["max_segment_keys"],
            gap_factor=body["gap_factor"], keep_versions=body["keep_versions"], files={},
            next_file_id=body["next_file_id"], null_files=list(body["null_files"]),
            segment_list=FileRef(**body["segment_list"]) if body["segment_list"] else None,
            deltas=[FileRef(**d) for d in body["deltas"]], dead_files=list(body["dead_files"]),
            schema_json=body.get("schema"), build_stats=body.get("build_stats", {}),
            file_table=FileRef(**body["file_table"]), packs=body.get("packs"),
        )

    def referenced(self) -> set[str]:
        names = {d.name for d in self.deltas}
        if self.file_table:
            names.add(self.file_table.name)
        if self.segment_list:
            names.add(self.segment_list.name)
        return names | set(self.packs or ())


COMMIT_ATTEMPTS = 5


def commit_attempts(what: str, path: str, attempts: int = COMMIT_ATTEMPTS) -> Retrying:
    """The attempts of one read-modify-commit cycle that a concurrent writer may win.

    Use as ``for attempt in commit_attempts(...): with attempt: <load base, write, commit>``: a
    :class:`CommitConflict` inside starts the cycle again on the new base after a short random
    back-off (so two losers do not collide again); when every attempt lost, one CommitConflict
    names ``what``, the folder and the fix.
    """

    def give_up(state: Any) -> None:
        raise CommitConflict(f"{what} lost {attempts} commit races at {path}: another writer keeps updating "
                             "the index; retry later, or do not run two maintainers of one index at once")

    return Retrying(retry=retry_if_exception_type(CommitConflict), stop=stop_after_attempt(attempts),
                    wait=wait_random_exponential(multiplier=0.05, max=1.0), retry_error_callback=give_up)


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def default_index_path(root: str, column: str) -> str:
    return join(normalize(root), "_sieve", column)


class IndexStore:
    """Reads and writes the files of one index folder (a local path or an object-store URI)."""

    def __init__(self, path: str) -> None:
        self.path = normalize(path)
        self.local = is_local(self.path)
        self._prefix = join(self.path, "")
        self._pack_cache: dict[str, bytes] = {}  # whole packs read by preload_packs (one update)
        self.written: list[str] = []  # files this writer created (removed on a lost commit)
        self._pack = bytearray()  # segments written since the last flush (one pack file)
        self._pack_name: str | None = None
        self._lists: dict[tuple[str, int], Sequence[SegmentMeta]] = {}  # segment lists read or written here

    # ---- the folder: local (os) or an object store (pyarrow.fs) ---------------------------------
    def _full(self, name: str) -> str:
        return self._prefix + name  # join(self.path, name) for a plain file name, without its cost

    def _remote(self, name: str | None = None) -> tuple[Any, str]:
        filesystem, inner = resolve(self.path)
        return filesystem, (inner if name is None else f"{inner.rstrip('/')}/{name}")

    def _listing(self) -> dict[str, float]:
        """Names in the folder -> modification time (epoch seconds); a missing folder lists empty."""
        if self.local:
            try:
                names = os.listdir(self.path)
            except FileNotFoundError:
                return {}
            out: dict[str, float] = {}
            for n in names:
                try:
                    out[n] = os.stat(os.path.join(self.path, n)).st_mtime
                except FileNotFoundError:
                    continue
            return out
        filesystem, inner = self._remote()
        try:
            infos = filesystem.get_file_info(pafs.FileSelector(inner, allow_not_found=True))
        except OSError as exc:
            raise store_error(self.path, exc) from exc
        return {i.base_name: (i.mtime.timestamp() if i.mtime else time.time())
                for i in infos if i.type == pafs.FileType.File}

    def _read_bytes(self, name: str) -> bytes:
        """The bytes of one file; FileNotFoundError when it is missing, OSError when unreadable."""
        if self.local:
            with open(self._full(name), "rb") as fh:
                return fh.read()
        filesystem, inner = self._remote(name)
        try:
            with filesystem.open_input_stream(inner) as fh:
                return fh.read()
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise store_error(self._full(name), exc) from exc

    def _delete(self, name: str) -> None:
        """Delete one file (already gone is fine)."""
        if self.local:
            _unlink(self._full(name))
            return
        filesystem, inner = self._remote(name)
        try:
            filesystem.delete_file(inner)
        except FileNotFoundError:
            pass

    # ---- versions ----------------------------------------------------------------------------
    def versions(self) -> list[int]:
        if self.local:  # names only: no stat per segment file on every open
            try:
                names: Any = os.listdir(self.path)
            except FileNotFoundError:
                names = []
        else:
            names = self._listing()
        return sorted(int(m.group(1)) for n in names if (m := _MANIFEST_RE.match(n)))

    def latest_version(self) -> int | None:
        v = self.versions()
        return v[-1] if v else None

    def manifest_name(self, version: int) -> str:
        return f"manifest-{version:08d}.json"

    def load_manifest(self, version: int | None = None, *, files: bool = True) -> Manifest:
        """A committed version (the latest by default); ``files=False`` leaves its file table unread
        (``files`` empty): enough to know which index files the version references."""
        if version is None:
            try:
                version = self.latest_version()
            except StoreError as exc:  # an unreachable store: readers fall back to a full read
                raise IndexUnavailable(str(exc)) from exc
            if version is None:
                raise IndexUnavailable(f"no Sieve index at {self.path}: build one (sieve build)")
        name = self._full(self.manifest_name(version))
        try:
            text = self._read_bytes(self.manifest_name(version)).decode("utf-8")
        except FileNotFoundError as exc:
            raise IndexUnavailable(f"index version {version} vanished from {self.path} (pruned by a "
                                   "concurrent writer?): open the index again") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise IndexUnavailable(f"cannot read {name} ({exc}): rebuild the index") from exc
        manifest = Manifest.from_json(text, name)
        assert manifest.file_table is not None
        if files:
            manifest.files = self.read_file_table(manifest.file_table, manifest.table.root)
        return manifest

    # ---- writability --------------------------------------------------------------------------
    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Turn an OS error while writing the folder into IndexNotWritable (names folder and fix)."""
        try:
            yield
        except (FileExistsError, FileNotFoundError):
            raise
        except OSError as exc:
            raise IndexNotWritable(
                f"cannot write the Sieve index folder {self.path} ({exc.strerror or exc}): make it writable, "
                "or pass index_path= (CLI: --index-path) to a writable folder") from exc

    def check_writable(self) -> None:
        """Create the folder and a probe file (before any expensive work); raises IndexNotWritable.

        On an object store the probe is one small object, written and deleted; a store without a
        conditional create raises :class:`.fs.UnsafeCommit` here, before any work.
        """
        probe = f".tmp-probe-{secrets.token_hex(6)}"
        if not self.local:
            check_commit_supported(self.path)
            with self.writing():
                self._put(probe, b"")
                self._delete(probe)
            return
        with self.writing():
            os.makedirs(self.path, exist_ok=True)
            with open(self._full(probe), "wb"):
                pass
            os.unlink(self._full(probe))

    def verify(self, manifest: Manifest) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Read and checksum every file of a version, as a reader would (raises IndexUnavailable).

        Segments: size, CRC and container of each one, one read per pack (pages are zlib streams
        with their own check, inflated when used). Returns the decoded deltas by file name (read
        anyway; callers that need them need not read them again)."""
        by_pack: dict[str, list[FileRef]] = {}
        for ref in segment_files(self.segment_list(manifest.segment_list)):
            by_pack.setdefault(ref.name, []).append(ref)
        for name, refs in by_pack.items():  # one read per pack
            try:
                data = self._read_bytes(name)
            except OSError as exc:
                raise IndexUnavailable(f"index file {self._full(name)} is missing or unreadable ({exc}): "
                                       "rebuild the index") from exc
            for ref in refs:
                self._checked(ref, data[ref.offset:ref.offset + ref.bytes])
        return {ref.name: self.read_delta(ref) for ref in manifest.deltas}

    # ---- immutable files ---------------------------------------------------------------------
    def _write(self, prefix: str, suffix: str, data: bytes, records: int = 0) -> FileRef:
        name = f"{prefix}-{secrets.token_hex(8)}{suffix}"
        with self.writing():
            self._put(name, data)
        self.written.append(name)
        return FileRef(name, len(data), zlib.crc32(data), records)

    def _put(self, name: str, data: bytes) -> None:
        """Write a new file so that it appears whole or not at all (temp + rename; one PUT remotely)."""
        if not self.local:
            filesystem, inner = self._remote(name)
            with filesystem.open_output_stream(inner) as out:
                out.write(data)
            return
        tmp = self._full(f".tmp-{name}")
        os.makedirs(self.path, exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, self._full(name))  # flushed to disk before the manifest names it (_flush_written)

    def _flush_written(self) -> None:
        """fsync every file written since the last commit, a few at a time, then the folder: a
        published manifest only names files that are on disk (one sync per file, in parallel)."""
        paths = [self._full(n) for n in self.written]
        if len(paths) == 1:
            _fsync_file(paths[0])
        elif paths:
            list(_fsync_pool().map(_fsync_file, paths))
        _fsync_dir(self.path)

    def _read(self, ref: FileRef, magic: bytes) -> bytes:
        return unseal(magic, self._read_checked(ref), self._full(ref.name))

    def _read_checked(self, ref: FileRef) -> bytes:
        """The bytes of an index file, matched against the size and CRC its manifest recorded."""
        full = self._full(ref.name)
        try:
            data = self._read_bytes(ref.name)
        except OSError as exc:
            raise IndexUnavailable(f"index file {full} is missing or unreadable ({exc}): rebuild the index")
        if len(data) != ref.bytes or zlib.crc32(data) != ref.crc32:
            raise IndexUnavailable(f"index file {full} does not match its manifest checksum (corrupt): "
                                   "rebuild the index")
        return data

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

    def write_segment(self, seg: Segment) -> FileRef:
        """Append one segment (format 5) to the open pack; returns its byte range in the pack.

        A segment is a zlib header, then pages of whole blocks, each compressed alone.

        Header: key range, block width and count, key count, the holes (runs of absent keys: gaps
        between holes and lengths) and the page table (first block, compressed length and triple
        count of every page). A page holds the (block, file id, counter) triples of consecutive
        blocks, about :data:`PAGE_TRIPLES` of them, sorted by (block, file id), as three byte-plane
        columns: block deltas from the page's first block, file id deltas within a block (the raw
        id at a block's first triple), counters. A point lookup inflates one page.
        """
        blk = seg.blk.astype(np.int64)
        fid = seg.fid.astype(np.int64)
        cuts = _page_cuts(blk)
        pages: list[bytes] = []
        firsts: list[int] = []
        triples: list[int] = []
        for a, b in itertools.pairwise(cuts):
            pb, pf = blk[a:b], fid[a:b]
            first = np.ones(len(pb), bool)
            first[1:] = pb[1:] != pb[:-1]
            w = Writer()
            w.uints(_deltas(pb, int(pb[0])))
            w.uints(np.where(first, pf, _deltas(pf, 0)))
            w.uints(seg.cnt[a:b])
            pages.append(zlib.compress(bytes(w.buf), ZLIB_LEVEL))
            firsts.append(int(pb[0]))
            triples.append(b - a)
        h = Writer()
        h.svarint(seg.s_min)
        for v in (seg.s_max - seg.s_min, seg.b_size, seg.b_count, seg.n_keys):
            h.uvarint(v)
        ends = seg.hole_at + seg.hole_len
        h.uints(seg.hole_at - np.concatenate([[0], ends[:-1]]).astype(np.int64) if len(ends) else seg.hole_at)
        h.uints(seg.hole_len)
        h.uints(_deltas(np.asarray(firsts, np.int64), 0))
        h.uints(np.asarray([len(x) for x in pages], np.int64))
        h.uints(np.asarray(triples, np.int64))
        out = Writer()
        out.blob(zlib.compress(bytes(h.buf), ZLIB_LEVEL))
        return self._add_to_pack(seal_raw(b"SVS4", bytes(out.buf) + b"".join(pages)))

    def read_segment(self, ref: FileRef) -> Segment:
        """The whole segment (every page decoded): for updates."""
        return self.open_segment(ref).whole()

    def open_segment(self, ref: FileRef) -> PagedSegment:
        """The segment's header, checksum verified; pages are inflated when a lookup needs them."""
        return self._segment_from(ref, self.segment_bytes(ref))

    def _segment_from(self, ref: FileRef, data: bytes) -> PagedSegment:
        return PagedSegment(self._checked(ref, data), f"{self._full(ref.name)}@{ref.offset}")

    def _checked(self, ref: FileRef, data: bytes) -> memoryview:
        """A segment's payload after checking its size and CRC (segment list) and container."""
        where = f"{self._full(ref.name)}@{ref.offset}"
        if len(data) != ref.bytes or zlib.crc32(data) != ref.crc32:
            raise IndexUnavailable(f"segment {where} does not match its checksum in the segment list "
                                   "(corrupt or truncated): rebuild the index")
        return unseal_raw(b"SVS4", data, where)

    def segment_bytes(self, ref: FileRef) -> bytes:
        """The stored bytes of one segment: its range of a pack (one ranged read), unchecked."""
        if ref.name == self._pack_name:  # written by this writer, not flushed yet
            return bytes(self._pack[ref.offset:ref.offset + ref.bytes])
        cached = self._pack_cache.get(ref.name)
        if cached is not None:
            return cached[ref.offset:ref.offset + ref.bytes]
        try:
            if self.local:
                with open(self._full(ref.name), "rb") as fh:
                    fh.seek(ref.offset)
                    return fh.read(ref.bytes)
            filesystem, inner = self._remote(ref.name)
            with filesystem.open_input_file(inner) as fh:
                return fh.read_at(ref.bytes, ref.offset)
        except OSError as exc:
            raise IndexUnavailable(f"index file {self._full(ref.name)} is missing or unreadable ({exc}): "
                                   "rebuild the index") from exc

    @contextlib.contextmanager
    def packs_in_memory(self, names: Iterable[str], limit: int = PACK_BYTES * 4) -> Iterator[None]:
        """Inside the block, segments of these packs are cut from one read of each pack (an update
        that rewrites most segments), up to ``limit`` bytes of packs; forgotten after the block."""
        try:
            total = 0
            for name in dict.fromkeys(names):
                with contextlib.suppress(OSError):  # unreadable: segment_bytes reports it
                    data = self._read_bytes(name)
                    total += len(data)
                    if total > limit:
                        break
                    self._pack_cache[name] = data
            yield
        finally:
            self._pack_cache.clear()

    def _add_to_pack(self, data: bytes) -> FileRef:
        """Append one sealed segment to the open pack (flushed at :data:`PACK_BYTES` and on commit)."""
        if self._pack_name is None:
            self._pack_name = f"seg-{secrets.token_hex(8)}.svs"
        ref = FileRef(self._pack_name, len(data), zlib.crc32(data), 0, len(self._pack))
        self._pack += data
        if len(self._pack) >= PACK_BYTES:
            self.flush_pack()
        return ref

    def flush_pack(self) -> None:
        """Write the open pack (one file; one PUT on an object store)."""
        if self._pack_name is None:
            return
        name, data = self._pack_name, bytes(self._pack)
        self._pack_name, self._pack = None, bytearray()
        with self.writing():
            self._put(name, data)
        self.written.append(name)

    def repack(self, metas: Sequence[SegmentMeta], min_live: float = REPACK_MIN_LIVE) -> Sequence[SegmentMeta]:
        """Copy the live segments of some packs into the open pack, byte for byte, so that those
        packs can be pruned: packs that are mostly dead (live bytes < ``min_live`` of the pack), so
        an index takes at most about ``1 / min_live`` times its live bytes however many updates
        rewrote parts of it; and all small packs once there are more than :data:`MAX_SMALL_PACKS`
        (every update writes one), so the number of files stays bounded too."""
        live: dict[str, int] = {}
        for ref in segment_files(metas):
            live[ref.name] = live.get(ref.name, 0) + ref.bytes
        sizes = self._sizes([n for n in live if n != self._pack_name])
        sparse = {n for n, size in sizes.items() if live[n] < min_live * size}
        small = {n for n, size in sizes.items() if size < SMALL_PACK_BYTES}
        if len(small) > MAX_SMALL_PACKS:
            sparse |= small
        if not sparse:
            return metas
        out = []
        for m in metas:
            if m.file.name in sparse:
                data = self.segment_bytes(m.file)
                self._checked(m.file, data)  # never copy a corrupt segment
                m = SegmentMeta(**{**vars(m), "file": self._add_to_pack(data)})
            out.append(m)
        return out

    def _sizes(self, names: list[str]) -> dict[str, int]:
        """Sizes of some files of the folder (missing ones left out)."""
        if not names:
            return {}
        if self.local:
            out = {}
            for n in names:
                with contextlib.suppress(FileNotFoundError):
                    out[n] = os.path.getsize(self._full(n))
            return out
        filesystem, inner = self._remote()
        infos = filesystem.get_file_info(pafs.FileSelector(inner, allow_not_found=True))
        wanted = set(names)
        return {i.base_name: i.size or 0 for i in infos if i.base_name in wanted}

    def write_segment_list(self, metas: Sequence[SegmentMeta]) -> FileRef:
        """Segment list (SVL6), column by column so that opening an index decodes it vectorised:
        key ranges (ascending), the integer fields (with each segment's byte range in its pack), the
        pack names, then every location set and every set of full files as file id deltas
        (restarting at each segment) with the sets' lengths."""
        w = Writer()
        w.uvarint(len(metas))
        metas = SegmentList.of(metas)
        s_min, s_max, ints, names = metas.s_min, metas.s_max, metas.ints, metas.names
        lens = np.diff(np.asarray(metas.bounds, np.int64))
        flat = np.asarray(metas.locs, np.int64)
        full_lens, full_flat = metas.full_columns()
        w.keys(_key_column(list(s_min)))
        w.keys(_key_column(list(s_max)))
        for column in ints:
            _big_uints(w, list(column))
        w.blob("\n".join(names).encode())
        for set_lens, set_flat in ((lens, flat), (full_lens, full_flat)):
            w.uints(set_lens)
            w.uints(_set_deltas(set_lens, set_flat))
        ref = self._write("segments", ".svl", seal(b"SVL6", bytes(w.buf)), len(metas))
        self._lists[(ref.name, ref.crc32)] = metas
        return ref

    def read_segment_list(self, ref: FileRef | None) -> list[SegmentMeta]:
        """The segment list (decoded once per store: the file is immutable; callers get their own list)."""
        return list(self.segment_list(ref))

    def segment_list(self, ref: FileRef | None) -> Sequence[SegmentMeta]:
        """The segment list as stored (read-only; entries built on access), decoded once per store."""
        if ref is None:
            return []
        known = self._lists.get((ref.name, ref.crc32))
        if known is not None:
            return known
        raw = self._read_checked(ref)
        magic = b"SVL5" if raw[:4] == b"SVL5" else b"SVL6"  # SVL5 (format 5): no full files
        data = unseal(magic, raw, self._full(ref.name))
        try:
            metas = _decode_segment_list(data, full=magic == b"SVL6")
        except (IndexError, ValueError, UnicodeDecodeError) as exc:
            raise IndexUnavailable(f"segment list {ref.name} is truncated (corrupt): rebuild the index") from exc
        self._lists[(ref.name, ref.crc32)] = metas
        return metas

    def write_delta(self, keys: np.ndarray, fids: np.ndarray) -> FileRef:
        """Merge-on-read delta: records (key, file id) sorted by key."""
        order = np.argsort(keys, kind="stable")
        k = keys[order]
        w = Writer()
        if k.dtype != object and len(k) and int(k[-1]) - int(k[0]) < 1 << 62:
            w.buf.append(0)  # byte planes of the key gaps: compact, and fast to compress
            w.svarint(int(k[0]))
            w.uints(np.diff(k.astype(np.int64)))
        else:
            w.buf.append(1)
            w.keys(k)
        w.uints(np.asarray(fids, np.int64)[order])
        return self._write("delta", ".svd", seal(b"SVD2", bytes(w.buf)), len(keys))

    def read_delta(self, ref: FileRef) -> tuple[np.ndarray, np.ndarray]:
        r = Reader(self._read(ref, b"SVD2"))
        flag = r.buf[r.pos]
        r.pos += 1
        if flag == 0:
            first = r.svarint()
            gaps = r.uints().astype(np.int64)
            keys = np.empty(len(gaps) + 1, np.int64)
            keys[0] = first
            np.cumsum(gaps, out=keys[1:])
            keys[1:] += first
        else:
            keys = r.keys()
        fids = r.uints().astype(np.uint32)
        if len(fids) != len(keys):
            raise IndexUnavailable(f"delta {ref.name} has columns of different lengths (corrupt): rebuild the index")
        return keys, fids

    # ---- commit ------------------------------------------------------------------------------
    def commit(self, manifest: Manifest, base_version: int | None) -> int:
        """Publish ``manifest`` as version ``base_version + 1`` (1 if none), or raise CommitConflict.

        Put-if-absent of the complete manifest (a hard link of a temp file locally, a conditional
        PUT on S3/GCS) is atomic and fails if the target exists, so two writers from the same base
        cannot both win, and readers never see a partial manifest.
        """
        version = (base_version or 0) + 1
        self.flush_pack()
        manifest.version = version
        manifest.created = now_iso()
        manifest.file_table = self.write_file_table(manifest.files, manifest.table.root)
        # The packs, named in the manifest: pruning then need not decode every kept segment list.
        listed = self.segment_list(manifest.segment_list)
        manifest.packs = sorted(set(listed.names) if isinstance(listed, SegmentList) else {m.file.name for m in listed})
        data = manifest.to_json().encode()
        if self.local:
            created = self._publish_local(version, data)
        else:
            with self.writing():
                created = put_if_absent(self._full(self.manifest_name(version)), data)
        if not created:
            self._delete(manifest.file_table.name)
            self.written.remove(manifest.file_table.name)
            raise CommitConflict(f"index version {version} at {self.path} was committed by another "
                                 "writer first: retry on the new version")
        self.written.clear()
        try:
            self.prune(manifest.keep_versions)
        except OSError:  # the commit stands; old versions are pruned by the next writer
            pass
        return version

    def _publish_local(self, version: int, data: bytes) -> bool:
        with self.writing():
            self._flush_written()
        tmp = self._full(f".tmp-{self.manifest_name(version)}-{secrets.token_hex(6)}")
        with self.writing(), open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            with self.writing():
                _link_if_absent(tmp, self._full(self.manifest_name(version)))
        except FileExistsError:
            return False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        _fsync_dir(self.path)
        return True

    @contextlib.contextmanager
    def discarding_on_error(self) -> Iterator[None]:
        """Delete the files written inside the block if it raises (a lost commit race or any error).

        The exception propagates; the previous index version is untouched either way.
        """
        try:
            yield
        except BaseException:
            self.discard_written()
            raise

    def discard_written(self) -> None:
        """Delete the files this writer created (after a lost commit) and drop its open pack."""
        self._pack_name, self._pack = None, bytearray()
        for name in self.written:
            try:
                self._delete(name)
            except OSError:  # gone already, or the folder turned read-only: nothing more to do
                pass
        self.written.clear()

    def prune(self, keep: int) -> list[str]:
        """Keep the newest ``keep`` manifests; delete files none of them references.

        Files no manifest references at all (left by crashed or losing writers) are deleted only
        when older than an hour, so a concurrent writer's not-yet-committed files survive.
        """
        versions = self.versions()
        keep = max(1, keep)
        dropped, kept = versions[:-keep], versions[-keep:]
        referenced: set[str] = set()
        old_refs: set[str] = set()
        for v in kept:  # the manifests name every file they reference: no file table is decoded
            try:
                m = self.load_manifest(v, files=False)
            except IndexUnavailable:
                return []  # do not delete anything while a kept version is unreadable
            referenced |= m.referenced() | self._segment_files(m)
        for v in dropped:
            try:
                m = self.load_manifest(v, files=False)
                old_refs |= m.referenced() | self._segment_files(m)
            except IndexUnavailable:
                pass
        removed: list[str] = []
        for v in dropped:
            self._delete(self.manifest_name(v))
            removed.append(self.manifest_name(v))
        now = time.time()
        for name, mtime in self._listing().items():
            if _MANIFEST_RE.match(name) or name in referenced:
                continue
            if name in old_refs or now - mtime > ORPHAN_GRACE_SECONDS:
                self._delete(name)
                removed.append(name)
        return removed

    def _segment_files(self, m: Manifest) -> set[str]:
        if m.packs is not None:
            return set(m.packs)
        try:
            return {ref.name for ref in segment_files(self.segment_list(m.segment_list))}
        except IndexUnavailable:
            return set()

    def total_bytes(self, m: Manifest) -> int:
        """Bytes of everything version ``m`` references (manifest included)."""
        names = m.referenced() | self._segment_files(m) | {self.manifest_name(m.version)}
        if not self.local:  # one listing instead of a request per file
            filesystem, inner = self._remote()
            infos = filesystem.get_file_info(pafs.FileSelector(inner, allow_not_found=True))
            return sum(i.size or 0 for i in infos if i.base_name in names)
        total = 0
        for n in names:
            try:
                total += os.path.getsize(self._full(n))
            except FileNotFoundError:
                pass
        return total


PAGE_TRIPLES = 2048  # triples per segment page (whole blocks: a page may hold more)


def _deltas(a: np.ndarray, before: int) -> np.ndarray:
    """``a[i] - a[i-1]`` with ``a[-1] = before`` (np.diff with prepend, without its overhead)."""
    out = np.empty(len(a), np.int64)
    if len(a):
        out[0] = a[0] - before
        np.subtract(a[1:], a[:-1], out=out[1:])
    return out


def _page_cuts(blk: np.ndarray, size: int = PAGE_TRIPLES) -> list[int]:
    """Triple offsets where pages start (at block boundaries, about ``size`` triples apart) + the end."""
    n = len(blk)
    if n == 0:
        return [0, 0]
    cuts = [0]
    while n - cuts[-1] > size:
        at = cuts[-1] + size
        at = int(np.searchsorted(blk, blk[at], "left"))  # back to the start of that block
        if at <= cuts[-1]:  # one block larger than a page: the page ends after it
            at = int(np.searchsorted(blk, blk[cuts[-1]], "right"))
            if at >= n:
                break
        cuts.append(at)
    cuts.append(n)
    return cuts


class PagedSegment:
    """A segment file's header with its pages inflated on demand (the query path).

    Answers :meth:`fids_for_range` like :meth:`.model.Segment.fids_for_range`, decoding only the
    pages that hold the blocks of the range; :meth:`whole` decodes every page.
    """

    def __init__(self, payload: memoryview, name: str) -> None:
        self.name = name
        try:
            r = Reader(payload)
            header = inflate(r.blob(), name)
            h = Reader(header)
            self.s_min = h.svarint()
            self.s_max = self.s_min + h.uvarint()
            self.b_size, self.b_count, self.n_keys = h.uvarint(), h.uvarint(), h.uvarint()
            hgap, hlen = h.uints().astype(np.int64), h.uints().astype(np.int64)
            firsts, lengths, triples = h.uints(), h.uints(), h.uints()
        except IndexError as exc:
            raise IndexUnavailable(f"segment {name} is truncated (corrupt): rebuild the index") from exc
        if len(hgap) != len(hlen) or not len(firsts) == len(lengths) == len(triples):
            raise IndexUnavailable(f"segment {name} has columns of different lengths (corrupt): rebuild the index")
        self.hole_len = hlen
        self.hole_at = np.cumsum(hgap + np.concatenate([[0], hlen[:-1]]).astype(np.int64)) if len(hgap) else hgap
        self.page_first = np.cumsum(firsts.astype(np.int64))
        ends = r.pos + np.cumsum(lengths.astype(np.int64))
        if len(ends) and int(ends[-1]) != len(payload):
            raise IndexUnavailable(f"segment {name} has a page table that does not match its size (corrupt): "
                                   "rebuild the index")
        self._bounds = np.concatenate([[r.pos], ends]).astype(np.int64).tolist()
        self._triples = triples.astype(np.int64).tolist()
        self._payload = payload
        self.pages_read = 0

    def page(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(block, file id, counter) triples of page ``i``."""
        r = Reader(inflate(self._payload[self._bounds[i]:self._bounds[i + 1]], self.name))
        try:
            dblk, dfid, cnt = r.uints(), r.uints(), r.uints()
        except IndexError as exc:
            raise IndexUnavailable(f"segment {self.name} has a truncated page (corrupt): rebuild the index") from exc
        n = self._triples[i]
        if not len(dblk) == len(dfid) == len(cnt) == n:
            raise IndexUnavailable(f"segment {self.name} has a page of the wrong length (corrupt): rebuild the index")
        self.pages_read += 1
        dfid = dfid.astype(np.int64)
        blk = int(self.page_first[i]) + np.cumsum(dblk, dtype=np.int64)
        first = np.ones(n, bool)
        first[1:] = blk[1:] != blk[:-1]
        run = np.cumsum(dfid, dtype=np.int64)
        # Restart the running sum at each block's first triple (segmented cumulative sum).
        starts = np.maximum.accumulate(np.where(first, np.arange(n), 0)) if n else blk
        fid = run - (run[starts] - dfid[starts]) if n else run
        return blk, fid, cnt

    def fids_for_range(self, lo: int, hi: int) -> np.ndarray:
        """File ids that may hold a key in [lo, hi] (see :meth:`.model.Segment.fids_for_range`)."""
        span = block_span(self, lo, hi)
        if span is None or not len(self.page_first):
            return np.empty(0, np.uint32)
        b0, b1 = span
        p0 = max(0, int(np.searchsorted(self.page_first, b0, "right")) - 1)
        p1 = max(0, int(np.searchsorted(self.page_first, b1, "right")) - 1)
        found = []
        for i in range(p0, p1 + 1):
            blk, fid, _ = self.page(i)
            found.append(fid[(blk >= b0) & (blk <= b1)])
        return np.unique(np.concatenate(found)).astype(np.uint32)

    def whole(self) -> Segment:
        parts = [self.page(i) for i in range(len(self._triples))]
        if parts:
            blk, fid, cnt = (np.concatenate([p[j] for p in parts]) for j in range(3))
        else:
            blk = fid = cnt = np.empty(0, np.int64)
        if len(blk) and (np.any(blk[1:] < blk[:-1]) or int(blk[-1]) >= self.b_count):
            raise IndexUnavailable(f"segment {self.name} has blocks out of order or range (corrupt): "
                                   "rebuild the index")
        return Segment(self.s_min, self.s_max, self.b_size, self.b_count, blk.astype(np.uint32),
                       fid.astype(np.uint32), cnt.astype(np.uint32), self.n_keys, self.hole_at, self.hole_len)


# The integer fields of a segment-list entry, in the order the list stores them.
META_INTS = tuple(attrgetter(name) for name in ("b_size", "b_count", "budget", "used", "n_keys", "file.bytes",
                                                 "file.crc32", "file.records", "file.offset"))


def _key_column(values: list[int]) -> np.ndarray:
    """Ascending keys as int64, or as Python ints when a delta would not fit (string keys)."""
    try:
        arr = np.asarray(values, np.int64)
        if len(arr) < 2 or int(arr[0]) >= -(1 << 62) and int(arr[-1]) < (1 << 62):
            return arr
    except OverflowError:
        pass
    return np.asarray(values, dtype=object)


def _big_uints(w: Writer, values: list[int]) -> None:
    """Non-negative integers: byte planes when they fit in 63 bits, else varints (flag byte first)."""
    if max(values, default=0) < (1 << 63):
        w.buf.append(0)
        w.uints(np.asarray(values, np.int64))
    else:
        w.buf.append(1)
        w.uvarint(len(values))
        for v in values:
            w.uvarint(v)


def _read_big_uints(r: Reader) -> list[int]:
    flag = r.buf[r.pos]
    r.pos += 1
    if flag == 0:
        return r.uints().tolist()
    return [r.uvarint() for _ in range(r.uvarint())]


def _set_columns(sets: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Sets of file ids as (lengths, concatenation), int64."""
    lens = np.fromiter((len(x) for x in sets), np.int64, len(sets))
    flat = np.concatenate(sets).astype(np.int64) if len(sets) else np.empty(0, np.int64)
    return lens, flat


def _set_deltas(lens: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """Concatenated sorted sets as deltas, each set restarting from 0."""
    deltas = _deltas(flat, 0)
    starts = (np.cumsum(lens) - lens)[lens > 0]
    deltas[starts] = flat[starts]
    return deltas


def _decode_segment_list(data: bytes, full: bool = True) -> SegmentList:
    """What :meth:`IndexStore.write_segment_list` wrote (every open reads it: a few numpy calls);
    ``full=False`` for a format-5 list (no full files)."""
    r = Reader(data)
    n = r.uvarint()
    s_min, s_max = r.keys().tolist(), r.keys().tolist()
    ints = [_read_big_uints(r) for _ in META_INTS]
    blob = r.blob().decode()
    names = blob.split("\n") if n else []
    lengths = r.uints().astype(np.int64)
    deltas = r.uints().astype(np.int64)
    full_lens = r.uints().astype(np.int64) if full else np.zeros(n, np.int64)
    full_deltas = r.uints().astype(np.int64) if full else np.empty(0, np.int64)
    if not (len(s_min) == len(s_max) == len(names) == len(lengths) == len(full_lens) == n
            and all(len(c) == n for c in ints)) \
            or int(lengths.sum()) != len(deltas) or int(full_lens.sum()) != len(full_deltas):
        raise IndexUnavailable("segment list has columns of different lengths (corrupt): rebuild the index")
    if n == 0:
        return SegmentList([], [], [[] for _ in META_INTS], [], np.empty(0, np.uint32), [0])
    # The location sets stay delta-coded until asked for: a point lookup needs one segment's set.
    full_sets = None
    if len(full_deltas):  # few segments have full files: decoded at once, kept by segment
        full_sets = sets_by_segment(full_lens, _running_sums(full_deltas, [0, *np.cumsum(full_lens).tolist()]))
    return SegmentList(s_min, s_max, ints, names, None, [0, *np.cumsum(lengths).tolist()], deltas, full_sets)


def sets_by_segment(lens: np.ndarray, flat: np.ndarray) -> dict[int, np.ndarray]:
    """{segment: its file ids (uint32)} for the segments with a non-empty set, from every set's
    length and their concatenation."""
    cuts = np.cumsum(lens)
    return {int(i): flat[cuts[i] - lens[i]:cuts[i]].astype(np.uint32) for i in np.flatnonzero(lens)}


def _running_sums(deltas: np.ndarray, bounds: Sequence[int]) -> np.ndarray:
    """Every segment's location set from its deltas, in one pass: running sums minus each
    segment's starting total."""
    lengths = np.diff(np.asarray(bounds, np.int64))
    run = np.cumsum(deltas, dtype=np.int64)
    starts = np.asarray(bounds[:-1], np.int64)
    before = np.where(starts > 0, run[np.maximum(starts - 1, 0)], 0) if len(deltas) else starts
    return (run - np.repeat(before, lengths)).astype(np.uint32)


_NO_FILES = np.empty(0, np.uint32)


def segment_files(metas: Sequence[SegmentMeta]) -> list[FileRef]:
    """Each segment's byte range in its pack (from the columns of a :class:`SegmentList`: no entry built)."""
    if isinstance(metas, SegmentList):
        return metas.files()
    return [m.file for m in metas]


class SegmentList(Sequence[SegmentMeta]):
    """A decoded segment list, column by column; an entry is built when asked for, so opening an
    index to answer one point lookup builds one :class:`SegmentMeta`, not hundreds."""

    def __init__(self, s_min: list[Any], s_max: list[Any], ints: Sequence[Sequence[int]], names: list[str],
                 locs: Sequence[int] | None, bounds: Sequence[int], deltas: np.ndarray | None = None,
                 full: dict[int, np.ndarray] | None = None) -> None:
        self.s_min, self.s_max = s_min, s_max  # ascending key ranges (lists: bisect works on them)
        # the integer fields in META_INTS order, the pack names, every location set concatenated
        # (or, as read, their deltas: see locs) and where each segment's set starts (bounds[i]:bounds[i + 1])
        self.ints, self.names, self.bounds = ints, names, bounds
        self._locs, self._deltas = locs, deltas
        self._full = full or {}  # segment -> its full files (a build has none)

    @classmethod
    def of(cls, metas: Sequence[SegmentMeta]) -> SegmentList:
        """The columns of some entries (in their order), or ``metas`` itself if it is a list of columns."""
        if isinstance(metas, SegmentList):
            return metas
        lens, flat = _set_columns([m.locations for m in metas])
        return cls([m.s_min for m in metas], [m.s_max for m in metas], [list(map(get, metas)) for get in META_INTS],
                   [m.file.name for m in metas], flat.astype(np.uint32), [0, *np.cumsum(lens).tolist()], None,
                   {i: m.full for i, m in enumerate(metas) if len(m.full)})

    def select(self, idx: Sequence[int]) -> SegmentList:
        """The segments ``idx`` (any order: the new list keeps it), column by column."""
        bounds = np.asarray(self.bounds, np.int64)
        pick = np.asarray(idx, np.int64)
        lens, starts = np.diff(bounds)[pick], bounds[:-1][pick]
        total = int(lens.sum())
        take = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(total, dtype=np.int64)
        order = pick.tolist()
        full = {j: self._full[i] for j, i in enumerate(order) if i in self._full} if self._full else {}
        get = (lambda col: [col[i] for i in order]) if len(order) < 2 else (lambda col: list(itemgetter(*order)(col)))
        return SegmentList(get(self.s_min), get(self.s_max), [get(col) for col in self.ints], get(self.names),
                           np.asarray(self.locs, np.uint32)[take], [0, *np.cumsum(lens).tolist()], None, full)

    def merged(self, other: SegmentList) -> SegmentList:
        """Both lists' segments, sorted by key range."""
        if not len(other):
            return self
        n = len(self)
        both = SegmentList(
            [*self.s_min, *other.s_min], [*self.s_max, *other.s_max],
            [[*a, *b] for a, b in zip(self.ints, other.ints, strict=True)], [*self.names, *other.names],
            np.concatenate([np.asarray(self.locs, np.uint32), np.asarray(other.locs, np.uint32)]),
            [*self.bounds, *(np.asarray(other.bounds[1:], np.int64) + int(self.bounds[-1])).tolist()], None,
            {**self._full, **{i + n: f for i, f in other._full.items()}})
        return both.select(sorted(range(len(both)), key=both.s_min.__getitem__))

    @property
    def locs(self) -> Sequence[int]:
        """Every location set, concatenated (decoded from the deltas on first use)."""
        if self._locs is None:
            self._locs = _running_sums(self._deltas, self.bounds)
        return self._locs

    def locations(self, i: int) -> np.ndarray:
        """Segment ``i``'s location set (sorted file ids)."""
        b0, b1 = self.bounds[i], self.bounds[i + 1]
        if self._locs is None:
            return np.cumsum(self._deltas[b0:b1], dtype=np.int64).astype(np.uint32)
        return np.asarray(self._locs[b0:b1], np.uint32)

    def full_sets(self) -> dict[int, np.ndarray]:
        """The segments that have full files -> those files (a copy of the mapping)."""
        return dict(self._full)

    def full(self, i: int) -> np.ndarray:
        """Segment ``i``'s full files (sorted file ids; usually none)."""
        return self._full.get(i, _NO_FILES)

    def full_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """Every segment's full files as (lengths, concatenation), int64."""
        lens = np.zeros(len(self), np.int64)
        if not self._full:
            return lens, np.empty(0, np.int64)
        segs = sorted(self._full)
        lens[segs] = [len(self._full[i]) for i in segs]
        return lens, np.concatenate([self._full[i] for i in segs]).astype(np.int64)

    def __len__(self) -> int:
        return len(self.s_min)

    def files(self) -> list[FileRef]:
        nbytes, crc, records, offsets = self.ints[-4:]
        return [FileRef(*x) for x in zip(self.names, nbytes, crc, records, offsets, strict=True)]

    def __iter__(self) -> Iterator[SegmentMeta]:
        """Every entry, the location sets decoded in one pass (what a sync walks)."""
        locs, bounds, full = np.asarray(self.locs, np.uint32), self.bounds, self._full
        for i, (lo, hi, b_size, b_count, budget, used, n_keys, nbytes, crc, records, offset, name) in enumerate(
                zip(self.s_min, self.s_max, *self.ints, self.names, strict=True)):
            yield SegmentMeta(lo, hi, b_size, b_count, budget, used, n_keys,
                              FileRef(name, nbytes, crc, records, offset), locs[bounds[i]:bounds[i + 1]],
                              full.get(i, _NO_FILES))

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self.s_min)
        if not 0 <= i < len(self.s_min):
            raise IndexError(i)
        b_size, b_count, budget, used, n_keys, nbytes, crc, records, offset = (c[i] for c in self.ints)
        return SegmentMeta(self.s_min[i], self.s_max[i], b_size, b_count, budget, used, n_keys,
                           FileRef(self.names[i], nbytes, crc, records, offset), self.locations(i), self.full(i))


def _link_if_absent(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except FileExistsError:
        raise
    except OSError:
        # File systems without hard links: exclusive create + copy (still fails if dst exists).
        with open(src, "rb") as fh:
            data = fh.read()
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())


FSYNC_THREADS = 8
_POOL: tuple[int, ThreadPoolExecutor] | None = None


def _fsync_pool() -> ThreadPoolExecutor:
    """One thread pool per process for fsyncs (starting threads costs more than three fsyncs of
    small files here); a forked child makes its own, as the parent's threads do not exist in it."""
    global _POOL
    if _POOL is None or _POOL[0] != os.getpid():
        _POOL = (os.getpid(), ThreadPoolExecutor(max_workers=FSYNC_THREADS, thread_name_prefix="sieve-fsync"))
    return _POOL[1]


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
