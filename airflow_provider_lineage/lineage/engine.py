"""Capture record -> :class:`WriteLineage`: run the local rules over the optimized plan and resolve.

Steps (design/lineage.md): load the plan, visit nodes children-first (the pre-order JSON reversed),
apply each node's rule (edges between exprIds), register the leaves' attributes as source fields
of their datasets, then resolve every output column and the dataset-wide scope in the graph.

Just over 600 lines as one concern: the walk's context (:class:`Analysis`) and the entry points that drive it;
the rules, expressions, graph and plan model are modules of their own.
"""
from __future__ import annotations

from airflow_provider_lineage.lineage.approximate import DriverFlow, Marks, driver_step, reasons_by_column
from airflow_provider_lineage.lineage.expressions import walk_expression
from airflow_provider_lineage.lineage.graph import (
    FILTER,
    IDENTITY,
    TRANSFORMATION,
    ColumnGraph,
    Trans,
    Vertex,
    compose,
)
from airflow_provider_lineage.lineage.logs import get_logger
from airflow_provider_lineage.lineage.model import UNKNOWN_INPUT, FieldEdge, LineageError, WriteLineage
from airflow_provider_lineage.lineage.naming import DatasetRef
from airflow_provider_lineage.lineage.plan import TreeNode, as_tree, load_dag, parse_tree, pretty
from airflow_provider_lineage.lineage.record import (
    CREATE_WRAPPERS,
    WRITE_COMMANDS,
    CaptureRecord,
    RelationInfo,
)
from airflow_provider_lineage.lineage.rules import RULES, Attr, attr_of, attrs_field
from airflow_provider_lineage.lineage.sources import (  # noqa: F401 - re-exported
    RDD_LEAVES,
    dataset_for_output,
    dataset_for_table,
    datasets_for_relation,
    relation_sources,
)
from airflow_provider_lineage.lineage.udf.analysis import UDF_CLASSES
from airflow_provider_lineage.lineage.udf.table import UdfTable, result_id
from airflow_provider_lineage.lineage.unseen import UnseenInputs

log = get_logger(__name__)

#: Root commands whose ``query`` is the data written: the capture's write commands (MERGE has a rule of
#: its own) plus physical V2 write nodes that hand-built or older plans may carry.
WRITE_ROOTS = (WRITE_COMMANDS - {"MergeIntoTable"}) | {"WriteToDataSourceV2", "AppendDataExecV1"}

#: Leaf classes that read data with no dataset identity (driver-local data, generated rows).
LOCAL_LEAVES = frozenset({"LocalRelation", "LogicalRDD", "Range", "OneRowRelation", "ExternalRDD", "LocalTableScan"})

#: Leaves that only refer to another part of the same plan (a CTE definition, a recursive CTE's
#: previous iteration): they read no data of their own. Records from older listeners list them as
#: relations; their exprIds can equal the real relation's (an inlined CTE keeps the definition's ids).
REFERENCE_LEAVES = frozenset({"CTERelationRef", "UnionLoopRef"})

_logged_unknown: set[str] = set()


