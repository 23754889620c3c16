"""The compact JSON lineage record of one task run, kept by the Airflow layer for the column-lineage view.

No Airflow imports. :class:`~airflow_provider_lineage.operators.spark_lineage.SparkLineageSubmitOperator`
pushes one record per task run to XCom (key :data:`XCOM_KEY`), where a separate ``airflow
api-server`` reads it (the plugin in :mod:`airflow_provider_lineage.plugins`). The record holds the
datasets the run read and wrote with their schemas, the column edges (type, subtype, masking) and
the dataset-wide INDIRECT edges apart from them, plus the OpenLineage job and run ids.

It is built with the same merge as the emitted events (:func:`.facets.datasets_for`, dataset-wide
edges in their own list), so the view shows what the events say. JSON only (lists, strings,
numbers): never pickled. Bounded: over ``limit`` bytes the record is cut (edges first, then schema
fields) and says so in ``truncated``; building it never raises for a big run.

Shape (``version`` 1)::

    {"format": FORMAT, "version": 1, "status": "ok" | "approximate" | "no_writes" | "problems" | "cluster_mode",
     "job": {"namespace", "name"}, "run_id", "emission",
     "datasets": [{"namespace", "name", "table", "fields": [[name, type], ...]}],
     "inputs": [dataset index, ...], "outputs": [dataset index, ...],
     "edges": [[out ds, out field, in ds, in field, type, subtype, masking 0/1], ...],
     "dataset_edges": [[out ds, in ds, in field, type, subtype, masking 0/1], ...],
     "approximate": [[out ds, out field, [reason, ...]], ...],
     "problems": ["...", ...], "truncated": None | {"reason", "edges_total", "edges_kept", ...}}

``approximate`` lists the output columns whose inputs are not known exactly (:func:`approximate_columns`): their
edges are a superset of the truth, never masking; a reason starting with ``"unknown input"``
(:data:`.model.UNKNOWN_INPUT`) says some input could not be named at all. The guard fails a ``require_masked``
policy closed on such a column unless its inputs prove it clean (operators/_lineage/guard.py, docs/guard.md).
``status`` is then ``"approximate"`` (the outputs are known; ``len(approximate)`` columns are approximated),
never ``"ok"``; docs/engine.md, "What the capture cannot see".
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_lineage.lineage.events import LineageResult

FORMAT = "airflow-provider-lineage/column-lineage"
VERSION = 1
#: XCom key of the record (one per task run).
XCOM_KEY = "column_lineage"
#: Default size bound of one record (bytes of its JSON); a bigger record is cut, with a marker.
LIMIT_BYTES = 512 * 1024
_MAX_PROBLEMS = 20
_MAX_PROBLEM_CHARS = 500
#: Reasons kept per approximate column (and their length).
_MAX_REASONS = 5
_MAX_REASON_CHARS = 300
STATUSES = ("ok", "approximate", "no_writes", "problems", "cluster_mode")


def build(
    result: LineageResult | None,
    *,
    job_namespace: str,
    job_name: str,
    run_id: str,
    emission: str,
    deploy_mode: str = "client",
    limit: int = LIMIT_BYTES,
) -> dict[str, Any]:
    """The record of one task run (see the module docstring); at most ``limit`` bytes of JSON."""
    record: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "status": "ok",
        "job": {"namespace": job_namespace, "name": job_name},
        "run_id": run_id,
        "emission": emission,
        "datasets": [],
        "inputs": [],
        "outputs": [],
        "edges": [],
        "dataset_edges": [],
        "approximate": [],
        "problems": [],
        "truncated": None,
    }
    if deploy_mode == "cluster":
        record["status"] = "cluster_mode"
        return record
    if result is None:
        record["status"] = "no_writes"
        return record
    problems = [p.message[:_MAX_PROBLEM_CHARS] for p in result.problems]
    problems += [f"write failed: {rec.error}"[:_MAX_PROBLEM_CHARS] for rec in result.failed_writes]
    record["problems"] = problems[:_MAX_PROBLEMS]
    if result.lineages:
        _fill(record, result)  # fills record["approximate"] too (approximate_columns)
    if not record["outputs"]:
        record["status"] = "problems" if problems else "no_writes"
    elif record["approximate"]:
        record["status"] = "approximate"
    return cut(record, limit)


def _fill(record: dict[str, Any], result: LineageResult) -> None:
    from airflow_provider_lineage.lineage.facets import datasets_for

    inputs, outputs = datasets_for(result.lineages, indirect="dataset")
    index: dict[tuple[str, str], int] = {}

    def add(namespace: str, name: str, table: str | None, fields: list[list[str]]) -> int:
        at = index.get((namespace, name))
        if at is None:
            at = index[(namespace, name)] = len(record["datasets"])
            record["datasets"].append({"namespace": namespace, "name": name, "table": table, "fields": fields})
            return at
        known = record["datasets"][at]
        names = {f[0] for f in known["fields"]}
        known["fields"] += [f for f in fields if f[0] not in names]
        known["table"] = known["table"] or table
        return at

    def add_dataset(ds: Any) -> int:
        facets = ds.facets or {}
        symlinks, schema = facets.get("symlinks"), facets.get("schema")
        table = symlinks.identifiers[0].name if symlinks and symlinks.identifiers else None
        return add(ds.namespace, ds.name, table, [[f.name, f.type or ""] for f in (schema.fields if schema else [])])

    record["inputs"] = [add_dataset(ds) for ds in inputs]
    record["outputs"] = [add_dataset(ds) for ds in outputs]
    for ds in outputs:
        out = index[(ds.namespace, ds.name)]
        facet = (ds.facets or {}).get("columnLineage")
        if facet is None:
            continue
        for column, entry in (facet.fields or {}).items():
            for src in entry.inputFields:
                source = add(src.namespace, src.name, None, [])
                for t in src.transformations or []:
                    record["edges"].append([out, column, source, src.field, t.type, t.subtype, int(bool(t.masking))])
        for src in facet.dataset or []:
            source = add(src.namespace, src.name, None, [])
            for t in src.transformations or []:
                record["dataset_edges"].append([out, source, src.field, t.type, t.subtype, int(bool(t.masking))])
    approx: dict[tuple[int, str], list[str]] = {}
    for lin in result.lineages:
        if lin.output is None or (lin.output.namespace, lin.output.name) not in index:
            continue
        out = index[(lin.output.namespace, lin.output.name)]
        for column, reasons in approximate_columns(lin).items():
            have = approx.setdefault((out, column), [])
            have += [r[:_MAX_REASON_CHARS] for r in reasons if r[:_MAX_REASON_CHARS] not in have]
    record["approximate"] = [[o, c, rs[:_MAX_REASONS]] for (o, c), rs in approx.items()]


#: What the engine writes today where an input could not be named (:mod:`.sources`, :mod:`.engine`): a write whose
#: ``notes`` or ``unknown`` say so has an unknown input even when ``approximate_columns`` does not list it.
_UNKNOWN_MARKS = ("(unknown input)", "lineage stops here", "checkpoint", "capture incomplete")


def approximate_columns(lin: Any) -> dict[str, list[str]]:
    """Output column -> why its inputs are not exact, for one :class:`.model.WriteLineage`: its
    ``approximate_columns``, plus what the engine marks at the write level (``approximate`` with ``unknown``,
    notes of an input it could not name), applied to every output column (sound: the guard then needs the
    column's inputs to prove it clean, or fails closed)."""
    from airflow_provider_lineage.lineage.model import UNKNOWN_INPUT

    out = {c: [str(r) for r in rs] for c, rs in (getattr(lin, "approximate_columns", None) or {}).items() if rs}
    whole: list[str] = []
    for u in getattr(lin, "unknown", None) or []:
        text = str(u)
        if any(m in text for m in _UNKNOWN_MARKS[1:]) and not text.startswith(UNKNOWN_INPUT):
            whole.append(f"{UNKNOWN_INPUT}: {text}")
        elif text.startswith(UNKNOWN_INPUT):
            whole.append(text)
        else:
            whole.append(
                f"approximate: no rule for {text} (the conservative rule: all its inputs feed all its outputs)"
            )
    for n in getattr(lin, "notes", None) or []:
        text = str(n)
        if any(m in text for m in _UNKNOWN_MARKS[:2]):
            whole.append(text if text.startswith(UNKNOWN_INPUT) else f"{UNKNOWN_INPUT}: {text}")
    if whole:
        columns = [name for name, _ in getattr(lin, "output_fields", None) or []] or list(lin.columns)
        for c in columns:
            have = out.setdefault(c, [])
            have += [w for w in whole if w not in have]
    return out


def size(record: dict[str, Any]) -> int:
    """Bytes of the record's JSON (as XCom stores it)."""
    return len(json.dumps(record, separators=(",", ":")).encode())


def cut(record: dict[str, Any], limit: int = LIMIT_BYTES) -> dict[str, Any]:
    """``record`` within ``limit`` bytes: drops edges from the end, then schema fields; marks ``truncated``."""
    total = size(record)
    if total <= limit:
        return record
    edges_total, dataset_edges_total = len(record["edges"]), len(record["dataset_edges"])
    fields_total = sum(len(d["fields"]) for d in record["datasets"])
    marker = {
        "reason": f"the lineage record was {total} bytes, over the {limit}-byte limit: the rest was cut",
        "bytes": total,
        "limit": limit,
        "edges_total": edges_total,
        "dataset_edges_total": dataset_edges_total,
        "fields_total": fields_total,
    }
    record["truncated"] = marker
    record["problems"] = record["problems"][:5]
    for item in record.get("approximate") or []:  # every approximated column stays listed; its reasons shrink
        item[2] = [r[:120] for r in item[2][:2]]
    _shrink_guard(record, limit)
    # edges: keep the longest prefix that fits (binary search on the count)
    for key in ("edges", "dataset_edges"):
        items = record[key]
        lo, hi = 0, len(items)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            record[key] = items[:mid]
            if size(record) <= limit:
                lo = mid
            else:
                hi = mid - 1
        record[key] = items[:lo]
        if size(record) <= limit:
            break
    if size(record) > limit:  # schemas alone too big: keep the fields the kept edges name, then none
        named = {(e[0], e[1]) for e in record["edges"]} | {(e[2], e[3]) for e in record["edges"]}
        for i, ds in enumerate(record["datasets"]):
            ds["fields"] = [f for f in ds["fields"] if (i, f[0]) in named]
        while size(record) > limit and (record["edges"] or record["dataset_edges"]):
            record["edges"] = record["edges"][: len(record["edges"]) // 2]
            record["dataset_edges"] = record["dataset_edges"][: len(record["dataset_edges"]) // 2]
        if size(record) > limit:
            for ds in record["datasets"]:
                ds["fields"] = []
            record["edges"], record["dataset_edges"] = [], []
    if size(record) > limit:  # last: the guard's sections to their bare facts (their XComs keep them whole)
        record["guard_problems"] = []
        if isinstance(record.get("diff"), dict):
            d = record["diff"]
            record["diff"] = {"previous_run_id": d.get("previous_run_id"), "changed": bool(d.get("changed")),
                              "cut": "see XCom lineage_diff"}
        record.pop("tags", None)
        if isinstance(record.get("policy"), dict) and size(record) > limit:
            record["policy"] = {"violations": [], "cut": "see XCom lineage_policy"}
        approx = record.get("approximate") or []
        if size(record) > limit and approx:  # the columns stay listed, with their first reason
            record["approximate"] = [[o, c, rs[:1]] for o, c, rs in approx]
            marker["approximate_total"] = len(approx)
            while size(record) > limit and record["approximate"]:
                record["approximate"] = record["approximate"][: len(record["approximate"]) // 2]
    marker["edges_kept"] = len(record["edges"])
    marker["dataset_edges_kept"] = len(record["dataset_edges"])
    marker["fields_kept"] = sum(len(d["fields"]) for d in record["datasets"])
    return record


def _shrink_guard(record: dict[str, Any], limit: int) -> None:
    """The guard's sections (``diff``, ``tags``, ``guard_problems``; operators/_lineage/guard.py) give way before the
    edges: the diff keeps ``previous_run_id``, ``changed`` and a ``cut`` marker (the XCom ``lineage_diff``
    keeps everything), tags keep a ``cut`` marker, notes are shortened."""
    from airflow_provider_lineage.lineage import diff as diffs

    if record.get("guard_problems"):
        record["guard_problems"] = [p[:200] for p in record["guard_problems"][:3]]
    if size(record) > limit and isinstance(record.get("diff"), dict):
        d = record["diff"]
        record["diff"] = {**diffs.empty(d.get("previous_run_id")), "changed": bool(d.get("changed")),
                          "cut": "the diff was too big for the lineage record: see the XCom lineage_diff"}
    if size(record) > limit and record.get("tags"):
        record["tags"] = {"columns": [], "stopped": [], "cut": "tags too big for the lineage record"}


def is_record(value: Any) -> bool:
    """Whether ``value`` (already JSON-decoded) is a record this module wrote."""
    return isinstance(value, dict) and value.get("format") == FORMAT and isinstance(value.get("datasets"), list)
