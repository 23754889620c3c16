"""Indexes opened by the Sieve pruning rule's Python side (see :mod:`.prune`), cached per version: each version's
file table as the JVM keeps it (content-addressed by SHA-1) and each predicate's answer.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import IndexUnavailable
from ..predicates import Predicate
from ..query import SieveIndex
from ..storage import FileTable, IndexStore

_lock = threading.Lock()


@dataclass
class _Opened:
    index: SieveIndex
    #: the live files as the JVM keeps them: "<n>\n" + "id\tsize\tmtime ms\trelative path" lines
    text: str
    #: the SHA-1 of ``text``: the JVM's key for the table (content-addressed: a rebuilt index is another table)
    key: str
    live: int
    #: predicate -> the encoded hits of this version, or None (excludes nothing): a query planned again
    answers: OrderedDict[Any, str | None] = field(default_factory=OrderedDict)

    def hits(self, pred: Predicate) -> str | None:
        """``i`` + the ids of the files ``pred`` may match (comma-separated), or ``b`` + a base64 bitmap of
        them (whichever is shorter); None when every live file may match (nothing to exclude)."""
        with _lock:
            if pred in self.answers:
                self.answers.move_to_end(pred)
                return self.answers[pred]
        ids = self.index.candidate_ids(pred)
        if len(ids) >= self.live:
            out = None
        else:
            listed = "i" + ",".join(map(str, sorted(ids)))
            top = max(ids, default=0)
            if len(listed) > (top // 8 + 1) * 4 // 3 + 8:
                bits = np.zeros(top + 1, dtype=bool)
                bits[np.fromiter(ids, dtype=np.int64, count=len(ids))] = True
                out = "b" + base64.b64encode(np.packbits(bits, bitorder="little").tobytes()).decode()
            else:
                out = listed
        if out is None or len(out) <= _ANSWER_MAX_CHARS:  # bounded memory: a longer answer is looked up again
            with _lock:
                self.answers[pred] = out
                while len(self.answers) > _ANSWERS_PER_INDEX:
                    self.answers.popitem(last=False)
        return out


_open_cache: OrderedDict[tuple[str, int], _Opened] = OrderedDict()
#: table key -> the opened index holding its text (what the JVM asks for with ``T``)
_by_key: OrderedDict[str, _Opened] = OrderedDict()
_OPEN_CACHE_SIZE = 64
_ANSWERS_PER_INDEX = 256
_ANSWER_MAX_CHARS = 64_000


def _file_table(manifest: Any, root: str) -> tuple[str, int]:
    """The JVM's file table of a version (rows of files outside ``root`` left out: never matched) and its
    number of live files."""
    files = manifest.files
    if isinstance(files, FileTable):
        ids, paths, sizes, mtimes = files.columns()
    else:
        ids = list(files)
        entries = [files[i] for i in ids]
        paths, sizes, mtimes = (
            [e.path for e in entries],
            [e.size for e in entries],
            [e.mtime_ns for e in entries],
        )
    base = root.rstrip("/") + "/"
    n = len(base)
    rows = [
        f"{i}\t{size}\t{mtime // 1_000_000}\t{p[n:]}"
        for i, p, size, mtime in zip(ids, paths, sizes, mtimes)
        if p.startswith(base) and "\n" not in p
    ]
    return f"{len(rows)}\n" + "\n".join(rows), len(ids)


def _open(path: str, column: str, root: str) -> _Opened:
    """The latest version of the index at ``path`` (raises IndexUnavailable / SieveError)."""
    store = IndexStore(path)
    try:
        version = store.latest_version()
    except OSError as exc:
        raise IndexUnavailable(f"cannot list {path} ({exc})") from exc
    if version is None:
        raise IndexUnavailable(f"no committed index version at {path}")
    key = (path, version)
    with _lock:
        hit = _open_cache.get(key)
        if hit is not None:
            _open_cache.move_to_end(key)
            return hit
    manifest = store.load_manifest(version)
    if manifest.column != column:
        raise IndexUnavailable(f"the index at {path} is for column {manifest.column!r}")
    if manifest.table.root != root:
        raise IndexUnavailable(f"the index at {path} is for table {manifest.table.root}")
    text, live = _file_table(manifest, root)
    opened = _Opened(SieveIndex(store, manifest), text, hashlib.sha1(text.encode()).hexdigest(), live)
    with _lock:
        _open_cache[key] = opened
        _by_key[opened.key] = opened
        while len(_open_cache) > _OPEN_CACHE_SIZE:
            _open_cache.popitem(last=False)
        while len(_by_key) > _OPEN_CACHE_SIZE:
            _by_key.popitem(last=False)
    return opened


def table_text(key: str) -> str:
    """The file table the JVM asks for by key ("" when it is no longer here: the scan is not narrowed)."""
    with _lock:
        opened = _by_key.get(key)
    return "" if opened is None else opened.text
