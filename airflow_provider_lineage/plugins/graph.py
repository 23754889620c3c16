"""Graphs the column-lineage view draws, from task-run lineage records (pure Python, no Airflow imports).

:func:`stitch` joins the records of a DAG run's tasks into one graph: a dataset written by task A
and read by task B is one node (datasets are keyed by OpenLineage namespace + name). :func:`path`
walks one column's upstream and downstream edges to a depth. :func:`search` matches datasets and
columns of records by name.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_lineage.lineage import run_record

UNKNOWN = "unknown"


def dataset_id(namespace: str, name: str) -> str:
    """The view's id of a dataset: ``namespace:name`` (as OpenLineage prints a dataset)."""
    return f"{namespace}:{name}"


def label(namespace: str, name: str, table: str | None) -> str:
    """Short box title: the table name, else the last two path segments (``warehouse/transactions``)."""
    if table:
        return table
    parts = [p for p in name.split("/") if p]
    return "/".join(parts[-2:]) or name


@dataclass
class TaskRecord:
    """One task instance of a run, with its lineage record (``None``: none kept) and why."""

    task_id: str
    map_index: int = -1
    state: str | None = None
    operator: str | None = None
    record: dict[str, Any] | None = None
    note: str | None = None


@dataclass
class _Node:
    id: str
    namespace: str
    name: str
    table: str | None
    fields: dict[str, str] = field(default_factory=dict)
    written_by: list[str] = field(default_factory=list)
    read_by: list[str] = field(default_factory=list)


def _task_label(t: TaskRecord) -> str:
    return t.task_id if t.map_index < 0 else f"{t.task_id}[{t.map_index}]"


def task_status(t: TaskRecord) -> dict[str, Any]:
    """What the view says about one task's lineage (and why there is none)."""
    rec = t.record
    out: dict[str, Any] = {
        "task_id": t.task_id,
        "map_index": t.map_index,
        "label": _task_label(t),
        "state": t.state,
        "operator": t.operator,
        "status": rec.get("status") if rec else "no_record",
        "job": rec.get("job") if rec else None,
        "run_id": rec.get("run_id") if rec else None,
        "emission": rec.get("emission") if rec else None,
        "problems": list(rec.get("problems") or []) if rec else [],
        "truncated": rec.get("truncated") if rec else None,
        "note": t.note or (_why(rec, t) if not rec or rec.get("status") != "ok" else None),
    }
    return out


def _why(rec: dict[str, Any] | None, t: TaskRecord) -> str:
    if rec is None:
        if t.state not in (None, "success", "failed", "up_for_retry"):
            return f"the task has not finished (state {t.state}): no lineage record yet"
        return ("no lineage record: the task is not a SparkLineageSubmitOperator, or it ran with a provider "
                "version that did not keep one (lineage capture off for this task)")
    status = rec.get("status")
    if status == "cluster_mode":
        return ("cluster deploy mode: the Spark driver emitted the lineage events itself; the worker has no "
                "lineage to keep (see the OpenLineage destination)")
    if status == "no_writes":
        return "the application wrote no dataset, so there is no column lineage"
    if status == "problems":
        return "the capture had problems and no write could be analysed (see the problems)"
    return str(status)


def stitch(tasks: Sequence[TaskRecord]) -> dict[str, Any]:
    """One graph of every task's lineage in a DAG run (datasets shared by tasks are one node).

    Answer: ``{"datasets": [...], "edges": [...], "dataset_edges": [...], "tasks": [...], "empty": ...}``;
    each edge ``{"source", "source_field", "target", "target_field", "type", "subtype", "masking",
    "tasks"}``; each dataset-wide edge the same without ``target_field``. Duplicate edges (the same
    edge from several tasks) are one edge listing the tasks.
    """
    nodes: dict[str, _Node] = {}
    edges: dict[tuple[Any, ...], dict[str, Any]] = {}
    ds_edges: dict[tuple[Any, ...], dict[str, Any]] = {}
    statuses = []
    for t in tasks:
        statuses.append(task_status(t))
        rec = t.record
        if not rec or not run_record.is_record(rec):
            continue
        who = _task_label(t)
        ids: list[str] = []
        for ds in rec["datasets"]:
            nid = dataset_id(ds["namespace"], ds["name"])
            ids.append(nid)
            node = nodes.get(nid)
            if node is None:
                node = nodes[nid] = _Node(nid, ds["namespace"], ds["name"], ds.get("table"))
            node.table = node.table or ds.get("table")
            for name, typ in ds.get("fields") or []:
                if not node.fields.get(name) or node.fields[name] == UNKNOWN:
                    node.fields[name] = typ or node.fields.get(name) or UNKNOWN
        for i in rec.get("outputs") or []:
            if who not in nodes[ids[i]].written_by:
                nodes[ids[i]].written_by.append(who)
        for i in rec.get("inputs") or []:
            if who not in nodes[ids[i]].read_by:
                nodes[ids[i]].read_by.append(who)
        for out, col, src, src_field, typ, sub, masked in rec.get("edges") or []:
            target, source = nodes[ids[out]], nodes[ids[src]]
            target.fields.setdefault(col, UNKNOWN)
            source.fields.setdefault(src_field, UNKNOWN)
            key = (source.id, src_field, target.id, col, typ, sub, bool(masked))
            e = edges.get(key)
            if e is None:
                e = edges[key] = {"source": source.id, "source_field": src_field, "target": target.id,
                                  "target_field": col, "type": typ, "subtype": sub, "masking": bool(masked),
                                  "tasks": []}
            if who not in e["tasks"]:
                e["tasks"].append(who)
        for out, src, src_field, typ, sub, masked in rec.get("dataset_edges") or []:
            target, source = nodes[ids[out]], nodes[ids[src]]
            source.fields.setdefault(src_field, UNKNOWN)
            key = (source.id, src_field, target.id, typ, sub, bool(masked))
            e = ds_edges.get(key)
            if e is None:
                e = ds_edges[key] = {"source": source.id, "source_field": src_field, "target": target.id,
                                     "type": typ, "subtype": sub, "masking": bool(masked), "tasks": []}
            if who not in e["tasks"]:
                e["tasks"].append(who)
    datasets = [
        {"id": n.id, "namespace": n.namespace, "name": n.name, "table": n.table,
         "label": label(n.namespace, n.name, n.table),
         "fields": [{"name": k, "type": v} for k, v in n.fields.items()],
         "written_by": n.written_by, "read_by": n.read_by}
        for n in nodes.values()
    ]
    graph = {"datasets": datasets, "edges": list(edges.values()), "dataset_edges": list(ds_edges.values()),
             "tasks": statuses, "empty": None}
    if not datasets:
        graph["empty"] = _empty_reason(statuses)
    return graph


