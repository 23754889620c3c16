"""Data flow through a Python function's body: which parameters reach the returned value, and how.

A small abstract interpreter over the function's AST (from ``inspect.getsource``). Every value is
abstracted as the set of *sources* (UDF arguments, or DataFrame columns by name) it may carry, each
with the strongest way it got there (``IDENTITY`` < ``TRANSFORMATION``) and whether every path went
through a hash (masking). Sources read by a condition (``if``, ``while``, ``x if c else y``, the
choosing operands of ``and``/``or``, comprehension filters, loop iterables, ``try`` bodies, ``assert``)
are collected as CONDITIONAL.

The pass is *sound, never optimistic*: it is flow-insensitive (a variable holds everything ever
assigned to it, loops run to a fixpoint), a mutating method call (``out.append(a)``) puts its
arguments into the receiver, a call to anything it cannot follow carries every argument into the
result, and whatever it cannot model raises :class:`Unanalysable` so the caller falls back to
"every argument flows" and says why. It never executes user code: callees are resolved by looking
names up in the function's closure cells, its module globals and builtins, and attributes only on
modules.

It is never less safe than a black box (every argument flows into the result): whatever the pass does not
model exactly either widens (a call of unknown effect puts its data into every mutable value it can reach:
its arguments, the object a callee is bound to, every alias of those, every part of their structure; a
function value handed to a callee is analysed as if called with that data; ``inplace=True`` mutates the
receiver; ``global``/``nonlocal`` names are shared by every frame), or raises :class:`Unanalysable`: frame
introspection (``inspect.currentframe``, ``sys._getframe``, ``f_locals``, ``__globals__``, ``__dict__``),
``eval``/``exec``/``locals()``/``globals()``/``vars()``, data-dependent ``getattr``, nested classes,
decorated nested functions, any syntax it does not know. Names are resolved in the *snapshot* of the
function's globals and closure cells taken when PySpark pickled the function (:func:`snapshot`), which is
what the executors run, not in the live module (a helper redefined after the UDF was built).
"""
from __future__ import annotations

import ast
import functools
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_lineage.lineage.udf.callees import _immutable
from airflow_provider_lineage.lineage.udf.calls import Calls, bind
from airflow_provider_lineage.lineage.udf.expressions import Expressions
from airflow_provider_lineage.lineage.udf.source import (
    _EMPTY_CELL,
    Snapshot,
    _is_generator,
    _names,
    _parse_code,
    _size,
    snapshot,
    text_of,
)
from airflow_provider_lineage.lineage.udf.statements import Statements
from airflow_provider_lineage.lineage.udf.values import (
    EMPTY,
    MAX_NODES,
    MAX_ROUNDS,
    Src,
    Taint,
    Unanalysable,
    Val,
    join,
    join_taint,
    same,
    spread,
    trans_val,
    transformed,
)

#: widening reasons kept per analysis (the first ones: a body widening everywhere says so a few times, not 100)
MAX_REASONS = 8


@dataclass
class Budget:
    nodes: int = 0  # syntax nodes of the bodies analysed (the size limit)
    steps: int = 0  # expressions evaluated, all rounds (a second limit, for pathological fixpoints)
    mutations: int = 0  # mutate() calls: a callee with side effects is not memoised
    hashes: dict[Src, set[str]] = field(default_factory=dict)
    stack: list[Any] = field(default_factory=list)
    #: module globals / unknown names a body mutated (``seen.add(a)``): shared by every frame
    shared: dict[str, Val] = field(default_factory=dict)
    #: name -> names that may hold the same object (``y = x``; ``for row in rows``): mutation spreads
    aliases: dict[str, set[str]] = field(default_factory=dict)
    version: int = 0  # bumped when ``shared``/``escaped`` grow: every frame then runs another round
    #: data handed to callees the pass cannot follow: any mutable global the body reads may hold it
    escaped: Taint = field(default_factory=dict)
    #: (callee, argument sources, version) -> (result, conditions): a helper called again with the same
    #: abstract arguments is not analysed again
    memo: dict[Any, tuple[Val, Taint]] = field(default_factory=dict)
    linked: set[tuple[int, int]] = field(default_factory=set)
    #: names a body rebinds through ``global``/``nonlocal``: not resolved to the module's object any more
    rebound: set[str] = field(default_factory=set)
    #: the globals and closure cells the executors' pickled copy holds (see :func:`snapshot`)
    snap: Snapshot = field(default_factory=dict)
    #: why the pass widened (a construct it does not model exactly made more inputs flow): the reasons travel with
    #: the analysis (``UdfAnalysis.widened``) into the write's approximate columns
    widened: list[str] = field(default_factory=list)
    #: the callees data escaped to (named when escaped data comes back)
    escaped_via: list[str] = field(default_factory=list)

    def widen(self, reason: str) -> None:
        if reason not in self.widened and len(self.widened) < MAX_REASONS:
            self.widened.append(reason)

    def globals_of(self, fn: Any) -> dict[str, Any]:
        hit = self.snap.get(fn)
        return hit[0] if hit is not None else getattr(fn, "__globals__", {})

    def cells_of(self, fn: Any) -> tuple[Any, ...]:
        hit = self.snap.get(fn)
        if hit is not None:
            return hit[1] or ()
        out = []
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                out.append(cell.cell_contents)
            except ValueError:
                out.append(_EMPTY_CELL)
        return tuple(out)