class Analysis(UnseenInputs):
    """State of one record's analysis: the graph, the relations by exprId, the scopes."""

    WRITE_ROOTS = WRITE_ROOTS

    def __init__(self, record: CaptureRecord, graph: ColumnGraph | None = None) -> None:
        self.record = record
        self.graph = graph or ColumnGraph()
        self.scope: Vertex = "scope:0"
        self.depth = 0
        self.unknown: list[str] = []
        self.notes: list[str] = []
        self.rel_by_id: dict[int, tuple[RelationInfo, int]] = {}
        # a relation with a dataset identity wins over local data sharing its exprIds
        ranked = sorted(
            (r for r in record.relations if r.node_class not in REFERENCE_LEAVES),
            key=lambda r: 0 if datasets_for_relation(r, record.environment) else 1,
        )
        for rel in ranked:
            for i, eid in enumerate(rel.expr_ids):
                self.rel_by_id.setdefault(int(eid), (rel, i))
        self.inputs: dict[DatasetRef, dict[str, str]] = {}
        self.leaf_kinds: dict[int, str] = {}
        self.outputs: dict[int, list[Attr]] = {}
        self._parents: dict[int, TreeNode] = {}
        self._scopes = 0
        self._subqueries: dict[int, tuple[list[Attr], Vertex]] = {}
        self._analyzed_root: TreeNode | None = None
        self._analyzed_outputs: dict[int, list[Attr]] | None = None
        self._traced_fragments: set[int] = set()
        self.query_root: TreeNode | None = None
        self.current: TreeNode | None = None
        self.distinct_inputs: set[int] = set()
        self.ctes: dict[str, list[Attr]] = {}
        self.loop_refs: dict[str, list[list[Attr]]] = {}
        self.quiet = False
        self._user_not_null: set[int] | None = None
        #: the driver's analyses of the plan's Python UDFs, and which vertex each UDF's value feeds
        self.udfs = UdfTable(record.udfs)
        self.udf_targets: dict[Vertex, set[int]] = {}
        #: result attribute of a struct-returning UDF -> field ordinal -> the vertex of that field alone
        self.udf_fields: dict[int, dict[int, Vertex]] = {}
        #: vertices whose value is over-approximated or has an unknown input, with the reasons
        #: (-> ``WriteLineage.approximate_columns``; lineage/approximate.py)
        self.marks = Marks()
        #: what went through the driver before this write (``CaptureRecord.driver``)
        self.driver = DriverFlow(record.driver)

    # -- plan traversal ------------------------------------------------------------------------
    def run_plan(self, root: TreeNode) -> list[Attr]:
        """Apply the rules to every node of ``root`` (children first) and return the root's output."""
        for node in root.walk():
            for c in node.children:
                self._parents[id(c)] = node
        for node in root.postorder():
            self.current = node
            inputs = [self.outputs.get(id(c), []) for c in node.children]
            fn = RULES.get(node.cls)
            try:
                out = fn(self, node, inputs) if fn is not None else self.conservative(node, inputs)
            except Exception as exc:  # a rule tripped on an unexpected field shape: never crash
                log.debug("rule for %s failed: %r", node.cls, exc, exc_info=True)
                out = self.conservative(node, inputs, reason=f"{node.cls} (rule error: {exc})")
            self.outputs[id(node)] = out
        return self.outputs[id(root)]

    def parent_of(self, node: TreeNode) -> TreeNode | None:
        return self._parents.get(id(node))

    def parent_class(self, node: TreeNode) -> str | None:
        parent = self._parents.get(id(node))
        if parent is None:
            return self.record.command if node is self.query_root else None
        return parent.cls

    def conservative(self, node: TreeNode, inputs: list[list[Attr]], reason: str | None = None) -> list[Attr]:
        """Unknown node: every new output column depends on every input column; its expressions influence all rows."""
        self.note_unknown(reason or node.cls)
        child_attrs = [a for grp in inputs for a in grp]
        child_ids = {a.id for a in child_attrs}
        out = attrs_field(node, "output")
        extra: list[Attr] = []
        for _key, tree in node.nested_trees():
            if not tree.is_expression:
                continue
            if tree.cls == "Alias":
                a = attr_of(tree)
                if a is not None:
                    self.expr(a.id, tree)
                    extra.append(a)
            elif tree.children:
                self.influence(tree, FILTER)
        if not out:
            out = child_attrs + [a for a in extra if a.id not in child_ids]
        for a in out:
            if a.id in child_ids:
                continue
            self.marks.add(a.id, f"conservative rule for {reason or node.cls}: every input column kept")
            for c in child_attrs:
                self.graph.add(a.id, c.id, TRANSFORMATION)
        if not node.children:
            self.register_leaf(node, out)
        return out

    def note_unknown(self, what: str) -> None:
        if what not in self.unknown:
            self.unknown.append(what)
        if what not in _logged_unknown and not self.quiet:
            _logged_unknown.add(what)
            log.warning("column lineage: no rule for %s; using the conservative rule (all inputs -> all outputs)", what)

    # -- edges -------------------------------------------------------------------------------------
    def expr(self, target: Vertex, tree: TreeNode, start: Trans = IDENTITY) -> None:
        """``target <- every attribute of tree`` with the path's transformation."""

        if isinstance(target, int) and target not in self.graph.labels and self.current is not None:
            self.graph.labels[target] = f"{self.current.cls}: {pretty(tree)}"

        if self.udfs.by_id:
            for sub in tree.walk():
                if sub.cls in UDF_CLASSES:
                    rid = result_id(sub)
                    if rid is not None:
                        self.udf_targets.setdefault(target, set()).add(rid)
        if self.driver.active:
            # after a driver round trip: a literal that is not a constant of the code, or a Python UDF (its
            # closure may hold a lookup dict or a broadcast filled from collect()) may carry the returned values
            for sub in tree.walk():
                if (sub.cls == "Literal" and self.driver.literal_flagged(sub)) or sub.cls in UDF_CLASSES:
                    self.graph.add(target, self.driver_vertex(), driver_step(start))
                    break

        def on_attr(leaf: TreeNode, trans: Trans) -> None:
            eid = leaf.expr_id()
            if eid is not None:
                self.graph.add(target, eid, trans)

        def on_sub(sub: TreeNode, trans: Trans) -> None:
            outs, scope = self.subquery(sub)
            for o in outs:
                self.graph.add(target, o.id, compose(trans, TRANSFORMATION))
            self.graph.add(target, scope, trans)

        def on_field(leaf: TreeNode, ordinal: int, trans: Trans) -> bool:
            vertex = self.udf_fields.get(leaf.expr_id() or -1, {}).get(ordinal)
            if vertex is None:
                return False
            self.graph.add(target, vertex, trans)
            return True

        walk_expression(tree, start, on_attr, on_sub, self.udfs.steps if self.udfs.by_id else None,
                        on_field if self.udf_fields else None)

    def influence(self, tree: TreeNode, trans: Trans) -> None:
        """Dataset-wide influence of every attribute in ``tree`` (filter, join, group-by, sort)."""
        self.expr(self.scope, tree, trans)

    def influence_attr(self, eid: int, trans: Trans) -> None:
        self.graph.add(self.scope, eid, trans)

    def is_inferred_not_null(self, cond: TreeNode) -> bool:
        """``isnotnull(a)`` the optimizer inferred (no ``IsNotNull`` on ``a`` in the analyzed plan)."""
        if cond.cls != "IsNotNull" or len(cond.children) != 1 or cond.children[0].expr_id() is None:
            return False
        if self._user_not_null is None:
            self._user_not_null = set()
            analyzed = plan_trees(self.record)[1]
            if analyzed is not None:
                seen: set[int] = set()  # one visit per node: expressions are shared in a DAG record
                for node in analyzed.walk():
                    for _k, tree in node.nested_trees():
                        stack = [tree]
                        while stack:
                            e = stack.pop()
                            if id(e) in seen:
                                continue
                            seen.add(id(e))
                            if e.cls == "IsNotNull" and e.children and e.children[0].expr_id() is not None:
                                self._user_not_null.add(e.children[0].expr_id())
                            stack.extend(e.children)
        return cond.children[0].expr_id() not in self._user_not_null

    # -- sub-plans -------------------------------------------------------------------------------
    def subquery(self, expr: TreeNode) -> tuple[list[Attr], Vertex]:
        """Analyse a sub-query expression's plan in its own scope (memoised)."""
        raw = expr.fields.get("plan")
        key = id(raw)
        if key in self._subqueries:
            return self._subqueries[key]
        plan = as_tree(raw)
        self._scopes += 1
        sub_scope: Vertex = f"scope:{self._scopes}"
        outs: list[Attr] = []
        if plan is None:
            self.note_unknown(f"{expr.cls} (plan not serialised)")
        else:
            saved, saved_depth = self.scope, self.depth
            self.scope, self.depth = sub_scope, self.depth + 1
            try:
                outs = self.run_plan(plan)
            finally:
                self.scope, self.depth = saved, saved_depth
        self._subqueries[key] = (outs, sub_scope)
        return outs, sub_scope

    def subquery_outputs(self, expr: TreeNode) -> list[Attr]:
        outs, scope = self.subquery(expr)
        self.graph.add(self.scope, scope, IDENTITY)
        return outs

    # -- leaves ------------------------------------------------------------------------------------
    def register_leaf(self, node: TreeNode, out: list[Attr]) -> None:
        """Bind a leaf's attributes to the captured relation's dataset fields (matched by exprId)."""
        for a in out:
            self.leaf_kinds.setdefault(a.id, node.cls)
        if node.cls in ("LocalRelation", "LocalTableScan"):
            self.driver_local(out)  # driver-local rows: createDataFrame of collected rows, pandas frames
            return
        if node.cls in LOCAL_LEAVES - RDD_LEAVES or node.cls == "InMemoryRelation":
            return
        hit = self.rel_by_id.get(out[0].id) if out else None
        if hit is not None and node.cls in RDD_LEAVES and self._rdd_leaf(hit[0], out):
            return
        if hit is not None and hit[0].origin == "python_datasource":
            self._python_data_source(hit[0], out)
            return
        seen: set[int] = set()
        missing = []
        for a in out:
            hit = self.rel_by_id.get(a.id)
            if hit is None:
                missing.append(a.name)
                continue
            rel, idx = hit
            src = relation_sources(rel, self.record.environment)
            datasets = src.datasets
            if id(rel) not in seen:
                seen.add(id(rel))
                if src.note and src.note not in self.notes:
                    self.notes.append(src.note)
                for ds in datasets:
                    fields = self.inputs.setdefault(ds, {})
                    if src.columns is None:
                        for col in rel.columns:
                            fields.setdefault(col.get("name", ""), col.get("type", ""))
            if src.note and src.note.endswith("(unknown input)"):
                self.marks.add(a.id, f"{UNKNOWN_INPUT}: {src.note}")
            fname = rel.columns[idx].get("name", a.name) if idx < len(rel.columns) else a.name
            ftype = rel.columns[idx].get("type", "") if idx < len(rel.columns) else a.type or ""
            if src.columns is not None:
                for ds, origin in src.columns.get(fname, []):
                    self.inputs.setdefault(ds, {}).setdefault(origin, ftype)
                    self.graph.add_source(a.id, ds, origin)
                continue
            for ds in datasets:
                self.inputs.setdefault(ds, {}).setdefault(fname, ftype)
                self.graph.add_source(a.id, ds, fname)
        if missing:
            self.notes.append(f"{node.cls}: no captured relation for columns {missing[:5]}; their lineage stops here")
            for a in out:
                if a.name in missing:
                    self.marks.add(a.id, f"{UNKNOWN_INPUT}: {node.cls} without a captured relation")

    def trace_cache(self, out: list[Attr]) -> None:
        """An ``InMemoryRelation``: analyse the cached fragment of the analyzed plan into the same graph."""
        ids = [a.id for a in out]
        fragment = self._find_fragment(ids)
        if fragment is None:
            self.note_unknown("InMemoryRelation (cached plan not found in the analyzed plan)")
            return
        if id(fragment) in self._traced_fragments:
            return
        self._traced_fragments.add(id(fragment))
        self.run_plan(fragment)

    def _find_fragment(self, ids: list[int]) -> TreeNode | None:
        if self._analyzed_outputs is None:
            self._analyzed_outputs = {}
            self._analyzed_root = plan_trees(self.record)[1]
            if self._analyzed_root is None:
                return None
            dry = Analysis(self.record)
            dry.quiet = True
            dry.run_plan(find_query(self._analyzed_root))
            self._analyzed_outputs = dry.outputs
        if self._analyzed_root is None:
            return None
        want = set(ids)
        for node in self._analyzed_root.walk():  # pre-order: the highest match first
            got = self._analyzed_outputs.get(id(node))
            if got is not None and [a.id for a in got] == ids:
                return node
        for node in self._analyzed_root.walk():
            got = self._analyzed_outputs.get(id(node))
            if got is not None and want <= {a.id for a in got}:
                return node
        return None


