"""The estate index's read side: column edges as of an instant, traversal, impact, graph, diff, search.

Time travel: "as of T" every producing task (``dag_id, task_id, map_index``) contributes the lineage of
its last *successful* run that ended at or before T (:func:`producers_as_of`). Access: the caller passes
the DAG ids the user may read; an edge of another DAG is never named, only counted (``hidden``).

Functions meant for reuse (e.g. tag propagation): :func:`edges_as_of` (every column edge of the estate
as of T, with type, subtype, masking and its DAG/task/run) and :func:`traverse` (up/downstream walk).
"""
from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select

from airflow_provider_lineage.plugins.estate import schema as s

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

MAX_DEPTH = 20
#: Nodes (dataset, column) one impact traversal reaches at most; beyond, the answer says ``truncated``.
IMPACT_MAX_NODES = 20_000
#: Column edges one graph answer holds at most (the ``limit`` parameter's maximum; default 2,000).
GRAPH_MAX_EDGES = 10_000
GRAPH_DEFAULT_EDGES = 2_000


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
    return [(Run(r.id, r.dag_id, r.task_id, r.run_id, r.map_index, r.state, _utc(r.end_date), r.owner), r.set_ref)
            for r in session.execute(stmt)]


def _utc(ts: datetime | None) -> datetime | None:
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
    return [(Run(r.id, r.dag_id, r.task_id, r.run_id, r.map_index, r.state, _utc(r.end_date), r.owner), r.set_ref)
            for r in best.values()]


def producers_as_of(session: Session, as_of: datetime | None = None) -> Producers:
    """The producers as of ``as_of`` (default now), read lazily (see :class:`Producers`)."""
    return Producers(session, _utc(as_of))


