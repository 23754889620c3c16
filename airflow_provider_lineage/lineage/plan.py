"""Spark ``TreeNode.toJSON()`` lists -> small tree objects, without recursion.

Spark serialises a tree (logical plan or expression) as a flat list in pre-order; each element is a
dict with ``class`` (fully qualified), ``num-children`` and the constructor fields. Fields that point
at a child hold the child's index (an int). Expressions inside a plan node are nested flat lists
(``Seq[Expression]`` is a list of such lists), and so are plans that are not children (a CTAS's
``query``, a ``ScalarSubquery``'s ``plan``).

Everything here is iterative: plans and expressions can be thousands of levels deep (a long
``withColumn`` chain), far beyond Python's recursion limit.

Records of format 2 hold the plans as a DAG instead (:func:`load_dag`, written by
``capture/plan_walk.py``): one entry per distinct JVM node, nested trees as ``{"$t": id}`` (a list of them as ``{"$ts":
[...]}``). Loaded, fields hold :class:`TreeNode` objects where ``toJSON()`` has flat lists, and a node shared
by several
parents is one object. Every walk here visits a node once (``walk``/``postorder`` are DAG walks), so a
200-step chain that uses the previous step twice costs 200 visits, not 2^200.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

#: Package prefixes of Catalyst expression classes (everything else in a plan JSON is a plan node).
_EXPR_PACKAGES = ("org.apache.spark.sql.catalyst.expressions.",)


@dataclass(eq=False)
class TreeNode:
    """One node of a serialised Catalyst tree (plan node or expression).

    :param cls: simple class name (``Project``, ``AttributeReference`` ...).
    :param qualified: fully qualified class name.
    :param fields: the constructor fields as serialised (child pointers are ints).
    :param children: the child nodes, in order.
    """

    cls: str
    qualified: str
    fields: dict[str, Any]
    children: list[TreeNode] = field(default_factory=list)

    @property
    def is_expression(self) -> bool:
        return self.qualified.startswith(_EXPR_PACKAGES) and ".plans." not in self.qualified

    def expr_id(self) -> int | None:
        """The ``exprId`` of a named expression (attribute, alias), else ``None``."""
        raw = self.fields.get("exprId")
        if isinstance(raw, dict) and "id" in raw:
            return int(raw["id"])
        return None

    @property
    def name(self) -> str:
        return str(self.fields.get("name", ""))

    def walk(self) -> Iterator[TreeNode]:
        """Pre-order walk of this subtree (children only, not nested trees in fields); a node shared by
        several parents (a DAG record) is visited once."""
        stack = [self]
        seen: set[int] = set()
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            yield node
            stack.extend(reversed(node.children))

    def postorder(self) -> list[TreeNode]:
        """Nodes of this subtree, every node after all its descendants (each node once)."""
        out: list[TreeNode] = []
        done: set[int] = set()
        stack: list[tuple[TreeNode, bool]] = [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                out.append(node)
                continue
            if id(node) in done:
                continue
            done.add(id(node))
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(node.children) if id(c) not in done)
        return out

    def child_field(self, name: str) -> TreeNode | None:
        """The child a field points at (``left``/``right``/``child``), if the field is a pointer."""
        val = self.fields.get(name)
        if isinstance(val, int) and not isinstance(val, bool) and 0 <= val < len(self.children):
            return self.children[val]
        return None

    def tree_field(self, name: str) -> TreeNode | None:
        """A single nested tree held in a field (an expression, or a plan that is not a child)."""
        return as_tree(self.fields.get(name))

    def trees_field(self, name: str) -> list[TreeNode]:
        """A ``Seq`` of nested trees held in a field (e.g. ``projectList``)."""
        val = self.fields.get(name)
        if isinstance(val, TreeNode):
            return [val]
        if not isinstance(val, list):
            return []
        if is_tree_json(val):
            tree = as_tree(val)
            return [tree] if tree is not None else []
        out = []
        for item in val:
            tree = as_tree(item)
            if tree is not None:
                out.append(tree)
        return out

    def nested_trees(self) -> Iterator[tuple[str, TreeNode]]:
        """Every tree held in any field, one level deep (lists of trees, lists of lists of trees)."""
        for key, val in self.fields.items():
            if isinstance(val, TreeNode):
                yield key, val
                continue
            if not isinstance(val, list) or not val:
                continue
            if is_tree_json(val):
                tree = as_tree(val)
                if tree is not None:
                    yield key, tree
                continue
            for item in val:
                if isinstance(item, TreeNode):
                    yield key, item
                elif isinstance(item, list) and item:
                    if is_tree_json(item):
                        tree = as_tree(item)
                        if tree is not None:
                            yield key, tree
                    else:
                        for sub in item:
                            tree = as_tree(sub)
                            if tree is not None:
                                yield key, tree

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"TreeNode({self.cls}, {len(self.children)} children)"


def is_tree_json(val: Any) -> bool:
    """Whether ``val`` is a tree: a serialised one (a flat pre-order list of dicts with ``class``) or a
    loaded DAG node."""
    if isinstance(val, TreeNode):
        return True
    return isinstance(val, list) and bool(val) and isinstance(val[0], dict) and "class" in val[0]


_cache: dict[int, tuple[Any, TreeNode]] = {}


def as_tree(val: Any) -> TreeNode | None:
    """Parse a serialised tree (memoised on the list object), or ``None`` if ``val`` is not one."""
    if isinstance(val, TreeNode):
        return val
    if not is_tree_json(val):
        return None
    hit = _cache.get(id(val))
    if hit is not None and hit[0] is val:
        return hit[1]
    tree = parse_tree(val)
    if len(_cache) > 200_000:
        _cache.clear()
    _cache[id(val)] = (val, tree)
    return tree


def parse_tree(flat: list[dict[str, Any]] | TreeNode) -> TreeNode:
    """Rebuild the tree from Spark's flat pre-order list (iterative); a loaded DAG node is returned as is."""
    if isinstance(flat, TreeNode):
        return flat
    if not flat:
        raise ValueError("empty plan JSON")
    nodes: list[TreeNode] = []
    stack: list[tuple[TreeNode, int]] = []
    root: TreeNode | None = None
    for item in flat:
        qualified = str(item.get("class", "?"))
        node = TreeNode(qualified.rsplit(".", 1)[-1].rstrip("$"), qualified, item)
        nodes.append(node)
        if stack:
            parent, want = stack[-1]
            parent.children.append(node)
            if len(parent.children) >= want:
                stack.pop()
        elif root is None:
            root = node
        else:
            break  # trailing garbage: ignore
        n = int(item.get("num-children", 0) or 0)
        if n > 0:
            stack.append((node, n))
    assert root is not None
    return root


