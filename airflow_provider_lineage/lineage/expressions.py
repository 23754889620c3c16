"""Expression rules: how each attribute inside an expression tree reaches the expression's value.

Walking an expression top-down, every node decides the transformation step to each child:

* value-preserving wrappers (``Alias``, ``KnownNotNull``, normalisation wrappers, lossless casts):
  no step (IDENTITY);
* aggregate functions: AGGREGATION (``count`` and friends are masking);
* one-way functions: TRANSFORMATION, masking, only where the plan proves it (:func:`masking_proved`):
  ``mask()`` with non-null literal replacements for upper case, lower case and digits; ``md5``/``sha1``/
  ``sha2``; ``hash``/``xxhash64``/``hive_hash``/``crc32`` of strings or binary only (on a fixed-width value
  they are a bijection: ``hive_hash(int_col)`` is the value itself). Reversible encodings (``aes_encrypt``
  with a key the application holds, ``base64``, ``hex``, ``encode``, ``to_json`` ...) are never masking, so no
  later step (``aes_decrypt``, ``unbase64`` ...) can undo a masked path (:func:`~.graph.compose` may keep
  masking sticky);
* ``CASE WHEN`` / ``IF`` conditions: INDIRECT CONDITIONAL, their values DIRECT;
* ``PivotFirst`` (``pivot``): the pivot column is CONDITIONAL (it picks the column), the value passes;
  ``coalesce``: every argument DIRECT, every argument but the last also CONDITIONAL;
* window specifications (``PARTITION BY`` / ``ORDER BY`` of a window function): INDIRECT WINDOW;
* sub-queries (``ScalarSubquery``, ``ListQuery``, ``Exists``, ``InSubquery``): the nested plan is
  analysed on its own; its output feeds the expression, its filters/joins/groupings become
  INDIRECT influences of the expression;
* a Python UDF whose body the driver analysed (:mod:`.udf`): per argument IDENTITY / TRANSFORMATION
  (masking through a hash) / CONDITIONAL / no edge, as the analysis says;
* anything else (``+``, ``substring``, ``upper``, an unanalysed Python UDF ...): TRANSFORMATION of every child.
  For a deterministic scalar function this is exact, so it is not flagged as approximate.
"""
from __future__ import annotations

from collections.abc import Callable

from airflow_provider_lineage.lineage.graph import (
    AGGREGATION,
    CONDITIONAL,
    FILTER,
    IDENTITY,
    TRANSFORMATION,
    WINDOW,
    Trans,
    compose,
)
from airflow_provider_lineage.lineage.plan import TreeNode, simple_type

#: Expressions that hand their child's value through unchanged.
TRANSPARENT = frozenset(
    {
        "Alias",
        "KnownNotNull",
        "KnownNullable",
        "KnownFloatingPointNormalized",
        "NormalizeNaNAndZero",
        "PromotePrecision",
        "OuterReference",
        "SortOrder",
        "Descending",
        "Ascending",
        "AssertNotNull",
        # partitioned writes wrap string partition columns: "" becomes null, any other value passes
        "Empty2Null",
        # a UDF argument passed by name (``f(price=qty)``): the value, labelled with its parameter
        "NamedArgumentExpression",
    }
)

#: Aggregate functions whose result hides the input values (counts).
MASKING_AGGREGATES = frozenset(
    {"Count", "CountIf", "HyperLogLogPlusPlus", "ApproxCountDistinct", "CountMinSketchAgg", "BitmapCount"}
)

#: Scalar functions whose result may hide the input value: one-way functions only, each masking only when
#: :func:`masking_proved` says its arguments do not turn it off.
MASKING_FUNCTIONS = frozenset({"Md5", "Sha1", "Sha2", "Murmur3Hash", "XxHash64", "Crc32", "HiveHash", "Mask"})

#: Static-invoke function names that may mask (``mask()`` may be planned as a StaticInvoke).
MASKING_STATIC = frozenset({"mask", "md5", "sha1", "sha2", "crc32"})

#: Functions that look like obfuscation but are undone by their inverse (listed for the record and the tests:
#: they are never masking). ``aes_encrypt`` is planned as ``StaticInvoke(ExpressionImplUtils.aesEncrypt)``; whoever
#: holds the key, this application included, can decrypt.
REVERSIBLE = frozenset({"AesEncrypt", "aesEncrypt", "Base64", "Hex", "Encode", "StructsToJson", "ToBinary"})

