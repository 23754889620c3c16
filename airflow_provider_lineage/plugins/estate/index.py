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


def canonical(namespace: str, name: str) -> tuple[str, str]:
    """The dataset identity the index keys on: (namespace, name) under the *current* naming rules, the
    namespace's host (bucket, account) lower-cased (:func:`airflow_provider_lineage.lineage.canonical.index_key`),
    so that a record written under an older rule lands under today's name and ``s3a://Bucket`` is
    ``s3://bucket``, as the guard matches declarations
    (:func:`~airflow_provider_lineage.lineage.canonical.match_key`)."""
    try:
        ns, nm = canonical_rules.index_key(namespace, name)
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
        want = {(ns, nm) for ns, nm, _ in keys if (ns, nm) not in self.ids}
        if not want:
            return
        names = sorted({nm for _, nm in want})
        for i in range(0, len(names), 500):
            for did, ns, nm in self.session.execute(select(s.dataset.c.id, s.dataset.c.namespace, s.dataset.c.name)
                                                    .where(s.dataset.c.name.in_(names[i:i + 500]))):
                self.ids[(ns, nm)] = did
        for ns, nm in sorted(want):
            if (ns, nm) in self.ids:
                continue
            from sqlalchemy.exc import IntegrityError

            try:
                with self.session.begin_nested():
                    # no table label here: a label belongs to the record that gives it (``_set_label``)
                    did = self.session.execute(s.dataset.insert().values(namespace=ns, name=nm)
                                               ).inserted_primary_key[0]
            except IntegrityError:  # another process inserted it meanwhile
                did = self.session.scalar(select(s.dataset.c.id).where(s.dataset.c.namespace == ns,
                                                                       s.dataset.c.name == nm))
            self.ids[(ns, nm)] = did


class BadRecord(ValueError):
    """A lineage record (right format marker) whose content cannot be indexed (the message says why)."""


