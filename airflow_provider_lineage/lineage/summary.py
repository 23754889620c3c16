"""A short, human-readable column-lineage summary for task logs."""
from __future__ import annotations

from airflow_provider_lineage.lineage.model import FieldEdge, WriteLineage


def _short(e: FieldEdge) -> str:
    ds = e.dataset.table or e.dataset.name
    mask = ", masked" if e.masking else ""
    return f"{ds}.{e.field} ({e.type}/{e.subtype}{mask})"


def summarize(lin: WriteLineage, max_edges: int = 6) -> str:
    """A few lines per output column: ``col <- ds.field (DIRECT/TRANSFORMATION)``."""
    target = lin.output.table or str(lin.output) if lin.output else "(no persisted output)"
    lines = [f"column lineage of {lin.command} -> {target}" + (" [approximate]" if lin.approximate else "")]
    if lin.approximate and lin.unknown:
        lines.append(f"  conservative rule used for: {', '.join(lin.unknown)}")
    width = max((len(n) for n, _ in lin.output_fields), default=0)
    for name, _typ in lin.output_fields:
        edges = lin.columns.get(name, [])
        if not edges:
            lines.append(f"  {name.ljust(width)} <- (no input dataset: literal or local data)")
            continue
        shown = edges[:max_edges]
        lines.append(f"  {name.ljust(width)} <- {_short(shown[0])}")
        for e in shown[1:]:
            lines.append(f"  {' ' * width}    {_short(e)}")
        if len(edges) > max_edges:
            lines.append(f"  {' ' * width}    ... {len(edges) - max_edges} more")
    for line in lin.udfs:
        lines.append(f"  [udf] {line}")
    if lin.approximate_columns:
        lines.append(f"  approximate: {len(lin.approximate_columns)} column(s) whose inputs are a superset of the "
                     "truth or include an unknown input")
        for name, reasons in lin.approximate_columns.items():
            lines.append(f"  [approximate] {name}: {'; '.join(reasons)}")
    if lin.dataset_edges:
        by_kind: dict[str, list[str]] = {}
        for e in lin.dataset_edges:
            by_kind.setdefault(e.subtype, []).append(f"{e.dataset.table or e.dataset.name}.{e.field}")
        for kind, fields in sorted(by_kind.items()):
            lines.append(f"  [all rows] {kind}: {', '.join(sorted(set(fields)))}")
    return "\n".join(lines)
