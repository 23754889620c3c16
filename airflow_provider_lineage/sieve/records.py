"""Result records crossing process boundaries (dataclasses with ``to_dict``; JSON-friendly)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

RECORD_VERSION = 1


@dataclass
class IndexStats:
    """Size and health of one index version."""

    table: str
    column: str
    index_path: str
    version: int
    mode: str
    key_type: str
    created: str
    files: int
    rows: int | None
    keys: int  # distinct keys at segment formation (+ keys added into segments since; approximate)
    segments: int
    blocks: int
    index_bytes: int
    bytes_per_key: float
    attribute_bytes: int | None  # rows * key width
    attribute_share: float | None  # index_bytes / attribute_bytes
    error_bound: int
    budget_total: int
    budget_used: int
    budget_used_fraction: float
    segments_over_budget: int
    deltas: int
    delta_records: int
    delta_bytes: int
    null_files: int
    build_seconds: float | None = None
    structure: str = "segments"  # or "hashed" (keys without order): then keys/pairs/structures/fpp
    pairs: int = 0  # hashed: (key fingerprint, file) pairs
    structures: int = 0  # hashed: the build's structure + one per sync that added files
    fpp: float = 0.0  # hashed: target share of absent keys that read any file
    fuse_keys: int = 0  # hashed: keys in one file each, held by the retrieval structure (counted in keys, pairs)
    record_version: int = RECORD_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SyncReport:
    """What one sync/compact did."""

    table: str
    column: str
    mode: str
    version: int
    action: str  # "sync" | "compact" | "build" (sync fell back to a full build) | "none"
    files_added: int = 0
    files_removed: int = 0
    files_changed: int = 0
    keys_read: int = 0
    segments_covered: int = 0  # took a new file holding every key of their range: not rewritten
    segments_rewritten: int = 0
    segments_rebuilt: int = 0
    segments_created: int = 0
    segments_dropped: int = 0
    deltas_written: int = 0
    deltas_folded: int = 0
    attempts: int = 1
    seconds: float = 0.0
    reason: str = ""
    record_version: int = RECORD_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class MaintenanceStatus:
    """What a maintenance sensor needs, computed from the listing and the manifest (no Spark)."""

    table: str
    column: str
    index_path: str
    present: bool
    version: int | None = None
    mode: str | None = None
    files_indexed: int = 0
    files_added: int = 0
    files_removed: int = 0
    files_changed: int = 0
    delta_count: int = 0
    delta_bytes: int = 0
    delta_records: int = 0
    dead_files: int = 0
    segments: int = 0
    segments_over_budget: int = 0
    budget_used_fraction: float = 0.0
    drift: float = 0.0  # (added + removed + changed) / files indexed
    recommendation: str = "none"  # none | sync | compact | rebuild | build
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    structure: str | None = None  # segments | hashed (a hashed index counts its sync structures as deltas)
    record_version: int = RECORD_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