def plan_trees(record: CaptureRecord) -> tuple[TreeNode | None, TreeNode | None]:
    """The record's (optimized, analyzed) plans as trees, loaded once per record object: from the DAG of a
    format-2 record (:func:`~.plan.load_dag`; shared nodes stay shared) or the ``toJSON()`` lists of a
    format-1 record (and of hand-built records)."""
    cached = record.__dict__.get("_plan_trees")
    if cached is not None and cached[0] is record.plans and cached[1] is record.optimized_plan \
            and cached[2] is record.analyzed_plan:
        return cached[3]
    if record.plans:
        roots = load_dag(record.plans)
        trees = (roots[0] if roots else None, roots[1] if len(roots) > 1 else None)
    else:
        trees = (parse_tree(record.optimized_plan) if record.optimized_plan else None,
                 parse_tree(record.analyzed_plan) if record.analyzed_plan else None)
    record.__dict__["_plan_trees"] = (record.plans, record.optimized_plan, record.analyzed_plan, trees)
    return trees


def find_query(root: TreeNode) -> TreeNode:
    """The plan a write command writes (its ``query`` child or inline field), else the root itself."""
    if root.cls not in WRITE_ROOTS:
        return root
    q = root.child_field("query")
    if q is not None:
        return q
    q = root.tree_field("query")
    if q is not None:
        return q
    if root.children:
        return root.children[-1]
    return root