#: Hashes that are a bijection on a fixed-width input (``hash(int)`` can be inverted, ``hive_hash(int)`` is the
#: int): masking only for variable-length input (string, binary).
_NARROW_HASHES = frozenset({"Murmur3Hash", "XxHash64", "HiveHash", "Crc32", "crc32"})

CASTS = frozenset({"Cast", "AnsiCast", "TryCast", "UpCast"})

SUBQUERIES = frozenset({"ScalarSubquery", "ListQuery", "Exists", "InSubquery", "LateralSubquery"})

_WIDENING = {
    "tinyint": 0,
    "smallint": 1,
    "int": 2,
    "bigint": 3,
}


def cast_step(node: TreeNode) -> Trans:
    """IDENTITY for a lossless cast (same type, integral widening, float->double), else TRANSFORMATION."""
    target = simple_type(node.fields.get("dataType"))
    child = node.children[0] if node.children else None
    source = simple_type(child.fields.get("dataType")) if child is not None and "dataType" in child.fields else None
    if source is None:
        return TRANSFORMATION
    if source == target:
        return IDENTITY
    if source in _WIDENING and target in _WIDENING and _WIDENING[source] <= _WIDENING[target]:
        return IDENTITY
    if source == "float" and target == "double":
        return IDENTITY
    if source in _WIDENING and target in ("double",) and _WIDENING[source] <= 2:
        return IDENTITY
    return TRANSFORMATION


def masking_proved(node: TreeNode) -> bool:
    """Whether a masking function's arguments keep it masking (masking is proved from the plan, never assumed).

    * ``mask(input, upper, lower, digit, other)``: a null replacement keeps that class of characters as it is
      (``mask(email, NULL, NULL, NULL, NULL)`` returns the email); masking needs non-null literals for upper
      case, lower case and digits (``other`` may stay null: punctuation is kept, as by default).
    * ``hash``/``xxhash64``/``hive_hash``/``crc32``: only over strings or binary (see ``_NARROW_HASHES``).
    * ``md5``/``sha1``/``sha2``: always (a ``sha2`` bit length Spark does not support gives null).
    """
    name = node.cls if node.cls != "StaticInvoke" else str(node.fields.get("functionName", "")).lower()
    if name in ("Mask", "mask"):
        replacements = node.children[1:4]
        return len(replacements) == 3 and all(
            c.cls == "Literal" and c.fields.get("value") is not None for c in replacements)
    if name in _NARROW_HASHES:
        return bool(node.children) and all(_source_type(c) in ("string", "binary") for c in node.children)
    return True


def _source_type(node: TreeNode) -> str | None:
    """The type of the value an expression carries, seen through casts and aliases (``None``: not serialised)."""
    while (node.cls in CASTS or node.cls in TRANSPARENT) and node.children:
        node = node.children[0]
    dtype = node.fields.get("dataType")
    if dtype is None:
        return "string" if node.cls in ("Concat", "ConcatWs", "Upper", "Lower", "Substring") else None
    return simple_type(dtype)


def child_steps(node: TreeNode) -> list[Trans] | None:
    """The step to each child of ``node``; ``None`` means "TRANSFORMATION for every child"."""
    cls = node.cls
    n = len(node.children)
    if cls in TRANSPARENT:
        return [IDENTITY] * n
    if cls in CASTS:
        return [cast_step(node)] + [TRANSFORMATION] * (n - 1)
    if cls == "AggregateExpression":
        func = node.children[0] if node.children else None
        step = AGGREGATION.masked(func is not None and func.cls in MASKING_AGGREGATES)
        # children: the aggregate function, then the optional FILTER (WHERE ...) clause
        return [step] + [FILTER] * (n - 1)
    if cls in MASKING_FUNCTIONS or (
            cls == "StaticInvoke" and str(node.fields.get("functionName", "")).lower() in MASKING_STATIC):
        return [TRANSFORMATION.masked(masking_proved(node))] * n
    if cls == "CaseWhen":
        has_else = n % 2 == 1
        out = []
        for i in range(n):
            is_else = has_else and i == n - 1
            out.append(CONDITIONAL if (i % 2 == 0 and not is_else) else TRANSFORMATION)
        return out
    if cls == "If":
        return [CONDITIONAL] + [TRANSFORMATION] * (n - 1)
    if cls == "PivotFirst":
        # (pivotColumn, valueColumn): the pivot value picks the output column the (already aggregated)
        # value lands in
        return [CONDITIONAL, IDENTITY][:n] + [TRANSFORMATION] * max(0, n - 2)
    if cls == "WindowSpecDefinition":
        return [WINDOW] * n
    if cls == "WindowExpression":
        # (windowFunction, windowSpec)
        return [TRANSFORMATION, WINDOW][:n] + [WINDOW] * max(0, n - 2)
    if cls in ("Rank", "DenseRank", "PercentRank", "CumeDist", "RowNumber", "NTile"):
        return [WINDOW] * n  # the ORDER BY keys a ranking function carries
    return None