# -- the interpreter ------------------------------------------------------------------------------
class Frame(Statements, Expressions, Calls):
    """One function body being analysed (flow-insensitive environment, fixpoint over the body)."""

    def __init__(self, fn_obj: Any, env: dict[str, Val], parent: Frame | None, budget: Budget,
                 module: str | None, depth: int) -> None:
        self.fn_obj = fn_obj
        self.env = env
        self.parent = parent
        self.budget = budget
        self.module = module
        self.depth = depth
        self.ret = Val()
        self.cond: Taint = {}
        self.changed = False
        self.is_generator = False
        #: ``global``/``nonlocal`` names of this body: read and written in the shared state
        self.declared: dict[str, str] = {}
        #: names bound by ``import`` statements in this body -> the module/object (``None``: unknown)
        self.imports: dict[str, Any] = {}

    def declare(self, node: ast.AST) -> None:
        """Collect the ``global``/``nonlocal`` declarations of a function body (not of nested functions)."""
        body = node.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else []
        todo = list(body)
        while todo:
            st = todo.pop()
            if isinstance(st, ast.Global | ast.Nonlocal):
                for n in st.names:
                    self.declared[n] = "global" if isinstance(st, ast.Global) else "nonlocal"
            elif not isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
                todo.extend(c for c in ast.iter_child_nodes(st) if isinstance(c, ast.stmt | ast.excepthandler
                                                                           | ast.match_case))

    # environment ------------------------------------------------------------------------------
    def read(self, name: str) -> Val:
        frame: Frame | None = self
        while frame is not None:
            if name in frame.declared:
                owner = frame.owner(name)
                if owner is not None:
                    return owner.read(name)
                break
            if name in frame.env:
                v = frame.env[name]
                shared = self.budget.shared.get(name)
                return join(v, shared) if shared is not None else v
            frame = frame.parent
        return self.budget.shared.get(name, EMPTY)

    def _is_local(self, name: str) -> bool:
        frame: Frame | None = self
        while frame is not None:
            if name in frame.declared:
                return frame.owner(name) is not None
            if name in frame.env:
                return True
            frame = frame.parent
        return False

    def owner(self, name: str) -> Frame | None:
        """The frame whose environment holds ``name`` (``None``: module-level/shared state)."""
        frame: Frame | None = self
        while frame is not None:
            kind = frame.declared.get(name)
            if kind == "global":
                return None
            if kind == "nonlocal":
                frame = frame.parent
                while frame is not None and name not in frame.env and name not in frame.declared:
                    frame = frame.parent
                if frame is None or name in frame.declared:
                    return frame.owner(name) if frame is not None else None
                return frame
            if name in frame.env:
                return frame
            frame = frame.parent
        return None

    def write_shared(self, name: str, val: Val) -> None:
        old = self.budget.shared.get(name, EMPTY)
        new = join(old, val)
        if not same(old, new):
            self.budget.shared[name] = new
            self.budget.version += 1

    def link(self, targets: ast.expr, source: ast.expr | None) -> None:
        """``targets`` may now refer to the objects the names in ``source`` hold (aliasing)."""
        if source is None or (id(targets), id(source)) in self.budget.linked:
            return
        self.budget.linked.add((id(targets), id(source)))
        if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and source.func.attr == "copy" \
                and not source.args and not source.keywords:
            return  # ``x.copy()``: a new object
        names = _names(source)
        outs = _names(targets)
        for t in outs:
            for s in names - {t}:
                self.budget.aliases.setdefault(t, set()).add(s)
                self.budget.aliases.setdefault(s, set()).add(t)

    def write(self, name: str, val: Val) -> None:
        if name in self.declared:
            if val.flat():
                self.budget.widen(f"`{self.declared[name]} {name}` is written by the body: the variable keeps data "
                                  "between calls and rows, every read of it carries all it was ever given")
            if name not in self.budget.rebound:
                self.budget.rebound.add(name)
                self.budget.version += 1  # calls resolved to the old object run again
            owner = self.owner(name)
            if owner is None:
                self.write_shared(name, val)
            elif owner is not self:
                owner.write(name, val)
            return
        old = self.env.get(name)
        new = val if old is None else join(old, val)
        if old is None or not same(old, new):
            self.changed = True
        self.env[name] = new

    def add_cond(self, t: Taint) -> None:
        if t:
            new = join_taint(self.cond, transformed(t))
            if new != self.cond:
                self.changed = True
            self.cond = new

    def mutate(self, target: ast.expr, val: Val, why: str | None = None) -> None:
        """``target`` (a name, or the base of ``a.b[c]``) now also holds ``val``; so does every name that may
        hold the same object, in whichever frame defines it (a closure's list, a module-level set), and every
        part of its known structure (``row[0]`` after ``row.insert(0, x)``). A base that is not a name
        (``d.setdefault(k, []).append(x)``, ``helper(d).append(x)``) mutates every name in it, and any mutable
        global the body reads (the object may be one).

        :param why: the construct that widens here (a call of unknown effect, ``inplace=True``): kept as a
            widening reason when a name gains a source it did not hold."""
        root = target
        while isinstance(root, ast.Attribute | ast.Subscript | ast.Starred):
            root = root.value
        if not val.flat():
            return
        if isinstance(root, ast.Call):
            names = sorted(_names(root))
            self.escape(val.flat(), text_of(root))
        elif isinstance(root, ast.Name):
            names = [root.id]
        else:
            names = sorted(_names(root))
            self.escape(val.flat(), text_of(root))
        self.budget.mutations += 1
        add = trans_val(val)
        todo, done = list(names), set()
        while todo:
            name = todo.pop()
            if name in done:
                continue
            done.add(name)
            todo.extend(self.budget.aliases.get(name, ()))
            frame = self.owner(name)
            cur = frame.env.get(name, EMPTY) if frame is not None else self.budget.shared.get(name, EMPTY)
            if not set(add.flat()) <= set(cur.flat()):
                if why is not None:
                    self.budget.widen(why)
                if frame is None:
                    obj, found = self.resolve(ast.Name(name))
                    if not (found and _immutable(obj)):
                        self.budget.widen(f"module-level `{name}` is changed by the body: it keeps data between rows, "
                                          "every read of it carries all it was ever given")
            if frame is not None:
                frame.write(name, spread(cur, add))
            else:
                self.write_shared(name, spread(cur, add))

    def escape(self, t: Taint, via: str = "a callee") -> None:
        """Data went where the pass cannot follow (``via``): any mutable global the body reads may hold it from now
        on."""
        new = join_taint(self.budget.escaped, t)
        if new != self.budget.escaped:
            self.budget.escaped = new
            self.budget.version += 1
            if via not in self.budget.escaped_via and len(self.budget.escaped_via) < 3:
                self.budget.escaped_via.append(via)

    def with_escaped(self, v: Val, what: str) -> Val:
        """``v`` joined with the data handed to callees the pass does not follow (``what`` may hold it); a widening
        reason when that adds a source."""
        if not self.budget.escaped:
            return v
        if not set(self.budget.escaped) <= set(v.flat()):
            via = ", ".join(f"`{c}`" for c in self.budget.escaped_via)
            self.budget.widen(f"{what} may hold data handed to {via} (not followed): every such input flows")
        return join(v, Val(dict(self.budget.escaped)))

    # statements -------------------------------------------------------------------------------
    def run(self, body: list[ast.stmt]) -> None:
        for _ in range(MAX_ROUNDS):
            self.changed = False
            version = self.budget.version
            self.block(body)
            if not self.changed and version == self.budget.version:
                return
        raise Unanalysable("data flow did not settle (loop too complex)")

    def block(self, body: list[ast.stmt]) -> None:
        for st in body:
            self.stmt(st)

    def _ret(self, v: Val) -> None:
        new = join(self.ret, v)
        if not same(new, self.ret):
            self.changed = True
        self.ret = new

    def assign(self, tgt: ast.expr, v: Val) -> None:
        if isinstance(tgt, ast.Name):
            self.write(tgt.id, v)
        elif isinstance(tgt, ast.Tuple | ast.List):
            star = next((i for i, e in enumerate(tgt.elts) if isinstance(e, ast.Starred)), None)
            if v.items is not None and star is None and len(v.items) == len(tgt.elts):
                for e, part in zip(tgt.elts, v.items):
                    self.assign(e, part)
            else:
                part = self.element(v)
                for e in tgt.elts:
                    self.assign(e.value if isinstance(e, ast.Starred) else e, part)
        elif isinstance(tgt, ast.Starred):
            self.assign(tgt.value, v)
        elif isinstance(tgt, ast.Attribute | ast.Subscript):
            key = self.ev(tgt.slice) if isinstance(tgt, ast.Subscript) else EMPTY
            base = tgt.value
            if isinstance(tgt, ast.Subscript) and isinstance(base, ast.Name) and isinstance(tgt.slice, ast.Constant) \
                    and isinstance(tgt.slice.value, str):
                cur = self.read(base.id)
                if cur.cols is not None and not self.budget.aliases.get(base.id):
                    # pdf["x"] = ... keeps the other columns apart (an alias of pdf would not see it: then mutate)
                    self.write(base.id, Val(cur.t, None, None, {**cur.cols, tgt.slice.value: v}))
                    return
            self.mutate(base, join(v, trans_val(key)))
        else:
            raise Unanalysable(f"unsupported assignment target {type(tgt).__name__}")

    def element(self, v: Val) -> Val:
        """One element of iterating ``v``."""
        if v.elem is not None:
            return v.elem
        if v.items is not None:
            out = Val()
            for part in v.items:
                out = join(out, part)
            return out
        return trans_val(v)

    # expressions -------------------------------------------------------------------------------