#: Format tag of the plan DAG a format-2 record holds (``CaptureRecord.plans``): ``dag-2`` writes a list of
#: nested trees as ``{"$ts": [...]}``; ``dag-1`` (records of earlier versions) had ``{"$t": id}`` items only.
DAG_FORMAT = "dag-2"
DAG_FORMATS = ("dag-1", DAG_FORMAT)


def is_ref_list(value: Any) -> bool:
    """Whether ``value`` is a ``{"$ts": [...]}`` list of nested trees (its items unread)."""
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("$ts"), list)


def is_run(item: Any) -> bool:
    """Whether ``item`` of a ``$ts`` list has the shape of a run ``[first, last]`` (its bounds unchecked)."""
    return isinstance(item, list) and len(item) == 2 and all(isinstance(i, int) for i in item)


def ref_ids(value: Any, count: int) -> list[int] | None:
    """The node ids of a ``{"$ts": [id, [first, last], ...]}`` list of nested trees (a run of consecutive ids as
    its first and last) in a DAG of ``count`` nodes; ``None`` when ``value`` is not one. A run outside the DAG
    (or backwards) is an error: it is never expanded into more ids than the DAG holds."""
    if not is_ref_list(value):
        return None
    out: list[int] = []
    for item in value["$ts"]:
        if isinstance(item, int):
            out.append(item)
        elif is_run(item) and 0 <= item[0] <= item[1] < count:
            out.extend(range(item[0], item[1] + 1))
        else:
            raise ValueError(f"not a node id or a run [first, last] of the DAG's {count} nodes in a $ts list: "
                             f"{str(item)[:80]}")
    return out