def _text(value: Any, what: str, limit: int, problems: list[str]) -> str | None:
    """``value`` as a name the index can hold, else ``None`` with the reason added to ``problems``."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        problems.append(f"{what} is not a string")
        return None
    text = str(value)
    if "\x00" in text:
        problems.append(f"{what} contains a NUL byte")
        return None
    if len(text) > limit:
        problems.append(f"{what} is over {limit} characters ({len(text)})")
        return None
    return text


def _label_text(value: Any, limit: int) -> str | None:
    """A display-only value (type, subtype): NULs removed, cut to ``limit``; ``None`` when empty."""
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).replace("\x00", "")[:limit]
    return text or None


def _index(value: Any, ok: Sequence[bool]) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(ok) or not ok[value]:
        return None
    return value


def _lineage(record: dict[str, Any]) -> tuple[list[tuple[str, str, str | None]], dict[str, Any], str, list[str]]:
    """(dataset identities, the record's lineage by identity index, its digest, problems).

    Checks every element: a dataset whose identity the index cannot hold (not a string, a NUL byte,
    longer than its column) is left out with the edges and io rows that name it, a malformed edge or
    index is left out, and each is named in ``problems``. Raises :class:`BadRecord` when the record's
    shape is wrong (``datasets``, ``edges`` ... not lists).
    """
    raw = record.get("datasets")
    if not isinstance(raw, list):
        raise BadRecord("'datasets' is not a list")
    for key in ("inputs", "outputs", "edges", "dataset_edges"):
        if record.get(key) is not None and not isinstance(record.get(key), list):
            raise BadRecord(f"{key!r} is not a list")
    problems: list[str] = []
    idents: list[tuple[str, str, str | None]] = []
    ok: list[bool] = []
    for i, ds in enumerate(raw):
        if not isinstance(ds, dict):
            problems.append(f"dataset #{i} is not an object")
            idents.append(("", "", None))
            ok.append(False)
            continue
        found: list[str] = []
        ns_raw = _text(ds.get("namespace", ""), f"dataset #{i} namespace", 100_000, found)
        nm_raw = _text(ds.get("name", ""), f"dataset #{i} name", 100_000, found)
        if ns_raw is not None and nm_raw is not None:
            ns, nm = canonical(ns_raw, nm_raw)
            ns_ok = _text(ns, f"dataset #{i} namespace", s.MAX_NAMESPACE, found)
            nm_ok = _text(nm, f"dataset #{i} name", s.MAX_NAME, found)
        else:
            ns_ok = nm_ok = None
        if ns_ok is None or nm_ok is None:
            problems += [f"{p}: dataset left out" for p in found]
            idents.append(("", "", None))
            ok.append(False)
            continue
        table = ds.get("table")
        table = _text(table, f"dataset #{i} table", s.MAX_TABLE, []) if table is not None else None
        idents.append((ns_ok, nm_ok, table))
        ok.append(True)
    n_bad: dict[str, int] = {}

    def bad(what: str) -> None:
        n_bad[what] = n_bad.get(what, 0) + 1

    io_rows = set()
    for key, out in (("inputs", False), ("outputs", True)):
        for i in record.get(key) or []:
            j = _index(i, ok)
            if j is None:
                bad(key)
            else:
                io_rows.add((j, out))
    edges = []
    for e in record.get("edges") or []:
        if not isinstance(e, list) or len(e) != 7:
            bad("edges")
            continue
        out, col, src, src_field, typ, sub, masked = e
        out, src = _index(out, ok), _index(src, ok)
        col = _text(col, "column", s.MAX_COLUMN, [])
        src_field = _text(src_field, "column", s.MAX_COLUMN, [])
        if out is None or src is None or col is None or src_field is None:
            bad("edges")
            continue
        edges.append((out, col, src, src_field, _label_text(typ, 20) or "UNKNOWN", _label_text(sub, 40), bool(masked)))
    for e in record.get("dataset_edges") or []:
        if not isinstance(e, list) or len(e) != 6:
            bad("dataset_edges")
            continue
        out, src, src_field, typ, sub, masked = e
        out, src = _index(out, ok), _index(src, ok)
        src_field = _text(src_field, "column", s.MAX_COLUMN, [])
        if out is None or src is None or src_field is None:
            bad("dataset_edges")
            continue
        edges.append((out, "", src, src_field, _label_text(typ, 20) or "UNKNOWN", _label_text(sub, 40), bool(masked)))
    fields = []
    for i, ds in enumerate(raw):
        if not ok[i]:
            continue
        cols = ds.get("fields") or []
        if not isinstance(cols, list):
            bad("fields")
            continue
        for name_type in cols:
            if not isinstance(name_type, list) or not name_type:
                bad("fields")
                continue
            name = _text(name_type[0], "column", s.MAX_COLUMN, [])
            if not name:
                bad("fields")
                continue
            fields.append((i, name, _label_text(name_type[1], s.MAX_TYPE) if len(name_type) > 1 else None))
    problems += [f"{n} malformed {what} entr{'y' if n == 1 else 'ies'} left out" for what, n in sorted(n_bad.items())]
    # the table labels are part of the lineage's identity: a set shared by two records carries the labels of both
    body = {"d": [[a, b] for a, b, _ in idents], "io": sorted(io_rows), "e": edges, "f": fields,
            "t": [t for _, _, t in idents]}
    digest = hashlib.sha256(json.dumps(body, separators=(",", ":"), default=str).encode()).hexdigest()
    return idents, body, digest, problems


def _edge_set(session: Session, record: dict[str, Any], datasets: _Datasets,
              problems: list[str] | None = None) -> int:
    """The id of the record's edge set, inserted with its io rows, edges and fields if new.

    ``problems`` (if given) receives what :func:`_lineage` left out of the record."""
    idents, body, digest, found = _lineage(record)
    if problems is not None:
        problems += found
    found_ref = session.scalar(select(s.edge_set.c.id).where(s.edge_set.c.digest == digest))
    if found_ref is not None:
        return found_ref
    from sqlalchemy.exc import IntegrityError

    datasets.resolve([k for k in idents if k[0] or k[1]])
    ids = [datasets.ids.get((ns, nm)) for ns, nm, _ in idents]
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
    labels = sorted({(ids[i], t) for i, t in enumerate(body["t"]) if t and ids[i] is not None})
    if labels:
        session.execute(s.set_label.insert(), [{"set_ref": ref, "dataset_id": d, "table_name": t} for d, t in labels])
    fields: dict[tuple[int, str], str | None] = {}
    for i, name, typ in body["f"]:
        if typ or (ids[i], name) not in fields:
            fields[(ids[i], name)] = typ
    for e in edges:
        fields.setdefault((e["target_id"], e["target_col"]), None)
        fields.setdefault((e["source_id"], e["source_col"]), None)
    fields = {k: v for k, v in fields.items() if k[1]}
    rows = [{"set_ref": ref, "dataset_id": d, "name": n, "type": t} for (d, n), t in sorted(fields.items())]
    for i in range(0, len(rows), 5000):
        session.execute(s.set_field.insert(), rows[i:i + 5000])
    _upsert_fields(session, fields)
    return ref


def ingest(session: Session, *, dag_run_id: int, dag_id: str, task_id: str, run_id: str, map_index: int,
           record: dict[str, Any] | None, state: str | None = None, start_date: datetime | None = None,
           end_date: datetime | None = None, xcom_ts: datetime | None = None, owner: str | None = None,
           note: str | None = None, datasets: _Datasets | None = None) -> int | None:
    """Index one task run's record (``None``: an unreadable value, kept with ``note``); returns its row id.

    Replaces an earlier row of the same XCom (``dag_run_id, task_id, map_index``). A lineage already
    stored for another run (same digest) is shared, not stored again. Does not commit.

    Never raises for the record's content: a record whose lineage cannot be stored (malformed, or a
    value the database refuses) is kept as a ``problem`` row with the reason and no lineage; elements
    left out of a record are named in its ``note``. A concurrent writer that indexed the same XCom
    row first wins (its row id is returned). ``None``: not even the problem row could be written.
    """
    from sqlalchemy.exc import IntegrityError, SQLAlchemyError

    datasets = datasets or _Datasets(session)
    keep = dict(datasets.ids)
    row = {"dag_run_id": dag_run_id, "dag_id": str(dag_id)[:250], "task_id": str(task_id)[:250],
           "run_id": str(run_id)[:250], "map_index": map_index, "state": state and str(state)[:20],
           "start_date": start_date, "end_date": end_date, "xcom_ts": xcom_ts,
           "owner": (_label_text(owner, 500) if owner else None)}
    ok = record is not None and run_record.is_record(record)
    try:
        with session.begin_nested():
            delete_runs(session, session.execute(select(s.task_run.c.id).where(
                s.task_run.c.dag_run_id == dag_run_id, s.task_run.c.task_id == row["task_id"],
                s.task_run.c.map_index == map_index)).scalars().all())
            problems: list[str] = []
            set_ref = _edge_set(session, record, datasets, problems) if ok and record is not None else None
            job = (record.get("job") or {}) if ok and record is not None else {}
            if not isinstance(job, dict):
                problems.append("'job' is not an object")
                job = {}
            notes = ([note] if note else []) + problems
            return session.execute(s.task_run.insert().values(
                **row, set_ref=set_ref,
                status=(_label_text(record.get("status"), 20) or "ok") if ok and record is not None else "unreadable",
                job=_label_text(f"{job.get('namespace', '')}/{job.get('name', '')}", 1000) if job else None,
                note=("; ".join(notes)[:4000] or None) if ok else (
                    note or f"the XCom '{run_record.XCOM_KEY}' is not a lineage record"),
                problem=bool(notes) or not ok,
            )).inserted_primary_key[0]
    except IntegrityError:
        datasets.ids = keep
        existing = session.scalar(select(s.task_run.c.id).where(
            s.task_run.c.dag_run_id == dag_run_id, s.task_run.c.task_id == row["task_id"],
            s.task_run.c.map_index == map_index))
        if existing is not None:  # another updater indexed this XCom row meanwhile
            return existing
        reason = "the database refused the record (a concurrent change): indexed again at the next sync"
    except (BadRecord, SQLAlchemyError, TypeError, ValueError, KeyError, AttributeError) as exc:
        datasets.ids = keep
        reason = (
            f"the lineage record could not be indexed: {exc}"
            if isinstance(exc, BadRecord)
            else (
                f"the lineage record could not be indexed ({type(exc).__name__}): "
                f"{str(exc).splitlines()[0][:300] if str(exc) else ''}"
            )
        )
    log.warning("estate index: %s.%s run %s: %s", dag_id, task_id, run_id, reason)
    try:
        with session.begin_nested():
            return session.execute(s.task_run.insert().values(
                **row, set_ref=None, status="invalid", job=None, note=reason.replace("\x00", "")[:4000],
                problem=True)).inserted_primary_key[0]
    except SQLAlchemyError:
        log.warning("estate index: %s.%s run %s not indexed at all", dag_id, task_id, run_id, exc_info=True)
        return None


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
            session.execute(delete(s.set_field).where(s.set_field.c.set_ref.in_(part)))
            session.execute(delete(s.set_label).where(s.set_label.c.set_ref.in_(part)))
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
