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
"""
from __future__ import annotations

import ast
import builtins
import functools
import inspect
import linecache
import re
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

IDENT, TRANS = 0, 1
#: A source: a UDF argument position (``int``) or a DataFrame column name (``str``, grouped map).
Src = int | str
#: source -> (strongest DIRECT kind: IDENT/TRANS, masked on every path)
Taint = dict[Src, tuple[int, bool]]

MAX_DEPTH = 4  # nested calls followed into helpers / closures
MAX_NODES = 4000  # AST nodes analysed per UDF (all followed helpers together)
MAX_ROUNDS = 12  # fixpoint rounds per function body
MAX_LINES = 600  # source lines of one function: longer ones are not even read

#: Module names whose callables hash their input (``hashlib.sha256``, ``hmac.new``, ``zlib.crc32``).
HASH_MODULES = frozenset({"_hashlib", "hashlib", "_md5", "_sha1", "_sha2", "_sha256", "_sha512", "_sha3",
                          "_blake2", "hmac"})
#: Checksums in modules that also hold non-hashing functions.
CHECKSUMS = frozenset({("zlib", "crc32"), ("zlib", "adler32"), ("binascii", "crc32"), ("binascii", "crc_hqx")})
#: Builtins that run or look up code by name: a UDF using them on its data is not analysed.
DYNAMIC = frozenset({"eval", "exec", "compile", "getattr", "setattr", "delattr", "globals", "locals", "vars",
                     "__import__"})
#: Builtins that never store one argument into another (no mutation widening for them).
PURE_BUILTINS = frozenset({
    "len", "str", "int", "float", "bool", "abs", "min", "max", "round", "sorted", "list", "tuple", "set",
    "frozenset", "dict", "isinstance", "issubclass", "repr", "format", "ord", "chr", "sum", "any", "all",
    "enumerate", "zip", "range", "map", "filter", "reversed", "divmod", "pow", "hex", "oct", "bin", "bytes",
    "type", "iter", "next", "callable", "id", "print", "hash",
})
#: Methods of str/bytes/numbers/pandas objects that never store an argument into the receiver; any other
#: method called with data arguments (``out.append(a)``, ``d.update(b)``) may, so the receiver gets them.
NON_MUTATING = frozenset({
    "replace", "split", "rsplit", "strip", "lstrip", "rstrip", "lower", "upper", "title", "capitalize", "casefold",
    "format", "join", "startswith", "endswith", "encode", "decode", "find", "rfind", "index", "count", "zfill",
    "ljust", "rjust", "center", "partition", "rpartition", "removeprefix", "removesuffix", "translate", "get",
    "apply", "map", "astype", "fillna", "where", "mask", "clip", "round", "isin", "between", "combine",
    "mul", "div", "truediv", "floordiv", "mod", "pow", "eq", "ne", "lt", "le", "gt", "ge",
    "cat", "contains", "match", "fullmatch", "search", "subn", "findall", "hexdigest", "digest",
})


class Unanalysable(Exception):
    """The function cannot be analysed; the message is the reason shown to the user."""


def join_taint(a: Taint, b: Taint) -> Taint:
    if not b:
        return a
    if not a:
        return dict(b)
    out = dict(a)
    for s, (k, m) in b.items():
        old = out.get(s)
        out[s] = (k, m) if old is None else (max(old[0], k), old[1] and m)
    return out


def transformed(t: Taint, masked: bool = False) -> Taint:
    return {s: (TRANS, m or masked) for s, (_k, m) in t.items()}


@dataclass
class Val:
    """An abstract value: its sources, plus known structure (tuple items, iterable element, named columns)."""

    t: Taint = field(default_factory=dict)
    items: list[Val] | None = None
    elem: Val | None = None
    cols: dict[str, Val] | None = None
    fn: Any = None  # a lambda / nested def (AST) or a resolved Python callable

    def flat(self) -> Taint:
        """Every source of this value and its parts (parts count as TRANSFORMATION of the whole)."""
        t = self.t
        for part in (self.items or []) + list((self.cols or {}).values()) + ([self.elem] if self.elem else []):
            t = join_taint(t, transformed(part.flat()))
        return t

    def sources(self) -> set[Src]:
        return set(self.flat())


EMPTY = Val()


def _bottom(v: Val) -> bool:
    return not v.t and v.items is None and v.elem is None and v.cols is None and v.fn is None


def join(a: Val, b: Val) -> Val:
    if a is b or _bottom(b):
        return a
    if _bottom(a):
        return b
    items = None
    if a.items is not None and b.items is not None and len(a.items) == len(b.items):
        items = [join(x, y) for x, y in zip(a.items, b.items)]
    cols = None
    if a.cols is not None and b.cols is not None:
        cols = {k: join(a.cols.get(k, EMPTY), b.cols.get(k, EMPTY)) for k in {*a.cols, *b.cols}}
    elem = join(a.elem, b.elem) if a.elem is not None and b.elem is not None else None
    t = join_taint(a.t, b.t)
    # structure lost on one side: its parts must still be carried
    for side in (a, b):
        if side.items is not None and items is None:
            t = join_taint(t, transformed(Val(items=side.items).flat()))
        if side.cols is not None and cols is None:
            t = join_taint(t, transformed(Val(cols=side.cols).flat()))
        if side.elem is not None and elem is None:
            t = join_taint(t, transformed(side.elem.flat()))
    return Val(t, items, elem, cols, a.fn if a.fn is b.fn else None)


def same(a: Val, b: Val) -> bool:
    return a.flat() == b.flat() and (a.items is None) == (b.items is None) and (a.cols is None) == (b.cols is None) \
        and (a.elem is None) == (b.elem is None) and (a.fn is None) == (b.fn is None)


def trans_val(*vals: Val, masked: bool = False) -> Val:
    t: Taint = {}
    for v in vals:
        t = join_taint(t, transformed(v.flat(), masked))
    return Val(t)


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


# -- source of functions -------------------------------------------------------------------------
@functools.lru_cache(maxsize=512)
def _parse_code(code: types.CodeType) -> list[ast.AST]:
    """The AST node(s) that may define ``code`` (a def, or the lambdas on its source lines)."""
    lines_used = [line for _s, _e, line in code.co_lines() if line is not None]
    if lines_used and max(lines_used) - code.co_firstlineno > MAX_LINES:
        raise Unanalysable("body too large")
    # inspect.getsourcelines() without its getmodule() scan of every loaded module (~0.3 s on first use)
    filename = code.co_filename
    linecache.checkcache(filename)  # a file edited since it was imported is read again (and then won't match)
    file_lines = linecache.getlines(filename)
    if not file_lines or code.co_firstlineno < 1 or code.co_firstlineno > len(file_lines):
        raise Unanalysable("no source")
    try:
        lines = inspect.getblock(file_lines[code.co_firstlineno - 1:])
    except (IndexError, SyntaxError, ValueError) as exc:
        raise Unanalysable("source not parsable") from exc
    text = textwrap.dedent("".join(lines))
    tree = None
    for candidate in (text, f"(\n{text}\n)", text.rstrip().rstrip(",").rstrip("\\")):
        try:
            tree = ast.parse(candidate)
            break
        except SyntaxError:
            continue
    if tree is None:  # a lambda in the middle of a larger expression: widen the source to its whole file
        try:
            tree = ast.parse("".join(file_lines))
        except (SyntaxError, ValueError) as exc:
            raise Unanalysable("source not parsable") from exc
    names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    if code.co_name == "<lambda>":
        found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and _arg_names(n.args) == list(names)]
    else:
        found = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                 and n.name == code.co_name and _arg_names(n.args) == list(names)]
        found = found[:1]  # the outermost def of that name in the snippet
    if not found:
        raise Unanalysable("source does not match the function")
    return found


def _arg_names(args: ast.arguments) -> list[str]:
    return [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]


@functools.lru_cache(maxsize=4096)
def _size(node: ast.AST) -> int:
    return sum(1 for _ in ast.walk(node))


# -- the interpreter ------------------------------------------------------------------------------
class Frame:
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

    # environment ------------------------------------------------------------------------------
    def read(self, name: str) -> Val:
        frame: Frame | None = self
        while frame is not None:
            if name in frame.env:
                v = frame.env[name]
                shared = self.budget.shared.get(name)
                return join(v, shared) if shared is not None else v
            frame = frame.parent
        return self.budget.shared.get(name, EMPTY)

    def _is_local(self, name: str) -> bool:
        frame: Frame | None = self
        while frame is not None:
            if name in frame.env:
                return True
            frame = frame.parent
        return False

    def link(self, targets: ast.expr, source: ast.expr | None) -> None:
        """``targets`` may now refer to the objects the names in ``source`` hold (aliasing)."""
        if source is None or (id(targets), id(source)) in self.budget.linked:
            return
        self.budget.linked.add((id(targets), id(source)))
        names = _names(source)
        outs = _names(targets)
        for t in outs:
            for s in names - {t}:
                self.budget.aliases.setdefault(t, set()).add(s)
                self.budget.aliases.setdefault(s, set()).add(t)

    def write(self, name: str, val: Val) -> None:
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

    def mutate(self, target: ast.expr, val: Val) -> None:
        """``target`` (a name, or the base of ``a.b[c]``) now also holds ``val``; so does every name that may
        hold the same object, in whichever frame defines it (a closure's list, a module-level set)."""
        while isinstance(target, ast.Attribute | ast.Subscript | ast.Starred):
            target = target.value
        if not isinstance(target, ast.Name) or not val.flat():
            return
        self.budget.mutations += 1
        add = trans_val(val)
        todo, done = [target.id], set()
        while todo:
            name = todo.pop()
            if name in done:
                continue
            done.add(name)
            todo.extend(self.budget.aliases.get(name, ()))
            frame: Frame | None = self
            while frame is not None and name not in frame.env:
                frame = frame.parent
            if frame is not None:
                frame.write(name, add)
            else:
                old = self.budget.shared.get(name, EMPTY)
                new = join(old, add)
                if not same(old, new):
                    self.budget.shared[name] = new
                    self.budget.version += 1

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

    def stmt(self, st: ast.stmt) -> None:
        if isinstance(st, ast.Return):
            if st.value is not None and not self.is_generator:
                self._ret(self.ev(st.value))
        elif isinstance(st, ast.Assign):
            v = self.ev(st.value)
            for tgt in st.targets:
                self.link(tgt, st.value)
                self.assign(tgt, v)
        elif isinstance(st, ast.AnnAssign):
            if st.value is not None:
                self.link(st.target, st.value)
                self.assign(st.target, self.ev(st.value))
        elif isinstance(st, ast.AugAssign):
            v = trans_val(self.ev(st.value), self.ev(st.target))
            self.assign(st.target, v)
        elif isinstance(st, ast.Expr):
            self.ev(st.value)
        elif isinstance(st, ast.If | ast.While):
            self.add_cond(self.ev(st.test).flat())
            self.block(st.body)
            self.block(st.orelse)
        elif isinstance(st, ast.For | ast.AsyncFor):
            it = self.ev(st.iter)
            if it.elem is None:
                self.add_cond(it.flat())  # how many times the body runs
            self.link(st.target, st.iter)
            self.assign(st.target, self.element(it))
            self.block(st.body)
            self.block(st.orelse)
        elif isinstance(st, ast.With | ast.AsyncWith):
            for item in st.items:
                v = self.ev(item.context_expr)
                if item.optional_vars is not None:
                    self.link(item.optional_vars, item.context_expr)
                    self.assign(item.optional_vars, trans_val(v))
            self.block(st.body)
        elif isinstance(st, ast.Try | ast.TryStar):
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
        elif isinstance(st, ast.Assert):
            self.add_cond(self.ev(st.test).flat())
        elif isinstance(st, ast.Raise):
            if st.exc is not None:
                self.ev(st.exc)
        elif isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef):
            for d in st.decorator_list:
                if not (isinstance(d, ast.Name) and d.id in ("staticmethod", "cache")):
                    raise Unanalysable("decorated nested function")
            self.write(st.name, Val(fn=st))
        elif isinstance(st, ast.Match):
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
        elif isinstance(st, ast.Delete | ast.Pass | ast.Break | ast.Continue | ast.Import | ast.ImportFrom):
            pass
        elif isinstance(st, ast.Global | ast.Nonlocal):
            pass  # names are looked up the same way; writes to them stay in this frame (weak updates)
        elif isinstance(st, ast.ClassDef):
            raise Unanalysable("class defined inside the function")
        else:
            raise Unanalysable(f"unsupported statement {type(st).__name__}")

    def _reads(self, st: ast.stmt) -> Taint:
        t: Taint = {}
        for n in ast.walk(st):
            if isinstance(n, ast.Name):
                t = join_taint(t, self.read(n.id).flat())
        return t

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
                if cur.cols is not None:  # pdf["x"] = ... keeps the other columns apart
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
    def ev(self, e: ast.expr) -> Val:
        self.budget.steps += 1
        if self.budget.steps > MAX_NODES * MAX_ROUNDS:
            raise Unanalysable("body too large")
        if isinstance(e, ast.Constant):
            return EMPTY
        if isinstance(e, ast.Name):
            v = self.read(e.id)
            if self.budget.escaped and not self._is_local(e.id):
                obj, found = self.resolve(e)
                if not found or not _immutable(obj):
                    v = join(v, Val(dict(self.budget.escaped)))
            return v
        if isinstance(e, ast.Starred):
            return self.ev(e.value)
        if isinstance(e, ast.Attribute):
            base = self.ev(e.value)
            if base.cols is not None and e.attr in base.cols:
                return base.cols[e.attr]
            return trans_val(base)
        if isinstance(e, ast.Subscript):
            return self.subscript(e)
        if isinstance(e, ast.BinOp | ast.UnaryOp | ast.Compare | ast.JoinedStr | ast.FormattedValue | ast.Slice):
            return trans_val(*(self.ev(c) for c in ast.iter_child_nodes(e) if isinstance(c, ast.expr)))
        if isinstance(e, ast.BoolOp):
            vals = [self.ev(v) for v in e.values]
            for v in vals[:-1]:
                self.add_cond(v.flat())  # its truth picks which operand is the result
            out = Val()
            for v in vals:
                out = join(out, v)
            return out
        if isinstance(e, ast.IfExp):
            self.add_cond(self.ev(e.test).flat())
            return join(self.ev(e.body), self.ev(e.orelse))
        if isinstance(e, ast.Tuple | ast.List):
            return Val(items=[self.ev(x) for x in e.elts]) if not any(isinstance(x, ast.Starred) for x in e.elts) \
                else trans_val(*(self.ev(x) for x in e.elts))
        if isinstance(e, ast.Set):
            return trans_val(*(self.ev(x) for x in e.elts))
        if isinstance(e, ast.Dict):
            if all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in e.keys):
                return Val(cols={k.value: self.ev(v) for k, v in zip(e.keys, e.values)})  # type: ignore[union-attr]
            return trans_val(*(self.ev(x) for x in [*e.keys, *e.values] if x is not None))
        if isinstance(e, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            return self.comprehension(e)
        if isinstance(e, ast.NamedExpr):
            v = self.ev(e.value)
            self.link(e.target, e.value)
            self.assign(e.target, v)
            return v
        if isinstance(e, ast.Lambda):
            return Val(t=self._free_reads(e), fn=e)
        if isinstance(e, ast.Call):
            return self.call(e)
        if isinstance(e, ast.Yield | ast.YieldFrom):
            if e.value is not None:
                v = self.ev(e.value)
                self._ret(self.element(v) if isinstance(e, ast.YieldFrom) else v)
            return EMPTY
        if isinstance(e, ast.Await):
            return trans_val(self.ev(e.value))
        raise Unanalysable(f"unsupported expression {type(e).__name__}")

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
    def call(self, e: ast.Call) -> Val:
        args = [self.ev(a) for a in e.args]
        starred = any(isinstance(a, ast.Starred) for a in e.args)
        kwargs = {k.arg: self.ev(k.value) for k in e.keywords if k.arg is not None}
        star_kw = [self.ev(k.value) for k in e.keywords if k.arg is None]
        everything = [*args, *kwargs.values(), *star_kw]
        func = e.func
        # a local lambda / nested def, or a function value held in a variable
        if isinstance(func, ast.Name):
            local = self.read(func.id)
            if local.fn is not None and not starred and not star_kw:
                return self.inline(local.fn, args, kwargs, closure=self, call=e)
            if local.flat():  # calling a value computed from the data
                return trans_val(local, *everything)
        if isinstance(func, ast.Lambda) and not starred and not star_kw:
            return self.inline(func, args, kwargs, closure=self, call=e)
        obj, resolved = self.resolve(func)
        if resolved:
            return self.call_object(obj, func, args, kwargs, everything, starred or bool(star_kw), e)
        # a method call on a value: receiver and arguments flow into the result
        if isinstance(func, ast.Attribute):
            receiver = self.ev(func.value)
            if isinstance(receiver.fn, Hasher):
                return self.hasher_method(receiver, func, everything)
            out = trans_val(receiver, *everything)
            if func.attr not in NON_MUTATING and any(v.flat() for v in everything):
                self.mutate(func.value, trans_val(*everything))
            if receiver.cols is not None:
                out = self.frame_method(func.attr, receiver, e, out)
            return out
        return trans_val(self.ev(func), *everything)

    def hasher_method(self, receiver: Val, func: ast.Attribute, everything: list[Val]) -> Val:
        """Methods of a hash object (``hashlib``/``hmac``): ``update`` feeds it (masked), ``hexdigest``/``digest``/
        ``copy`` give its masked state; the object stays a hash object in its variable."""
        hasher = receiver.fn
        assert isinstance(hasher, Hasher)
        if func.attr == "update":
            for v in everything:
                for s in v.flat():
                    self.budget.hashes.setdefault(s, set()).add(hasher.label)
            fed = Val(join_taint(receiver.t, trans_val(*everything, masked=True).t), fn=hasher)
            if isinstance(func.value, ast.Name):
                frame: Frame | None = self
                while frame is not None and func.value.id not in frame.env:
                    frame = frame.parent
                (frame or self).write(func.value.id, fed)
            return EMPTY
        return Val(trans_val(receiver, *everything, masked=True).t, fn=hasher if func.attr == "copy" else None)

    def frame_method(self, attr: str, receiver: Val, e: ast.Call, default: Val) -> Val:
        """pandas DataFrame methods that keep columns apart (grouped map / mapInPandas bodies)."""
        assert receiver.cols is not None
        if attr == "copy" and not e.args:
            return receiver
        if attr == "assign" and not e.args:
            cols = dict(receiver.cols)
            for k in e.keywords:
                if k.arg is None:
                    return default
                cols[k.arg] = self.ev(k.value)
            return Val(receiver.t, None, None, cols)
        if attr == "rename" and len(e.keywords) == 1 and e.keywords[0].arg == "columns" \
                and isinstance(e.keywords[0].value, ast.Dict):
            d = e.keywords[0].value
            if all(isinstance(k, ast.Constant) and isinstance(v, ast.Constant) for k, v in zip(d.keys, d.values)):
                mapping = {k.value: v.value for k, v in zip(d.keys, d.values)}  # type: ignore[union-attr]
                return Val(receiver.t, None, None, {mapping.get(n, n): v for n, v in receiver.cols.items()})
        return default

    def resolve(self, func: ast.expr) -> tuple[Any, bool]:
        """The object a dotted callee name refers to (closure cells, module globals, builtins; attributes
        of modules only), without running user code."""
        parts: list[str] = []
        node = func
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None, False
        name = node.id
        frame: Frame | None = self
        while frame is not None:
            if name in frame.env:
                return None, False  # a local variable: not a static callee
            if frame.fn_obj is not None:
                break
            frame = frame.parent
        fn = frame.fn_obj if frame is not None else None
        found = False
        obj: Any = None
        if fn is not None:
            code = getattr(fn, "__code__", None)
            if code is not None and name in code.co_freevars and fn.__closure__:
                try:
                    obj = fn.__closure__[code.co_freevars.index(name)].cell_contents
                    found = True
                except ValueError:  # empty cell
                    return None, False
            if not found and name in getattr(fn, "__globals__", {}):
                obj, found = fn.__globals__[name], True
        if not found and hasattr(builtins, name):
            obj, found = getattr(builtins, name), True
        if not found:
            return None, False
        for attr in reversed(parts):
            if isinstance(obj, types.ModuleType) and attr in vars(obj):
                obj = vars(obj)[attr]
            elif isinstance(obj, type):
                try:
                    obj = inspect.getattr_static(obj, attr)
                except AttributeError:
                    return None, False
            else:
                return None, False
        return obj, True

    def call_object(self, obj: Any, func: ast.expr, args: list[Val], kwargs: dict[str, Val], everything: list[Val],
                    starred: bool, e: ast.Call) -> Val:
        name = getattr(obj, "__name__", "")
        if obj in (eval, exec, compile, getattr, setattr, delattr, globals, locals, vars, __import__):
            if obj in (getattr, setattr, delattr) and not any(v.flat() for v in everything):
                return EMPTY
            raise Unanalysable(f"dynamic code: {name}() in the body")
        if _is_hash(obj):
            label = hash_label(obj)
            if not any(v.flat() for v in everything):
                return Val(fn=hasher(label))  # ``h = hashlib.sha256()``: data arrives by ``h.update(x)``
            for v in everything:
                for s in v.flat():
                    self.budget.hashes.setdefault(s, set()).add(label)
            return Val(trans_val(*everything, masked=True).t, fn=hasher(label))
        if name == "Row" and str(getattr(obj, "__module__", "")).startswith("pyspark") and kwargs and not args \
                and not starred:
            return Val(cols=dict(kwargs))  # Row(x=..., y=...): a struct built field by field
        if isinstance(obj, functools.partial) and not starred:
            bound = [EMPTY] * len(obj.args)
            kw = {k: EMPTY for k in obj.keywords}
            return self.call_object(obj.func, func, bound + args, {**kw, **kwargs}, everything, starred, e)
        if _is_pandas_frame_ctor(obj) and len(e.args) == 1 and not e.keywords and args and args[0].cols is not None:
            return Val(cols=dict(args[0].cols))
        if isinstance(obj, types.FunctionType) and not starred:
            same_module = self.module is not None and obj.__module__ == self.module
            closure = self._is_closure_value(obj)
            if same_module or closure:
                return self.inline(obj, args, kwargs, closure=None, call=e)
        if isinstance(obj, types.BuiltinFunctionType | type) and name in PURE_BUILTINS:
            return trans_val(*everything)
        out = trans_val(*everything)
        if any(v.flat() for v in everything):
            # an unknown callee may store one argument into another (helper(out_list, value)) ...
            if len(e.args) + len(e.keywords) > 1:
                for a in [*e.args, *(k.value for k in e.keywords)]:
                    if isinstance(a, ast.Name):
                        self.mutate(a, out)
            # ... or into state of its own that a mutable global the body reads later exposes
            new = join_taint(self.budget.escaped, out.t)
            if new != self.budget.escaped:
                self.budget.escaped = new
                self.budget.version += 1
        return out

    def _is_closure_value(self, obj: Any) -> bool:
        frame: Frame | None = self
        while frame is not None:
            fn = frame.fn_obj
            if fn is not None and getattr(fn, "__closure__", None):
                for cell in fn.__closure__:
                    try:
                        if cell.cell_contents is obj:
                            return True
                    except ValueError:
                        continue
            frame = frame.parent
        return False

    def inline(self, fn: Any, args: list[Val], kwargs: dict[str, Val], closure: Frame | None,
               call: ast.Call | None = None) -> Val:
        """Analyse a callee's body with the actual argument values (bounded depth; cycles widen)."""
        everything = [*args, *kwargs.values()]
        key = fn.__code__ if hasattr(fn, "__code__") else fn
        if self.depth >= MAX_DEPTH or key in self.budget.stack:
            return trans_val(*everything)  # too deep or recursive: every argument flows
        if isinstance(fn, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef):
            node, fn_obj, module, parent = fn, None, self.module, closure
        else:
            try:
                nodes = _parse_code(fn.__code__)
            except Unanalysable:
                return trans_val(*everything)  # an unknown callee: every argument flows
            if len(nodes) != 1:
                return trans_val(*everything)
            node, fn_obj, module, parent = nodes[0], fn, fn.__module__, None
            defaults = _defaults_ok(fn)
            if not defaults:
                return trans_val(*everything)
        sigs = [_signature(v) for v in everything]
        memo_key = None
        if closure is None and all(s is not None for s in sigs):
            memo_key = (key, tuple(sigs[: len(args)]), tuple(sorted(zip(kwargs, sigs[len(args):]))),
                        self.budget.version)
            hit = self.budget.memo.get(memo_key)
            if hit is not None:
                self.add_cond(hit[1])
                return hit[0]
        self.budget.nodes += _size(node) if fn_obj is not None else 0
        if self.budget.nodes > MAX_NODES:
            raise Unanalysable("body too large")
        env = bind(node.args, args, kwargs)
        if env is None:
            return trans_val(*everything)
        if call is not None and len(call.args) <= len(node.args.posonlyargs + node.args.args):
            # a parameter may hold the caller's object: mutating it mutates the caller's variable
            params = node.args.posonlyargs + node.args.args
            for p, a in zip(params, call.args):
                self.link(ast.Name(p.arg), a)
            for k in call.keywords:
                if k.arg is not None:
                    self.link(ast.Name(k.arg), k.value)
        self.budget.stack.append(key)
        mutations = self.budget.mutations
        try:
            frame = Frame(fn_obj, env, parent, self.budget, module, self.depth + 1)
            frame.is_generator = _is_generator(node)
            body = [ast.Return(node.body)] if isinstance(node, ast.Lambda) else node.body
            frame.run(body)
        finally:
            self.budget.stack.pop()
        self.add_cond(frame.cond)
        result = Val(elem=frame.ret) if frame.is_generator else frame.ret
        if memo_key is not None and mutations == self.budget.mutations:
            self.budget.memo[memo_key] = (result, frame.cond)
        return result


@dataclass(frozen=True)
class Hasher:
    """A hash object (``hashlib.sha256()``, ``hmac.new(key)``): what its ``update`` calls feed comes out masked."""

    label: str


_HASHERS: dict[str, Hasher] = {}


def hasher(label: str) -> Hasher:
    """One :class:`Hasher` per label: the data-flow join keeps a value's ``fn`` only when both sides share it."""
    return _HASHERS.setdefault(label, Hasher(label))


def _is_hash(obj: Any) -> bool:
    mod = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__name__", "") or ""
    return mod in HASH_MODULES or (mod, name) in CHECKSUMS or obj is hash


def hash_label(obj: Any) -> str:
    """``sha256`` for ``hashlib.sha256``, ``hmac.new``, ``hashlib.new`` ..."""
    mod = getattr(obj, "__module__", None) or ""
    name = (getattr(obj, "__name__", "") or "hash").removeprefix("openssl_").strip("_")
    if mod in ("hmac",) or name in ("new", "hash_new", "digest"):
        return f"{mod.strip('_')}.{name}" if mod else name
    return name


def _is_pandas_frame_ctor(obj: Any) -> bool:
    return isinstance(obj, type) and obj.__name__ == "DataFrame" and (obj.__module__ or "").startswith("pandas")


def _defaults_ok(fn: Any) -> bool:
    return True  # defaults are driver-side constants: no column data


_IMMUTABLE = (str, bytes, int, float, complex, bool, tuple, frozenset, range, type(None), re.Pattern,
              types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial)


def _immutable(obj: Any) -> bool:
    """Objects that cannot hold data a callee stored (modules, functions, constants, compiled patterns)."""
    return isinstance(obj, _IMMUTABLE) or (isinstance(obj, type) and obj.__module__ == "builtins")


@functools.lru_cache(maxsize=8192)
def _names(node: ast.AST) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))


