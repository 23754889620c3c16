"""The Sieve pruning rule's decision for one scan (see :mod:`.prune`): Spark's pushed filters as index predicates
(or why the index cannot prove them), a tree of AND / OR over leaves of file ids, encoded for the JVM; and
:func:`answer`, the same decision applied to a listing in Python (the reference for tests).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import logging
from typing import Any

import numpy as np

from ..errors import IndexUnavailable, SieveError
from ..predicates import Predicate
from .filters import Cond, predicates
from .prune_opened import _open, _Opened, table_text
from .prune_scan import Scan, _warn_once, log, plan


class Unprovable(Exception):
    """A condition the index cannot answer exactly as Spark evaluates it."""


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _value(v: dict[str, str] | None) -> Any:
    if v is None:
        return None
    t, s = v["t"], v["v"]
    if t == "int":
        return int(s)
    if t == "str":
        return s
    if t == "date":
        return dt.date.fromisoformat(s)
    if t == "ts":
        return _EPOCH + dt.timedelta(microseconds=int(s))
    if t == "ntz":
        return dt.datetime.fromisoformat(s)
    if t == "dec":
        return decimal.Decimal(s)
    if t == "bin":
        return bytes.fromhex(s)
    if t == "nan":
        raise Unprovable(f"a NaN or infinite value ({s})")
    raise Unprovable(f"a value of type {t} ({s})")


def _cond(leaf: dict[str, Any], column_type: str) -> Cond:
    t = column_type.lower()
    if "collate" in t and "utf8_binary" not in t:
        raise Unprovable(f"column type {column_type} compares strings by a collation, the index by bytes")
    if t in ("float", "double"):
        raise Unprovable(f"column type {column_type} (NaN and -0.0 order)")
    op = leaf["op"]
    if op == "in":
        return Cond(leaf["column"], "in", tuple(_value(v) for v in leaf["values"]))
    if op == "is_null":
        return Cond(leaf["column"], "is_null")
    value = _value(leaf.get("value"))
    if op == "eq_null_safe":
        return Cond(leaf["column"], "is_null") if value is None else Cond(leaf["column"], "eq", value)
    if op == "starts_with" and not isinstance(value, str):
        raise Unprovable("a prefix that is not a string")
    return Cond(leaf["column"], op, value)


Tree = tuple  # ("L", table key, column, hits) | ("A" | "O", [children]); None: excludes nothing


class _Eval:
    """The decision tree of one scan's filter tree: AND (any child excludes a file), OR (every child
    does), leaves (one predicate on one index: its hits)."""

    def __init__(self, scan: Scan) -> None:
        self.scan = scan
        self.opened: dict[str, _Opened | None] = {}

    def index(self, column: str) -> _Opened | None:
        if column not in self.opened:
            try:
                self.opened[column] = _open(self.scan.indexes[column], column, self.scan.root)
            except (IndexUnavailable, SieveError, OSError, ValueError) as exc:
                _warn_once(self.scan.root, f"the index of column {column} cannot be used ({exc})")
                self.opened[column] = None
        return self.opened[column]

    def conjunction(self, nodes: list[dict[str, Any]]) -> Tree | None:
        by_column: dict[str, list[Cond]] = {}
        children: list[Tree] = []
        for n in nodes:
            if n["op"] == "and":
                sub = self.conjunction(n["children"])
            elif n["op"] == "or":
                sub = self.disjunction(n)
            else:
                sub = None
                if n.get("column") in self.scan.indexes:
                    try:
                        cond = _cond(n, self.scan.columns.get(n["column"], ""))
                    except Unprovable as exc:
                        _warn_once(
                            self.scan.root,
                            f"a condition on indexed column {n['column']} cannot be proven by the index: {exc}",
                        )
                        continue
                    by_column.setdefault(n["column"], []).append(cond)
            if sub is not None:
                children.append(sub)
        for column, conds in by_column.items():
            for pred in predicates(conds):
                leaf = self.leaf(column, pred)
                if leaf is not None:
                    children.append(leaf)
        if not children:
            return None
        return children[0] if len(children) == 1 else ("A", children)

    def disjunction(self, node: dict[str, Any]) -> Tree | None:
        children = []
        for child in node["children"]:
            sub = self.conjunction([child])
            if sub is None:  # a branch that excludes nothing: neither does the OR
                return None
            children.append(sub)
        return ("O", children) if children else None

    def leaf(self, column: str, pred: Predicate) -> Tree | None:
        opened = self.index(column)
        if opened is None:
            return None
        try:
            hits = opened.hits(pred)
        except (TypeError, ValueError, SieveError, OverflowError) as exc:
            _warn_once(self.scan.root, f"the index of column {column} cannot answer {pred} ({exc})")
            return None
        return None if hits is None else ("L", opened.key, column, hits)


def decide(req: dict[str, Any]) -> str:
    """What the rule does with one scan, from the indexes alone (Spark's listing stays in the JVM); ""
    leaves the scan as it is. Lines: ``N1`` (log the narrowing at INFO) or ``N0``; the table's root as
    Spark spells it (each listed file's path relative to it is looked up in the file tables); the number of
    file tables and their keys (``T``+key fetches one the JVM does not hold); then the tree in prefix
    notation, a node a line: ``A<n>`` / ``O<n>`` and their n children, ``L<table>\t<column>\t<hits>``
    (``hits`` as :meth:`_Opened.hits`). A listed file is excluded by a leaf when the leaf's file table
    knows it at the size and modification time Spark listed and its id is not a hit."""
    scan = plan(req)
    if scan is None:
        return ""
    tree = _Eval(scan).conjunction(scan.filters)
    if tree is None:
        return ""
    keys: list[str] = []
    body: list[str] = []

    def emit(node: Tree) -> None:
        if node[0] == "L":
            _, key, column, hits = node
            if key not in keys:
                keys.append(key)
            body.append(f"L{keys.index(key)}\t{column}\t{hits}")
        else:
            body.append(f"{node[0]}{len(node[1])}")
            for child in node[1]:
                emit(child)

    emit(tree)
    flag = "N1" if log.isEnabledFor(logging.INFO) else "N0"
    return "\n".join([flag, scan.spark_root, str(len(keys)), *keys, *body])


def answer(req: dict[str, Any]) -> str:
    """:func:`decide` applied to a listing in Python, as the rule applies it in the JVM (the reference
    for tests): ``K``/``X``, a description line, then the files to keep (``K``) or to exclude (``X``) as
    Spark spelled them; "" when nothing is excluded. ``req["files"]``: ``[path, size, mtime ms]``."""
    text = decide(req)
    if not text:
        return ""
    lines = text.split("\n")
    base = lines[1].rstrip("/") + "/"
    keys = lines[3 : 3 + int(lines[2])]
    tables = []
    for key in keys:
        rows: dict[str, tuple[int, int, int]] = {}
        for line in table_text(key).split("\n")[1:]:
            fid, size, mtime, rel = line.split("\t", 3)
            rows[rel] = (int(fid), int(size), int(mtime))
        tables.append(rows)
    pos = 3 + len(keys)
    used: set[str] = set()

    def parse() -> Any:
        nonlocal pos
        line = lines[pos]
        pos += 1
        if line[0] in "AO":
            return (line[0], [parse() for _ in range(int(line[1:]))])
        slot, column, hits = line[1:].split("\t", 2)
        if hits[0] == "b":
            raw = np.unpackbits(np.frombuffer(base64.b64decode(hits[1:]), np.uint8), bitorder="little")
            ids = set(np.flatnonzero(raw).tolist())
        else:
            ids = {int(x) for x in hits[1:].split(",") if x}
        return ("L", tables[int(slot)], column, ids)

    tree = parse()

    def excluded(node: Any, rel: str | None, size: int, mtime: int) -> bool:
        if node[0] == "L":
            _, rows, column, ids = node
            row = rows.get(rel) if rel is not None else None
            if row is None or row[1:] != (size, mtime) or row[0] in ids:
                return False
            used.add(column)
            return True
        results = [excluded(c, rel, size, mtime) for c in node[1]]
        return any(results) if node[0] == "A" else all(results)

    kept, dropped = [], []
    for path, size, mtime in req["files"]:
        rel = path[len(base) :] if path.startswith(base) else None
        (dropped if excluded(tree, rel, int(size), int(mtime)) else kept).append(path)
    if not dropped:
        return ""
    message = f"Sieve: {len(kept)} of {len(kept) + len(dropped)} files by {', '.join(sorted(used))}"
    if len(kept) <= len(dropped):
        return "K\n" + message + "\n" + "\n".join(kept)
    return "X\n" + message + "\n" + "\n".join(sorted(dropped))
