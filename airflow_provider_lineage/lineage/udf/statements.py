"""Statements of a body under analysis: one handler per syntax node type (:data:`STATEMENTS`)."""
from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from typing import Any

from airflow_provider_lineage.lineage.udf.values import Taint, Unanalysable, Val, join_taint, trans_val


class Statements:
    """Mixin of :class:`~.interpreter.Frame`: running a statement (flow-insensitively: the frame's fixpoint
    runs the body again until nothing changes)."""

    def stmt(self, st: ast.stmt) -> None:
        handler = STATEMENTS.get(type(st))
        if handler is None:
            raise Unanalysable(f"unsupported statement {type(st).__name__}")
        handler(self, st)

    def _return(self, st: ast.Return) -> None:
        if st.value is not None and not self.is_generator:
            self._ret(self.ev(st.value))

    def _assign(self, st: ast.Assign) -> None:
        v = self.ev(st.value)
        for tgt in st.targets:
            self.link(tgt, st.value)
            self.assign(tgt, v)

    def _ann_assign(self, st: ast.AnnAssign) -> None:
        if st.value is not None:
            self.link(st.target, st.value)
            self.assign(st.target, self.ev(st.value))

    def _aug_assign(self, st: ast.AugAssign) -> None:
        v = trans_val(self.ev(st.value), self.ev(st.target))
        self.assign(st.target, v)

    def _expr(self, st: ast.Expr) -> None:
        self.ev(st.value)

    def _branch(self, st: ast.If | ast.While) -> None:
        self.add_cond(self.ev(st.test).flat())
        self.block(st.body)
        self.block(st.orelse)

    def _for(self, st: ast.For | ast.AsyncFor) -> None:
        it = self.ev(st.iter)
        if it.elem is None:
            self.add_cond(it.flat())  # how many times the body runs
        self.link(st.target, st.iter)
        self.assign(st.target, self.element(it))
        self.block(st.body)
        self.block(st.orelse)

    def _with(self, st: ast.With | ast.AsyncWith) -> None:
        for item in st.items:
            v = self.ev(item.context_expr)
            if item.optional_vars is not None:
                self.link(item.optional_vars, item.context_expr)
                self.assign(item.optional_vars, trans_val(v))
        self.block(st.body)

    def _try(self, st: ast.Try | ast.TryStar) -> None:
        before = dict(self.cond)
        reads: Taint = {}
        for sub in st.body:
            reads = join_taint(reads, self._reads(sub))
        self.add_cond(reads)  # an exception raised by the body chooses the handler
        self.cond = join_taint(self.cond, before)
        self.block(st.body)
        for h in st.handlers:
            if h.name:
                self.write(h.name, trans_val(Val(reads)))
            self.block(h.body)
        self.block(st.orelse)
        self.block(st.finalbody)

    def _assert(self, st: ast.Assert) -> None:
        self.add_cond(self.ev(st.test).flat())

    def _raise(self, st: ast.Raise) -> None:
        if st.exc is not None:
            self.ev(st.exc)

    def _def(self, st: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in st.decorator_list:
            if not (isinstance(d, ast.Name) and d.id in ("staticmethod", "cache")):
                raise Unanalysable("decorated nested function")
        self.write(st.name, Val(fn=st))

    def _match(self, st: ast.Match) -> None:
        subj = self.ev(st.subject)
        self.add_cond(subj.flat())
        for case in st.cases:
            for n in ast.walk(case.pattern):
                if isinstance(n, ast.MatchAs | ast.MatchStar) and n.name:
                    self.write(n.name, trans_val(subj))
                elif isinstance(n, ast.MatchMapping) and n.rest:
                    self.write(n.rest, trans_val(subj))
            if case.guard is not None:
                self.add_cond(self.ev(case.guard).flat())
            self.block(case.body)

    def _nothing(self, st: ast.stmt) -> None:
        """``del``, ``pass``, ``break``, ``continue``; ``global``/``nonlocal`` are collected before the body runs
        (:meth:`~.interpreter.Frame.declare`): reads and writes go to the shared state."""

    def _class(self, st: ast.ClassDef) -> None:
        raise Unanalysable("class defined inside the function")

    def bind_imports(self, st: ast.Import | ast.ImportFrom) -> None:
        """``import x`` / ``from m import f`` in a body: the modules already loaded in this process, looked up
        without importing anything (an unknown one resolves to nothing: its calls are unknown callees)."""
        if isinstance(st, ast.Import):
            for alias in st.names:
                if alias.asname:
                    self.imports[alias.asname] = sys.modules.get(alias.name)
                else:
                    top = alias.name.split(".")[0]
                    self.imports[top] = sys.modules.get(top)
            return
        mod = sys.modules.get(st.module or "") if not st.level else None
        for alias in st.names:
            if alias.name == "*":
                raise Unanalysable("star import in the body")
            obj = None
            if mod is not None:
                obj = vars(mod).get(alias.name, sys.modules.get(f"{st.module}.{alias.name}"))
            self.imports[alias.asname or alias.name] = obj

    def _reads(self, st: ast.stmt) -> Taint:
        t: Taint = {}
        for n in ast.walk(st):
            if isinstance(n, ast.Name):
                t = join_taint(t, self.read(n.id).flat())
        return t


#: Statement node type -> its handler (a type not listed is not analysed: :class:`Unanalysable`).
STATEMENTS: dict[type, Callable[[Any, Any], None]] = {
    ast.Return: Statements._return,
    ast.Assign: Statements._assign,
    ast.AnnAssign: Statements._ann_assign,
    ast.AugAssign: Statements._aug_assign,
    ast.Expr: Statements._expr,
    ast.If: Statements._branch,
    ast.While: Statements._branch,
    ast.For: Statements._for,
    ast.AsyncFor: Statements._for,
    ast.With: Statements._with,
    ast.AsyncWith: Statements._with,
    ast.Try: Statements._try,
    ast.TryStar: Statements._try,
    ast.Assert: Statements._assert,
    ast.Raise: Statements._raise,
    ast.FunctionDef: Statements._def,
    ast.AsyncFunctionDef: Statements._def,
    ast.Match: Statements._match,
    ast.Import: Statements.bind_imports,
    ast.ImportFrom: Statements.bind_imports,
    **dict.fromkeys((ast.Delete, ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal), Statements._nothing),
    ast.ClassDef: Statements._class,
}
