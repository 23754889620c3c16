"""Keeping the estate index in step with the ``column_lineage`` XCom rows (the write side).

:func:`sync` is cheap and incremental: it indexes the XCom rows newer than a watermark (minus a slack
for transactions that commit late), refreshes the few rows whose task had not finished when they were
indexed, and when the index holds more records than XCom does (``airflow db clean``, a deleted DAG or
DAG run, a cleared task) it deletes the records whose XCom row is gone. It runs in processes that have
metadata-DB access: the scheduler when a DAG run finishes (:mod:`.listener`) and the api-server before
it answers an estate request (throttled to once per :data:`SYNC_INTERVAL` seconds per process).
Airflow 3 workers have no DB access, so the operator itself cannot write here.

:func:`ingest` writes one record (used by :func:`sync`, :func:`reindex` and the benchmarks);
:func:`reindex` rebuilds all or one DAG's records from XCom (``python -m
airflow_provider_lineage.plugins.estate reindex``), re-applying the current dataset identity so that
renamed identities leave no duplicates, and drops datasets no record names any more.
"""
from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, delete, exists, func, inspect, select, update

from airflow_provider_lineage.lineage import canonical as canonical_rules
from airflow_provider_lineage.lineage import run_record
from airflow_provider_lineage.plugins.estate import schema as s
from airflow_provider_lineage.plugins.estate import values

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

log = logging.getLogger(__name__)

#: Seconds between two request-time syncs in one process.
SYNC_INTERVAL = 2.0
#: XCom rows this much older than the watermark are looked at again (late commits).
SLACK = timedelta(minutes=5)
FINAL_STATES = ("success", "failed", "skipped", "upstream_failed", "removed")
_WATERMARK = "xcom_watermark"
_ready: set[str] = set()
_last_sync: dict[str, float] = {}
_lock = threading.Lock()


def _engine_key(session: Session) -> str:
    return str(session.get_bind().engine.url)


def ensure_schema(session: Session) -> None:
    """Create the tables if missing; rebuild them if they hold another :data:`~.schema.SCHEMA_VERSION`."""
    key = _engine_key(session)
    if key in _ready:
        return
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


def canonical(namespace: str, name: str) -> tuple[str, str]:
    """The dataset identity the index keys on: (namespace, name) under the *current* naming rules
    (:func:`airflow_provider_lineage.lineage.canonical.canonical_identity`), so that a record written
    under an older rule lands under today's name."""
    try:
        ns, nm = canonical_rules.canonical_identity(namespace, name)
        return str(ns), str(nm)
    except Exception:
        log.debug("identity rule failed for %s:%s", namespace, name, exc_info=True)
    return namespace, name


