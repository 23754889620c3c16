"""IndexStore: one index folder with every structure's files, its versions, commits and pruning."""
from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow.fs as pafs

from ..errors import CommitConflict, IndexUnavailable
from ..fs import StoreError, put_if_absent
from .deltas import DeltaFiles
from .files import FileTableFiles
from .folder import FileRef, _fsync_dir, _link_if_absent
from .fuse import FuseFiles
from .hashed import HashedFiles
from .manifest import _MANIFEST_RE, Manifest, now_iso
from .segments import SegmentFiles, SegmentList, segment_files

ORPHAN_GRACE_SECONDS = 3600.0


class IndexStore(FileTableFiles, SegmentFiles, DeltaFiles, HashedFiles, FuseFiles):
    """Reads and writes the files of one index folder (a local path or an object-store URI)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self._refs: dict[int, frozenset[str]] = {}  # version -> the files it references (see _remember)

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
        self._remember(version, manifest)
        if files:
            manifest.files = self.read_file_table(manifest.file_table, manifest.table.root)
        return manifest

    def verify(self, manifest: Manifest, hashed_pages: bool = True) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Read and checksum every file of a version, as a reader would (raises IndexUnavailable).

        Segments: size, CRC and container of each one, one read per pack (pages are zlib streams
        with their own check, inflated when used). Hashed structures: every page's checksum, or with
        ``hashed_pages=False`` (a sync: its cost then does not grow with the index) each one's header
        and last page only. Returns the decoded deltas by file name (read anyway; callers that need
        them need not read them again)."""
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
        for href in manifest.hashed:  # every page's checksum (or the header and last page)
            self.check_hashed(href, hashed_pages)
        if manifest.fuse is not None:  # every segment's CRC (or the header and last segment)
            self.check_fuse(manifest.fuse, hashed_pages)
        return {ref.name: self.read_delta(ref) for ref in manifest.deltas}


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
        self._remember(version, manifest)
        try:
            self.prune(manifest.keep_versions)
        except OSError:  # the commit stands; old versions are pruned by the next writer
            pass
        return version

    def _publish_local(self, version: int, data: bytes) -> bool:
        """The manifest written to a temporary file, synced to disk with the version's other new
        files (one parallel batch, then the folder), then hard-linked to its name if that is free."""
        tmp = self._full(f".tmp-{self.manifest_name(version)}-{secrets.token_hex(6)}")
        try:
            with self.writing():
                with open(tmp, "wb") as fh:
                    fh.write(data)
                self._flush_written(tmp)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
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

    @contextlib.contextmanager
    def removing_new_folder_on_error(self) -> Iterator[None]:
        """On an error inside the block, remove this index folder (and an emptied ``_sieve`` parent) when
        the block created it and it holds nothing else: a failed first build leaves no folder that a
        reader could take for an index. Object stores have no folders: the block's own files are
        discarded by :meth:`discarding_on_error`."""
        created = self.local and not os.path.isdir(self.path)
        parent = os.path.dirname(os.path.normpath(self.path))
        parent_created = created and not os.path.isdir(parent)
        try:
            yield
        except BaseException:
            if created:
                self.discard_written()
                for folder in [self.path] + ([parent] if parent_created else []):
                    with contextlib.suppress(OSError):  # not empty (another writer's files): left alone
                        os.rmdir(folder)
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
                referenced |= self._references(v)
            except IndexUnavailable:
                return []  # do not delete anything while a kept version is unreadable
        for v in dropped:
            try:
                old_refs |= self._references(v)
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

    def _remember(self, version: int, m: Manifest) -> None:
        """Note which files version ``version`` references (a committed version never changes), so
        that pruning after a commit reads only the manifests this store has not seen. A snapshot,
        not the object: callers may change a manifest they loaded."""
        if m.packs is not None:  # older manifests name no packs: pruning decodes their segment list
            self._refs[version] = frozenset(m.referenced())

    def _references(self, version: int) -> frozenset[str]:
        """Every file version ``version`` references (raises IndexUnavailable if unreadable)."""
        refs = self._refs.get(version)
        if refs is None:
            m = self.load_manifest(version, files=False)
            refs = self._refs.get(version) or frozenset(m.referenced() | self._segment_files(m))
        return refs

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