def walk_expression(
    expr: TreeNode,
    start: Trans,
    on_attr: Callable[[TreeNode, Trans], None],
    on_subquery: Callable[[TreeNode, Trans], None],
    udf_steps: Callable[..., list[list[Trans]] | None] | None = None,
    on_field: Callable[[TreeNode, int, Trans], bool] | None = None,
) -> None:
    """Visit every attribute leaf of ``expr`` with the transformation of the path from the root.

    :param start: the transformation already accumulated above ``expr``.
    :param on_attr: called with each attribute leaf (anything with an ``exprId`` and no children).
    :param on_subquery: called with each sub-query expression (its nested plan is the caller's job).
    :param udf_steps: the steps from each argument of a ``PythonUDF`` to its value (several per argument:
        DIRECT and CONDITIONAL; none: the argument does not reach the value), or ``None`` (black box).
        Called as ``udf_steps(udf)``, and ``udf_steps(udf, ordinal)`` for ``GetStructField`` of a UDF's struct.
    :param on_field: ``GetStructField(attribute, ordinal)``: the caller may bind the field itself (a field of
        a struct-returning UDF's result attribute); returns whether it did.
    """
    stack: list[tuple[TreeNode, Trans]] = [(expr, start)]
    # memoised: a sub-expression shared by several parents (a DAG record) is visited once per
    # transformation reaching it; the callbacks are idempotent (edges are a set), so this is the tree
    # walk's answer at a cost linear in distinct (node, transformation) pairs, never in paths
    seen: set[tuple[int, Trans]] = set()
    while stack:
        node, trans = stack.pop()
        key = (id(node), trans)
        if key in seen:
            continue
        seen.add(key)
        if node.cls in SUBQUERIES or ("plan" in node.fields and _has_plan(node)):
            on_subquery(node, trans)
            # the sub-query's own exprId names its result, not an input; InSubquery's values
            # (the left side of IN) are ordinary children
            for child in node.children:
                stack.append((child, compose(trans, TRANSFORMATION)))
            continue
        if not node.children:
            if node.expr_id() is not None and node.cls not in ("Alias",):
                on_attr(node, trans)
            continue
        if (
            on_field is not None
            and node.cls == "GetStructField"
            and len(node.children) == 1
            and not node.children[0].children
            and node.children[0].expr_id() is not None
            and isinstance(node.fields.get("ordinal"), int)
            and on_field(node.children[0], node.fields["ordinal"], trans)
        ):
            continue
        if udf_steps is not None and node.cls == "GetStructField" and node.children \
                and node.children[0].cls == "PythonUDF" and isinstance(node.fields.get("ordinal"), int):
            # one field of a struct-returning UDF: the arguments that build that field (when analysed)
            udf = node.children[0]
            per_arg = udf_steps(udf, node.fields["ordinal"])  # type: ignore[call-arg]
            if per_arg is not None:
                for child, arg_steps in zip(udf.children, per_arg):
                    for s in arg_steps:
                        stack.append((child, compose(trans, s)))
                continue
        if udf_steps is not None and node.cls in ("PythonUDF", "PythonUDAF"):
            per_arg = udf_steps(node)
            if per_arg is not None:
                for child, arg_steps in zip(node.children, per_arg):
                    for s in arg_steps:
                        stack.append((child, compose(trans, s)))
                continue
        steps = child_steps(node)
        if node.cls == "Coalesce":
            last = len(node.children) - 1
            for i, child in enumerate(node.children):
                stack.append((child, compose(trans, TRANSFORMATION)))
                if i < last:
                    stack.append((child, compose(trans, CONDITIONAL)))
            continue
        for i, child in enumerate(node.children):
            step = steps[i] if steps is not None and i < len(steps) else TRANSFORMATION
            stack.append((child, compose(trans, step)))


def _has_plan(node: TreeNode) -> bool:
    val = node.fields.get("plan")
    return isinstance(val, TreeNode) or (isinstance(val, list) and bool(val) and isinstance(val[0], dict))


def is_aggregate_function(node: TreeNode) -> bool:
    return node.cls == "AggregateExpression"