def _empty_reason(statuses: list[dict[str, Any]]) -> str:
    if not statuses:
        return ("no SparkLineageSubmitOperator task in this run kept a lineage record: the run has no lineage "
                "tasks, or they have not run yet")
    notes = [f"{s['label']}: {s['note']}" for s in statuses if s.get("note")]
    return "no column lineage captured in this run. " + " ".join(notes)


def path(graph: dict[str, Any], dataset: str, column: str, depth: int = 3) -> dict[str, Any]:
    """The upstream and downstream of one column, ``depth`` hops each way.

    Upstream follows column edges into ``(dataset, column)`` plus the dataset-wide edges into
    ``dataset`` (they influence every column of it); downstream follows column edges out of it and
    the dataset-wide edges it feeds (which end at the target dataset, not at a column).
    Answer: ``{"columns": [[dataset, column], ...], "edges": [edge index], "dataset_edges": [index],
    "datasets": [dataset ids reached by dataset-wide edges]}``, indexes into the graph's lists.
    """
    edges, ds_edges = graph["edges"], graph["dataset_edges"]
    into: dict[tuple[str, str], list[int]] = {}
    out_of: dict[tuple[str, str], list[int]] = {}
    for i, e in enumerate(edges):
        into.setdefault((e["target"], e["target_field"]), []).append(i)
        out_of.setdefault((e["source"], e["source_field"]), []).append(i)
    ds_into: dict[str, list[int]] = {}
    ds_out_of: dict[tuple[str, str], list[int]] = {}
    for i, e in enumerate(ds_edges):
        ds_into.setdefault(e["target"], []).append(i)
        ds_out_of.setdefault((e["source"], e["source_field"]), []).append(i)
    start = (dataset, column)
    columns: dict[tuple[str, str], None] = {start: None}
    hit_edges: dict[int, None] = {}
    hit_ds_edges: dict[int, None] = {}
    hit_datasets: dict[str, None] = {}

    def upstream(col: tuple[str, str]) -> Iterator[tuple[dict[int, None], int, tuple[str, str] | None]]:
        for i in into.get(col, []):
            yield hit_edges, i, (edges[i]["source"], edges[i]["source_field"])
        for i in ds_into.get(col[0], []):
            yield hit_ds_edges, i, (ds_edges[i]["source"], ds_edges[i]["source_field"])

    def downstream(col: tuple[str, str]) -> Iterator[tuple[dict[int, None], int, tuple[str, str] | None]]:
        for i in out_of.get(col, []):
            yield hit_edges, i, (edges[i]["target"], edges[i]["target_field"])
        for i in ds_out_of.get(col, []):
            hit_datasets[ds_edges[i]["target"]] = None
            yield hit_ds_edges, i, None  # ends at the dataset, not at a column

    for neighbours in (upstream, downstream):
        frontier, seen = [start], {start}
        for _ in range(max(0, depth)):
            nxt = []
            for col in frontier:
                for hits, i, other in neighbours(col):
                    hits[i] = None
                    if other is not None and other not in seen:
                        seen.add(other)
                        nxt.append(other)
                        columns[other] = None
            frontier = nxt
    return {"dataset": dataset, "column": column, "depth": depth,
            "columns": [list(c) for c in columns], "edges": sorted(hit_edges), "dataset_edges": sorted(hit_ds_edges),
            "datasets": list(hit_datasets)}


def search(
    records: Iterable[tuple[dict[str, Any], dict[str, Any]]], query: str, limit: int = 50
) -> list[dict[str, Any]]:
    """Datasets and columns whose name contains ``query`` (case-insensitive), newest records first.

    :param records: ``(where, record)`` pairs; ``where`` (dag_id, run_id, task_id, ...) is copied into each hit.
    """
    q = query.strip().lower()
    hits: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    if not q:
        return hits
    for where, rec in records:
        if not run_record.is_record(rec):
            continue
        for ds in rec["datasets"]:
            did = dataset_id(ds["namespace"], ds["name"])
            title = label(ds["namespace"], ds["name"], ds.get("table"))
            if q in did.lower() or q in title.lower():
                key = (where.get("dag_id"), where.get("run_id"), did, None)
                if key not in seen:
                    seen.add(key)
                    hits.append({**where, "dataset": did, "label": title, "column": None, "type": None})
            for name, typ in ds.get("fields") or []:
                if q in name.lower():
                    key = (where.get("dag_id"), where.get("run_id"), did, name)
                    if key not in seen:
                        seen.add(key)
                        hits.append({**where, "dataset": did, "label": title, "column": name, "type": typ})
            if len(hits) >= limit:
                return hits[:limit]
    return hits
