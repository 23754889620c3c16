"""The estate index's read side: traversal, impact, graph and diff over the column edges as of an instant.

Time travel: "as of T" every producing task (``dag_id, task_id, map_index``) contributes the lineage of
its last *successful* run that ended at or before T (:func:`producers_as_of`, in :mod:`.asof`). Access: the
caller passes the DAG ids the user may read; an edge of another DAG is never named, only counted (``hidden``).

Functions meant for reuse (e.g. tag propagation), documented as this module's (``docs/estate.md``):
:func:`edges_as_of` (every column edge of the estate as of T, with type, subtype, masking and its
DAG/task/run), :func:`traverse` (up/downstream walk), :func:`dataset_id`, :func:`producers_as_of`,
:func:`impact`, :func:`graph`, :func:`diff` and :func:`search`; the first, the third and fourth live in
:mod:`.asof`, the search in :mod:`.lists`, and are named here for that documented path.
"""
from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from airflow_provider_lineage.plugins.estate import schema as s
from airflow_provider_lineage.plugins.estate.asof import (
    Edge,
    Producers,
    Run,
    dataset_id,
    dataset_keys,
    edges_as_of,
    producers_as_of,
    short_label,
    storable,
    visible_columns,
    visible_datasets,
)
from airflow_provider_lineage.plugins.estate.lists import search

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

__all__ = [
    "GRAPH_DEFAULT_EDGES", "GRAPH_MAX_EDGES", "IMPACT_COLUMNS", "IMPACT_MAX_NODES", "MAX_DEPTH", "Edge", "Node",
    "Producers", "Run", "Step", "Traversal", "dataset_id", "diff", "edges_as_of", "fields_as_of", "graph", "impact",
    "producers_as_of", "search", "traverse",
]

MAX_DEPTH = 20
#: Nodes (dataset, column) one impact traversal reaches at most; beyond, the answer says ``truncated``.
IMPACT_MAX_NODES = 20_000
#: Column edges one graph answer holds at most (the ``limit`` parameter's maximum; default 2,000).
GRAPH_MAX_EDGES = 10_000
GRAPH_DEFAULT_EDGES = 2_000


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
    keys = dataset_keys(session, [n[0] for n in tr.depth])
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
    keys = dataset_keys(session, ds_ids, labels=True, readable=readable)
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
                         "label": short_label(nm, table_name), "fields": fields[d], "start": d in start_ids,
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