#: Commands that create their output table (a lone record of one, or a wrapper merged into the inner write).
CREATE_COMMANDS = CREATE_WRAPPERS


def lifecycle_for(record: CaptureRecord) -> str | None:
    """``CREATE``/``OVERWRITE``/``None`` for the write in ``record`` (after :func:`collapse_nested`, whose
    merged wrapper gives the user's save mode and whether the table was created).

    * overwrite mode (``mode("overwrite")``, ``INSERT OVERWRITE``, RTAS, V2 overwrites): ``OVERWRITE``;
    * the write created its output: CTAS (also ``IF NOT EXISTS``), ``saveAsTable`` of a new table (any
      mode but overwrite), error-if-exists / ignore file writes: ``CREATE``;
    * append, ``insertInto``, ``INSERT INTO``, MERGE: ``None`` (no lifecycle change).
    """
    mode = ((record.output.mode if record.output else None) or "").lower()
    if record.command in ("OverwriteByExpression", "OverwritePartitionsDynamic", "ReplaceTableAsSelect",
                          "AtomicReplaceTableAsSelect"):
        return "OVERWRITE"
    if mode == "overwrite":
        return "OVERWRITE"
    if record.command == "MergeIntoTable" or mode == "merge":
        return None
    if record.created or mode in ("errorifexists", "error", "default", "ignore"):
        return "CREATE"
    if (record.command in CREATE_COMMANDS or CREATE_COMMANDS.intersection(record.wrappers)) and mode != "append":
        return "CREATE"  # records of listeners that did not capture the Hive CTAS mode
    return None