class _Datasets:
    """Dataset ids by (namespace, name), inserted on first sight (one per identity, race-safe)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.ids: dict[tuple[str, str], int] = {}

    def resolve(self, keys: Iterable[tuple[str, str, str | None]]) -> None:
        want = {(ns, nm): table for ns, nm, table in keys if (ns, nm) not in self.ids}
        if not want:
            return
        names = sorted({nm for _, nm in want})
        for i in range(0, len(names), 500):
            for did, ns, nm in self.session.execute(select(s.dataset.c.id, s.dataset.c.namespace, s.dataset.c.name)
                                                    .where(s.dataset.c.name.in_(names[i:i + 500]))):
                self.ids[(ns, nm)] = did
        for (ns, nm), table in want.items():
            if (ns, nm) in self.ids:
                continue
            from sqlalchemy.exc import IntegrityError

            try:
                with self.session.begin_nested():
                    did = self.session.execute(s.dataset.insert().values(namespace=ns, name=nm, table_name=table)
                                               ).inserted_primary_key[0]
            except IntegrityError:  # another process inserted it meanwhile
                did = self.session.scalar(select(s.dataset.c.id).where(s.dataset.c.namespace == ns,
                                                                       s.dataset.c.name == nm))
            self.ids[(ns, nm)] = did


def _lineage(record: dict[str, Any]) -> tuple[list[tuple[str, str, str | None]], dict[str, Any], str]:
    """(dataset identities, the record's lineage by identity index, its digest)."""
    idents = []
    for ds in record["datasets"]:
        ns, nm = canonical(str(ds.get("namespace", "")), str(ds.get("name", "")))
        idents.append((ns, nm, ds.get("table")))
    n = len(idents)
    io_rows = sorted({(i, False) for i in record.get("inputs") or [] if 0 <= i < n}
                     | {(i, True) for i in record.get("outputs") or [] if 0 <= i < n})
    edges = []
    for out, col, src, src_field, typ, sub, masked in record.get("edges") or []:
        edges.append((out, str(col)[:500], src, str(src_field)[:500], str(typ)[:20], sub and str(sub)[:40], bool(masked)))
    for out, src, src_field, typ, sub, masked in record.get("dataset_edges") or []:
        edges.append((out, "", src, str(src_field)[:500], str(typ)[:20], sub and str(sub)[:40], bool(masked)))
    fields = []
    for i, ds in enumerate(record["datasets"]):
        for name_type in ds.get("fields") or []:
            fields.append((i, str(name_type[0])[:500], (str(name_type[1])[:200] or None) if len(name_type) > 1 else None))
    body = {"d": [[a, b] for a, b, _ in idents], "io": io_rows, "e": edges, "f": fields}
    digest = hashlib.sha256(json.dumps(body, separators=(",", ":"), default=str).encode()).hexdigest()
    return idents, body, digest


def _edge_set(session: Session, record: dict[str, Any], datasets: _Datasets) -> int:
    """The id of the record's edge set, inserted with its io rows, edges and fields if new."""
    idents, body, digest = _lineage(record)
    found = session.scalar(select(s.edge_set.c.id).where(s.edge_set.c.digest == digest))
    if found is not None:
        return found
    from sqlalchemy.exc import IntegrityError

    datasets.resolve(idents)
    ids = [datasets.ids[(ns, nm)] for ns, nm, _ in idents]
    try:
        with session.begin_nested():
            ref = session.execute(s.edge_set.insert().values(digest=digest)).inserted_primary_key[0]
    except IntegrityError:  # another process stored the same lineage meanwhile
        return session.scalar(select(s.edge_set.c.id).where(s.edge_set.c.digest == digest))
    # two names of one record may be one identity now (part files of one folder): one row each
    io_rows = sorted({(ids[i], o) for i, o in body["io"]})
    if io_rows:
        session.execute(s.io.insert(), [{"set_ref": ref, "dataset_id": d, "output": o} for d, o in io_rows])
    edges = [{"set_ref": ref, "target_id": t, "target_col": col, "source_id": src, "source_col": sf,
              "type": typ, "subtype": sub, "masking": m} for t, col, src, sf, typ, sub, m in dict.fromkeys(
                  (ids[out], col, ids[src], sf, typ, sub, m) for out, col, src, sf, typ, sub, m in body["e"])]
    if edges:
        session.execute(s.edge.insert(), edges)
    fields: dict[tuple[int, str], str | None] = {(ids[i], name): typ for i, name, typ in body["f"]}
    for e in edges:
        fields.setdefault((e["target_id"], e["target_col"]), None)
        fields.setdefault((e["source_id"], e["source_col"]), None)
    _upsert_fields(session, {k: v for k, v in fields.items() if k[1]})
    return ref


def ingest(session: Session, *, dag_run_id: int, dag_id: str, task_id: str, run_id: str, map_index: int,
           record: dict[str, Any] | None, state: str | None = None, start_date: datetime | None = None,
           end_date: datetime | None = None, xcom_ts: datetime | None = None, owner: str | None = None,
           note: str | None = None, datasets: _Datasets | None = None) -> int:
    """Index one task run's record (``None``: an unreadable value, kept with ``note``); returns its row id.

    Replaces an earlier row of the same XCom (``dag_run_id, task_id, map_index``). A lineage already
    stored for another run (same digest) is shared, not stored again. Does not commit.
    """
    datasets = datasets or _Datasets(session)
    delete_runs(session, session.execute(select(s.task_run.c.id).where(
        s.task_run.c.dag_run_id == dag_run_id, s.task_run.c.task_id == task_id,
        s.task_run.c.map_index == map_index)).scalars().all())
    ok = record is not None and run_record.is_record(record)
    job = (record.get("job") or {}) if ok else {}
    set_ref = _edge_set(session, record, datasets) if ok and record is not None else None
    return session.execute(s.task_run.insert().values(
        dag_run_id=dag_run_id, dag_id=dag_id, task_id=task_id, run_id=run_id, map_index=map_index, state=state,
        start_date=start_date, end_date=end_date, xcom_ts=xcom_ts, set_ref=set_ref,
        status=str(record.get("status") or "ok")[:20] if ok and record is not None else "unreadable",
        job=f"{job.get('namespace', '')}/{job.get('name', '')}"[:1000] if job else None,
        owner=(owner or None) and owner[:500],
        note=note if ok else (note or f"the XCom '{run_record.XCOM_KEY}' is not a lineage record"),
    )).inserted_primary_key[0]


def _upsert_fields(session: Session, fields: dict[tuple[int, str], str | None]) -> None:
    if not fields:
        return
    known: dict[tuple[int, str], str | None] = {}
    dids = sorted({d for d, _ in fields})
    for i in range(0, len(dids), 500):
        for d, n, t in session.execute(select(s.field.c.dataset_id, s.field.c.name, s.field.c.type)
                                       .where(s.field.c.dataset_id.in_(dids[i:i + 500]))):
            known[(d, n)] = t
    new = [{"dataset_id": d, "name": n, "type": t} for (d, n), t in fields.items() if (d, n) not in known]
    if new:
        _add_column_names(session, {r["name"] for r in new})
        _insert_new(session, s.field, new)
    for (d, n), t in fields.items():
        if t and (d, n) in known and known[(d, n)] != t:
            session.execute(update(s.field).where(s.field.c.dataset_id == d, s.field.c.name == n).values(type=t))


def _insert_new(session: Session, table: Any, rows: list[dict[str, Any]]) -> None:
    """Insert rows read as missing; when a concurrent writer added some meanwhile, one at a time, skipping those."""
    from sqlalchemy.exc import IntegrityError

    try:
        with session.begin_nested():
            session.execute(table.insert(), rows)
    except IntegrityError:
        for row in rows:
            try:
                with session.begin_nested():
                    session.execute(table.insert().values(**row))
            except IntegrityError:
                pass


def _add_column_names(session: Session, names: set[str]) -> None:
    """Record column names the search has not seen yet (``apl_estate_column_name``)."""
    ordered = sorted(names)
    for i in range(0, len(ordered), 500):
        part = ordered[i:i + 500]
        have = set(session.execute(select(s.column_name.c.name).where(s.column_name.c.name.in_(part))).scalars())
        rows = [{"name": n} for n in part if n not in have]
        if rows:
            _insert_new(session, s.column_name, rows)


def delete_runs(session: Session, run_refs: Sequence[int]) -> int:
    """Delete task-run rows, and the edge sets no run uses any more (io rows, edges). Does not commit."""
    refs = list(run_refs)
    sets: set[int] = set()
    for i in range(0, len(refs), 500):
        part = refs[i:i + 500]
        sets |= {r for r in session.execute(select(s.task_run.c.set_ref).where(
            s.task_run.c.id.in_(part), s.task_run.c.set_ref.is_not(None))).scalars()}
        session.execute(delete(s.task_run).where(s.task_run.c.id.in_(part)))
    if sets:
        used = set()
        ordered = sorted(sets)
        for i in range(0, len(ordered), 500):
            used |= set(session.execute(select(s.task_run.c.set_ref).where(
                s.task_run.c.set_ref.in_(ordered[i:i + 500]))).scalars())
        free = sorted(sets - used)
        for i in range(0, len(free), 500):
            part = free[i:i + 500]
            session.execute(delete(s.edge).where(s.edge.c.set_ref.in_(part)))
            session.execute(delete(s.io).where(s.io.c.set_ref.in_(part)))
            session.execute(delete(s.edge_set).where(s.edge_set.c.id.in_(part)))
    return len(refs)


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
    datasets = _Datasets(session)
    backend = values.object_storage_backend()
    for r in rows:
        note = None
        try:
            record = values.read(r.value, backend)
        except values.UnreadableValue as exc:
            record, note = None, str(exc)
        if record is not None and not run_record.is_record(record):
            record = None
        ingest(session, dag_run_id=r.dag_run_id, dag_id=r.dag_id, task_id=r.task_id, run_id=r.run_id,
               map_index=r.map_index, record=record, state=_state(r.state), start_date=r.start_date,
               end_date=r.end_date, xcom_ts=r.timestamp, owner=r.owners, note=note, datasets=datasets)
    return len(rows)


def sync(session: Session, *, force: bool = False) -> dict[str, int]:
    """Bring the index up to date with XCom (see the module docstring); commits. Returns what it did."""
    from airflow.models.xcom import XComModel as X

    key = _engine_key(session)
    now = time.monotonic()
    with _lock:
        if not force and now - _last_sync.get(key, -1e9) < SYNC_INTERVAL:
            return {"skipped": 1}
        _last_sync[key] = now
    ensure_schema(session)
    done = {"indexed": 0, "refreshed": 0, "pruned": 0}
    mark = session.scalar(select(s.meta.c.value).where(s.meta.c.key == _WATERMARK))
    since = datetime.fromisoformat(mark) - SLACK if mark else None
    cond = X.timestamp >= since if since is not None else X.key == run_record.XCOM_KEY
    cand = session.execute(select(X.dag_run_id, X.task_id, X.map_index, X.timestamp)
                           .where(X.key == run_record.XCOM_KEY, cond)).all()
    if cand:
        have = {(r.dag_run_id, r.task_id, r.map_index): r.xcom_ts for r in session.execute(
            select(s.task_run.c.dag_run_id, s.task_run.c.task_id, s.task_run.c.map_index, s.task_run.c.xcom_ts)
            .where(s.task_run.c.xcom_ts >= min(c.timestamp for c in cand)))}
        new = [c for c in cand if have.get((c.dag_run_id, c.task_id, c.map_index)) != c.timestamp]
        for i in range(0, len(new), 200):
            part = new[i:i + 200]
            conds = [and_(X.dag_run_id == c.dag_run_id, X.task_id == c.task_id, X.map_index == c.map_index)
                     for c in part]
            from sqlalchemy import or_

            done["indexed"] += _ingest_rows(session, _xcom_rows(session, or_(*conds)))
        newest = max(c.timestamp for c in cand)
        _set_meta(session, _WATERMARK, newest.isoformat())
    done["refreshed"] = _refresh_pending(session)
    done["pruned"] = prune(session)
    session.commit()
    return done


def _set_meta(session: Session, key: str, value: str) -> None:
    if session.execute(update(s.meta).where(s.meta.c.key == key).values(value=value)).rowcount == 0:
        session.execute(s.meta.insert().values(key=key, value=value))


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


def reindex(session: Session, *, dag_id: str | None = None, batch: int = 200) -> dict[str, int]:
    """Rebuild the index (all DAGs or ``dag_id``) from the XCom records; commits. Returns counts."""
    from airflow.models.xcom import XComModel as X

    ensure_schema(session)
    old = select(s.task_run.c.id)
    if dag_id is not None:
        old = old.where(s.task_run.c.dag_id == dag_id)
    removed = delete_runs(session, session.execute(old).scalars().all())
    keys = session.execute(select(X.dag_run_id, X.task_id, X.map_index).where(
        X.key == run_record.XCOM_KEY, *([X.dag_id == dag_id] if dag_id is not None else []))).all()
    indexed = 0
    from sqlalchemy import or_

    for i in range(0, len(keys), batch):
        part = keys[i:i + batch]
        indexed += _ingest_rows(session, _xcom_rows(session, or_(*[
            and_(X.dag_run_id == k.dag_run_id, X.task_id == k.task_id, X.map_index == k.map_index) for k in part])))
        session.commit()
    dropped = drop_orphan_datasets(session)
    session.commit()
    return {"removed": removed, "indexed": indexed, "datasets_dropped": dropped}
