"""One local rule per plan-node class: the node's output attributes and its edges.

A rule receives the analysis context, the node and its children's outputs (already computed:
nodes are visited children-first) and returns the node's output attributes, after adding edges
``output attribute <- input attribute`` (via the expression rules) and dataset-wide INDIRECT
influences ``scope <- attribute`` (filter, join, group-by, sort conditions) to the graph.

Attributes that pass through a node unchanged keep their exprId, so pass-through needs no edge.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from airflow_provider_lineage.lineage.graph import (
    CONDITIONAL,
    FILTER,
    GROUP_BY,
    IDENTITY,
    JOIN,
    SORT,
    TRANSFORMATION,
)
from airflow_provider_lineage.lineage.plan import TreeNode, simple_type

if TYPE_CHECKING:
    from airflow_provider_lineage.lineage.graph import ColumnGraph, Trans, Vertex
    from airflow_provider_lineage.lineage.record import CaptureRecord
    from airflow_provider_lineage.lineage.udf.table import UdfTable


@dataclass(frozen=True)
class Attr:
    """An output attribute of a plan node."""

    id: int
    name: str
    type: str | None = None


class Analysis(Protocol):
    """What a rule may read and do while the engine walks a plan (the engine's ``Analysis`` is one).

    Like sqlglot's optimizer rules, a rule is a small pure function: it gets this context, the node
    and its children's outputs, adds edges through the context, and returns the node's outputs.
    """

    WRITE_ROOTS: frozenset[str]
    record: CaptureRecord
    graph: ColumnGraph
    depth: int
    distinct_inputs: set[int]
    ctes: dict[str, list[Attr]]
    loop_refs: dict[str, list[list[Attr]]]
    udfs: UdfTable
    udf_fields: dict[int, dict[int, Vertex]]

    def expr(self, target: Vertex, tree: TreeNode, start: Trans = ...) -> None: ...
    def influence(self, tree: TreeNode, trans: Trans) -> None: ...
    def influence_attr(self, eid: int, trans: Trans) -> None: ...
    def is_inferred_not_null(self, cond: TreeNode) -> bool: ...
    def subquery_outputs(self, expr: TreeNode) -> list[Attr]: ...
    def register_leaf(self, node: TreeNode, out: list[Attr]) -> None: ...
    def trace_cache(self, out: list[Attr]) -> None: ...
    def note_unknown(self, what: str) -> None: ...
    def parent_of(self, node: TreeNode) -> TreeNode | None: ...
    def parent_class(self, node: TreeNode) -> str | None: ...


Rule = Callable[[Analysis, TreeNode, list[list[Attr]]], list[Attr]]
RULES: dict[str, Rule] = {}


def rule(*classes: str) -> Callable[[Rule], Rule]:
    def deco(fn: Rule) -> Rule:
        for c in classes:
            RULES[c] = fn
        return fn

    return deco


def attr_of(tree: TreeNode) -> Attr | None:
    """The attribute a named expression defines (``AttributeReference`` or ``Alias``)."""
    eid = tree.expr_id()
    if eid is None:
        return None
    dtype = tree.fields.get("dataType")
    if dtype is None and tree.cls == "Alias" and tree.children:
        dtype = tree.children[0].fields.get("dataType")
    return Attr(eid, tree.name, simple_type(dtype) if dtype is not None else None)


def attrs_field(node: TreeNode, name: str) -> list[Attr]:
    return [a for a in (attr_of(t) for t in node.trees_field(name)) if a is not None]


def named_outputs(ctx: Analysis, exprs: list[TreeNode]) -> list[Attr]:
    """Outputs of a projection list: an ``Alias`` gets edges from its expression; an attribute passes."""
    out = []
    for e in exprs:
        a = attr_of(e)
        if a is None:
            continue
        if e.cls == "Alias" or e.children:
            ctx.expr(a.id, e)
        out.append(a)
    return out


def passthrough(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    return list(inputs[0]) if inputs else []


# -- projections and filters -----------------------------------------------------------------
@rule("Project")
def project(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    return named_outputs(ctx, node.trees_field("projectList"))


@rule("Filter")
def filter_(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    cond = node.tree_field("condition")
    if cond is not None:
        for part in conjuncts(cond):
            if ctx.is_inferred_not_null(part):
                continue  # added by InferFiltersFromConstraints: the JOIN/FILTER edge it derives from is kept
            ctx.influence(part, FILTER)
    return passthrough(ctx, node, inputs)


def conjuncts(cond: TreeNode) -> list[TreeNode]:
    """``a AND (b AND c)`` -> ``[a, b, c]``."""
    out, stack = [], [cond]
    while stack:
        e = stack.pop()
        if e.cls == "And" and len(e.children) == 2:
            stack.extend(reversed(e.children))
        else:
            out.append(e)
    return out


# pass-through nodes: same rows' values, maybe fewer/more rows or another partitioning
for _cls in (
    "GlobalLimit", "LocalLimit", "Limit", "Tail", "Offset", "Sample", "Repartition", "RepartitionByExpression",
    "RebalancePartitions", "SubqueryAlias", "View", "ResolvedHint", "Distinct", "WriteFiles",
    "Subquery", "ReturnAnswer", "Deduplicate", "DeduplicateWithinWatermark", "EventTimeWatermark",
    "CollectMetrics", "Sort_NoEdges", "UnresolvedHint", "DeserializeToObject", "SerializeFromObject",
):
    RULES[_cls] = passthrough


@rule("Sort")
def sort(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    orders = node.trees_field("order")
    if node.fields.get("global") is False and ctx.parent_class(node) in {"WriteFiles", *ctx.WRITE_ROOTS}:
        # the local sort V1Writes adds on the partition columns of a partitioned write: not the user's
        parts = {p.lower() for p in (ctx.record.output.partition_columns if ctx.record.output else [])}
        keys = [a for o in orders for a in o.walk() if a.expr_id() is not None]
        if parts and keys and all(k.name.lower() in parts for k in keys):
            return passthrough(ctx, node, inputs)
    for order in orders:
        ctx.influence(order, SORT)
    return passthrough(ctx, node, inputs)


# -- CTEs kept by the optimizer (not inlined) --------------------------------------------------
@rule("WithCTE")
def with_cte(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    """Children are the CTE definitions, then the main plan (last)."""
    return list(inputs[-1]) if inputs else []


@rule("CTERelationDef")
def cte_def(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    out = list(inputs[0]) if inputs else []
    ctx.ctes[str(node.fields.get("id"))] = out
    return out


@rule("CTERelationRef")
def cte_ref(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    """A reference to a CTE: its columns are the definition's, by position (maybe with new exprIds)."""
    out = attrs_field(node, "output")
    definition = ctx.ctes.get(str(node.fields.get("cteId")))
    if definition is None:
        ctx.note_unknown("CTERelationRef (definition not found)")
        return out
    for o, d in zip(out, definition):
        ctx.graph.add(o.id, d.id, IDENTITY)
    return out


# -- recursive CTEs (WITH RECURSIVE, Spark 4.1+) ----------------------------------------------------
@rule("UnionLoopRef")
def union_loop_ref(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    """The previous iteration's rows inside the recursive step; bound to the loop's output by
    :func:`union_loop` (visited later: the reference is inside the loop's recursion child)."""
    out = attrs_field(node, "output")
    ctx.loop_refs.setdefault(str(node.fields.get("loopId")), []).append(out)
    return out


@rule("UnionLoop")
def union_loop(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    """``anchor UNION ALL recursion`` repeated: output i <- anchor i and recursion i (by position);
    the recursion's references to the loop read the loop's output (a cycle, resolved to a fixpoint)."""
    anchor, recursion = (inputs + [[], []])[:2]
    ids = [x.get("id") for x in node.fields.get("outputAttrIds") or [] if isinstance(x, dict)]
    if len(ids) == len(anchor) and all(isinstance(i, int) for i in ids):
        out = [Attr(int(i), a.name, a.type) for i, a in zip(ids, anchor)]
    else:
        out = list(anchor)
    for o, a, r in itertools.zip_longest(out, anchor, recursion):
        if o is None:
            break
        if a is not None:
            ctx.graph.add(o.id, a.id, IDENTITY)
        if r is not None:
            ctx.graph.add(o.id, r.id, IDENTITY)
    for ref in ctx.loop_refs.pop(str(node.fields.get("id")), []):
        for rattr, o in zip(ref, out):
            ctx.graph.add_loop(rattr.id, o.id, IDENTITY)
    return out


# -- joins ---------------------------------------------------------------------------------------
def join_type(node: TreeNode) -> str:
    raw = node.fields.get("joinType")
    if isinstance(raw, dict):
        name = raw.get("object") or raw.get("product-class") or ""
        return str(name).rsplit(".", 1)[-1].rstrip("$")
    return str(raw or "Inner")


@rule("Join")
def join(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    left, right = (inputs + [[], []])[:2]
    cond = node.tree_field("condition")
    if cond is not None:
        ctx.influence(cond, JOIN)
    jt = join_type(node)
    if jt in ("LeftSemi", "LeftAnti"):
        return list(left)
    if jt == "ExistenceJoin":
        raw = node.fields.get("joinType") or {}
        exists = [a for a in (attr_of(t) for t in TreeNode("x", "x", {"e": raw.get("exists")}).trees_field("e")) if a]
        for a in exists:  # the boolean "a match exists" is computed from the join condition
            if cond is not None:
                ctx.expr(a.id, cond, TRANSFORMATION)
        return list(left) + exists
    return list(left) + list(right)


@rule("LateralJoin")
def lateral_join(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    cond = node.tree_field("condition")
    if cond is not None:
        ctx.influence(cond, JOIN)
    right = node.tree_field("right")
    sub_out: list[Attr] = []
    if right is not None and right.cls == "LateralSubquery":
        sub_out = ctx.subquery_outputs(right)
    return list(inputs[0] if inputs else []) + sub_out


# -- aggregation -----------------------------------------------------------------------------
@rule("Aggregate")
def aggregate(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    pivots = _pivot_columns_above(ctx, node)
    # INTERSECT ALL / EXCEPT ALL group both sides by every column only to count the matches of a row: row
    # membership, as INTERSECT / EXCEPT (semi / anti join) say it: JOIN, not GROUP_BY (no output is aggregated)
    keys = JOIN if _under_replicate_rows(ctx, node) else GROUP_BY
    for g in node.trees_field("groupingExpressions"):
        if g.expr_id() is not None and g.expr_id() in ctx.distinct_inputs:
            continue  # a DISTINCT aggregate's input that RewriteDistinctAggregates turned into a grouping key
        if g.expr_id() is not None and g.expr_id() in pivots:
            continue  # pivot(): grouped by the pivot column only to spread values over columns (CONDITIONAL)
        ctx.influence(g, keys)
    return named_outputs(ctx, node.trees_field("aggregateExpressions"))


def _under_replicate_rows(ctx: Analysis, node: TreeNode) -> bool:
    """Whether ``node`` is the Aggregate of Spark's INTERSECT ALL / EXCEPT ALL rewrite: under a Generate of
    ``replicaterows``, through at most a Filter and a Project."""
    parent = ctx.parent_of(node)
    for _ in range(3):
        if parent is None:
            return False
        if parent.cls == "Generate":
            gen = parent.tree_field("generator")
            return gen is not None and gen.cls == "ReplicateRows"
        if parent.cls not in ("Filter", "Project"):
            return False
        parent = ctx.parent_of(parent)
    return False


def _pivot_columns_above(ctx: Analysis, node: TreeNode) -> set[int]:
    """exprIds of the pivot columns of a ``PivotFirst`` aggregate directly above ``node``: ``pivot()`` is
    planned as Aggregate(keys + pivot column) under Aggregate(keys, PivotFirst(pivot column, value))."""
    parent = ctx.parent_of(node)
    if parent is not None and parent.cls == "Project":
        parent = ctx.parent_of(parent)
    if parent is None or parent.cls != "Aggregate":
        return set()
    out = set()
    for e in parent.trees_field("aggregateExpressions"):
        for sub in e.walk():
            if sub.cls == "PivotFirst" and sub.children and sub.children[0].expr_id() is not None:
                out.add(sub.children[0].expr_id())
    return out


@rule("Expand")
def expand(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    """ROLLUP/CUBE/GROUPING SETS and several DISTINCT aggregates: each projection row feeds the outputs."""
    out = attrs_field(node, "output")
    nulled: set[int] = set()
    for row in node.fields.get("projections") or []:
        exprs = [TreeNode("x", "x", {"e": e}).tree_field("e") for e in row] if isinstance(row, list) else []
        for attr, e in zip(out, exprs):
            if e is not None and e.cls == "Literal" and e.fields.get("value") is None:
                nulled.add(attr.id)
            if e is not None and e.expr_id() != attr.id:
                ctx.expr(attr.id, e)
    if any(a.name == "gid" for a in out):  # RewriteDistinctAggregates, not ROLLUP/CUBE (spark_grouping_id)
        ctx.distinct_inputs.update(nulled)
    return out


@rule("Window")
def window(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    """Window expressions carry their PARTITION BY / ORDER BY as WINDOW influences (per column)."""
    return list(inputs[0] if inputs else []) + named_outputs(ctx, node.trees_field("windowExpressions"))


@rule("WindowGroupLimit")
def window_group_limit(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    """Top-k per group pushed below a Window by the optimizer: a filter on the ranking keys."""
    for name in ("partitionSpec", "orderSpec"):
        for e in node.trees_field(name):
            ctx.influence(e, FILTER)
    return passthrough(ctx, node, inputs)


# -- set operations --------------------------------------------------------------------------
@rule("Union")
def union(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    """Columns are matched by position; the output reuses the first branch's exprIds."""
    if not inputs:
        return []
    first = inputs[0]
    for i, other in enumerate(inputs[1:], start=1):
        # EXCEPT ALL is planned as Union(left with vcol=1, right with vcol=-1) + Aggregate + ReplicateRows:
        # the right side's values only cancel rows, they never reach the output.
        subtracted = _is_except_all_branch(node.children[i]) if i < len(node.children) else False
        for o, a in zip(first, other):
            if subtracted:
                ctx.influence_attr(a.id, JOIN)
            else:
                ctx.graph.add(o.id, a.id, IDENTITY)
    return list(first)


def _is_except_all_branch(branch: TreeNode) -> bool:
    if branch.cls != "Project":
        return False
    for e in branch.trees_field("projectList"):
        if e.cls == "Alias" and e.name == "vcol" and e.children and e.children[0].cls == "Literal":
            return str(e.children[0].fields.get("value")) == "-1"
    return False


@rule("Intersect", "Except")
def intersect_except(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    """Rows of the left kept by membership in the right: the right's columns are JOIN influences."""
    left, right = (inputs + [[], []])[:2]
    for o, a in zip(left, right):
        ctx.influence_attr(a.id, JOIN)
        ctx.influence_attr(o.id, JOIN)
    return list(left)


# -- generators and Python -------------------------------------------------------------------
@rule("Generate")
def generate(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    """explode/posexplode/inline/stack/LATERAL VIEW: generated columns are derived from the generator's input."""
    child = list(inputs[0] if inputs else [])
    drop = set(node.fields.get("unrequiredChildIndex") or [])
    kept = [a for i, a in enumerate(child) if i not in drop]
    gen_out = attrs_field(node, "generatorOutput")
    gen = node.tree_field("generator")
    if gen is not None and gen.cls == "ReplicateRows" and len(gen.children) == len(gen_out) + 1:
        # INTERSECT ALL / EXCEPT ALL (RewriteIntersectAll / RewriteExceptAll): replicaterows(n, c1..ck) emits
        # the row (c1..ck) n times. Output i is input column i as is; n (a count of rows) only decides how
        # many copies of a row exist: a row influence, never a value of any column.
        for a, col in zip(gen_out, gen.children[1:]):
            ctx.expr(a.id, col)
        ctx.influence(gen.children[0], FILTER)
        return kept + gen_out
    if _writes_its_output(ctx, node):
        # The plan JSON does not say which child columns Generate drops (``unrequiredChildIndex`` is not
        # serialised), so the written columns are matched by name; a child column named like a generated
        # one cannot be written beside it (a write refuses duplicate names): the generated one is written
        # (``explode(split(a, ' ')) AS a`` writes a token of ``a``, not ``a``).
        generated = {a.name.lower() for a in gen_out}
        kept = [a for a in kept if a.name.lower() not in generated]
    for a in gen_out:
        if gen is not None:
            ctx.expr(a.id, gen, TRANSFORMATION)
    if gen is not None and gen.cls in ROW_DROPPING_GENERATORS and node.fields.get("outer") is not True:
        # a row whose array/map is null or empty yields no output row: the collection decides which rows
        # exist. Stated here, not left to the optimizer's inferred ``size(c) > 0`` filter, which a cached
        # input (traced through the analyzed plan) does not have.
        for child in gen.children:
            if child.cls in ("CreateArray", "CreateMap") and child.children:
                continue  # array(a, b) / map(k, v) built in the query: never null, never empty
            ctx.influence(child, FILTER)
    return kept + gen_out


def _writes_its_output(ctx: Analysis, node: TreeNode) -> bool:
    """Whether ``node``'s output is what the write writes (it is the query's root, maybe under ``WriteFiles``)."""
    parent = ctx.parent_of(node)
    while parent is not None and parent.cls == "WriteFiles":
        node, parent = parent, ctx.parent_of(parent)
    return parent is None or parent.cls in ctx.WRITE_ROOTS


#: Generators that emit no row for a null or empty input (unless ``outer``).
ROW_DROPPING_GENERATORS = frozenset({"Explode", "PosExplode", "Inline"})


@rule("BatchEvalPython", "ArrowEvalPython", "BatchEvalPythonUDTF", "ArrowEvalPythonUDTF")
def eval_python(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    """Python UDFs extracted by the optimizer: result attribute i <- the inputs of UDF i, through the steps
    the driver's analysis of the UDF body found (:mod:`.udf`), else a black box (TRANSFORMATION of all)."""
    results = attrs_field(node, "resultAttrs")
    udfs = node.trees_field("udfs") or ([node.tree_field("udtf")] if node.tree_field("udtf") else [])
    child = list(inputs[0] if inputs else [])
    if "requiredChildOutput" in node.fields:
        child = attrs_field(node, "requiredChildOutput")
    if len(udfs) == len(results):
        for a, u in zip(results, udfs):
            # a PythonUDF's own steps say how each argument reaches its value (black box: TRANSFORMATION)
            ctx.expr(a.id, u, IDENTITY if u.cls == "PythonUDF" else TRANSFORMATION)
            if u.cls == "PythonUDF":
                _struct_fields(ctx, a, u)
    else:  # UDTF: every result column from every UDTF input
        for a in results:
            for u in udfs:
                ctx.expr(a.id, u, TRANSFORMATION)
    return child + results


def _struct_fields(ctx: Analysis, result: Attr, udf: TreeNode) -> None:
    """A struct-returning UDF whose body builds the struct field by field: one vertex per field, fed by the
    arguments that build it; ``GetStructField(result, i)`` above reads that vertex, not the whole UDF."""
    dtype = udf.fields.get("dataType")
    if not (isinstance(dtype, dict) and dtype.get("type") == "struct"):
        return
    for i in range(len(dtype.get("fields") or [])):
        per_arg = ctx.udfs.steps(udf, i)
        if per_arg is None:
            return
        vertex = f"udf-field:{result.id}:{i}"
        for child, steps in zip(udf.children, per_arg):
            for step in steps:
                ctx.expr(vertex, child, step)
        ctx.udf_fields.setdefault(result.id, {})[i] = vertex


@rule(
    "MapInPandas", "MapInArrow", "PythonMapInArrow", "FlatMapGroupsInPandas", "FlatMapGroupsInArrow",
    "FlatMapCoGroupsInPandas", "FlatMapCoGroupsInArrow", "AttachDistributedSequence", "MapPartitions",
    "MapElements", "FlatMapGroupsInPandasWithState", "ApplyInPandasWithState",
)
def opaque_python(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    """A Python function over whole rows or groups: every output column from every input column, unless
    the driver analysed the function (grouped map / mapInPandas over columns picked by name)."""
    out = attrs_field(node, "output") or [a for ins in inputs for a in ins]
    ins = [a for group in inputs for a in group]
    in_ids = {a.id for a in ins}
    analysis = ctx.udfs.frame_columns(node) if len(inputs) == 1 else None
    by_name = {a.name: a for a in ins}
    for a in out:
        if a.id in in_ids:
            continue
        if analysis is not None and analysis.columns is not None:
            per = analysis.columns.get(a.name, analysis.columns.get("*", {}))
            if all(c in by_name for c in per):
                for c, flow in per.items():
                    for step in flow.steps():
                        ctx.graph.add(a.id, by_name[c].id, step)
                continue
        for i in ins:
            ctx.graph.add(a.id, i.id, TRANSFORMATION)
    for key in ("groupingAttributes", "groupingExprs", "leftGroup", "rightGroup", "leftAttributes", "rightAttributes"):
        for e in node.trees_field(key):
            ctx.influence(e, GROUP_BY)
    return out


# -- leaves ----------------------------------------------------------------------------------
@rule(
    "LogicalRelation", "LogicalRDD", "LocalRelation", "Range", "DataSourceV2Relation", "DataSourceV2ScanRelation",
    "StreamingRelation", "StreamingDataSourceV2Relation", "StreamingExecutionRelation", "ExternalRDD",
    "LocalTableScan", "OneRowRelation", "EmptyRelation", "StreamingRelationV2", "InMemoryRelation",
)
def relation(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    out = attrs_field(node, "output")
    if node.cls == "InMemoryRelation":
        ctx.trace_cache(out)
    ctx.register_leaf(node, out)
    return out


@rule("HiveTableRelation")
def hive_relation(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    out = attrs_field(node, "dataCols") + attrs_field(node, "partitionCols")
    ctx.register_leaf(node, out)
    return out


# -- writes ------------------------------------------------------------------------------------
@rule("MergeIntoTable")
def merge_into(ctx: Analysis, node: TreeNode, inputs: list[list[Attr]]) -> list[Attr]:
    """MERGE: target column <- itself (rows left alone) and every assigned value; conditions are influences."""
    target = inputs[0] if inputs else []
    cond = node.tree_field("mergeCondition")
    if cond is not None:
        ctx.influence(cond, JOIN)
    by_id = {a.id: a for a in target}
    by_name = {a.name.lower(): a for a in target}
    out = [Attr(-(i + 1) - 10_000_000 * ctx.depth, a.name, a.type) for i, a in enumerate(target)]
    vertex = {a.id: o.id for a, o in zip(target, out)}
    for a, o in zip(target, out):
        ctx.graph.add(o.id, a.id, IDENTITY)
    for key in ("matchedActions", "notMatchedActions", "notMatchedBySourceActions"):
        for action in node.trees_field(key):
            targets = list(vertex.values()) if action.cls.startswith("Delete") else []
            assigned: list[int] = []
            for child in action.children:
                if child.cls == "Assignment" and len(child.children) == 2:
                    k, v = child.children
                    tgt = by_id.get(k.expr_id() or -1) or by_name.get(k.name.lower())
                    if tgt is not None:
                        ctx.expr(vertex[tgt.id], v)
                        assigned.append(vertex[tgt.id])
            cnd = action.tree_field("condition") or action.child_field("condition")
            if cnd is not None:
                for t in assigned or targets:
                    ctx.expr(t, cnd, CONDITIONAL)
    return out