def analyze_record(record: CaptureRecord) -> WriteLineage:
    """Column lineage of one captured write.

    Never raises on unknown plan nodes or expressions (they fall back to the conservative rule and
    the result is marked ``approximate``); raises :class:`LineageError` only when the record holds
    no plan at all.
    """
    return analyze(record)[0]


def analyze(record: CaptureRecord) -> tuple[WriteLineage, Analysis, list[Attr]]:
    """:func:`analyze_record` plus the analysis state (graph, labels) and the written attributes."""
    approximate = False
    notes: list[str] = []
    try:
        optimized, analyzed = plan_trees(record)
    except Exception as exc:
        raise LineageError(f"capture record {record.record_id}: the plan JSON is not a Spark tree ({exc})") from exc
    root = optimized
    if root is None:
        root = analyzed
        if root is None:
            if record.incomplete and record.output is not None:
                return _incomplete(record)
            raise LineageError(
                f"capture record {record.record_id} ({record.command}, status {record.status}) has no plan"
                f"{': ' + record.capture_error if record.capture_error else ''}; nothing to analyse. "
                "Fix the capture problem (see capture_error) or skip records without plans."
            )
        approximate = True
        notes.append("optimized plan missing: analysed the analyzed plan instead")
    if root.cls in WRITE_ROOTS and not root.children and root.child_field("query") is None \
            and root.tree_field("query") is None:
        raise LineageError(
            f"capture record {record.record_id} is the {record.command} event of a {record.func_name or 'write'} "
            "whose plan does not carry the query (Spark posts the inner write as its own event first); analyse "
            "the merged record instead: CaptureSession.records, or collapse_nested(read_records(run_dir))"
        )
    ctx = Analysis(record)
    query = find_query(root)
    ctx.query_root = query
    if root.cls == "MergeIntoTable":
        query = root
    attrs = ctx.run_plan(query)
    out_info = record.output
    output = dataset_for_output(out_info, record.environment)
    if output is None and root.cls == "MergeIntoTable" and root.children:
        output = _merge_target(ctx, root.children[0])
    names = list(out_info.columns) if out_info and out_info.columns else []
    types = list(out_info.column_types) if out_info and out_info.column_types else []
    output_fields: list[tuple[str, str]] = []
    columns: dict[str, list[FieldEdge]] = {}
    if names and len(names) != len(attrs):
        attrs = _match_by_name(names, attrs)
    for i, a in enumerate(attrs):
        name = names[i] if i < len(names) else a.name
        typ = types[i] if i < len(types) and types[i] else (a.type or "")
        output_fields.append((name, typ))
        columns[name] = _edges(ctx.graph.resolve(a.id))
    dataset_edges = _edges(ctx.graph.resolve(ctx.scope))
    inputs = [(ds, sorted(fields.items(), key=lambda kv: 0)) for ds, fields in ctx.inputs.items()]
    lin = WriteLineage(
        output=output,
        output_fields=output_fields,
        inputs=inputs,
        columns=columns,
        dataset_edges=dataset_edges,
        approximate=approximate or bool(ctx.unknown),
        unknown=list(ctx.unknown),
        mode=out_info.mode if out_info else None,
        command=record.command,
        notes=notes + ctx.notes,
        lifecycle=lifecycle_for(record) if output is not None else None,
    )
    if ctx.udfs.seen:
        _udf_notes(ctx, lin, attrs)
    found = reasons_by_column(ctx.graph, ctx.marks, [(n, a.id) for (n, _t), a in zip(output_fields, attrs)])
    for name, reasons in found.items():
        bucket = lin.approximate_columns.setdefault(name, [])
        bucket.extend(r for r in reasons if r not in bucket)
    return lin, ctx, attrs