@dataclass
class FlowResult:
    """What a function does with its inputs."""

    ret: Val
    cond: Taint
    hashes: dict[Src, set[str]]
    nodes: int
    #: why the pass widened (see :attr:`Budget.widened`): empty when every construct was modelled exactly
    widened: list[str] = field(default_factory=list)


def analyse_callable(fn: Callable[..., Any], params: list[Val], kw: dict[str, Val] | None = None,
                     snap: Snapshot | None = None) -> FlowResult:
    """Run the data-flow pass over ``fn`` called with abstract ``params`` (raises :class:`Unanalysable`).

    :param snap: the globals/closure copy the executors run (:func:`snapshot` taken when PySpark pickled ``fn``);
        ``None``: the live function's (taken now).
    """
    budget = Budget(snap=snap if snap is not None else snapshot(fn))
    root = Frame(None, {}, None, budget, getattr(fn, "__module__", None), 0)
    if isinstance(fn, functools.partial):
        params = [EMPTY] * len(fn.args) + params
        kw = {**{k: EMPTY for k in fn.keywords}, **(kw or {})}
        fn = fn.func
    if isinstance(fn, types.MethodType):  # a bound method: ``self`` is driver-side state, not column data
        params = [EMPTY, *params]
        fn = fn.__func__
    if not isinstance(fn, types.FunctionType):
        if isinstance(fn, types.BuiltinFunctionType | types.BuiltinMethodType) or not callable(fn):
            raise Unanalysable("built-in or C function")
        raise Unanalysable(f"not a Python function ({type(fn).__name__})")
    root.module = fn.__module__
    nodes = _parse_code(fn.__code__)
    if len(nodes) != 1:
        raise Unanalysable("several lambdas with the same parameters on one line")
    if sum(_size(n) for n in nodes) > MAX_NODES:
        raise Unanalysable("body too large")
    node = nodes[0]
    if isinstance(node, ast.AsyncFunctionDef):
        raise Unanalysable("async function")
    env = bind(node.args, params, kw or {})
    if env is None:
        raise Unanalysable("arguments do not match the parameters")
    frame = Frame(fn, env, None, budget, fn.__module__, 0)
    frame.declare(node)
    frame.is_generator = _is_generator(node)
    budget.stack.append(fn.__code__)
    body = [ast.Return(node.body)] if isinstance(node, ast.Lambda) else node.body
    frame.run(body)
    return FlowResult(frame.ret, frame.cond, budget.hashes, budget.nodes, list(budget.widened))

