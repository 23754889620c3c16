"""Spark 4.1's one planned read per relation, and how ``spark.read.format("sieve")`` stays right under it.

Spark 4.1 keeps the read a Python data source plans **on the relation** (``PythonDataSourceV2.setReadInfo``),
not on each scan: when one DataFrame or view is scanned twice in one query (``df.where("k = 6")
.union(df.where("k = 1203"))``, a self-join, ``EXISTS`` on the same view), every scan runs with the read
planned last: its files and its row filter. A source that prunes files or claims filters would answer the
first scan with the second scan's rows.

So, on a Spark with that behaviour (:func:`shares_read_info`), each plan of a relation (the relation is the
DataFrame ``load()`` made: :class:`..source.SieveDataSource` gets a random id when it is created) records its
candidate files in a small file on the driver (the planner workers run there), and a plan reads **its own
files and those of every other plan of the same relation that ended less than** :data:`WINDOW_SECONDS`
**before it started** (the scans of one query are planned one after the other, within milliseconds), and
claims no filter: Spark evaluates every filter again on the rows read. Whichever plan Spark keeps, it reads
every file any scan of the query needs, and Spark's own filters decide the rows: never a wrong answer. The
cost: a DataFrame reused with different filters within the window reads the union of their files (load a
DataFrame per query, as :func:`..spark.load` does, to avoid it), and Spark filters rows the reader could
have dropped.

Only file paths are recorded (JSON, one line per plan); nothing read back is executed or unpickled.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

# The first Spark version known to keep one planned read per scan; None: every 4.1+ Spark is taken to
# share one read per relation (checked on 4.1.3). Set it when a release with the fix is verified.
FIXED_IN: tuple[int, int] | None = None
WINDOW_SECONDS = 30.0
_FOLDER = "airflow-provider-lineage-sieve-plans"


def shares_read_info(version: str) -> bool:
    """Whether Spark ``version`` keeps one planned read per relation (see the module doc)."""
    if FIXED_IN is None:
        return True
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts) < FIXED_IN


def new_relation() -> str:
    return uuid.uuid4().hex


def _path(relation: str) -> str:
    if not relation.isalnum():
        raise ValueError(f"bad relation id {relation!r}")
    folder = os.path.join(tempfile.gettempdir(), _FOLDER)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return os.path.join(folder, relation + ".jsonl")


def _lock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # no fcntl (Windows): the scans of one query are planned one after the other
        return
    fcntl.flock(fd, fcntl.LOCK_EX)


@contextmanager
def _locked(path: str) -> Iterator[int]:
    """The record file, opened and locked; reopened when :func:`_prune` removed it meanwhile."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        _lock(fd)
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        yield fd
    finally:
        os.close(fd)  # releases the lock


def _prune(folder: str, keep: str, older_than: float) -> None:
    """Remove the records of relations not planned for ``older_than`` seconds (under each one's lock)."""
    limit = time.time() - older_than
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        if name == keep or not name.endswith(".jsonl"):
            continue
        try:
            if os.stat(path).st_mtime >= limit:
                continue
            fd = os.open(path, os.O_RDWR)
        except OSError:
            continue
        try:
            _lock(fd)
            if os.fstat(fd).st_mtime < limit:
                os.unlink(path)
        except OSError:
            pass
        finally:
            os.close(fd)


def _read_all(fd: int) -> list[dict]:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    out = []
    for line in b"".join(chunks).decode("utf-8", "replace").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if (
            isinstance(entry, dict)
            and isinstance(entry.get("paths"), list)
            and isinstance(entry.get("end"), int | float)
        ):
            out.append(entry)
    return out


def merge(relation: str, plan: str, started: float, paths: list[str]) -> set[str]:
    """Record this plan's ``paths`` for ``relation`` and return the paths of the other plans of the relation
    that ended at or after ``started - WINDOW_SECONDS`` (``started``: ``time.time()`` when this plan
    began). Plans older than the window are dropped from the record."""
    path = _path(relation)
    if not os.path.exists(path):  # a new relation: forget those not planned for an hour
        _prune(os.path.dirname(path), os.path.basename(path), 3600.0)
    now = time.time()
    with _locked(path) as fd:
        entries = _read_all(fd)
        others: set[str] = set()
        kept = []
        for e in entries:
            if e.get("plan") == plan:
                continue
            if e["end"] >= started - WINDOW_SECONDS:
                others.update(p for p in e["paths"] if isinstance(p, str))
            if e["end"] >= now - WINDOW_SECONDS:
                kept.append(e)
        kept.append({"plan": plan, "end": now, "paths": sorted(paths)})
        data = "".join(json.dumps(e) + "\n" for e in kept).encode()
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    return others