def _dataset_keys(session: Session, ids: Iterable[int], *, labels: bool = False,
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
        q = q.where(sl.set_ref.in_(_readable_sets(readable)))
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
    keys = _dataset_keys(session, [r.source_id for r in rows] + [r.target_id for r in rows])
    return [Edge(keys[r.source_id][:2], r.source_col, keys[r.target_id][:2], r.target_col, r.type, r.subtype,
                 bool(r.masking), run) for r in rows for run in sets[r.set_ref]]


Node = tuple[int, str]  # (dataset id, column; '' = the whole dataset)


@dataclass
class Step:
    """An edge the traversal followed (ids), with the run that produced it."""

    source: Node
    target: Node
    type: str
    subtype: str | None
    masking: bool
    run: Run


@dataclass
class Traversal:
    """What :func:`traverse` reached: ``depth`` and first ``parent`` step of each node, all ``steps``,
    and the nodes reachable only through DAGs the user may not read (``hidden``: counted, never named)."""

    start: list[Node]
    direction: str
    depth: dict[Node, int] = field(default_factory=dict)
    parent: dict[Node, Step] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    hidden: set[Node] = field(default_factory=set)
    frontier_more: dict[Node, int] = field(default_factory=dict)
    cut: bool = False


def _hop(session: Session, nodes: Collection[Node], direction: str, prod: Producers,
         blind: Collection[Node] = ()) -> list[Step]:
    """The edges one hop from ``nodes`` (col '' in ``nodes``: any column of the dataset), of current runs.

    ``blind``: nodes whose own column edges are not followed (a start column the user cannot see: it
    must answer as a column that does not exist would, which still depends on dataset-wide edges)."""
    by_ds: dict[int, set[str]] = {}
    for d, c in nodes:
        by_ds.setdefault(d, set()).add(c)
    e = s.edge.c
    mine, theirs_col = (e.source_id, e.source_col) if direction == "downstream" else (e.target_id, e.target_col)
    ids = sorted(by_ds)
    cols = {c for cs in by_ds.values() for c in cs if storable(c, s.MAX_COLUMN)}
    col_filter = None
    if "" not in cols and len(cols) <= 500:  # narrow by column in SQL too (the pairs are checked below)
        col_filter = theirs_col.in_(sorted(cols | ({""} if direction == "upstream" else set())))
    rows = []
    for i in range(0, len(ids), 300):
        stmt = select(s.edge).where(mine.in_(ids[i:i + 300]))
        if col_filter is not None:
            stmt = stmt.where(col_filter)
        for r in session.execute(stmt):
            d, c = (r.source_id, r.source_col) if direction == "downstream" else (r.target_id, r.target_col)
            cols = by_ds[d]
            if "" not in cols and c not in cols and not (direction == "upstream" and c == ""):
                continue
            if c and (d, c) in blind and "" not in cols:
                continue
            rows.append(r)
    current = prod.runs_of({r.set_ref for r in rows})
    out: list[Step] = []
    for r in rows:
        for run in current.get(r.set_ref, ()):
            out.append(Step((r.source_id, r.source_col), (r.target_id, r.target_col), r.type, r.subtype,
                            bool(r.masking), run))
    return out


def traverse(session: Session, start: Iterable[Node], *, direction: str = "downstream", depth: int = 1,
             as_of: datetime | None = None, readable: Collection[str] | None = None,
             producers: Producers | None = None, blind: Collection[Node] = (),
             max_nodes: int | None = None) -> Traversal:
    """Walk column edges from ``start`` up or downstream to ``depth`` hops, as of ``as_of``.

    :param start: ``(dataset id, column)`` nodes; column ``''`` starts from every column of the dataset.
    :param direction: ``downstream`` (what this feeds) or ``upstream`` (what feeds this).
    :param readable: DAG ids whose edges may be followed and named (``None``: all); others are counted.
    :param blind: start nodes whose column the user cannot see (:func:`visible_columns`): their own
        column edges are not followed, so that they answer (``hidden`` included) as an unknown column.
    :param max_nodes: stop at this many reached nodes (``cut`` is then set); ``None``: no bound.
    A dataset-wide (INDIRECT) edge reaches ``(dataset, '')`` downstream, which is not expanded further;
    upstream, a column also depends on the dataset-wide edges into its dataset.
    """
    if direction not in ("downstream", "upstream"):
        raise ValueError(f"direction must be 'downstream' or 'upstream', not {direction!r}")
    prod = producers or producers_as_of(session, as_of)
    start = list(dict.fromkeys(start))
    tr = Traversal(start, direction)
    for n in start:
        tr.depth[n] = 0
    frontier = list(start)
    for level in range(1, max(0, min(depth, MAX_DEPTH)) + 1):
        if not frontier:
            break
        nxt: list[Node] = []
        for st in _hop(session, frontier, direction, prod, blind):
            other = st.target if direction == "downstream" else st.source
            if readable is not None and st.run.dag_id not in readable:
                if other not in tr.depth:
                    tr.hidden.add(other)
                continue
            if other not in tr.depth and max_nodes is not None and len(tr.depth) >= max_nodes:
                tr.cut = True
                continue
            tr.steps.append(st)
            if other not in tr.depth:
                tr.depth[other] = level
                tr.parent[other] = st
                if not (direction == "downstream" and other[1] == ""):
                    nxt.append(other)
        frontier = nxt
    tr.hidden -= set(tr.depth)
    if frontier and not tr.cut:  # how many more nodes one hop beyond the depth limit (the page's "+N")
        for st in _hop(session, frontier, direction, prod, blind):
            if readable is not None and st.run.dag_id not in readable:
                continue
            here, other = (st.source, st.target) if direction == "downstream" else (st.target, st.source)
            if other not in tr.depth:
                tr.frontier_more[here] = tr.frontier_more.get(here, 0) + 1
    return tr


def _label(key: tuple[str, str, str | None], col: str) -> str:
    return f"{key[0]}:{key[1]}" + (f"#{col}" if col else "")


IMPACT_COLUMNS = ("namespace", "name", "column", "depth", "dag_id", "task_id", "run_id", "path", "types", "masked")


def _start(session: Session, namespace: str, name: str, column: str,
           readable: Collection[str] | None) -> tuple[Node | None, bool]:
    """The start node of a request, and whether its column is hidden from the user (``blind``).

    ``None`` when the dataset is unknown *or* only DAGs the user may not read name it: both answer the
    same. A column that only such DAGs name is "blind": it is walked as an unknown column would be."""
    did = dataset_id(session, namespace, name)
    if did is None:
        return None, False
    if readable is not None and did not in visible_datasets(session, [did], readable):
        return None, False
    blind = bool(column) and readable is not None and not visible_columns(session, did, [column], readable)
    return (did, column or ""), blind


def impact(session: Session, namespace: str, name: str, column: str = "", *, direction: str = "downstream",
           depth: int = 5, as_of: datetime | None = None, readable: Collection[str] | None = None,
           limit: int | None = None, offset: int = 0, max_nodes: int = IMPACT_MAX_NODES) -> dict[str, Any]:
    """The impact list (``docs/ui.md``): ``{"rows": [...], "hidden": N, "total": N, "truncated": bool}``,
    rows in :data:`IMPACT_COLUMNS`, ``rows[offset:offset + limit]`` of ``total``.

    One row per reached column (``column`` ``''``: the whole dataset, via a dataset-wide edge) and per
    task producing the edge that reached it first: ``path`` the nodes from the start joined by `` > ``
    (``namespace:name#column``), ``types`` the edges' ``TYPE/SUBTYPE`` joined the same way, ``masked``
    whether any edge on the path masks. ``hidden``: columns reachable only through DAGs not readable.
    A dataset (or column) only unreadable DAGs name answers as an unknown one: no rows, ``hidden`` 0.
    ``truncated``: the walk stopped at ``max_nodes`` reached columns.
    """
    start, blind = _start(session, namespace, name, column, readable)
    if start is None:
        return {"rows": [], "hidden": 0, "total": 0, "truncated": False}
    tr = traverse(session, [start], direction=direction, depth=depth, as_of=as_of, readable=readable,
                  blind={start} if blind else (), max_nodes=max_nodes)
    keys = _dataset_keys(session, [n[0] for n in tr.depth])
    order = sorted(
        ((node, d) for node, d in tr.depth.items() if d), key=lambda kv: (kv[1], keys[kv[0][0]][:2], kv[0][1])
    )
    total = len(order)
    page = order[offset:] if limit is None else order[offset:offset + limit]
    rows = []
    for node, d in page:
        chain: list[Step] = []
        at = node
        while at in tr.parent:
            st = tr.parent[at]
            chain.append(st)
            at = st.source if direction == "downstream" else st.target
        chain.reverse()
        first = chain[0].source if direction == "downstream" else chain[0].target
        nodes = [first] + [(st.target if direction == "downstream" else st.source) for st in chain]
        last = chain[-1]
        ns, nm, _ = keys[node[0]]
        rows.append({
            "namespace": ns, "name": nm, "column": node[1], "depth": d,
            "dag_id": last.run.dag_id, "task_id": last.run.task_id, "run_id": last.run.run_id,
            "path": " > ".join(_label(keys[n[0]], n[1]) for n in nodes),
            "types": " > ".join(f"{st.type}/{st.subtype}" if st.subtype else st.type for st in chain),
            "masked": any(st.masking for st in chain),
        })
    return {"rows": rows, "hidden": len(tr.hidden), "total": total, "truncated": tr.cut}


def graph(session: Session, starts: Iterable[tuple[str, str, str]], *, depth: int = 1,
          as_of: datetime | None = None, readable: Collection[str] | None = None,
          link: Any = None, limit: int = GRAPH_DEFAULT_EDGES) -> dict[str, Any]:
    """The estate graph around ``starts`` (``(namespace, name, column)``; column ``''``: whole dataset).

    ``depth`` hops each way. Answer: ``datasets`` (with fields, ``more_up`` / ``more_down``: neighbours
    beyond the shown depth, ``hidden_up`` / ``hidden_down``: neighbours only through DAGs the user may
    not read), column ``edges`` and table-level ``dataset_edges`` (each with ``dag_id``, ``task_id``,
    ``run_id``, ``run`` end time, ``last_run`` of the task, ``url`` of the run's tab), ``hidden``,
    ``missing`` (the starts that are unknown *or* named only by DAGs the user may not read: the same),
    ``truncated`` (the walk stopped at ``limit`` column edges / reached columns).

    A dataset's ``fields`` are those of the records current as of ``as_of`` (each producing task's last
    successful run then) of the DAGs the user may read (:func:`fields_as_of`): a column added later is
    absent, a dropped one gone, one only hidden DAGs name never listed.
    """
    prod = producers_as_of(session, as_of)
    start_nodes: list[Node] = []
    blind: set[Node] = set()
    missing = []
    for ns, nm, col in starts:
        node, is_blind = _start(session, ns, nm, col, readable)
        if node is None:
            missing.append(f"{ns}:{nm}")
        else:
            start_nodes.append(node)
            if is_blind:
                blind.add(node)
    down = traverse(session, start_nodes, direction="downstream", depth=depth, readable=readable, producers=prod,
                    blind=blind, max_nodes=limit)
    up = traverse(session, start_nodes, direction="upstream", depth=depth, readable=readable, producers=prod,
                  blind=blind, max_nodes=limit)
    ds_ids = {n[0] for n in list(down.depth) + list(up.depth)}
    keys = _dataset_keys(session, ds_ids, labels=True, readable=readable)
    fields = fields_as_of(session, ds_ids, prod, readable)

    def did_key(d: int) -> str:
        return f"{keys[d][0]}:{keys[d][1]}"

    def run_json(run: Run) -> dict[str, Any]:
        last = prod.last((run.dag_id, run.task_id, run.map_index)) or run
        return {"dag_id": run.dag_id, "task_id": run.task_id, "run_id": run.run_id, "map_index": run.map_index,
                "owner": run.owner, "run_end": run.end_date.isoformat() if run.end_date else None,
                "last_run": {"run_id": last.run_id, "state": last.state,
                             "end": last.end_date.isoformat() if last.end_date else None},
                "url": link(run) if link else None}

    edges: dict[tuple[Any, ...], dict[str, Any]] = {}
    table: dict[tuple[Any, ...], dict[str, Any]] = {}
    prod.load_last({(st.run.dag_id, st.run.task_id, st.run.map_index) for st in down.steps + up.steps})
    cut = down.cut or up.cut
    for st in down.steps + up.steps:
        k = (st.source, st.target, st.type, st.subtype, st.masking, st.run.dag_id, st.run.task_id, st.run.map_index)
        if k in edges:
            continue
        if len(edges) >= limit:
            cut = True
            break
        if st.source[0] not in keys or st.target[0] not in keys:
            continue
        edges[k] = {"source": did_key(st.source[0]), "source_field": st.source[1], "target": did_key(st.target[0]),
                    "target_field": st.target[1], "type": st.type, "subtype": st.subtype, "masking": st.masking,
                    **run_json(st.run)}
        tk = (st.source[0], st.target[0], st.run.dag_id, st.run.task_id, st.run.map_index)
        if tk not in table:
            table[tk] = {"source": did_key(st.source[0]), "target": did_key(st.target[0]), **run_json(st.run)}
    more_down: dict[int, int] = {}
    more_up: dict[int, int] = {}
    for n, c in down.frontier_more.items():
        more_down[n[0]] = more_down.get(n[0], 0) + c
    for n, c in up.frontier_more.items():
        more_up[n[0]] = more_up.get(n[0], 0) + c
    hid_down: dict[int, int] = {}
    hid_up: dict[int, int] = {}
    for tr, acc in ((down, hid_down), (up, hid_up)):
        for st in _hop(session, list(tr.depth), tr.direction, prod, blind) if readable is not None else []:
            if st.run.dag_id in readable:  # type: ignore[operator]
                continue
            here = st.source if tr.direction == "downstream" else st.target
            acc[here[0]] = acc.get(here[0], 0) + 1
    start_ids = {n[0] for n in start_nodes}
    datasets = []
    for d in sorted(ds_ids, key=lambda x: keys[x][:2]):
        ns, nm, table_name = keys[d]
        datasets.append({"id": f"{ns}:{nm}", "namespace": ns, "name": nm, "table": table_name,
                         "label": _short(nm, table_name), "fields": fields[d], "start": d in start_ids,
                         "depth": min([v for n, v in list(down.depth.items()) + list(up.depth.items()) if n[0] == d]),
                         "more_down": more_down.get(d, 0), "more_up": more_up.get(d, 0),
                         "hidden_down": hid_down.get(d, 0), "hidden_up": hid_up.get(d, 0)})
    return {"as_of": prod.as_of.isoformat() if prod.as_of else None, "depth": depth, "datasets": datasets,
            "edges": list(edges.values()), "dataset_edges": list(table.values()),
            "hidden": len(down.hidden | up.hidden), "missing": missing, "truncated": cut, "limit": limit}


def fields_as_of(session: Session, ds_ids: Collection[int], prod: Producers,
                 readable: Collection[str] | None) -> dict[int, list[dict[str, Any]]]:
    """The field list of each dataset of ``ds_ids`` as of ``prod.as_of``: the columns that the records of
    the current runs (of DAGs ``readable``) name, with the type of the newest such run that gives one."""
    out: dict[int, dict[str, tuple[Any, str | None]]] = {d: {} for d in ds_ids}
    ids = sorted(ds_ids)
    sf = s.set_field.c
    for i in range(0, len(ids), 500):
        rows = session.execute(select(sf.set_ref, sf.dataset_id, sf.name, sf.type)
                               .where(sf.dataset_id.in_(ids[i:i + 500]))).all()
        current = prod.runs_of({r.set_ref for r in rows})
        for r in rows:
            runs = [run for run in current.get(r.set_ref, ()) if readable is None or run.dag_id in readable]
            if not runs:
                continue
            when = max((run.end_date or datetime.min.replace(tzinfo=UTC), run.ref) for run in runs)
            have = out[r.dataset_id].get(r.name)
            if have is None or (r.type and (not have[1] or when > have[0])):
                out[r.dataset_id][r.name] = (when, r.type)
    return {d: [{"name": n, "type": typ or "unknown"} for n, (_, typ) in sorted(cols.items())]
            for d, cols in out.items()}


def _short(name: str, table: str | None) -> str:
    if table:
        return table
    parts = [p for p in name.split("/") if p]
    return "/".join(parts[-2:]) or name


def diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Datasets, columns and edges added / removed between two :func:`graph` answers."""
    def cols(g: dict[str, Any]) -> set[tuple[str, str]]:
        return {(d["id"], f["name"]) for d in g["datasets"] for f in d["fields"]}

    def eds(g: dict[str, Any]) -> set[tuple[Any, ...]]:
        return {(e["source"], e["source_field"], e["target"], e["target_field"], e["type"], e["subtype"],
                 e["masking"], e["dag_id"], e["task_id"]) for e in g["edges"]}

    def pack(items: set[Any], names: tuple[str, ...]) -> list[dict[str, Any]]:
        return [dict(zip(names, i)) for i in sorted(items, key=str)]

    ds_b, ds_a = {d["id"] for d in before["datasets"]}, {d["id"] for d in after["datasets"]}
    enames = ("source", "source_field", "target", "target_field", "type", "subtype", "masking", "dag_id", "task_id")
    return {
        "added": {"datasets": sorted(ds_a - ds_b), "columns": pack(cols(after) - cols(before), ("dataset", "column")),
                  "edges": pack(eds(after) - eds(before), enames)},
        "removed": {"datasets": sorted(ds_b - ds_a), "columns": pack(cols(before) - cols(after), ("dataset", "column")),
                    "edges": pack(eds(before) - eds(after), enames)},
    }


def _contains(session: Session, col: Any, like: str) -> Any:
    """``col`` contains the pattern, ignoring case: SQLite's ``LIKE`` already ignores ASCII case (and a
    ``lower()`` per row costs 4x the scan), PostgreSQL needs ``ILIKE``."""
    if session.get_bind().dialect.name == "sqlite":
        return col.like(like, escape="\\")
    return col.ilike(like, escape="\\")


def _readable_sets(readable: Collection[str]) -> Any:
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
                sf.dataset_id.in_(rest), sf.set_ref.in_(_readable_sets(readable))).distinct()).scalars())
    return out


def visible_columns(session: Session, did: int, columns: Collection[str], readable: Collection[str]) -> set[str]:
    """The columns of ``columns`` of dataset ``did`` that an indexed record of a ``readable`` DAG names."""
    columns = [c for c in columns if storable(c, s.MAX_COLUMN)]
    if not readable or not columns:
        return set()
    sf = s.set_field.c
    return set(session.execute(select(sf.name).where(
        sf.dataset_id == did, sf.name.in_(sorted(set(columns))), sf.set_ref.in_(_readable_sets(readable))
    ).distinct()).scalars())


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
    sets = select(_readable_sets(readable).cte("apl_readable_sets").c.set_ref) if readable is not None else None
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
        {"namespace": r.namespace, "name": r.name, "label": _short(r.name, r.table_name), "column": ""}
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
        hits += [{"namespace": r.namespace, "name": r.name, "label": _short(r.name, r.table_name),
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
    return [{"dag_id": r.dag_id, "run_id": r.run_id, "end": _utc(r.end).isoformat() if r.end else None}
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
