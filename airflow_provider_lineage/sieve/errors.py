"""Exceptions raised by the Sieve index."""
from __future__ import annotations


class SieveError(Exception):
    """Base class: a problem the caller can fix (the message names the problem and the fix)."""


class IndexUnavailable(SieveError):
    """The index cannot be used: missing, corrupt (checksum), unreadable or for another table/column.

    ``reason`` is a one-line explanation; readers fall back to a full read when they catch it.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CommitConflict(SieveError):
    """Another writer committed the version this writer wanted (optimistic concurrency lost)."""


class UnsupportedKeyType(SieveError):
    """The indexed column's type has no order-preserving integer mapping."""


class IndexNotWritable(SieveError):
    """The index folder cannot be written (read-only, no permission, no space)."""
