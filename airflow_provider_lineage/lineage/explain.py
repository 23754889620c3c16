"""The derivation tree of one output column, through each operator, down to source columns.

Shaped after Ushas' printed lineage (``c#2 <- Alias(substring(cast((a#0 + 1)…))) <- a#0 <- ...``)::

    total#21  <- Aggregate: sum((amt#3 * 2)) AS total#21
      [DIRECT/AGGREGATION] amt#3  = file:/data/t.amt  (LogicalRelation)
    rows: [INDIRECT/GROUP_BY] file:/data/t.k
"""
from __future__ import annotations

from airflow_provider_lineage.lineage.engine import Analysis, analyze
from airflow_provider_lineage.lineage.graph import Vertex
from airflow_provider_lineage.lineage.record import CaptureRecord

MAX_LINES = 400


def _names(ctx: Analysis) -> dict[int, str]:
    names: dict[int, str] = {}
    for attrs in ctx.outputs.values():
        for a in attrs:
            names.setdefault(a.id, a.name)
    return names


def _vertex_text(ctx: Analysis, names: dict[int, str], v: Vertex) -> str:
    if isinstance(v, str):
        if not v.startswith("scope:"):  # a vertex of what the plan cannot see (lineage/approximate.py)
            srcs = ctx.graph.sources.get(v, [])
            where = ", ".join(f"{ds}.{f}" for ds, f in srcs[:8]) + (
                f" ... {len(srcs) - 8} more" if len(srcs) > 8 else ""
            )
            why = "; ".join(ctx.marks.by_vertex.get(v, [])) or v
            return f"({why}) = {where or 'no input column'}"
        return "(rows of a sub-query)" if v != "scope:0" else "(rows of the output)"
    head = f"{names.get(v, '?')}#{v}"
    srcs = ctx.graph.sources.get(v)
    if srcs:
        where = ", ".join(f"{ds}.{f}" for ds, f in srcs)
        return f"{head} = {where}  ({ctx.leaf_kinds.get(v, 'relation')})"
    label = ctx.graph.labels.get(v)
    if label:
        return f"{head} <- {label}"
    kind = ctx.leaf_kinds.get(v)
    if kind:
        return f"{head}  ({kind}: no input dataset)"
    return head


def explain(record: CaptureRecord, column: str) -> str:
    """A text tree of how ``column`` of the write in ``record`` is computed (raises ``KeyError`` if no such column)."""
    lin, ctx, attrs = analyze(record)
    names_out = [n for n, _ in lin.output_fields]
    if column not in names_out:
        lowered = [n.lower() for n in names_out]
        if column.lower() not in lowered:
            raise KeyError(f"no output column {column!r} in this write; columns are: {', '.join(names_out)}")
        column = names_out[lowered.index(column.lower())]
    attr = attrs[names_out.index(column)]
    names = _names(ctx)
    lines = [f"{column}: {_vertex_text(ctx, names, attr.id)}"]
    seen: set[Vertex] = {attr.id}
    stack = [(u, t, 1) for u, t in reversed(list(ctx.graph.upstream_vertices(attr.id)))]
    while stack and len(lines) < MAX_LINES:
        v, t, depth = stack.pop()
        step = f"[{t.type}/{t.subtype}{', masked' if t.masking else ''}]"
        repeat = v in seen
        lines.append(f"{'  ' * depth}{step} {_vertex_text(ctx, names, v)}{'  (see above)' if repeat else ''}")
        if repeat:
            continue
        seen.add(v)
        stack.extend((u, t2, depth + 1) for u, t2 in reversed(list(ctx.graph.upstream_vertices(v))))
    if stack:
        lines.append(f"  ... truncated after {MAX_LINES} lines")
    if lin.dataset_edges:
        lines.append("rows of the output are influenced by:")
        for e in lin.dataset_edges:
            lines.append(f"  [{e.type}/{e.subtype}] {e.dataset}.{e.field}")
    if lin.approximate and lin.unknown:
        lines.append(f"approximate: conservative rule for {', '.join(lin.unknown)}")
    for reason in lin.approximate_columns.get(column, []):
        lines.append(f"approximate: {reason}")
    mine = [f"`{column}`" in line or "not analysed" in line for line in lin.udfs]
    udf_lines = [line for line, m in zip(lin.udfs, mine) if m]
    if udf_lines:
        lines.append("Python UDFs (body analysis):")
        lines.extend(f"  {line}" for line in udf_lines)
    return "\n".join(lines)
