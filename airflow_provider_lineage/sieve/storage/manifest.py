"""The manifest of one index version (versioned JSON with its own checksum) and the commit loop."""
from __future__ import annotations

import datetime as dt
import json
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from ..errors import CommitConflict, IndexUnavailable
from ..fs import join, normalize
from ..keys import KeyType
from ..table import FileEntry, TableRef
from .folder import FileRef
from .fuse import FuseRef
from .hashed import HashedRef

MANIFEST_FORMAT = "sieve-manifest"
MANIFEST_VERSION = 6  # 2: the file dictionary lives in a files-*.svf file; 3: segments keep holes;
# 4: paged segment files, a columnar segment list; 5: segments packed into shared files; 6: the
# segment list records each segment's full files (SVL6)
HASHED_VERSION = 7  # 7: a hashed-key index (older readers refuse it: a full read, never a wrong answer)
FUSE_VERSION = 8  # 8: a hashed-key index with a retrieval structure (fuse) for its one-file keys
READABLE_VERSIONS = (5, 6, 7, 8)  # a v5 index reads as one without full files (and a sync writes v6)
_MANIFEST_RE = re.compile(r"^manifest-(\d{8})\.json$")

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
    # "segments" (ordered keys) or "hashed" (keys without order: see fingerprints.py); a hashed index
    # has no segments or deltas but its structures, the build's first, then one per sync that added files
    structure: str = "segments"
    hashed: list[HashedRef] = field(default_factory=list)
    fpp: float = 0.0  # hashed: the target share of absent keys that read any file
    fp_bits: int = 0  # hashed: fingerprint bits of every structure (chosen at build for its key count)
    # hashed: the build's keys that are in one file each, in a retrieval structure (None: all in pages)
    fuse: FuseRef | None = None

    def to_json(self) -> str:
        if self.file_table is None:
            raise ValueError("write the file table first (IndexStore.commit does)")
        body = {
            "format": MANIFEST_FORMAT, "version": self.version,
            "format_version": (FUSE_VERSION if self.fuse is not None else HASHED_VERSION) if self.structure == "hashed"
            else MANIFEST_VERSION,
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
        if self.structure == "hashed":
            body.update(structure=self.structure, hashed=[h.to_dict() for h in self.hashed], fpp=self.fpp,
                        fp_bits=self.fp_bits)
            if self.fuse is not None:
                body["fuse"] = self.fuse.to_dict()
        canon = json.dumps(body, sort_keys=True, separators=(",", ":"))
        body["checksum"] = zlib.crc32(canon.encode())
        return json.dumps(body, sort_keys=True, separators=(",", ":"))  # compact: json's C encoder (indent is not)

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
                                   f"v{READABLE_VERSIONS[-1]}: rebuild the index")
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
            structure=body.get("structure", "segments"), hashed=[HashedRef(**h) for h in body.get("hashed", [])],
            fpp=body.get("fpp", 0.0), fp_bits=body.get("fp_bits", 0),
            fuse=FuseRef.from_dict(body["fuse"]) if body.get("fuse") else None,
        )

    def referenced(self) -> set[str]:
        names = {d.name for d in self.deltas} | {h.name for h in self.hashed}
        if self.fuse is not None:
            names.add(self.fuse.name)
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
