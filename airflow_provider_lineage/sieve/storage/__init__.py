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
    hkeys-<token>.svh         hashed-key structure (keys without order): hash fingerprints -> file
                              ids in pages, and each file's key range (one per build, one per sync)
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

One module per structure: :mod:`.folder` (the folder and its immutable files), :mod:`.files` (the
file table), :mod:`.segments` (segments, packs and the segment list), :mod:`.deltas` (merge-on-read
deltas), :mod:`.hashed` (hashed-key structures, for keys without order), :mod:`.fuse`
(retrieval structures for a hashed index's one-file keys), :mod:`.manifest` (the versioned manifest) and :mod:`.store`
(:class:`IndexStore`: all of them, commits and pruning). Everything public is importable from here.
"""
from __future__ import annotations

from .deltas import DeltaFiles
from .files import ChangedFiles, FileTable, FileTableFiles
from .folder import FileRef, Folder
from .fuse import FuseFiles, FuseRef
from .hashed import HashedFiles, HashedHeader, HashedRef, PageSink
from .manifest import (
    FUSE_VERSION,
    HASHED_VERSION,
    MANIFEST_FORMAT,
    MANIFEST_VERSION,
    READABLE_VERSIONS,
    Manifest,
    commit_attempts,
    default_index_path,
    now_iso,
)
from .segments import (
    MAX_SMALL_PACKS,
    META_INTS,
    PACK_BYTES,
    PAGE_TRIPLES,
    REPACK_MIN_LIVE,
    SMALL_PACK_BYTES,
    PagedSegment,
    SegmentFiles,
    SegmentList,
    SegmentMeta,
    segment_files,
    sets_by_segment,
)
from .store import ORPHAN_GRACE_SECONDS, IndexStore

__all__ = [
    "FUSE_VERSION",
    "HASHED_VERSION",
    "MANIFEST_FORMAT",
    "MANIFEST_VERSION",
    "MAX_SMALL_PACKS",
    "META_INTS",
    "ORPHAN_GRACE_SECONDS",
    "PACK_BYTES",
    "PAGE_TRIPLES",
    "READABLE_VERSIONS",
    "REPACK_MIN_LIVE",
    "SMALL_PACK_BYTES",
    "ChangedFiles",
    "DeltaFiles",
    "FileRef",
    "FileTable",
    "FileTableFiles",
    "Folder",
    "FuseFiles",
    "FuseRef",
    "HashedFiles",
    "HashedHeader",
    "HashedRef",
    "IndexStore",
    "Manifest",
    "PageSink",
    "PagedSegment",
    "SegmentFiles",
    "SegmentList",
    "SegmentMeta",
    "commit_attempts",
    "default_index_path",
    "now_iso",
    "segment_files",
    "sets_by_segment",
]
