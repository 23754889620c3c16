"""What the column-lineage view shows of "lineage as a guard" (pure Python, no Airflow imports).

:func:`annotate` adds to a stitched run graph (:func:`.graph.stitch`), from the tasks' lineage
records (``diff``, ``tags``, ``policy``, ``guard_problems``, written by the operator):

* ``changed`` (any task's lineage changed since its previous successful run) and ``changes`` (one
  entry per task with a diff: previous run, counts, the diff itself);
* ``change`` on edges (``"added"`` / ``"changed"`` with ``previous``) and on fields (``"added"``),
  ``removed_edges`` (edges of the previous run that are gone, drawn apart) and removed columns as
  fields with ``"removed": true``;
* ``tags`` on fields (``[{"tag", "source": "declared" | "inherited", "path", "masked"}]``);
* ``unmasked``: every column a tag reaches through a path with no masking step (inherited, not
  masked), with the path -- "where does ``pii`` reach unmasked";
* per task: ``diff`` summary, ``policy`` violations, ``guard_problems`` (e.g. a malformed tags Variable),
  ``approximate`` (how many output columns have approximate lineage) and ``approximate_columns`` (which, why).

:func:`unmasked_from_records` gives the same list over the newest records of many DAGs (the estate).
:func:`redact` applies the access rule to every tag path of the graph (a hop the viewer may not read is a
count, never a name).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from airflow_provider_lineage.plugins.graph import TaskRecord, dataset_id, label


def _cid(c: dict[str, Any]) -> str:
    return dataset_id(c["namespace"], c["name"])


def _task_label(t: TaskRecord) -> str:
    return t.task_id if t.map_index < 0 else f"{t.task_id}[{t.map_index}]"


def _edge_key(source: str, source_field: str, target: str, target_field: str | None, typ: str, sub: str) -> tuple:
    return (source, source_field, target, target_field, typ, sub)


def _counts(d: dict[str, Any]) -> dict[str, int]:
    return {k: len(d.get(k) or []) for k in ("columns_added", "columns_removed", "edges_added", "edges_removed",
                                             "edges_changed", "datasets_added", "datasets_removed")}


def unmasked_entries(rec: dict[str, Any], where: dict[str, Any]) -> list[dict[str, Any]]:
    """Inherited, unmasked tags on the columns a record wrote (``where`` is copied into each entry)."""
    tags = rec.get("tags") or {}
    ds = rec.get("datasets") or []
    outputs = set(rec.get("outputs") or [])
    out = []
    for i, column, entries in tags.get("columns") or []:
        if i not in outputs or not (0 <= i < len(ds)):
            continue
        for e in entries:
            if e.get("source") == "inherited" and not e.get("masked"):
                d = ds[i]
                out.append({**where, "tag": e["tag"], "dataset": dataset_id(d["namespace"], d["name"]),
                            "label": label(d["namespace"], d["name"], d.get("table")), "column": column,
                            "path": e.get("path") or []})
    return out


def approximate_columns(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """``[{"dataset", "label", "column", "reasons"}]`` of a record's ``approximate`` list (lineage/run_record.py);
    a malformed item is skipped (a display fails soft)."""
    ds = rec.get("datasets") or []
    out = []
    for item in rec.get("approximate") or []:
        try:
            i, column, reasons = item
            d = ds[i]
            out.append({"dataset": dataset_id(d["namespace"], d["name"]), "label": label(d["namespace"], d["name"],
                        d.get("table")), "column": str(column), "reasons": [str(r) for r in reasons or []][:5]})
        except (TypeError, ValueError, IndexError, KeyError):
            continue
    return out


def annotate(graph: dict[str, Any], tasks: Sequence[TaskRecord]) -> dict[str, Any]:
    """Add the guard's view data to ``graph`` (see the module docstring); returns ``graph``."""
    by_id = {d["id"]: d for d in graph.get("datasets") or []}
    fields = {(d["id"], f["name"]): f for d in by_id.values() for f in d["fields"]}
    edges = {_edge_key(e["source"], e["source_field"], e["target"], e["target_field"], e["type"], e["subtype"]): e
             for e in graph.get("edges") or []}
    ds_edges = {_edge_key(e["source"], e["source_field"], e["target"], None, e["type"], e["subtype"]): e
                for e in graph.get("dataset_edges") or []}
    status = {s["label"]: s for s in graph.get("tasks") or []}
    changes: list[dict[str, Any]] = []
    removed: list[dict[str, Any]] = []
    unmasked: list[dict[str, Any]] = []
    for t in tasks:
        rec = t.record
        if not rec:
            continue
        who = _task_label(t)
        st = status.get(who, {})
        st["guard_problems"] = list(rec.get("guard_problems") or [])
        approx = approximate_columns(rec)
        if approx:  # issue 46: the columns whose inputs are a superset or include an unknown input
            st["approximate"] = len(approx)
            st["approximate_columns"] = approx[:50]
        if rec.get("policy") is not None:
            st["policy"] = rec["policy"]
        d = rec.get("diff")
        if isinstance(d, dict):
            st["diff"] = {"changed": bool(d.get("changed")), "previous_run_id": d.get("previous_run_id"), **_counts(d)}
            changes.append({"task": who, **st["diff"], "diff": d})
            if d.get("changed"):
                _mark_changes(d, who, by_id, fields, edges, ds_edges, removed)
        for i, column, entries in (rec.get("tags") or {}).get("columns") or []:
            ds = (rec.get("datasets") or [])[i] if 0 <= i < len(rec.get("datasets") or []) else None
            f = fields.get((dataset_id(ds["namespace"], ds["name"]), column)) if ds else None
            if f is None:
                continue
            have = f.setdefault("tags", [])
            for e in entries:
                key = (
                    e["tag"],
                    e["source"],
                    _cid(e["path"][0]) + "." + str(e["path"][0]["column"]) if e.get("path") else "",
                )
                if not any((h["tag"], h["source"], _cid(h["path"][0]) + "." + str(h["path"][0]["column"])
                            if h.get("path") else "") == key for h in have):
                    have.append(e)
        unmasked += unmasked_entries(rec, {"task": who})
    graph["changed"] = any(c["changed"] for c in changes)
    graph["changes"] = changes
    graph["removed_edges"] = removed
    graph["unmasked"] = _dedupe(unmasked)
    return graph


