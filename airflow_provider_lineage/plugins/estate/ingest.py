"""Writing one task run's lineage record into the estate index (:func:`ingest`), its edge set shared
with every run of the same lineage (one digest, one set), and deleting runs (:func:`delete_runs`).

The record is checked first (:mod:`.validate`); :mod:`.index` keeps the index in step with XCom by
calling :func:`ingest` for each new or changed XCom row.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select, update

from airflow_provider_lineage.lineage import run_record
from airflow_provider_lineage.plugins.estate import schema as s
from airflow_provider_lineage.plugins.estate.validate import BadRecord, label_text, lineage

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

log = logging.getLogger(__name__)


class Datasets:
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



def edge_set(session: Session, record: dict[str, Any], datasets: Datasets,
              problems: list[str] | None = None) -> int:
    """The id of the record's edge set, inserted with its io rows, edges and fields if new.

    ``problems`` (if given) receives what :func:`~.validate.lineage` left out of the record."""
    idents, body, digest, found = lineage(record)
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
           note: str | None = None, datasets: Datasets | None = None) -> int | None:
    """Index one task run's record (``None``: an unreadable value, kept with ``note``); returns its row id.

    Replaces an earlier row of the same XCom (``dag_run_id, task_id, map_index``). A lineage already
    stored for another run (same digest) is shared, not stored again. Does not commit.

    Never raises for the record's content: a record whose lineage cannot be stored (malformed, or a
    value the database refuses) is kept as a ``problem`` row with the reason and no lineage; elements
    left out of a record are named in its ``note``. A concurrent writer that indexed the same XCom
    row first wins (its row id is returned). ``None``: not even the problem row could be written.
    """
    from sqlalchemy.exc import IntegrityError, SQLAlchemyError

    datasets = datasets or Datasets(session)
    keep = dict(datasets.ids)
    row = {"dag_run_id": dag_run_id, "dag_id": str(dag_id)[:250], "task_id": str(task_id)[:250],
           "run_id": str(run_id)[:250], "map_index": map_index, "state": state and str(state)[:20],
           "start_date": start_date, "end_date": end_date, "xcom_ts": xcom_ts,
           "owner": (label_text(owner, 500) if owner else None)}
    ok = record is not None and run_record.is_record(record)
    try:
        with session.begin_nested():
            delete_runs(session, session.execute(select(s.task_run.c.id).where(
                s.task_run.c.dag_run_id == dag_run_id, s.task_run.c.task_id == row["task_id"],
                s.task_run.c.map_index == map_index)).scalars().all())
            problems: list[str] = []
            set_ref = edge_set(session, record, datasets, problems) if ok and record is not None else None
            job = (record.get("job") or {}) if ok and record is not None else {}
            if not isinstance(job, dict):
                problems.append("'job' is not an object")
                job = {}
            notes = ([note] if note else []) + problems
            return session.execute(s.task_run.insert().values(
                **row, set_ref=set_ref,
                status=(label_text(record.get("status"), 20) or "ok") if ok and record is not None else "unreadable",
                job=label_text(f"{job.get('namespace', '')}/{job.get('name', '')}", 1000) if job else None,
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