def _signature(v: Val) -> Any:
    """A hashable form of a value without structure (``None``: not memoisable)."""
    if v.items is not None or v.cols is not None or v.elem is not None or v.fn is not None:
        return None
    return frozenset(v.t.items())


@functools.lru_cache(maxsize=4096)
def _is_generator(node: ast.AST) -> bool:
    body = node.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else []
    for st in body:
        for n in ast.walk(st):
            if isinstance(n, ast.Yield | ast.YieldFrom):
                return True
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
    return False


def bind(spec: ast.arguments, args: list[Val], kwargs: dict[str, Val]) -> dict[str, Val] | None:
    """Parameter name -> value for one call (defaults are constants: empty); ``None`` if it cannot bind."""
    env: dict[str, Val] = {}
    positional = [a.arg for a in spec.posonlyargs + spec.args]
    for name, v in zip(positional, args):
        env[name] = v
    extra = args[len(positional):]
    if extra:
        if spec.vararg is None:
            return None
        env[spec.vararg.arg] = Val(items=list(extra))
    elif spec.vararg is not None:
        env[spec.vararg.arg] = Val(items=[])
    rest: dict[str, Val] = {}
    names = set(positional) | {a.arg for a in spec.kwonlyargs}
    for k, v in kwargs.items():
        if k in names:
            env[k] = join(env.get(k, EMPTY), v)
        else:
            rest[k] = v
    if rest and spec.kwarg is None:
        return None
    if spec.kwarg is not None:
        env[spec.kwarg.arg] = Val(cols=rest)
    for name in names:
        env.setdefault(name, EMPTY)
    return env


@dataclass
class FlowResult:
    """What a function does with its inputs."""

    ret: Val
    cond: Taint
    hashes: dict[Src, set[str]]
    nodes: int


def analyse_callable(fn: Callable[..., Any], params: list[Val], kw: dict[str, Val] | None = None) -> FlowResult:
    """Run the data-flow pass over ``fn`` called with abstract ``params`` (raises :class:`Unanalysable`)."""
    budget = Budget()
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
    frame.is_generator = _is_generator(node)
    budget.stack.append(fn.__code__)
    body = [ast.Return(node.body)] if isinstance(node, ast.Lambda) else node.body
    frame.run(body)
    return FlowResult(frame.ret, frame.cond, budget.hashes, budget.nodes)
