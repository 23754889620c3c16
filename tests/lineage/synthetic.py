"""Hand-built plan JSON in Spark's ``toJSON`` shape, for plans local Spark cannot produce or serialise
(Hive writes without a Hive session, MERGE without a row-level V2 table, 2,000-deep chains that make
the JVM's own ``toJSON`` overflow its stack)."""
from __future__ import annotations

from typing import Any

E = "org.apache.spark.sql.catalyst.expressions."
L = "org.apache.spark.sql.catalyst.plans.logical."


def attr(name: str, eid: int, dtype: str = "long") -> list[dict[str, Any]]:
    return [{"class": E + "AttributeReference", "num-children": 0, "name": name, "dataType": dtype, "nullable": True,
             "metadata": {}, "exprId": {"product-class": E + "ExprId", "id": eid, "jvmId": "x"}, "qualifier": []}]


def lit(value: Any, dtype: str = "long") -> list[dict[str, Any]]:
    return [{"class": E + "Literal", "num-children": 0, "value": str(value), "dataType": dtype}]


def call(cls: str, *children: list[dict[str, Any]], **fields: Any) -> list[dict[str, Any]]:
    head = {"class": E + cls, "num-children": len(children), **fields}
    return [head] + [n for c in children for n in c]


def alias(child: list[dict[str, Any]], name: str, eid: int) -> list[dict[str, Any]]:
    return [{"class": E + "Alias", "num-children": 1, "child": 0, "name": name,
             "exprId": {"product-class": E + "ExprId", "id": eid, "jvmId": "x"}, "qualifier": []}] + child


def node(cls: str, children: list[list[dict[str, Any]]], pkg: str = L, **fields: Any) -> list[dict[str, Any]]:
    head = {"class": pkg + cls, "num-children": len(children), **fields}
    return [head] + [n for c in children for n in c]


def relation(cols: list[tuple[str, int]]) -> list[dict[str, Any]]:
    return node("LogicalRelation", [], pkg="org.apache.spark.sql.execution.datasources.",
                relation=None, output=[attr(n, i) for n, i in cols], isStreaming=False)