def load_dag(dag: dict[str, Any]) -> list[TreeNode | None]:
    """The roots of a plan DAG (``{"format": "dag-2", "nodes": [...], "roots": [...]}``; a node is its
    ``toJSON()`` fields plus ``"$c"``, the node ids of its children) as :class:`TreeNode`
    objects: children linked, every ``{"$t": id}`` in a field replaced by the node it names and every
    ``{"$ts": [...]}`` by the list of the nodes it names (shared, never copied). A root id the DAG does not
    hold gives ``None``."""
    if not isinstance(dag, dict) or dag.get("format") not in DAG_FORMATS:
        raise ValueError(f"not a plan DAG of format {' or '.join(repr(f) for f in DAG_FORMATS)}: {str(dag)[:80]}")
    raw_nodes = dag.get("nodes") or []
    nodes: list[TreeNode] = []
    for item in raw_nodes:
        qualified = str(item.get("class", "?"))
        nodes.append(TreeNode(qualified.rsplit(".", 1)[-1].rstrip("$"), qualified, {}))
    count = len(nodes)

    def resolve(val: Any) -> Any:
        if isinstance(val, dict):
            ref = val.get("$t")
            if isinstance(ref, int) and len(val) == 1:
                return nodes[ref] if 0 <= ref < count else None
            ids = ref_ids(val, count)
            if ids is not None:
                return [nodes[i] if 0 <= i < count else None for i in ids]
            return {k: resolve(v) for k, v in val.items()}
        if isinstance(val, list):
            return [resolve(v) for v in val]
        return val

    for node, item in zip(nodes, raw_nodes):
        node.children = [nodes[c] for c in item.get("$c") or [] if 0 <= c < count]
        node.fields = {k: (v if k in ("class", "num-children") else resolve(v)) for k, v in item.items() if k != "$c"}
    return [nodes[r] if isinstance(r, int) and 0 <= r < count else None for r in dag.get("roots") or []]


def attr_refs(expr: TreeNode) -> Iterator[TreeNode]:
    """Every ``AttributeReference``-like leaf of an expression (not inside nested plans)."""
    for node in expr.walk():
        if node.expr_id() is not None and not node.children and node.cls != "Alias":
            yield node


def simple_type(data_type: Any) -> str:
    """Spark's ``simpleString`` of a serialised ``dataType`` field (string or JSON struct)."""
    if isinstance(data_type, str):
        return {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}.get(data_type, data_type)
    if isinstance(data_type, dict):
        kind = data_type.get("type")
        if kind == "array":
            return f"array<{simple_type(data_type.get('elementType'))}>"
        if kind == "map":
            return f"map<{simple_type(data_type.get('keyType'))},{simple_type(data_type.get('valueType'))}>"
        if kind == "struct":
            inner = ",".join(f"{f.get('name')}:{simple_type(f.get('type'))}" for f in data_type.get("fields", []))
            return f"struct<{inner}>"
        if kind == "udt":
            return str(data_type.get("sqlType") and simple_type(data_type["sqlType"]) or "udt")
    return str(data_type)


_BINARY = {
    "Add": "+", "Subtract": "-", "Multiply": "*", "Divide": "/", "Remainder": "%", "IntegralDivide": "div",
    "EqualTo": "=", "EqualNullSafe": "<=>", "LessThan": "<", "LessThanOrEqual": "<=", "GreaterThan": ">",
    "GreaterThanOrEqual": ">=", "And": "AND", "Or": "OR", "BitwiseAnd": "&", "BitwiseOr": "|",
}


def pretty(expr: TreeNode, limit: int = 160) -> str:
    """A compact Spark-like rendering of an expression: ``substring(cast((a#0 + 1) as string), 1, 2)``."""
    parts: dict[int, str] = {}
    for node in expr.postorder():
        kids = [parts.get(id(c), "?") for c in node.children]
        cls = node.cls
        if cls in ("ScalarSubquery", "Exists", "ListQuery", "InSubquery", "LateralSubquery"):
            text = f"{cls[:1].lower()}{cls[1:]}(<plan>{', ' if kids else ''}{', '.join(kids)})"
        elif cls == "AttributeReference" or (not node.children and node.expr_id() is not None and cls != "Alias"):
            text = f"{node.name}#{node.expr_id()}"
        elif cls == "Literal":
            val = node.fields.get("value")
            text = (
                "null"
                if val is None
                else (repr(val) if isinstance(val, str) and str(node.fields.get("dataType")) == "string" else str(val))
            )
        elif cls == "Alias":
            text = f"{kids[0] if kids else '?'} AS {node.name}#{node.expr_id()}"
        elif cls in _BINARY and len(kids) == 2:
            text = f"({kids[0]} {_BINARY[cls]} {kids[1]})"
        elif cls in ("Cast", "AnsiCast", "TryCast"):
            text = f"cast({kids[0] if kids else '?'} as {simple_type(node.fields.get('dataType'))})"
        else:
            name = cls
            if cls in ("PythonUDF", "ScalaUDF") and node.fields.get("name"):
                name = str(node.fields.get("name"))
            elif cls == "AggregateExpression":
                text = kids[0] if kids else "agg()"
                parts[id(node)] = text[:limit]
                continue
            text = f"{name[:1].lower()}{name[1:]}({', '.join(kids)})"
        parts[id(node)] = text if len(text) <= limit else text[: limit - 1] + "…"
    return parts.get(id(expr), "?")
