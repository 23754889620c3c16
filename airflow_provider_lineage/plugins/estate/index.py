"""Keeping the estate index in step with the ``column_lineage`` XCom rows (the write side).

:func:`sync` is cheap and incremental: it indexes the XCom rows newer than a watermark (minus a slack
for transactions that commit late), refreshes the few rows whose task had not finished when they were
indexed, and when the index holds more records than XCom does (``airflow db clean``, a deleted DAG or
DAG run, a cleared task) it deletes the records whose XCom row is gone. It runs in processes that have
metadata-DB access: the scheduler when a DAG run finishes (:mod:`..dagrun_listener`) and the api-server before
it answers an estate request (throttled to once per :data:`SYNC_INTERVAL` seconds per process).
Airflow 3 workers have no DB access, so the operator itself cannot write here.

:func:`~.ingest.ingest` writes one record (:mod:`.ingest`, after the checks of :mod:`.validate`);
:func:`reindex` rebuilds all or one DAG's records from XCom (``python -m
airflow_provider_lineage.plugins.estate reindex``), re-applying the current dataset identity so that
renamed identities leave no duplicates, and drops datasets no record names any more.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, delete, exists, func, inspect, select, update

from airflow_provider_lineage.lineage import run_record
from airflow_provider_lineage.plugins.estate import schema as s
from airflow_provider_lineage.plugins.estate import values
from airflow_provider_lineage.plugins.estate.ingest import Datasets, delete_runs, ingest

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

log = logging.getLogger(__name__)

#: Seconds between two request-time syncs in one process.
SYNC_INTERVAL = 2.0
#: XCom rows this much older than the watermark are looked at again (late commits).
SLACK = timedelta(minutes=5)
FINAL_STATES = ("success", "failed", "skipped", "upstream_failed", "removed")
#: XCom rows one sync indexes at most in one transaction (the first sync after an upgrade: in batches).
BATCH = 500
#: A request indexes new records itself only when at most this many wait; more: in the background.
REQUEST_BATCH = 200
_WATERMARK = "xcom_watermark"
_SCHEMA_LOCK = 0x61706C0001  # PostgreSQL advisory lock keys ("apl" + n)
_SYNC_LOCK = 0x61706C0002
_ready: set[str] = set()
_last_sync: dict[str, float] = {}
_lock_mem = threading.Lock()


def _engine_key(session: Session) -> str:
    return str(session.get_bind().engine.url)


def _lock(session: Session, key: int, *, wait: bool) -> bool:
    """PostgreSQL: a transaction-scoped advisory lock (released at commit/rollback); ``wait=False`` does
    not wait and says whether it got it. Other databases serialise writers themselves: always ``True``."""
    if session.get_bind().dialect.name != "postgresql":
        return True
    from sqlalchemy import text

    fn = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
    got = session.execute(text(f"SELECT {fn}(:k)"), {"k": key}).scalar()
    return True if wait else bool(got)


def ensure_schema(session: Session) -> None:
    """Create the tables if missing; rebuild them if they hold another :data:`~.schema.SCHEMA_VERSION`.

    On PostgreSQL under an advisory lock, so that two processes starting at once do not both create them."""
    key = _engine_key(session)
    if key in _ready:
        return
    _lock(session, _SCHEMA_LOCK, wait=True)
    bind = session.connection()
    if inspect(bind).has_table(s.meta.name):
        version = session.scalar(select(s.meta.c.value).where(s.meta.c.key == "schema"))
        if version != s.SCHEMA_VERSION:
            log.warning("estate index schema %s found, %s expected: rebuilding the index", version, s.SCHEMA_VERSION)
            s.metadata.drop_all(bind)
    s.metadata.create_all(bind, checkfirst=True)
    if session.scalar(select(s.meta.c.value).where(s.meta.c.key == "schema")) is None:
        session.execute(s.meta.insert().values(key="schema", value=s.SCHEMA_VERSION))
    session.commit()
    _ready.add(key)




def _xcom_rows(session: Session, where: Any) -> list[Any]:
    from airflow.models.dag import DagModel
    from airflow.models.taskinstance import TaskInstance as TI
    from airflow.models.xcom import XComModel as X

    stmt = (
        select(X.dag_run_id, X.dag_id, X.task_id, X.run_id, X.map_index, X.timestamp, X.value,
               TI.state, TI.start_date, TI.end_date, DagModel.owners)
        .outerjoin(TI, and_(TI.dag_id == X.dag_id, TI.task_id == X.task_id, TI.run_id == X.run_id,
                            TI.map_index == X.map_index))
        .outerjoin(DagModel, DagModel.dag_id == X.dag_id)
        .where(X.key == run_record.XCOM_KEY, where)
    )
    return list(session.execute(stmt))


def _state(value: Any) -> str | None:
    if value is None:
        return None
    text = str(getattr(value, "value", value))
    return text.rsplit(".", 1)[-1].lower()


def _ingest_rows(session: Session, rows: Sequence[Any]) -> int:
    datasets = Datasets(session)
    backend = values.object_storage_backend()
    for r in rows:
        note = None
        try:
            record = values.read(r.value, backend)
        except values.UnreadableValue as exc:
            record, note = None, str(exc)
        except Exception as exc:  # noqa: BLE001 - one unreadable value never stops the others
            record, note = None, f"the XCom value could not be read: {type(exc).__name__}"
        if record is not None and not run_record.is_record(record):
            record = None
        ingest(session, dag_run_id=r.dag_run_id, dag_id=r.dag_id, task_id=r.task_id, run_id=r.run_id,
               map_index=r.map_index, record=record, state=_state(r.state), start_date=r.start_date,
               end_date=r.end_date, xcom_ts=r.timestamp, owner=r.owners, note=note, datasets=datasets)
    return len(rows)


def _by_keys(keys: Sequence[Any]) -> Any:
    from airflow.models.xcom import XComModel as X
    from sqlalchemy import or_

    return or_(*[and_(X.dag_run_id == k.dag_run_id, X.task_id == k.task_id, X.map_index == k.map_index)
                 for k in keys])


def _since(session: Session) -> datetime | None:
    mark = session.scalar(select(s.meta.c.value).where(s.meta.c.key == _WATERMARK))
    try:
        return datetime.fromisoformat(mark) - SLACK if mark else None
    except (ValueError, OverflowError):  # a watermark that cannot be read: read everything again
        return None


def due(session: Session) -> bool:
    """Whether a request-time :func:`sync` would run now (not throttled by :data:`SYNC_INTERVAL`)."""
    return time.monotonic() - _last_sync.get(_engine_key(session), -1e9) >= SYNC_INTERVAL


def backlog(session: Session) -> int:
    """How many ``column_lineage`` XCom rows are newer than the watermark (a few on a running index; all
    of them before the first sync)."""
    from airflow.models.xcom import XComModel as X

    ensure_schema(session)
    since = _since(session)
    cond = [X.key == run_record.XCOM_KEY] + ([X.timestamp > since + SLACK] if since is not None else [])
    return session.scalar(select(func.count()).select_from(X).where(*cond)) or 0


def sync(session: Session, *, force: bool = False, max_rows: int | None = None, wait: bool = False) -> dict[str, int]:
    """Bring the index up to date with XCom (see the module docstring); commits. Returns what it did.

    :param max_rows: index at most this many new XCom rows (the oldest first) and move the watermark to
        the last one; ``pending`` in the answer says how many were left for the next call.
    :param wait: when another process is syncing, wait for it, then index what it left (a background
        thread that acts on the result, e.g. the scheduler publishing the tag map after a run).
    On PostgreSQL one updater at a time (an advisory lock): when another process is syncing, this call
    returns ``{"busy": 1}`` at once (that process indexes the same rows) unless ``wait``.
    """
    from airflow.models.xcom import XComModel as X

    key = _engine_key(session)
    now = time.monotonic()
    with _lock_mem:
        if not force and now - _last_sync.get(key, -1e9) < SYNC_INTERVAL:
            return {"skipped": 1}
        _last_sync[key] = now
    ensure_schema(session)
    if not _lock(session, _SYNC_LOCK, wait=wait):
        session.rollback()
        return {"busy": 1}
    done = {"indexed": 0, "refreshed": 0, "pruned": 0, "pending": 0}
    since = _since(session)
    cond = X.timestamp >= since if since is not None else X.key == run_record.XCOM_KEY
    cand = session.execute(select(X.dag_run_id, X.task_id, X.map_index, X.timestamp)
                           .where(X.key == run_record.XCOM_KEY, cond)).all()
    if cand:
        have = {(r.dag_run_id, r.task_id, r.map_index): r.xcom_ts for r in session.execute(
            select(s.task_run.c.dag_run_id, s.task_run.c.task_id, s.task_run.c.map_index, s.task_run.c.xcom_ts)
            .where(s.task_run.c.xcom_ts >= min(c.timestamp for c in cand)))}
        new = sorted((c for c in cand if have.get((c.dag_run_id, c.task_id, c.map_index)) != c.timestamp),
                     key=lambda c: c.timestamp)
        if max_rows is not None and len(new) > max_rows:
            done["pending"] = len(new) - max_rows
            new = new[:max_rows]
            newest = new[-1].timestamp if new else max(c.timestamp for c in cand)
        else:
            newest = max(c.timestamp for c in cand)
        for i in range(0, len(new), 200):
            done["indexed"] += _ingest_rows(session, _xcom_rows(session, _by_keys(new[i:i + 200])))
        _set_meta(session, _WATERMARK, newest.isoformat())
    done["refreshed"] = _refresh_pending(session)
    done["pruned"] = prune(session)
    session.commit()
    return done


def sync_all(session_factory: Any, *, batch: int | None = None, wait: bool = False) -> dict[str, int]:
    """:func:`sync` in batches of ``batch`` XCom rows, one transaction (and session) each, until none is
    left: the first sync after an upgrade, in the scheduler's and api-server's background threads.
    ``wait``: as :func:`sync` (the scheduler's thread, which publishes from the index afterwards)."""
    batch = batch or BATCH
    total = {"indexed": 0, "refreshed": 0, "pruned": 0, "batches": 0}
    mark = None
    while True:
        with session_factory() as session:
            out = sync(session, force=True, max_rows=batch, wait=wait)
            before, mark = mark, session.scalar(select(s.meta.c.value).where(s.meta.c.key == _WATERMARK))
        if out.get("pending") and mark == before:  # no progress (rows that cannot be written at all): stop
            log.warning("estate index: %s XCom rows could not be indexed; the next sync tries again", out["pending"])
            out["pending"] = 0
        if out.get("busy"):
            total["busy"] = 1
            return total
        total["batches"] += 1
        for k in ("indexed", "refreshed", "pruned"):
            total[k] += out.get(k, 0)
        with _lock_mem:
            _progress[_progress_key] = dict(total, pending=out.get("pending", 0))
        if not out.get("pending"):
            return total


_background: dict[str, threading.Thread] = {}
_progress: dict[str, dict[str, int]] = {}
_progress_key = "sync"


def start_background(session: Session) -> bool:
    """Start :func:`sync_all` in a thread of this process (at most one per database); whether one runs."""
    from airflow.utils.session import create_session

    key = _engine_key(session)
    with _lock_mem:
        _last_sync[key] = time.monotonic()
        running = _background.get(key)
        if running is not None and running.is_alive():
            return True

        def run() -> None:
            try:
                sync_all(create_session)
            except Exception:
                log.warning("estate index: background sync failed (the next request starts it again)", exc_info=True)

        thread = threading.Thread(target=run, name="apl-estate-catch-up", daemon=True)
        _background[key] = thread
        thread.start()
    return True


def catching_up(session: Session) -> bool:
    """Whether a background :func:`sync_all` of this process runs on ``session``'s database."""
    running = _background.get(_engine_key(session))
    return running is not None and running.is_alive()


def _set_meta(session: Session, key: str, value: str) -> None:
    """Set a meta value; a concurrent writer inserting the same key first is not an error."""
    from sqlalchemy.exc import IntegrityError

    if session.execute(update(s.meta).where(s.meta.c.key == key).values(value=value)).rowcount:
        return
    try:
        with session.begin_nested():
            session.execute(s.meta.insert().values(key=key, value=value))
    except IntegrityError:
        session.execute(update(s.meta).where(s.meta.c.key == key).values(value=value))


def _refresh_pending(session: Session) -> int:
    from airflow.models.taskinstance import TaskInstance as TI

    pending = session.execute(select(s.task_run.c.id, s.task_run.c.dag_id, s.task_run.c.task_id, s.task_run.c.run_id,
                                     s.task_run.c.map_index)
                              .where((s.task_run.c.state.is_(None)) | s.task_run.c.state.not_in(FINAL_STATES))
                              .limit(2000)).all()
    n = 0
    for p in pending:
        ti = session.execute(select(TI.state, TI.start_date, TI.end_date).where(
            TI.dag_id == p.dag_id, TI.task_id == p.task_id, TI.run_id == p.run_id, TI.map_index == p.map_index)).first()
        if ti is None:
            continue
        state = _state(ti.state)
        if state in FINAL_STATES:
            session.execute(update(s.task_run).where(s.task_run.c.id == p.id).values(
                state=state, start_date=ti.start_date, end_date=ti.end_date))
            n += 1
    return n


def prune(session: Session, *, force: bool = False) -> int:
    """Delete index rows whose XCom row is gone (db clean, DAG/run deletion, cleared task). Does not commit.

    Cheap when nothing was deleted: two counts; the anti-join runs only when the index holds more.
    """
    from airflow.models.xcom import XComModel as X

    if not force:
        n_xcom = session.scalar(select(func.count()).select_from(X).where(X.key == run_record.XCOM_KEY))
        n_index = session.scalar(select(func.count()).select_from(s.task_run))
        if n_index <= n_xcom:
            return 0
    gone = session.execute(select(s.task_run.c.id).where(~exists().where(
        X.dag_run_id == s.task_run.c.dag_run_id, X.task_id == s.task_run.c.task_id,
        X.map_index == s.task_run.c.map_index, X.key == run_record.XCOM_KEY))).scalars().all()
    if gone:
        delete_runs(session, gone)
        drop_orphan_datasets(session)
    return len(gone)


def drop_orphan_datasets(session: Session) -> int:
    """Delete datasets (and their fields) no indexed record names any more. Does not commit."""
    orphan = select(s.dataset.c.id).where(~exists().where(s.io.c.dataset_id == s.dataset.c.id),
                                         ~exists().where(s.edge.c.source_id == s.dataset.c.id),
                                         ~exists().where(s.edge.c.target_id == s.dataset.c.id))
    ids = session.execute(orphan).scalars().all()
    for i in range(0, len(ids), 500):
        session.execute(delete(s.field).where(s.field.c.dataset_id.in_(ids[i:i + 500])))
        session.execute(delete(s.dataset).where(s.dataset.c.id.in_(ids[i:i + 500])))
    if ids:
        session.execute(delete(s.column_name).where(~exists().where(s.field.c.name == s.column_name.c.name)))
    return len(ids)


def reindex(session: Session, *, dag_id: str | None = None, batch: int = 200,
            progress: Any = None) -> dict[str, int]:
    """Rebuild the index (all DAGs or ``dag_id``) from the XCom records, in **one transaction**: the
    rebuilt index replaces the live one when it commits, at the end. Until then every reader sees the
    old index whole (PostgreSQL's MVCC; SQLite's readers until the commit), and a rebuild killed
    or failing half-way leaves the old index as it was. Updaters skip their syncs meanwhile (on
    PostgreSQL an advisory lock: they find it busy). Returns counts.

    :param batch: XCom rows read and indexed at a time; ``progress(done, total)`` is called after each.
    """
    from airflow.models.xcom import XComModel as X

    ensure_schema(session)
    _lock(session, _SYNC_LOCK, wait=True)
    old = select(s.task_run.c.id)
    if dag_id is not None:
        old = old.where(s.task_run.c.dag_id == dag_id)
    removed = delete_runs(session, session.execute(old).scalars().all())
    keys = session.execute(select(X.dag_run_id, X.task_id, X.map_index, X.timestamp).where(
        X.key == run_record.XCOM_KEY, *([X.dag_id == dag_id] if dag_id is not None else []))).all()
    indexed = 0
    for i in range(0, len(keys), batch):
        indexed += _ingest_rows(session, _xcom_rows(session, _by_keys(keys[i:i + batch])))
        session.flush()
        if progress is not None:
            progress(indexed, len(keys))
    dropped = drop_orphan_datasets(session)
    if dag_id is None and keys:
        _set_meta(session, _WATERMARK, max(k.timestamp for k in keys).isoformat())
    session.commit()
    return {"removed": removed, "indexed": indexed, "datasets_dropped": dropped}
