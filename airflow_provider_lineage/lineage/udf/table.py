"""Engine side of the UDF analysis: :class:`UdfTable` gives, for a ``PythonUDF`` node of a plan, the transformation
step(s) from each argument expression to the UDF's value."""
from __future__ import annotations

import re
from typing import Any

from airflow_provider_lineage.lineage.graph import Trans
from airflow_provider_lineage.lineage.plan import TreeNode, pretty
from airflow_provider_lineage.lineage.udf.analysis import AGGREGATE, UDF_CLASSES, ArgFlow, UdfAnalysis


def result_id(node: TreeNode) -> int | None:
    raw = node.fields.get("resultId")
    if isinstance(raw, dict) and "id" in raw:
        return int(raw["id"])
    return None


class UdfTable:
    """The capture record's UDF analyses, looked up by the plan's ``PythonUDF`` nodes."""

    def __init__(self, entries: list[dict[str, Any]] | None) -> None:
        self.by_id: dict[int, UdfAnalysis] = {}
        for raw in entries or []:
            try:
                rid = int(raw["result_id"])
                self.by_id[rid] = UdfAnalysis.from_dict(raw.get("analysis") or {})
            except (KeyError, TypeError, ValueError):
                continue
        self.seen: dict[int, tuple[UdfAnalysis, TreeNode]] = {}
        self.missing: list[str] = []

    def lookup(self, node: TreeNode) -> UdfAnalysis | None:
        rid = result_id(node)
        a = self.by_id.get(rid) if rid is not None else None
        if a is not None and rid is not None:
            self.seen.setdefault(rid, (a, node))
        return a

    def steps(self, node: TreeNode, ordinal: int | None = None) -> list[list[Trans]] | None:
        """The steps from each child of a ``PythonUDF`` node to its value, or ``None`` (black box).

        :param ordinal: a field of the UDF's struct result (``GetStructField``): the steps to that field,
            when the body builds the struct field by field; ``None`` when it does not (the caller then
            walks the whole UDF).
        """
        if node.cls not in UDF_CLASSES:
            return None
        a = self.lookup(node)
        if a is None or not a.analysed or len(a.args) != len(node.children):
            return None  # a black box: TRANSFORMATION of every argument
        agg = a.eval_type in AGGREGATE
        if ordinal is not None:
            flows = _field_flows(a, node, ordinal)
            return None if flows is None else [f.steps(agg) for f in flows]
        return [f.steps(agg) for f in a.args]

    def frame_columns(self, node: TreeNode) -> UdfAnalysis | None:
        """The analysis of a frame UDF (``functionExpr``/``func`` of FlatMapGroupsInPandas, MapInPandas)."""
        for key in ("functionExpr", "func"):
            expr = node.tree_field(key)
            if expr is not None and expr.cls in UDF_CLASSES:
                a = self.lookup(expr)
                if a is not None and a.analysed and a.columns is not None:
                    return a
        return None

    def flow_lines(self, result_names: dict[int, str]) -> list[str]:
        """``email_hash ← sha256(email) [masking]`` per analysed UDF result."""
        lines = []
        for rid, (a, node) in sorted(self.seen.items()):
            target = result_names.get(rid, f"(UDF {a.name})")
            if not a.analysed:
                lines.append(f"UDF `{a.name}`: not analysed — {a.reason} (every argument kept as DIRECT)")
                continue
            lines.extend(f"UDF `{a.name}`: widened — {why}" for why in a.widened)
            if a.columns is not None:
                named = {k: v for k, v in a.columns.items() if k != "*"} or a.columns
                for out, per in sorted(named.items()):
                    parts = [_flow_text(f, f"`{c}`") for c, f in sorted(per.items())]
                    name = out if out != "*" else target
                    lines.append(f"`{name}` ← UDF `{a.name}`: {', '.join(parts) or 'no input'}")
                continue
            parts = []
            for f, child in zip(a.args, node.children):
                parts.append(_flow_text(f, f"`{_strip_ids(pretty(child, 60))}`"))
            lines.append(f"`{target}` ← UDF `{a.name}`: {', '.join(parts) or 'no input'}")
        return lines


def _field_flows(a: UdfAnalysis, node: TreeNode, ordinal: int) -> list[ArgFlow] | None:
    """The flows to field ``ordinal`` of the UDF's struct type, matched by name (a dict / ``Row``) or position."""
    if not a.fields:
        return None
    names = _struct_field_names(node.fields.get("dataType"))
    if ordinal < len(names) and names[ordinal] in a.fields:
        return a.fields[names[ordinal]]
    return a.fields.get(f"#{ordinal}")


def _struct_field_names(dtype: Any) -> list[str]:
    if isinstance(dtype, dict) and dtype.get("type") == "struct":
        return [str(f.get("name")) for f in dtype.get("fields") or []]
    return []


def _strip_ids(text: str) -> str:

    return re.sub(r"#\d+", "", text)


def _flow_text(f: ArgFlow, arg: str) -> str:
    if not f.used:
        return f"{arg} unused"
    bits = []
    if f.direct is not None:
        body = f"{'/'.join(f.via)}({arg})" if f.via else arg
        bits.append(f"{body} [{f.direct.lower()}{', masking' if f.masking else ''}]")
    if f.conditional:
        bits.append(f"{arg} [conditional]")
    return " + ".join(bits)
