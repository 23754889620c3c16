"""Sieve: a learned, updatable data-skipping index for Parquet tables (no Airflow imports).

See the module docstrings of :mod:`.model` (structure), :mod:`.storage` (on-disk format),
:mod:`.sync` (updates and deletes) and :mod:`.reader` (pruned reads).
"""
from __future__ import annotations

from .build import build
from .errors import CommitConflict, IndexNotWritable, IndexUnavailable, SieveError, UnsupportedKeyType
from .keys import KeyType
from .maintenance import maintenance_status
from .predicates import Eq, In, IsNull, Predicate, Range
from .query import Candidates, SieveIndex, open_index
from .reader import SieveFallbackWarning, read
from .records import IndexStats, MaintenanceStatus, SyncReport
from .sync import compact, rebuild, sync
from .table import FileEntry, TableRef, list_table_files

__all__ = [
    "Candidates", "CommitConflict", "Eq", "FileEntry", "In", "IndexNotWritable", "IndexStats", "IndexUnavailable", "IsNull", "KeyType",
    "MaintenanceStatus", "Predicate", "Range", "SieveError", "SieveFallbackWarning", "SieveIndex",
    "SyncReport", "TableRef", "UnsupportedKeyType", "build", "compact", "list_table_files",
    "maintenance_status", "open_index", "read", "rebuild", "sync",
]