def _incomplete(record: CaptureRecord) -> tuple[WriteLineage, Analysis, list[Attr]]:
    """A write whose plan the capture gave up on (budget, memory guard, analysis failure): its output
    dataset, its schema and the relations it read, no column edges, marked approximate with the reason
    (``unknown``); the events then carry the output and an ``incomplete capture`` problem, never a
    partial graph presented as complete."""
    ctx = Analysis(record)
    out_info = record.output
    names = list(out_info.columns) if out_info and out_info.columns else []
    types = list(out_info.column_types) if out_info and out_info.column_types else []
    inputs: list[tuple[DatasetRef, list[tuple[str, str]]]] = []
    for rel in record.relations:
        for ds in datasets_for_relation(rel, record.environment):
            inputs.append((ds, [(c.get("name", ""), c.get("type", "")) for c in rel.columns]))
    reason = f"capture incomplete: {record.incomplete}"
    lin = WriteLineage(
        output=dataset_for_output(out_info, record.environment),
        output_fields=[(n, types[i] if i < len(types) else "") for i, n in enumerate(names)],
        approximate_columns={n: [f"{UNKNOWN_INPUT}: {reason}"] for n in names},
        inputs=inputs,
        columns={},
        dataset_edges=[],
        approximate=True,
        unknown=[reason],
        mode=out_info.mode if out_info else None,
        command=record.command,
        notes=[reason + "; no column lineage for this write"],
        lifecycle=lifecycle_for(record),
    )
    return lin, ctx, []


