"""Sieve: a learned, updatable data-skipping index for Parquet tables (no Airflow imports).

See the module docstrings of :mod:`.model` (structure), :mod:`.storage` (on-disk format),
:mod:`.sync` (updates and deletes) and :mod:`.reader` (pruned reads).

The names below are imported on first use (PEP 562), so importing a light submodule -- as the
Airflow operator, sensor and trigger do while a DAG file is parsed -- loads no numpy or pyarrow.
"""
from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .build import build
    from .errors import CommitConflict, IndexNotWritable, IndexUnavailable, SieveError, UnsupportedKeyType
    from .keys import KeyType
    from .predicates import Eq, In, IsNull, Predicate, Range
    from .query import Candidates, SieveIndex, open_index
    from .reader import SieveFallbackWarning, read
    from .records import IndexStats, MaintenanceStatus, SyncReport
    from .status import maintenance_status
    from .sync import compact, rebuild, sync
    from .table import FileEntry, TableRef, list_table_files

_HOMES = {
    "build": ["build"],
    "errors": ["CommitConflict", "IndexNotWritable", "IndexUnavailable", "SieveError", "UnsupportedKeyType"],
    "keys": ["KeyType"],
    "predicates": ["Eq", "In", "IsNull", "Predicate", "Range"],
    "query": ["Candidates", "SieveIndex", "open_index"],
    "reader": ["SieveFallbackWarning", "read"],
    "records": ["IndexStats", "MaintenanceStatus", "SyncReport"],
    "status": ["maintenance_status"],
    "sync": ["compact", "rebuild", "sync"],
    "table": ["FileEntry", "TableRef", "list_table_files"],
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "Candidates", "CommitConflict", "Eq", "FileEntry", "In", "IndexNotWritable", "IndexStats", "IndexUnavailable",
    "IsNull", "KeyType", "MaintenanceStatus", "Predicate", "Range", "SieveError", "SieveFallbackWarning",
    "SieveIndex", "SyncReport", "TableRef", "UnsupportedKeyType", "build", "compact", "list_table_files",
    "maintenance_status", "open_index", "read", "rebuild", "sync",
]


class _Package(types.ModuleType):
    """``build`` and ``sync`` name a submodule and its function: the package attribute is the function
    (as with eager imports), even after the import system set it to the submodule on a later load."""

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        if name in ("build", "sync") and isinstance(value, types.ModuleType):
            return getattr(value, name)
        return value


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
