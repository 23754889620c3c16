"""The index folder itself: reading, writing and deleting its immutable files, on a local path
or an object store, fsync and put-if-absent helpers. Every structure's store builds on :class:`Folder`."""
from __future__ import annotations

import contextlib
import os
import secrets
import time
import zlib
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow.fs as pafs

from ..codec import unseal
from ..errors import IndexNotWritable, IndexUnavailable
from ..fs import check_commit_supported, is_local, join, normalize, read_bytes, resolve, store_error


@dataclass(frozen=True)
class FileRef:
    """A checksummed index file, or (segments) the byte range ``[offset, offset + bytes)`` of a pack."""

    name: str
    bytes: int
    crc32: int
    records: int = 0
    offset: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))  # flat fields of plain values: asdict's deep copy is not needed



class Folder:
    """One index folder (a local path or an object-store URI) and the files this writer wrote."""

    def __init__(self, path: str) -> None:
        self.path = normalize(path)
        self.local = is_local(self.path)
        self._prefix = join(self.path, "")
        self.written: list[str] = []  # files this writer created (removed on a lost commit)

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
        try:
            return read_bytes(self._full(name))
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise store_error(self._full(name), exc) from exc

    def _read_range(self, name: str, offset: int, length: int) -> bytes:
        """``length`` bytes of one file from ``offset`` (one ranged GET on an object store); a missing
        or unreadable file is :class:`IndexUnavailable`. May return fewer bytes (a truncated file)."""
        try:
            if self.local:
                with open(self._full(name), "rb") as fh:
                    fh.seek(offset)
                    return fh.read(length)
            return read_bytes(self._full(name), offset, length)
        except OSError as exc:
            raise IndexUnavailable(f"index file {self._full(name)} is missing or unreadable ({exc}): "
                                   "rebuild the index") from exc

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


    # ---- immutable files ---------------------------------------------------------------------
    def _write(self, prefix: str, suffix: str, data: bytes | Iterable[bytes], records: int = 0) -> FileRef:
        """A new file of ``data``, or of ``data``'s parts one after another (streamed: never joined)."""
        name = f"{prefix}-{secrets.token_hex(8)}{suffix}"
        with self.writing():
            size, crc = self._put(name, data)
        self.written.append(name)
        return FileRef(name, size, crc, records)

    def _put(self, name: str, parts: bytes | Iterable[bytes]) -> tuple[int, int]:
        """Write a new file (bytes, or parts streamed one after another) so that it appears whole or
        not at all (temp + rename; one upload remotely): its size and CRC-32."""
        if isinstance(parts, bytes | bytearray | memoryview):
            parts = [parts]
        size = crc = 0
        if not self.local:
            filesystem, inner = self._remote(name)
            try:
                with filesystem.open_output_stream(inner) as out:
                    for part in parts:
                        out.write(part)
                        size, crc = size + len(part), zlib.crc32(part, crc)
            except BaseException:  # closing the stream may have completed a partial object: remove it
                with contextlib.suppress(OSError):
                    self._delete(name)
                raise
            return size, crc
        tmp = self._full(f".tmp-{name}")
        os.makedirs(self.path, exist_ok=True)
        try:
            with open(tmp, "wb") as fh:
                for part in parts:
                    fh.write(part)
                    size, crc = size + len(part), zlib.crc32(part, crc)
            os.replace(tmp, self._full(name))  # flushed to disk before the manifest names it (_flush_written)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return size, crc

    def _flush_written(self, *also: str) -> None:
        """fsync every file written since the last commit (and the paths ``also``), a few at a time,
        then the folder: a published manifest only names files that are on disk (one sync per file,
        in parallel)."""
        paths = [self._full(n) for n in self.written] + list(also)
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
