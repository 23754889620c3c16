"""The estate index as of an instant: which run of each task produced what (time travel), the column
edges of those runs, dataset keys and labels, and what a user may see of them.

"As of T" every producing task (``dag_id, task_id, map_index``) contributes the lineage of its last
*successful* run that ended at or before T (:func:`producers_as_of`). Access: callers pass the DAG ids the
user may read; a dataset or column only other DAGs' records name is, for that user, as if it did not
exist (:func:`visible_datasets`, :func:`visible_columns`, :func:`labels_of`).
"""
from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select

from airflow_provider_lineage.plugins.estate import schema as s

if TYPE_CHECKING:
    from sqlalchemy.orm import Session


@dataclass(frozen=True)
class Run:
    """A task run of the index (the producer of edges)."""

    ref: int
    dag_id: str
    task_id: str
    run_id: str
    map_index: int
    state: str | None
    end_date: datetime | None
    owner: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["end_date"] = self.end_date.isoformat() if self.end_date else None
        return out


@dataclass(frozen=True)
class Edge:
    """One column edge (``target_col == ''``: dataset-wide) with the run that produced it."""

    source: tuple[str, str]
    source_col: str
    target: tuple[str, str]
    target_col: str
    type: str
    subtype: str | None
    masking: bool
    run: Run


Task = tuple[str, str, int]  # (dag_id, task_id, map_index)


class Producers:
    """The runs that count as of an instant, read lazily for the edge sets a request meets (one object per
    request: nothing is kept across requests, so nothing goes stale).

    :meth:`runs_of` maps edge sets to the *current* runs (each task's last successful run that ended at or
    before :attr:`as_of`) whose lineage is that set; :meth:`last` each task's last run of any state. One
    statement per batch of sets: the tasks that ever ran them (a covering index on ``(set_ref, dag_id,
    task_id, map_index)``), and for each such task one index descent of ``(dag_id, task_id, map_index,
    state, end_date)`` to its newest run (:func:`_heads`). A request's cost follows the part of the graph
    it shows, not the size of the estate.
    """

    def __init__(self, session: Session, as_of: datetime | None) -> None:
        self.session = session
        self.as_of = as_of
        self._done: set[int] = set()
        self._by_set: dict[int, dict[Task, Run]] = {}
        self._last: dict[Task, Run | None] = {}

    def runs_of(self, refs: Iterable[int]) -> dict[int, list[Run]]:
        """``{edge set: [current runs whose lineage it is]}`` for ``refs`` (sets no current run has: absent)."""
        refs = set(refs)
        want = sorted(refs - self._done)
        t = s.task_run.c
        for i in range(0, len(want), 500):
            tasks = (select(t.dag_id, t.task_id, t.map_index).where(t.set_ref.in_(want[i:i + 500]))
                     .distinct().subquery())
            for run, set_ref in _heads(self.session, tasks, self.as_of, success_only=True):
                if set_ref is not None:
                    self._by_set.setdefault(set_ref, {})[(run.dag_id, run.task_id, run.map_index)] = run
        self._done |= set(want)
        return {r: list(self._by_set[r].values()) for r in refs if self._by_set.get(r)}

    def last(self, task: Task) -> Run | None:
        """The task's last run of any state as of :attr:`as_of` (see :meth:`load_last`)."""
        if task not in self._last:
            self.load_last([task])
        return self._last.get(task)

    def load_last(self, tasks: Iterable[Task]) -> None:
        """Read the last run of any state of ``tasks`` in one statement per 300 tasks."""
        want = sorted({k for k in tasks if k not in self._last})
        t = s.task_run.c
        for i in range(0, len(want), 300):
            part = want[i:i + 300]
            for k in part:
                self._last[k] = None
            keys = (select(t.dag_id, t.task_id, t.map_index).where(
                t.dag_id.in_(sorted({k[0] for k in part}))).distinct().subquery())
            for run, _ in _heads(self.session, keys, self.as_of, success_only=False):
                key = (run.dag_id, run.task_id, run.map_index)
                if key in self._last:
                    self._last[key] = run

    def everything(self) -> dict[int, list[Run]]:
        """Every current run by its edge set (the whole estate: for :func:`edges_as_of`, not for requests)."""
        out: dict[int, list[Run]] = {}
        for run, set_ref in _latest(self.session, self.as_of, True):
            if set_ref is not None:
                out.setdefault(set_ref, []).append(run)
        return out