def _udf_notes(ctx: Analysis, lin: WriteLineage, attrs: list[Attr]) -> None:
    """Which Python UDFs each output column goes through; what their analysis found, or why there was none."""
    names = [n for n, _ in lin.output_fields]
    used_by: dict[int, list[str]] = {}
    for name, a in zip(names, attrs):
        rids: set[int] = set()
        stack: list[Vertex] = [a.id]
        seen: set[Vertex] = {a.id}
        while stack and len(seen) < 100_000:
            v = stack.pop()
            rids |= ctx.udf_targets.get(v, set())
            for u, _t in ctx.graph.deps.get(v, ()):
                if u not in seen:
                    seen.add(u)
                    stack.append(u)
        for rid in sorted(rids):
            used_by.setdefault(rid, []).append(name)
            analysis = ctx.udfs.seen.get(rid)
            if analysis is not None and not analysis[0].analysed:
                note = f"UDF `{analysis[0].name}` not analysed ({analysis[0].reason}): every argument kept as DIRECT"
                lin.udf_columns.setdefault(name, [])
                if note not in lin.udf_columns[name]:
                    lin.udf_columns[name].append(note)
                if analysis[1].children:  # the black box's edges: a superset of what the body really reads
                    reasons = lin.approximate_columns.setdefault(name, [])
                    if note not in reasons:
                        reasons.append(note)
            elif analysis is not None and analysis[0].widened:
                # analysed, but the pass widened for a construct it does not model exactly: the extra edges say why
                reasons = lin.approximate_columns.setdefault(name, [])
                for why in analysis[0].widened:
                    note = f"UDF `{analysis[0].name}` widened: {why}"
                    if note not in reasons:
                        reasons.append(note)
    lin.udfs = ctx.udfs.flow_lines({rid: ", ".join(cols) for rid, cols in used_by.items()})


def _merge_target(ctx: Analysis, target: TreeNode) -> DatasetRef | None:
    """MERGE's output is its target table: the dataset of the target relation leaf."""
    for leaf in target.walk():
        for a in ctx.outputs.get(id(leaf), []):
            hit = ctx.rel_by_id.get(a.id)
            if hit is not None:
                refs = datasets_for_relation(hit[0], ctx.record.environment)
                if refs:
                    return refs[0]
    return None


def _match_by_name(names: list[str], attrs: list[Attr]) -> list[Attr]:
    """The written attributes when the query root's output is not known exactly (e.g. ``Generate``
    does not serialise which child columns it drops): pick attributes by name, in write order."""
    used: set[int] = set()
    out = []
    for n in names:
        pick = next((a for a in attrs if a.name == n and id(a) not in used), None)
        pick = pick or next((a for a in attrs if a.name.lower() == n.lower() and id(a) not in used), None)
        if pick is None:
            pick = Attr(-1, n, None)
        used.add(id(pick))
        out.append(pick)
    return out


def _edges(resolved: dict[tuple[DatasetRef, str], frozenset[Trans]]) -> list[FieldEdge]:
    out = []
    for (ds, field), ts in resolved.items():
        for t in ts:
            out.append(FieldEdge(ds, field, t.type, t.subtype, t.masking))
    out.sort(key=lambda e: (e.dataset.namespace, e.dataset.name, e.field, e.type, e.subtype, e.masking))
    return out