def _mark_changes(d: dict[str, Any], who: str, by_id: dict[str, Any], fields: dict[tuple[str, str], Any],
                  edges: dict[tuple, Any], ds_edges: dict[tuple, Any], removed: list[dict[str, Any]]) -> None:
    for c in d.get("columns_added") or []:
        f = fields.get((_cid(c), c["column"]))
        if f is not None:
            f["change"] = "added"
    for c in d.get("columns_removed") or []:
        node = by_id.get(_cid(c))
        if node is not None and (node["id"], c["column"]) not in fields:
            f = {"name": c["column"], "type": "removed", "removed": True}
            node["fields"].append(f)
            fields[(node["id"], c["column"])] = f
    for kind in ("edges_added", "edges_changed"):
        for e in d.get(kind) or []:
            to = e["to"]["column"]
            key = _edge_key(_cid(e["from"]), e["from"]["column"], _cid(e["to"]), to, e["type"], e["subtype"])
            hit = (edges if to is not None else ds_edges).get(key)
            if hit is not None:
                hit["change"] = "added" if kind == "edges_added" else "changed"
                if kind == "edges_changed":
                    hit["previous"] = e.get("previous")
    for e in d.get("edges_removed") or []:
        src, dst = _cid(e["from"]), _cid(e["to"])
        if src in by_id and dst in by_id:
            for end, col in ((src, e["from"]["column"]), (dst, e["to"]["column"])):
                if col is not None and (end, col) not in fields:
                    f = {"name": col, "type": "removed", "removed": True}
                    by_id[end]["fields"].append(f)
                    fields[(end, col)] = f
            removed.append({"source": src, "source_field": e["from"]["column"], "target": dst,
                            "target_field": e["to"]["column"], "type": e["type"], "subtype": e["subtype"],
                            "masking": bool(e.get("masking")), "tasks": [who], "change": "removed"})


def _dedupe(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[tuple[Any, ...]] = set()
    out = []
    for u in items:
        key = (u["tag"], u["dataset"], u["column"], tuple(_cid(p) + "." + str(p.get("column")) for p in u["path"]))
        if key not in seen:
            seen.add(key)
            out.append(u)
    return sorted(out, key=lambda u: (u["tag"], u["label"], u["column"]))


def unmasked_from_records(
    records: Iterable[tuple[dict[str, Any], dict[str, Any]]], tag: str | None = None
) -> list[dict[str, Any]]:
    """Where tags reach unmasked over ``(where, record)`` pairs (newest first: one record per task kept)."""
    seen_tasks: set[tuple[Any, ...]] = set()
    out: list[dict[str, Any]] = []
    for where, rec in records:
        key = (where.get("dag_id"), where.get("task_id"), where.get("map_index"))
        if key in seen_tasks:
            continue
        seen_tasks.add(key)
        out += [u for u in unmasked_entries(rec, dict(where)) if tag is None or u["tag"] == tag]
    return _dedupe(out)


def redact(graph: dict[str, Any], visible: Callable[[dict[str, Any]], bool]) -> int:
    """Hide, in every tag path of ``graph`` (field tags, ``unmasked``, the tasks' policy violations), the hops
    ``visible(hop)`` refuses: each run of them becomes one marker with its count (:func:`.access.redact`).
    Sets ``graph["hidden_hops"]``; returns it."""
    from airflow_provider_lineage.plugins.guard import access

    hidden = 0

    def fix(item: dict[str, Any]) -> None:
        nonlocal hidden
        path = item.get("path")
        if isinstance(path, list) and path:
            item["path"], n = access.redact(path, [access.is_marker(h) or visible(h) for h in path])
            hidden += n

    for d in graph.get("datasets") or []:
        for f in d.get("fields") or []:
            for e in f.get("tags") or []:
                fix(e)
    for u in graph.get("unmasked") or []:
        fix(u)
    for t in graph.get("tasks") or []:
        policy = t.get("policy")
        if isinstance(policy, dict):
            t["policy"] = policy = {**policy, "violations": [dict(v) for v in policy.get("violations") or []]}
            for v in policy["violations"]:
                fix(v)
    graph["hidden_hops"] = hidden
    return hidden