def _heads(session: Session, tasks: Any, as_of: datetime | None, *, success_only: bool) -> list[tuple[Run, int | None]]:
    """The newest run (successful only, or of any state) ended at or before ``as_of`` of each task of the
    subquery ``tasks`` (``dag_id, task_id, map_index``): a correlated ``ORDER BY end_date DESC LIMIT 1``
    per task, one index descent each (SQLite and PostgreSQL alike)."""
    t = s.task_run.c
    h = s.task_run.alias("head")
    cond = [h.c.dag_id == tasks.c.dag_id, h.c.task_id == tasks.c.task_id, h.c.map_index == tasks.c.map_index,
            h.c.end_date.is_not(None)]
    if success_only:
        cond.append(h.c.state == "success")
    if as_of is not None:
        cond.append(h.c.end_date <= as_of)
    head = (select(h.c.id).where(*cond).order_by(h.c.end_date.desc(), h.c.id.desc()).limit(1)
            .correlate(tasks).scalar_subquery())
    stmt = select(t.id, t.dag_id, t.task_id, t.run_id, t.map_index, t.state, t.end_date, t.owner, t.set_ref).where(
        t.id.in_(select(head).select_from(tasks)))
    return [(Run(r.id, r.dag_id, r.task_id, r.run_id, r.map_index, r.state, utc(r.end_date), r.owner), r.set_ref)
            for r in session.execute(stmt)]


def utc(ts: datetime | None) -> datetime | None:
    if ts is None:
        return None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def _latest(session: Session, as_of: datetime | None, success_only: bool,
            dag_ids: Collection[str] | None = None) -> list[tuple[Run, int | None]]:
    """Each task's newest run (successful only, or of any state) that ended at or before ``as_of``
    (of the DAGs ``dag_ids``, default all).

    A GROUP BY over the ``(dag_id, task_id, map_index, state, end_date)`` index joined back to the rows
    (cheaper than a window function's sort on SQLite); ties on the end time keep the newest row.
    """
    t = s.task_run.c
    cond = [t.end_date.is_not(None)]
    if success_only:
        cond.append(t.state == "success")
    if as_of is not None:
        cond.append(t.end_date <= as_of)
    if dag_ids is not None:
        cond.append(t.dag_id.in_(sorted(dag_ids)))
    sub = (select(t.dag_id, t.task_id, t.map_index, func.max(t.end_date).label("m")).where(*cond)
           .group_by(t.dag_id, t.task_id, t.map_index).subquery())
    stmt = select(t.id, t.dag_id, t.task_id, t.run_id, t.map_index, t.state, t.end_date, t.owner, t.set_ref).join(
        sub, (t.dag_id == sub.c.dag_id) & (t.task_id == sub.c.task_id) & (t.map_index == sub.c.map_index)
        & (t.end_date == sub.c.m)).where(*cond)
    best: dict[tuple[str, str, int], Any] = {}
    for r in session.execute(stmt):
        k = (r.dag_id, r.task_id, r.map_index)
        if k not in best or r.id > best[k].id:
            best[k] = r
    return [(Run(r.id, r.dag_id, r.task_id, r.run_id, r.map_index, r.state, utc(r.end_date), r.owner), r.set_ref)
            for r in best.values()]


def producers_as_of(session: Session, as_of: datetime | None = None) -> Producers:
    """The producers as of ``as_of`` (default now), read lazily (see :class:`Producers`)."""
    return Producers(session, utc(as_of))


def dataset_keys(session: Session, ids: Iterable[int], *, labels: bool = False,
                  readable: Collection[str] | None = None) -> dict[int, tuple[str, str, str | None]]:
    """``{id: (namespace, name, label)}``; the label (a catalog table name) only with ``labels``, and then
    only one that a record of a ``readable`` DAG gives (``None``: any record's)."""
    ids = sorted(set(ids))
    out: dict[int, tuple[str, str, str | None]] = {}
    d = s.dataset.c
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        stmt = select(d.id, d.namespace, d.name).where(d.id.in_(part))
        if labels:
            lab = labels_of(readable, part)
            stmt = select(d.id, d.namespace, d.name, lab.c.table_name).outerjoin(lab, lab.c.dataset_id == d.id).where(
                d.id.in_(part))
        for r in session.execute(stmt):
            out[r.id] = (r.namespace, r.name, r.table_name if labels else None)
    return out


def labels_of(readable: Collection[str] | None, ids: Collection[int] | None = None, sets: Any = None) -> Any:
    """A subquery ``(dataset_id, table_name)``: each dataset's display label, the (smallest) catalog table name
    a record of a ``readable`` DAG (``None``: any) gives it (of the datasets ``ids``; ``None``: all). Never a
    label only other DAGs' records give: it would name what the user may not read. A FROM-clause subquery (the
    readable edge sets looked up once), never a correlated one (SQLite would look them up again per row)."""
    sl = s.set_label.c
    q = select(sl.dataset_id, func.min(sl.table_name).label("table_name"))
    if ids is not None:
        q = q.where(sl.dataset_id.in_(sorted(ids)))
    if sets is not None:  # the caller's readable edge sets (a CTE)
        q = q.where(sl.set_ref.in_(sets))
    elif readable is not None:
        q = q.where(sl.set_ref.in_(readable_sets(readable)))
    return q.group_by(sl.dataset_id).subquery()


