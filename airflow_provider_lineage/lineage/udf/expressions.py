"""Expressions of a body under analysis: one handler per syntax node type (:data:`EXPRESSIONS`)."""
from __future__ import annotations

import ast
import types
from collections.abc import Callable
from typing import Any

from airflow_provider_lineage.lineage.udf.callees import (
    INTROSPECTION_ATTRS,
    _forbidden,
    _immutable,
    _root_name,
)
from airflow_provider_lineage.lineage.udf.source import text_of
from airflow_provider_lineage.lineage.udf.values import (
    EMPTY,
    MAX_NODES,
    MAX_ROUNDS,
    Taint,
    Unanalysable,
    Val,
    join,
    join_taint,
    trans_val,
    transformed,
)


class Expressions:
    """Mixin of :class:`~.interpreter.Frame`: evaluating an expression to its abstract value."""

    def ev(self, e: ast.expr) -> Val:
        self.budget.steps += 1
        if self.budget.steps > MAX_NODES * MAX_ROUNDS:
            raise Unanalysable("body too large")
        handler = EXPRESSIONS.get(type(e))
        if handler is None:
            raise Unanalysable(f"unsupported expression {type(e).__name__}")
        return handler(self, e)

    def _constant(self, e: ast.Constant) -> Val:
        return EMPTY

    def _name(self, e: ast.Name) -> Val:
        v = self.read(e.id)
        if not self._is_local(e.id):
            obj, found = self.resolve(e)
            why = _forbidden(obj) if found else None
            if why is not None:
                raise Unanalysable(why)
            if self.budget.escaped and (not found or not _immutable(obj)):
                v = self.with_escaped(v, f"`{e.id}`")
            if found and isinstance(obj, types.FunctionType) and (
                    obj.__module__ == self.module or self._is_closure_value(obj)):
                v = join(v, Val(fn=obj))  # ``f = helper; f(x)``, ``map(helper, xs)``: the body is followed
        return v

    def _starred(self, e: ast.Starred) -> Val:
        return self.ev(e.value)

    def _attribute(self, e: ast.Attribute) -> Val:
        if e.attr in INTROSPECTION_ATTRS:
            raise Unanalysable(f"frame introspection: .{e.attr} in the body")
        base = self.ev(e.value)
        if base.cols is not None and e.attr in base.cols:
            return base.cols[e.attr]
        out = trans_val(base)
        if e.attr in self.budget.shared and not self._is_local(_root_name(e)):
            out = join(out, self.budget.shared[e.attr])  # ``sys.modules[__name__].G`` after ``global G``
        if isinstance(e.value, ast.Name | ast.Attribute) and not self._is_local(_root_name(e)):
            obj, found = self.resolve(e)
            why = _forbidden(obj) if found else None
            if why is not None:
                raise Unanalysable(why)
            if found and _immutable(obj):
                return out
            if self.budget.escaped:  # a module's mutable state: it may hold data handed to its functions
                out = self.with_escaped(out, f"`{text_of(e)}`")
        return out

    def _operation(self, e: ast.expr) -> Val:
        """``BinOp``, ``UnaryOp``, ``Compare``, f-strings, slices: a transformation of every operand."""
        return trans_val(*(self.ev(c) for c in ast.iter_child_nodes(e) if isinstance(c, ast.expr)))

    def _bool_op(self, e: ast.BoolOp) -> Val:
        vals = [self.ev(v) for v in e.values]
        for v in vals[:-1]:
            self.add_cond(v.flat())  # its truth picks which operand is the result
        out = Val()
        for v in vals:
            out = join(out, v)
        return out

    def _if_exp(self, e: ast.IfExp) -> Val:
        self.add_cond(self.ev(e.test).flat())
        return join(self.ev(e.body), self.ev(e.orelse))

    def _sequence(self, e: ast.Tuple | ast.List) -> Val:
        return Val(items=[self.ev(x) for x in e.elts]) if not any(isinstance(x, ast.Starred) for x in e.elts) \
            else trans_val(*(self.ev(x) for x in e.elts))

    def _set(self, e: ast.Set) -> Val:
        return trans_val(*(self.ev(x) for x in e.elts))

    def _dict(self, e: ast.Dict) -> Val:
        if all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in e.keys):
            return Val(cols={k.value: self.ev(v) for k, v in zip(e.keys, e.values)})  # type: ignore[union-attr]
        return trans_val(*(self.ev(x) for x in [*e.keys, *e.values] if x is not None))

    def _named_expr(self, e: ast.NamedExpr) -> Val:
        v = self.ev(e.value)
        self.link(e.target, e.value)
        self.assign(e.target, v)
        return v

    def _lambda(self, e: ast.Lambda) -> Val:
        return Val(t=self._free_reads(e), fn=e)

    def _yield(self, e: ast.Yield | ast.YieldFrom) -> Val:
        if e.value is not None:
            v = self.ev(e.value)
            self._ret(self.element(v) if isinstance(e, ast.YieldFrom) else v)
        return EMPTY

    def _await(self, e: ast.Await) -> Val:
        return trans_val(self.ev(e.value))

    def _free_reads(self, node: ast.AST) -> Taint:
        t: Taint = {}
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                t = join_taint(t, transformed(self.read(n.id).flat()))
        return t

    def subscript(self, e: ast.Subscript) -> Val:
        base = self.ev(e.value)
        sl = e.slice
        if isinstance(sl, ast.Constant):
            if base.items is not None and isinstance(sl.value, int) and -len(base.items) <= sl.value < len(base.items):
                return base.items[sl.value]
            if base.cols is not None and isinstance(sl.value, str):
                return base.cols.get(sl.value, EMPTY) if sl.value in base.cols else trans_val(base)
            if base.cols is not None and isinstance(sl.value, int):  # pdf.iloc-like position on a frame
                return trans_val(base)
            return trans_val(base)
        if base.cols is not None and isinstance(sl, ast.List) and all(
                isinstance(x, ast.Constant) and isinstance(x.value, str) for x in sl.elts):
            names = [x.value for x in sl.elts]  # type: ignore[attr-defined]
            if all(n in base.cols for n in names):
                return Val(base.t, None, None, {n: base.cols[n] for n in names})
        return trans_val(base, self.ev(sl))

    def comprehension(self, e: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> Val:
        for gen in e.generators:
            it = self.ev(gen.iter)
            if it.elem is None:
                self.add_cond(it.flat())
            self.link(gen.target, gen.iter)
            self.assign(gen.target, self.element(it))
            for cond in gen.ifs:
                self.add_cond(self.ev(cond).flat())
        if isinstance(e, ast.DictComp):
            return trans_val(self.ev(e.key), self.ev(e.value))
        out = self.ev(e.elt)
        if isinstance(e, ast.GeneratorExp):
            return Val(elem=out)
        return trans_val(out)

    # calls ---------------------------------------------------------------------------------------


#: Expression node type -> its handler (a type not listed is not analysed: :class:`Unanalysable`).
EXPRESSIONS: dict[type, Callable[[Any, Any], Val]] = {
    ast.Constant: Expressions._constant,
    ast.Name: Expressions._name,
    ast.Starred: Expressions._starred,
    ast.Attribute: Expressions._attribute,
    ast.Subscript: Expressions.subscript,
    **dict.fromkeys((ast.BinOp, ast.UnaryOp, ast.Compare, ast.JoinedStr, ast.FormattedValue, ast.Slice),
                    Expressions._operation),
    ast.BoolOp: Expressions._bool_op,
    ast.IfExp: Expressions._if_exp,
    ast.Tuple: Expressions._sequence,
    ast.List: Expressions._sequence,
    ast.Set: Expressions._set,
    ast.Dict: Expressions._dict,
    **dict.fromkeys((ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp), Expressions.comprehension),
    ast.NamedExpr: Expressions._named_expr,
    ast.Lambda: Expressions._lambda,
    ast.Call: lambda frame, e: frame.call(e),
    ast.Yield: Expressions._yield,
    ast.YieldFrom: Expressions._yield,
    ast.Await: Expressions._await,
}
