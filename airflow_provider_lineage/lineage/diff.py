"""What changed in a task's lineage since its previous run: record vs record (pure Python, no Airflow).

:func:`diff` compares two lineage records (:mod:`.run_record`, XCom ``column_lineage``) of the same
task and returns the ``lineage_diff`` contract::

    {"previous_run_id", "changed",
     "columns_added", "columns_removed",          # output columns {"namespace", "name", "column"}
     "edges_added", "edges_removed",              # {"from": column, "to": column, "type", "subtype", "masking"}
     "edges_changed",                             # same, plus "previous": {"type", "subtype", "masking"}
     "datasets_added", "datasets_removed"}        # {"namespace", "name", "role": "input" | "output"}

Column edges come from the record's ``edges``; dataset-wide INDIRECT edges (join keys, filters,
group-by keys that influence every row) from its ``dataset_edges``, with ``"column": None`` on the
``to`` side. Two edges are the same edge when they join the same two columns; an edge is *changed*
when the same pair of columns is joined with another type, subtype or masking (a hash removed:
``masking`` true -> false). A pair joined by several transformations (e.g. DIRECT and INDIRECT
CONDITIONAL) is matched transformation by transformation, same ``type`` first.

``previous`` ``None`` (first run of the task) gives ``changed: False`` and ``previous_run_id: None``:
there is nothing to compare with, which the log and the view say in words.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

#: XCom key of the diff.
XCOM_KEY = "lineage_diff"
KEYS = ("previous_run_id", "changed", "columns_added", "columns_removed", "edges_added", "edges_removed",
        "edges_changed", "datasets_added", "datasets_removed")

Column = tuple[str, str, str | None]
Transform = tuple[str, str, bool]


def _col(c: Column) -> dict[str, Any]:
    return {"namespace": c[0], "name": c[1], "column": c[2]}


def _datasets(record: dict[str, Any]) -> list[tuple[str, str]]:
    return [(d.get("namespace", ""), d.get("name", "")) for d in record.get("datasets") or []]


def output_columns(record: dict[str, Any]) -> set[Column]:
    """``(namespace, name, column)`` of every field of every dataset the run wrote."""
    ds = record.get("datasets") or []
    out: set[Column] = set()
    for i in record.get("outputs") or []:
        if 0 <= i < len(ds):
            out |= {(ds[i]["namespace"], ds[i]["name"], f[0]) for f in ds[i].get("fields") or []}
    return out


def io_datasets(record: dict[str, Any]) -> set[tuple[str, str, str]]:
    """``(namespace, name, role)`` of the datasets the run read (``input``) and wrote (``output``)."""
    ds = _datasets(record)
    out: set[tuple[str, str, str]] = set()
    for role in ("input", "output"):
        out |= {(*ds[i], role) for i in record.get(f"{role}s") or [] if 0 <= i < len(ds)}
    return out


def edges(record: dict[str, Any]) -> dict[tuple[Column, Column], list[Transform]]:
    """``{(from column, to column): [(type, subtype, masking), ...]}`` of the record (column + dataset-wide)."""
    ds = _datasets(record)
    out: dict[tuple[Column, Column], list[Transform]] = defaultdict(list)

    def at(i: int) -> tuple[str, str]:
        return ds[i] if 0 <= i < len(ds) else ("?", f"#{i}")

    for o, ofield, s, sfield, typ, sub, mask in record.get("edges") or []:
        key = ((*at(s), sfield), (*at(o), ofield))
        if (typ, sub, bool(mask)) not in out[key]:
            out[key].append((typ, sub, bool(mask)))
    for o, s, sfield, typ, sub, mask in record.get("dataset_edges") or []:
        key = ((*at(s), sfield), (*at(o), None))
        if (typ, sub, bool(mask)) not in out[key]:
            out[key].append((typ, sub, bool(mask)))
    return out


def _edge(pair: tuple[Column, Column], t: Transform) -> dict[str, Any]:
    return {"from": _col(pair[0]), "to": _col(pair[1]), "type": t[0], "subtype": t[1], "masking": t[2]}


def _sort_cols(cols: set[Column]) -> list[dict[str, Any]]:
    return [_col(c) for c in sorted(cols, key=lambda c: (c[0], c[1], c[2] or ""))]


def _edge_sort_key(e: dict[str, Any]) -> tuple[str, ...]:
    f, t = e["from"], e["to"]
    return (t["namespace"], t["name"], t["column"] or "", f["namespace"], f["name"], f["column"] or "", e["type"] or "")


def empty(previous_run_id: str | None = None) -> dict[str, Any]:
    """A diff with no change (the first run of a task has ``previous_run_id`` ``None``)."""
    return {"previous_run_id": previous_run_id, "changed": False, "columns_added": [], "columns_removed": [],
            "edges_added": [], "edges_removed": [], "edges_changed": [], "datasets_added": [], "datasets_removed": []}


def diff(
    previous: dict[str, Any] | None, current: dict[str, Any], previous_run_id: str | None = None
) -> dict[str, Any]:
    """The ``lineage_diff`` of ``current`` against ``previous`` (``None``: first run, no change)."""
    if previous is None:
        return empty(None)
    out = empty(previous_run_id)
    before, after = output_columns(previous), output_columns(current)
    out["columns_added"], out["columns_removed"] = _sort_cols(after - before), _sort_cols(before - after)
    dsb, dsa = io_datasets(previous), io_datasets(current)
    out["datasets_added"] = [{"namespace": n, "name": m, "role": r} for n, m, r in sorted(dsa - dsb)]
    out["datasets_removed"] = [{"namespace": n, "name": m, "role": r} for n, m, r in sorted(dsb - dsa)]
    eb, ea = edges(previous), edges(current)
    for pair in sorted(set(eb) | set(ea), key=lambda p: (str(p[1]), str(p[0]))):
        old = [t for t in eb.get(pair, []) if t not in ea.get(pair, [])]
        new = [t for t in ea.get(pair, []) if t not in eb.get(pair, [])]
        # same pair, same type: a changed subtype/masking; then any leftover pairs up; the rest is added/removed
        for match_type in (True, False):
            for t in list(new):
                cand = next((o for o in old if not match_type or o[0] == t[0]), None)
                if cand is not None and (pair in eb and pair in ea):
                    old.remove(cand)
                    new.remove(t)
                    e = _edge(pair, t)
                    e["previous"] = {"type": cand[0], "subtype": cand[1], "masking": cand[2]}
                    out["edges_changed"].append(e)
        out["edges_added"] += [_edge(pair, t) for t in new]
        out["edges_removed"] += [_edge(pair, t) for t in old]
    for key in ("edges_added", "edges_removed", "edges_changed"):
        out[key].sort(key=_edge_sort_key)
    out["changed"] = any(out[k] for k in KEYS[2:])
    return out


def _c(c: dict[str, Any]) -> str:
    return f"{c['name'].rstrip('/').rsplit('/', 1)[-1]}.{c['column'] if c['column'] is not None else '*'}"


def _e(e: dict[str, Any]) -> str:
    mask = ", masking" if e.get("masking") else ""
    return f"{_c(e['from'])} -> {_c(e['to'])} ({e['type']}/{e['subtype']}{mask})"


def summary(d: dict[str, Any], limit: int = 20) -> str:
    """A few human lines for the task log and the failure message."""
    if d.get("previous_run_id") is None:
        return "lineage diff: first run of this task (no previous successful run with a lineage record to compare)"
    if not d.get("changed"):
        return f"lineage diff: unchanged since run {d['previous_run_id']}"
    lines = [f"lineage diff: CHANGED since run {d['previous_run_id']}"]

    def block(title: str, items: list[dict[str, Any]], fmt: Any) -> None:
        if items:
            lines.append(f"  {title} ({len(items)}): " + "; ".join(fmt(i) for i in items[:limit])
                         + (" ..." if len(items) > limit else ""))

    block("columns added", d["columns_added"], _c)
    block("columns removed", d["columns_removed"], _c)
    block("edges added", d["edges_added"], _e)
    block("edges removed", d["edges_removed"], _e)
    block("edges changed", d["edges_changed"],
          lambda e: f"{_e(e)} was {e['previous']['type']}/{e['previous']['subtype']}"
                    f"{', masking' if e['previous']['masking'] else ''}")
    block("datasets added", d["datasets_added"], lambda x: f"{x['role']} {x['namespace']}:{x['name']}")
    block("datasets removed", d["datasets_removed"], lambda x: f"{x['role']} {x['namespace']}:{x['name']}")
    return "\n".join(lines)