def storable(text: str, limit: int) -> bool:
    """Whether ``text`` could be a name of the index (no NUL byte, at most ``limit`` characters): a value
    that could not is looked up nowhere (PostgreSQL refuses a NUL in a parameter)."""
    return "\x00" not in text and len(text) <= limit


def dataset_id(session: Session, namespace: str, name: str) -> int | None:
    """The index's id of a dataset identity, ``None`` if no record names it. A pair spelled otherwise than
    the index keeps it (``s3a://Bucket/`` + ``/data/x/``, a partition folder, a full location in ``name``) is
    looked up under the identity the guard matches declarations on (:func:`...lineage.canonical.match_key`)."""
    from airflow_provider_lineage.lineage import canonical

    found = None
    for ns, nm in dict.fromkeys([(namespace, name), canonical.match_key(namespace, name)]):
        if found is None and storable(ns, s.MAX_NAMESPACE) and storable(nm, s.MAX_NAME):
            found = session.scalar(select(s.dataset.c.id).where(s.dataset.c.namespace == ns, s.dataset.c.name == nm))
    return found


def edges_as_of(session: Session, as_of: datetime | None = None, dag_ids: Collection[str] | None = None) -> list[Edge]:
    """Every column edge of the estate as of ``as_of`` (default now), of the DAGs ``dag_ids`` (default all)."""
    prod = producers_as_of(session, as_of)
    sets = {ref: [r for r in runs if dag_ids is None or r.dag_id in dag_ids] for ref, runs in prod.everything().items()}
    sets = {ref: runs for ref, runs in sets.items() if runs}
    rows = []
    refs = sorted(sets)
    for i in range(0, len(refs), 500):
        rows += session.execute(select(s.edge).where(s.edge.c.set_ref.in_(refs[i:i + 500]))).all()
    keys = dataset_keys(session, [r.source_id for r in rows] + [r.target_id for r in rows])
    return [Edge(keys[r.source_id][:2], r.source_col, keys[r.target_id][:2], r.target_col, r.type, r.subtype,
                 bool(r.masking), run) for r in rows for run in sets[r.set_ref]]


def short_label(name: str, table: str | None) -> str:
    if table:
        return table
    parts = [p for p in name.split("/") if p]
    return "/".join(parts[-2:]) or name


def readable_sets(readable: Collection[str]) -> Any:
    """The edge sets some run of a ``readable`` DAG has (a subquery for ``IN``)."""
    t = s.task_run.c
    return select(t.set_ref).where(t.dag_id.in_(sorted(readable)), t.set_ref.is_not(None))


def visible_datasets(session: Session, ids: Collection[int], readable: Collection[str]) -> set[int]:
    """The datasets of ``ids`` that an indexed record of a ``readable`` DAG names (reads, writes, or lists
    columns of): the others are, for this user, as if they did not exist."""
    out: set[int] = set()
    ordered = sorted(set(ids))
    if not readable:
        return out
    for i in range(0, len(ordered), 300):
        part = ordered[i:i + 300]
        stmt = (select(s.io.c.dataset_id, s.task_run.c.dag_id).join(s.task_run, s.task_run.c.set_ref == s.io.c.set_ref)
                .where(s.io.c.dataset_id.in_(part)).distinct())
        out |= {r.dataset_id for r in session.execute(stmt) if r.dag_id in readable}
        rest = [d for d in part if d not in out]
        if rest:
            sf = s.set_field.c
            out |= set(session.execute(select(sf.dataset_id).where(
                sf.dataset_id.in_(rest), sf.set_ref.in_(readable_sets(readable))).distinct()).scalars())
    return out


def visible_columns(session: Session, did: int, columns: Collection[str], readable: Collection[str]) -> set[str]:
    """The columns of ``columns`` of dataset ``did`` that an indexed record of a ``readable`` DAG names."""
    columns = [c for c in columns if storable(c, s.MAX_COLUMN)]
    if not readable or not columns:
        return set()
    sf = s.set_field.c
    return set(session.execute(select(sf.name).where(
        sf.dataset_id == did, sf.name.in_(sorted(set(columns))), sf.set_ref.in_(readable_sets(readable))
    ).distinct()).scalars())
