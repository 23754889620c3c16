"""The estate's lists: datasets and columns by name (:func:`search`), recent lineage runs (:func:`runs`)
and the records the index skipped or cut (:func:`problems`), each named only for readable DAGs.
"""
from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select

from airflow_provider_lineage.plugins.estate import schema as s
from airflow_provider_lineage.plugins.estate.asof import labels_of, readable_sets, short_label, utc

if TYPE_CHECKING:
    from sqlalchemy.orm import Session


def _contains(session: Session, col: Any, like: str) -> Any:
    """``col`` contains the pattern, ignoring case: SQLite's ``LIKE`` already ignores ASCII case (and a
    ``lower()`` per row costs 4x the scan), PostgreSQL needs ``ILIKE``."""
    if session.get_bind().dialect.name == "sqlite":
        return col.like(like, escape="\\")
    return col.ilike(like, escape="\\")


#: A search answers at most this many hits per page, and pages no further than this many hits in.
SEARCH_MAX_LIMIT = 500
SEARCH_MAX_OFFSET = 10_000


def search(session: Session, q: str, *, limit: int = 50, readable: Collection[str] | None = None,
           offset: int = 0) -> list[dict[str, Any]]:
    """Datasets and columns whose name (or label) contains ``q`` (case-insensitive), named by indexed
    records of ``readable`` DAGs (``None``: all): hits ``offset`` to ``offset + limit`` (datasets first, by
    id, then columns, by name and dataset). A dataset, column or label only records of other DAGs name is
    never a hit, nor what makes one.

    Two statements whatever the user may read (bounded for everyone): the access filter runs in SQL
    (the edge sets of the runs of readable DAGs, a subquery), never a page at a time in Python. Datasets:
    ``LIKE``/``ILIKE`` over their names and their readable labels, kept when a readable record reads,
    writes or lists columns of them. Columns: the distinct names that match (``apl_estate_column_name``),
    their per-record columns (``apl_estate_set_field``) of readable edge sets.
    """
    text = q.strip().lower()
    if not text or "\x00" in text or (readable is not None and not readable):
        return []
    want = offset + limit
    like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    d, sl, sf = s.dataset.c, s.set_label.c, s.set_field.c
    # the readable edge sets once per statement (a CTE: the DAG ids are bound once, not once per use)
    sets = select(readable_sets(readable).cte("apl_readable_sets").c.set_ref) if readable is not None else None
    lab = labels_of(readable, sets=sets)
    # every subquery here is uncorrelated (evaluated once per statement), whatever the user may read
    by_label = select(sl.dataset_id).where(_contains(session, sl.table_name, like))
    if sets is not None:
        by_label = by_label.where(sl.set_ref.in_(sets))
    dq = (select(d.id, d.namespace, d.name, lab.c.table_name).outerjoin(lab, lab.c.dataset_id == d.id)
          .where(_contains(session, d.name, like) | d.id.in_(by_label)))
    if sets is not None:
        dq = dq.where(d.id.in_(select(s.io.c.dataset_id).where(s.io.c.set_ref.in_(sets)))
                      | d.id.in_(select(sf.dataset_id).where(sf.set_ref.in_(sets))))
    hits: list[dict[str, Any]] = [
        {"namespace": r.namespace, "name": r.name, "label": short_label(r.name, r.table_name), "column": ""}
        for r in session.execute(dq.order_by(d.id).limit(want))]
    if len(hits) < want:
        names = select(s.column_name.c.name).where(_contains(session, s.column_name.c.name, like))
        # the page of (column, dataset) pairs in index order (apl_estate_set_field_name), then their names and labels
        fq = (select(sf.name.label("column"), sf.dataset_id, func.max(sf.type).label("type"))
              .where(sf.name.in_(names)).group_by(sf.name, sf.dataset_id).order_by(sf.name, sf.dataset_id)
              .limit(want - len(hits)))
        if sets is not None:
            fq = fq.where(sf.set_ref.in_(sets))
        page = fq.subquery()
        fq = (select(d.namespace, d.name, page.c.column, page.c.type, lab.c.table_name)
              .join(s.dataset, d.id == page.c.dataset_id).outerjoin(lab, lab.c.dataset_id == d.id)
              .order_by(page.c.column, page.c.dataset_id))
        hits += [{"namespace": r.namespace, "name": r.name, "label": short_label(r.name, r.table_name),
                  "column": r.column, "type": r.type} for r in session.execute(fq)]
    return hits[offset:want]


def runs(session: Session, *, readable: Collection[str] | None = None, dag_id: str | None = None,
         limit: int = 200, offset: int = 0) -> list[dict[str, Any]]:
    """Recent finished lineage runs (for the as-of run picker): DAG, run, end time (newest first)."""
    t = s.task_run.c
    stmt = select(t.dag_id, t.run_id, func.max(t.end_date).label("end")).where(t.end_date.is_not(None)).group_by(
        t.dag_id, t.run_id).order_by(func.max(t.end_date).desc(), t.dag_id, t.run_id).limit(limit).offset(offset)
    if dag_id is not None:
        stmt = stmt.where(t.dag_id == dag_id)
    if readable is not None:
        stmt = stmt.where(t.dag_id.in_(sorted(readable)))
    return [{"dag_id": r.dag_id, "run_id": r.run_id, "end": utc(r.end).isoformat() if r.end else None}
            for r in session.execute(stmt)]


def problems(session: Session, *, readable: Collection[str] | None = None, limit: int = 20,
             offset: int = 0) -> dict[str, Any]:
    """Records the index skipped or indexed in part: ``{"problems": [{dag_id, task_id, run_id, map_index,
    status, reason}], "total": N, "hidden": M}`` -- named for the ``readable`` DAGs (newest first),
    ``hidden`` the number of such records of other DAGs (counted, never named)."""
    t = s.task_run.c
    counts = session.execute(select(t.dag_id, func.count()).where(t.problem.is_(True)).group_by(t.dag_id)).all()
    total = sum(n for dag, n in counts if readable is None or dag in readable)
    hidden = sum(n for dag, n in counts if readable is not None and dag not in readable)
    shown: list[dict[str, Any]] = []
    if total and limit:
        stmt = (select(t.dag_id, t.task_id, t.run_id, t.map_index, t.status, t.note).where(t.problem.is_(True))
                .order_by(t.xcom_ts.desc(), t.id.desc()).limit(limit).offset(offset))
        if readable is not None:
            stmt = stmt.where(t.dag_id.in_(sorted(readable)))
        shown = [{"dag_id": r.dag_id, "task_id": r.task_id, "run_id": r.run_id, "map_index": r.map_index,
                  "status": r.status, "reason": r.note} for r in session.execute(stmt)]
    return {"problems": shown, "total": total, "hidden": hidden}
