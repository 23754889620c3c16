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


def _dataset_keys(session: Session, ids: Iterable[int]) -> dict[int, tuple[str, str, str | None]]:
    ids = sorted(set(ids))
    out: dict[int, tuple[str, str, str | None]] = {}
    for i in range(0, len(ids), 500):
        for r in session.execute(select(s.dataset.c.id, s.dataset.c.namespace, s.dataset.c.name,
                                        s.dataset.c.table_name).where(s.dataset.c.id.in_(ids[i:i + 500]))):
            out[r.id] = (r.namespace, r.name, r.table_name)
    return out


def dataset_id(session: Session, namespace: str, name: str) -> int | None:
    """The index's id of a dataset identity, ``None`` if no record names it."""
    return session.scalar(select(s.dataset.c.id).where(s.dataset.c.namespace == namespace, s.dataset.c.name == name))


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


def _hop(session: Session, nodes: Collection[Node], direction: str, prod: Producers) -> list[Step]:
    """The edges one hop from ``nodes`` (col '' in ``nodes``: any column of the dataset), of current runs."""
    by_ds: dict[int, set[str]] = {}
    for d, c in nodes:
        by_ds.setdefault(d, set()).add(c)
    e = s.edge.c
    mine, theirs_col = (e.source_id, e.source_col) if direction == "downstream" else (e.target_id, e.target_col)
    ids = sorted(by_ds)
    cols = {c for cs in by_ds.values() for c in cs}
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
             producers: Producers | None = None) -> Traversal:
    """Walk column edges from ``start`` up or downstream to ``depth`` hops, as of ``as_of``.

    :param start: ``(dataset id, column)`` nodes; column ``''`` starts from every column of the dataset.
    :param direction: ``downstream`` (what this feeds) or ``upstream`` (what feeds this).
    :param readable: DAG ids whose edges may be followed and named (``None``: all); others are counted.
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
        for st in _hop(session, frontier, direction, prod):
            other = st.target if direction == "downstream" else st.source
            if readable is not None and st.run.dag_id not in readable:
                if other not in tr.depth:
                    tr.hidden.add(other)
                continue
            tr.steps.append(st)
            if other not in tr.depth:
                tr.depth[other] = level
                tr.parent[other] = st
                if not (direction == "downstream" and other[1] == ""):
                    nxt.append(other)
        frontier = nxt
    tr.hidden -= set(tr.depth)
    if frontier:  # how many more nodes one hop beyond the depth limit (the page's "+N")
        for st in _hop(session, frontier, direction, prod):
            if readable is not None and st.run.dag_id not in readable:
                continue
            here, other = (st.source, st.target) if direction == "downstream" else (st.target, st.source)
            if other not in tr.depth:
                tr.frontier_more[here] = tr.frontier_more.get(here, 0) + 1
    return tr


def _label(key: tuple[str, str, str | None], col: str) -> str:
    return f"{key[0]}:{key[1]}" + (f"#{col}" if col else "")


IMPACT_COLUMNS = ("namespace", "name", "column", "depth", "dag_id", "task_id", "run_id", "path", "types", "masked")


def impact(session: Session, namespace: str, name: str, column: str = "", *, direction: str = "downstream",
           depth: int = 5, as_of: datetime | None = None, readable: Collection[str] | None = None) -> dict[str, Any]:
    """The impact list (``docs/ui.md``): ``{"rows": [...], "hidden": N}``, rows in :data:`IMPACT_COLUMNS`.

    One row per reached column (``column`` ``''``: the whole dataset, via a dataset-wide edge) and per
    task producing the edge that reached it first: ``path`` the nodes from the start joined by `` > ``
    (``namespace:name#column``), ``types`` the edges' ``TYPE/SUBTYPE`` joined the same way, ``masked``
    whether any edge on the path masks. ``hidden``: columns reachable only through DAGs not readable.
    """
    did = dataset_id(session, namespace, name)
    if did is None:
        return {"rows": [], "hidden": 0}
    tr = traverse(session, [(did, column)], direction=direction, depth=depth, as_of=as_of, readable=readable)
    keys = _dataset_keys(session, [n[0] for n in tr.depth] + [n[0] for n in tr.hidden])
    rows = []
    for node, d in sorted(tr.depth.items(), key=lambda kv: (kv[1], keys[kv[0][0]][:2], kv[0][1])):
        if d == 0:
            continue
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
    return {"rows": rows, "hidden": len(tr.hidden)}


def graph(session: Session, starts: Iterable[tuple[str, str, str]], *, depth: int = 1,
          as_of: datetime | None = None, readable: Collection[str] | None = None,
          link: Any = None) -> dict[str, Any]:
    """The estate graph around ``starts`` (``(namespace, name, column)``; column ``''``: whole dataset).

    ``depth`` hops each way. Answer: ``datasets`` (with fields, ``more_up`` / ``more_down``: neighbours
    beyond the shown depth, ``hidden_up`` / ``hidden_down``: neighbours only through DAGs the user may
    not read), column ``edges`` and table-level ``dataset_edges`` (each with ``dag_id``, ``task_id``,
    ``run_id``, ``run`` end time, ``last_run`` of the task, ``url`` of the run's tab), ``hidden``.
    """
    prod = producers_as_of(session, as_of)
    start_nodes: list[Node] = []
    missing = []
    for ns, nm, col in starts:
        did = dataset_id(session, ns, nm)
        if did is None:
            missing.append(f"{ns}:{nm}")
        else:
            start_nodes.append((did, col or ""))
    down = traverse(session, start_nodes, direction="downstream", depth=depth, readable=readable, producers=prod)
    up = traverse(session, start_nodes, direction="upstream", depth=depth, readable=readable, producers=prod)
    ds_ids = {n[0] for n in list(down.depth) + list(up.depth)}
    keys = _dataset_keys(session, ds_ids)
    fields: dict[int, list[dict[str, Any]]] = {d: [] for d in ds_ids}
    ids = sorted(ds_ids)
    for i in range(0, len(ids), 500):
        for r in session.execute(select(s.field.c.dataset_id, s.field.c.name, s.field.c.type)
                                 .where(s.field.c.dataset_id.in_(ids[i:i + 500])).order_by(s.field.c.name)):
            fields[r.dataset_id].append({"name": r.name, "type": r.type or "unknown"})

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
    for st in down.steps + up.steps:
        k = (st.source, st.target, st.type, st.subtype, st.masking, st.run.dag_id, st.run.task_id, st.run.map_index)
        if k in edges:
            continue
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
        for st in _hop(session, list(tr.depth), tr.direction, prod) if readable is not None else []:
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
            "hidden": len(down.hidden | up.hidden), "missing": missing}


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


def visible_datasets(session: Session, ids: Collection[int], readable: Collection[str]) -> set[int]:
    """The datasets of ``ids`` that a run of a ``readable`` DAG read or wrote (index lookups per dataset)."""
    out: set[int] = set()
    ordered = sorted(set(ids))
    for i in range(0, len(ordered), 300):
        stmt = (select(s.io.c.dataset_id, s.task_run.c.dag_id).join(s.task_run, s.task_run.c.set_ref == s.io.c.set_ref)
                .where(s.io.c.dataset_id.in_(ordered[i:i + 300])).distinct())
        out |= {r.dataset_id for r in session.execute(stmt) if r.dag_id in readable}
    return out


def _collect(session: Session, stmt: Any, limit: int, readable: Collection[str] | None, hits: list[dict[str, Any]],
             is_col: bool) -> None:
    """Add the rows of ``stmt`` of readable datasets to ``hits`` until ``limit``, a page at a time."""
    page = max(limit, 200)
    offset = 0
    while len(hits) < limit:
        rows = session.execute(stmt.limit(page).offset(offset)).all()
        ok = visible_datasets(session, [r.id for r in rows], readable) if readable is not None else None
        for r in rows:
            if ok is not None and r.id not in ok:
                continue
            hit = {"namespace": r.namespace, "name": r.name, "label": _short(r.name, r.table_name), "column": ""}
            if is_col:
                hit.update(column=r.col, type=r.type)
            hits.append(hit)
        if len(rows) < page:
            return
        offset += page


def search(session: Session, q: str, *, limit: int = 50, readable: Collection[str] | None = None) -> list[dict[str, Any]]:
    """Datasets and columns whose name contains ``q`` (case-insensitive), of runs of readable DAGs.

    The name scans run in SQL (``LIKE``/``ILIKE``, a page at a time): over dataset names, and over the
    distinct column names (``apl_estate_column_name``), whose fields are then found by index. Only the
    page's datasets are checked for access (:func:`visible_datasets`).
    """
    text = q.strip().lower()
    if not text or (readable is not None and not readable):
        return []
    like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    d, f = s.dataset.c, s.field.c
    dq = select(d.id, d.namespace, d.name, d.table_name).where(
        _contains(session, d.name, like) | _contains(session, d.table_name, like)).order_by(d.id)
    hits: list[dict[str, Any]] = []
    _collect(session, dq, limit, readable, hits, False)
    # columns: the distinct names first (few: names repeat across datasets), then their fields by index
    names_q = select(s.column_name.c.name).where(_contains(session, s.column_name.c.name, like)).order_by(
        s.column_name.c.name)
    offset = 0
    while len(hits) < limit:
        names = session.execute(names_q.limit(500).offset(offset)).scalars().all()
        if names:
            fq = (select(d.id, d.namespace, d.name, d.table_name, f.name.label("col"), f.type)
                  .select_from(s.field).join(s.dataset, d.id == f.dataset_id).where(f.name.in_(names)).order_by(f.name, f.dataset_id))
            _collect(session, fq, limit, readable, hits, True)
        if len(names) < 500:
            break
        offset += 500
    return hits[:limit]


def runs(session: Session, *, readable: Collection[str] | None = None, dag_id: str | None = None,
         limit: int = 200) -> list[dict[str, Any]]:
    """Recent finished lineage runs (for the as-of run picker): DAG, run, end time (newest first)."""
    t = s.task_run.c
    stmt = select(t.dag_id, t.run_id, func.max(t.end_date).label("end")).where(t.end_date.is_not(None)).group_by(
        t.dag_id, t.run_id).order_by(func.max(t.end_date).desc()).limit(limit)
    if dag_id is not None:
        stmt = stmt.where(t.dag_id == dag_id)
    if readable is not None:
        stmt = stmt.where(t.dag_id.in_(sorted(readable)))
    return [{"dag_id": r.dag_id, "run_id": r.run_id, "end": _utc(r.end).isoformat() if r.end else None}
            for r in session.execute(stmt)]
