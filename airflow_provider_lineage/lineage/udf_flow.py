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
import builtins
import datetime
import decimal
import enum
import functools
import inspect
import linecache
import re
import sys
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
    "type", "iter", "next", "callable", "id", "hash",
})
#: Builtins that call a function argument with the data (``map(parts.append, xs)``, ``sorted(xs, key=f)``).
CALLING_BUILTINS = frozenset({"map", "filter", "sorted", "min", "max", "iter", "next"})
#: Methods whose effect is known: they store their arguments into the receiver, never the receiver into an
#: argument (any other method not in :data:`NON_MUTATING` may do both: ``df.to_csv(buf)``).
RECEIVER_ONLY = frozenset({
    "append", "extend", "add", "update", "insert", "setdefault", "appendleft", "extendleft", "put", "put_nowait",
    "push", "__setitem__", "write", "writelines", "discard", "remove", "pop", "popleft", "clear", "sort", "reverse",
    "union", "intersection", "difference", "symmetric_difference", "issubset", "issuperset", "copy", "keys",
    "values", "items",
})
#: Modules whose functions keep no state between calls: data handed to them does not come back from a later call.
PURE_MODULES = frozenset({
    "re", "math", "cmath", "json", "datetime", "time", "string", "unicodedata", "decimal", "fractions", "base64",
    "binascii", "urllib", "textwrap", "posixpath", "ntpath", "os", "operator", "itertools", "statistics", "html",
    "uuid", "hashlib", "hmac", "zlib", "calendar", "ipaddress", "numbers", "struct", "copy", "numpy", "pandas",
    "_json", "_datetime", "_decimal", "_operator", "_strptime", "_string", "_sre", "_struct", "_pydecimal",
    "builtins",
})
#: Attributes that reach frames, globals or the namespace of an object: a body using them is not analysed.
INTROSPECTION_ATTRS = frozenset({
    "f_locals", "f_globals", "f_builtins", "f_back", "tb_frame", "gi_frame", "cr_frame", "ag_frame",
    "__globals__", "__closure__", "__dict__", "__builtins__", "_getframe", "currentframe", "_current_frames",
    "getargvalues", "get_referrers", "get_referents",
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


@functools.lru_cache(maxsize=1)
def _introspection() -> dict[int, str]:
    """id -> name of the callables that read frames or namespaces (or run code): never analysed through."""
    import gc
    import traceback

    found: dict[int, str] = {}
    for mod, names in ((inspect, ("currentframe", "stack", "trace", "getouterframes", "getinnerframes",
                                  "getargvalues", "getframeinfo", "getmembers", "getmembers_static")),
                       (sys, ("_getframe", "_current_frames", "settrace", "setprofile", "_getframemodulename")),
                       (traceback, ("walk_stack", "extract_stack", "walk_tb", "print_stack", "format_stack")),
                       (gc, ("get_referrers", "get_referents", "get_objects")),
                       (builtins, ("eval", "exec", "compile", "globals", "locals", "vars", "__import__",
                                   "breakpoint"))):
        for n in names:
            obj = getattr(mod, n, None)
            if obj is not None:
                found[id(obj)] = f"{mod.__name__}.{n}" if mod is not builtins else n
    return found


def _forbidden(obj: Any) -> str | None:
    """Why calling/reading ``obj`` makes a body unanalysable, or ``None``."""
    name = _introspection().get(id(obj))
    if name is None:
        return None
    if name in ("eval", "exec", "compile", "globals", "locals", "vars", "__import__", "breakpoint"):
        return f"dynamic code: {name}() in the body"
    return f"frame introspection: {name}() in the body"


@dataclass(frozen=True)
class FnSet:
    """Several functions one variable may hold (``f = g if c else h``): a call may run any of them."""

    fns: frozenset[Any]


def fns_of(v: Val) -> list[Any]:
    """The functions a value may be (lambdas / nested defs as AST, Python functions), without hash objects."""
    if v.fn is None:
        return []
    members = v.fn.fns if isinstance(v.fn, FnSet) else (v.fn,)
    return [f for f in members if not isinstance(f, Hasher)]


def _join_fn(a: Any, b: Any) -> Any:
    if a is b or b is None:
        return a
    if a is None:
        return b
    if a == b:
        return a
    members = set(a.fns if isinstance(a, FnSet) else (a,)) | set(b.fns if isinstance(b, FnSet) else (b,))
    return FnSet(frozenset(members))


#: A copy of what a pickled function sees: function -> (its referenced globals, its closure cell contents).
Snapshot = dict[Any, tuple[dict[str, Any], tuple[Any, ...] | None]]
_EMPTY_CELL = object()
_REBOUND = object()  # a snapshot entry whose executor-side value is not known
MAX_SNAPSHOT = 256


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c)
    return names


def snapshot(fn: Any) -> Snapshot:
    """What cloudpickle captures when PySpark pickles ``fn`` (at ``_create_judf``): for ``fn`` and every Python
    function it can reach through names, the globals its code refers to and its closure cells, as they are now.
    The analysis resolves names in this copy, so a helper redefined later does not change the answer (the
    executors run the pickled copy). Nothing is copied deeply and no user code runs."""
    out: Snapshot = {}
    todo = [fn]
    while todo and len(out) < MAX_SNAPSHOT:
        f = todo.pop()
        if isinstance(f, functools.partial):
            todo.append(f.func)
            continue
        if isinstance(f, types.MethodType):
            todo.append(f.__func__)
            continue
        if not isinstance(f, types.FunctionType) or f in out:
            continue
        g = f.__globals__
        refs = {n: g[n] for n in _code_names(f.__code__) if n in g}
        if _by_reference(f):
            # cloudpickle pickles a function of an importable module by reference: the executors import the
            # module afresh, so a same-module function the driver bound to another name since (a monkeypatch)
            # is not what they run: resolve it to nothing (an unknown callee) rather than to the wrong body
            for n, v in refs.items():
                if isinstance(v, types.FunctionType) and v.__module__ == f.__module__ and v.__qualname__ != n:
                    refs[n] = _REBOUND
        cells: tuple[Any, ...] | None = None
        if f.__closure__:
            vals = []
            for cell in f.__closure__:
                try:
                    vals.append(cell.cell_contents)
                except ValueError:
                    vals.append(_EMPTY_CELL)
            cells = tuple(vals)
        out[f] = (refs, cells)
        todo.extend(v for v in [*refs.values(), *(cells or ())] if isinstance(v, types.FunctionType | functools.partial))
    return out


def _by_reference(f: types.FunctionType) -> bool:
    mod = sys.modules.get(f.__module__ or "")
    return mod is not None and f.__module__ != "__main__" and vars(mod).get(f.__name__) is f


def snapshot_key(snap: Snapshot | None) -> Any:
    """A hashable identity of a snapshot's callables (a cache key part: another helper, another analysis)."""
    if not snap:
        return None
    return tuple(sorted((id(f), n, id(v)) for f, (refs, _c) in snap.items() for n, v in refs.items() if callable(v)))


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
    return Val(t, items, elem, cols, _join_fn(a.fn, b.fn))


def same(a: Val, b: Val) -> bool:
    return a.flat() == b.flat() and (a.items is None) == (b.items is None) and (a.cols is None) == (b.cols is None) \
        and (a.elem is None) == (b.elem is None) and a.fn == b.fn


def trans_val(*vals: Val, masked: bool = False) -> Val:
    t: Taint = {}
    for v in vals:
        t = join_taint(t, transformed(v.flat(), masked))
    return Val(t)


def spread(cur: Val, add: Val) -> Val:
    """``add`` put into a mutated object: into the whole and into every part of its known structure."""
    if cur.items is None and cur.cols is None and cur.elem is None:
        return add
    return Val(add.t,
               [spread(i, add) for i in cur.items] if cur.items is not None else None,
               spread(cur.elem, add) if cur.elem is not None else None,
               {k: spread(v, add) for k, v in cur.cols.items()} if cur.cols is not None else None)


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

    def mutate(self, target: ast.expr, val: Val) -> None:
        """``target`` (a name, or the base of ``a.b[c]``) now also holds ``val``; so does every name that may
        hold the same object, in whichever frame defines it (a closure's list, a module-level set), and every
        part of its known structure (``row[0]`` after ``row.insert(0, x)``). A base that is not a name
        (``d.setdefault(k, []).append(x)``, ``helper(d).append(x)``) mutates every name in it, and any mutable
        global the body reads (the object may be one)."""
        root = target
        while isinstance(root, ast.Attribute | ast.Subscript | ast.Starred):
            root = root.value
        if not val.flat():
            return
        if isinstance(root, ast.Call):
            names = sorted(_names(root))
            self.escape(val.flat())
        elif isinstance(root, ast.Name):
            names = [root.id]
        else:
            names = sorted(_names(root))
            self.escape(val.flat())
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
            if frame is not None:
                frame.write(name, spread(frame.env.get(name, EMPTY), add))
            else:
                self.write_shared(name, spread(self.budget.shared.get(name, EMPTY), add))

    def escape(self, t: Taint) -> None:
        """Data went where the pass cannot follow: any mutable global the body reads may hold it from now on."""
        new = join_taint(self.budget.escaped, t)
        if new != self.budget.escaped:
            self.budget.escaped = new
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
        elif isinstance(st, ast.Import | ast.ImportFrom):
            self.bind_imports(st)
        elif isinstance(st, ast.Delete | ast.Pass | ast.Break | ast.Continue):
            pass
        elif isinstance(st, ast.Global | ast.Nonlocal):
            pass  # collected before the body runs (:meth:`declare`): reads and writes go to the shared state
        elif isinstance(st, ast.ClassDef):
            raise Unanalysable("class defined inside the function")
        else:
            raise Unanalysable(f"unsupported statement {type(st).__name__}")

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
    def ev(self, e: ast.expr) -> Val:
        self.budget.steps += 1
        if self.budget.steps > MAX_NODES * MAX_ROUNDS:
            raise Unanalysable("body too large")
        if isinstance(e, ast.Constant):
            return EMPTY
        if isinstance(e, ast.Name):
            v = self.read(e.id)
            if not self._is_local(e.id):
                obj, found = self.resolve(e)
                why = _forbidden(obj) if found else None
                if why is not None:
                    raise Unanalysable(why)
                if self.budget.escaped and (not found or not _immutable(obj)):
                    v = join(v, Val(dict(self.budget.escaped)))
                if found and isinstance(obj, types.FunctionType) and (
                        obj.__module__ == self.module or self._is_closure_value(obj)):
                    v = join(v, Val(fn=obj))  # ``f = helper; f(x)``, ``map(helper, xs)``: the body is followed
            return v
        if isinstance(e, ast.Starred):
            return self.ev(e.value)
        if isinstance(e, ast.Attribute):
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
                    out = join(out, Val(dict(self.budget.escaped)))
            return out
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
        if isinstance(func, ast.Name) and self._is_local(func.id):
            local = self.read(func.id)
            fns = fns_of(local)
            if fns and not starred and not star_kw:
                out = Val()
                for fn in fns:
                    out = join(out, self.inline(fn, args, kwargs, closure=self if isinstance(fn, ast.AST) else None,
                                                call=e))
                if local.flat():
                    out = join(out, trans_val(local, *everything))
                return out
            # a value of unknown behaviour (``add = parts.append``; a callable built from the data)
            return self.unknown_call(func, local, everything, e)
        if isinstance(func, ast.Lambda) and not starred and not star_kw:
            return self.inline(func, args, kwargs, closure=self, call=e)
        obj, resolved = self.resolve(func)
        if resolved:
            return self.call_object(obj, func, args, kwargs, everything, starred or bool(star_kw), e)
        # a method call on a value: receiver and arguments flow into the result
        if isinstance(func, ast.Attribute):
            if func.attr in INTROSPECTION_ATTRS:
                raise Unanalysable(f"frame introspection: .{func.attr} in the body")
            receiver = self.ev(func.value)
            if isinstance(receiver.fn, Hasher):
                return self.hasher_method(receiver, func, everything)
            out = trans_val(receiver, *everything)
            if _inplace(e):  # ``s.fillna(other, inplace=True)``: the receiver now holds the result
                self.mutate(func.value, out)
            if func.attr not in NON_MUTATING:
                if any(v.flat() for v in everything):
                    self.mutate(func.value, trans_val(*everything))
                if func.attr not in RECEIVER_ONLY and receiver.flat():
                    # a method of unknown effect may store the receiver into an argument (``df.to_csv(buf)``)
                    for a in [*e.args, *(k.value for k in e.keywords)]:
                        if self._may_hold(a):
                            self.mutate(a, out)
                if func.attr not in RECEIVER_ONLY and out.flat():
                    self.escape(out.flat())  # ... or into state elsewhere (``repo.save(x)`` then ``load()``)
            out = join(out, self.run_fn_args(everything, [receiver, *everything], e))
            if receiver.cols is not None:
                out = self.frame_method(func.attr, receiver, e, out)
            return out
        # ``fns[0](x)``, ``make()(x)``: whatever the callee value is
        return self.unknown_call(func, self.ev(func), everything, e)

    def unknown_call(self, func: ast.expr, callee: Val, everything: list[Val], e: ast.Call) -> Val:
        """A call of a value the pass cannot follow: the result carries the callee and every argument; a function
        it may be runs on that data; the object it may be bound to (``add = parts.append``: every alias of
        ``add``) and every argument that is a variable may now hold all of it."""
        out = trans_val(callee, *everything)
        fns = fns_of(callee)
        data = [callee, *everything]
        for fn in fns:
            out = join(out, self._run_fn(fn, data))
        out = join(out, self.run_fn_args(everything, data, e))
        if out.flat():
            self.mutate(func, out)
            for a in [*e.args, *(k.value for k in e.keywords)]:
                if self._may_hold(a):
                    self.mutate(a, out)
            if not fns:
                self.escape(out.flat())  # it may keep the data in state of its own
        if not fns and self.budget.escaped:
            out = join(out, Val(dict(self.budget.escaped)))
        return out

    def _may_hold(self, a: ast.expr) -> bool:
        """An argument expression naming an object that could be mutated (not a constant, module or function)."""
        if not _rooted(a):
            return False
        if isinstance(a, ast.Name) and not self._is_local(a.id):
            obj, found = self.resolve(a)
            return not (found and _immutable(obj))
        return True

    def run_fn_args(self, args: list[Val], data: list[Val], e: ast.Call | None = None) -> Val:
        """Function values handed to a callee the pass does not follow (``map(lambda v: out.append(v), xs)``,
        ``s.apply(f)``, ``map(helper, xs)``): analysed as if called with all of ``data`` (their side effects and
        results count)."""
        out = Val()
        for v in args:
            for part in _parts(v):
                for fn in fns_of(part):
                    out = join(out, self._run_fn(fn, data))
        for a in ([*e.args, *(k.value for k in e.keywords)] if e is not None else []):
            if isinstance(a, ast.Name | ast.Attribute) and not self._is_local(_root_name(a)):
                obj, found = self.resolve(a)
                if found and isinstance(obj, types.FunctionType) and (
                        obj.__module__ == self.module or self._is_closure_value(obj)):
                    out = join(out, self._run_fn(obj, data))
        return out

    def _run_fn(self, fn: Any, data: list[Val]) -> Val:
        p = trans_val(*data)
        if isinstance(fn, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef):
            n = len(fn.args.posonlyargs + fn.args.args)
            return self.inline(fn, [p] * n, {}, closure=self)
        if isinstance(fn, types.FunctionType):
            n = fn.__code__.co_argcount
            return self.inline(fn, [p] * n, {}, closure=None)
        return p

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
        found = False
        obj: Any = None
        while frame is not None:
            if name in frame.imports:
                obj = frame.imports[name]
                if obj is None:
                    return None, False  # imported from a module not loaded in the driver
                found = True
                break
            if name in frame.env or name in frame.declared:
                return None, False  # a local variable: not a static callee
            if frame.fn_obj is not None:
                break
            frame = frame.parent
        if not found and name in self.budget.rebound:
            return None, False  # rebound by a ``global`` statement: the module's object is not what runs
        fn = frame.fn_obj if frame is not None and not found else None
        if fn is not None:
            code = getattr(fn, "__code__", None)
            if code is not None and name in code.co_freevars:
                cells = self.budget.cells_of(fn)
                i = code.co_freevars.index(name)
                if i >= len(cells) or cells[i] is _EMPTY_CELL:
                    return None, False  # empty cell
                obj, found = cells[i], True
            globs = self.budget.globals_of(fn)
            if not found and name in globs:
                obj, found = globs[name], True
                if obj is _REBOUND:
                    return None, False
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
        if obj in (getattr, setattr, delattr):
            if not any(v.flat() for v in everything):
                if obj is getattr:  # ``getattr(module, "G")``: a global some body wrote, or escaped data
                    name_arg = e.args[1] if len(e.args) > 1 else None
                    attr = name_arg.value if isinstance(name_arg, ast.Constant) else None
                    out = Val(dict(self.budget.escaped))
                    return join(out, self.budget.shared[attr]) if attr in self.budget.shared else out
                return EMPTY
            raise Unanalysable(f"dynamic code: {name}() in the body")
        why = _forbidden(obj)
        if why is not None:
            raise Unanalysable(why)
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
        if isinstance(obj, types.BuiltinFunctionType | type) and name in PURE_BUILTINS \
                and getattr(obj, "__module__", None) == "builtins":
            out = trans_val(*everything)
            if name in CALLING_BUILTINS:
                # the function argument runs on the data: a lambda's side effects, a bound method's receiver
                # (``map(parts.append, xs)``: every alias of the argument variable)
                out = join(out, self.run_fn_args(everything, everything, e))
                if any(v.flat() for v in everything):
                    for a, v in zip(e.args, args):
                        if isinstance(a, ast.Attribute) or (isinstance(a, ast.Name) and not v.flat()):
                            self.mutate(a, out)
            return out
        return self.opaque(obj, everything, e)

    def opaque(self, obj: Any, everything: list[Val], e: ast.Call | None) -> Val:
        """A callee the pass does not follow: every argument flows into the result; a function value among them
        runs on the data; it may store one argument into another (``helper(out_list, value)``) or keep the data
        in state of its own, which a later call of such a callee, or a mutable global, may give back."""
        out = trans_val(*everything)
        if e is not None:
            out = join(out, self.run_fn_args(everything, everything, e))
        pure = _pure_module(obj)
        if any(v.flat() for v in everything):
            if e is not None and (len(e.args) + len(e.keywords) > 1 or _inplace(e)):
                for a in [*e.args, *(k.value for k in e.keywords)]:
                    if self._may_hold(a):
                        self.mutate(a, out)
            if not pure:
                self.escape(out.flat())
        if not pure and self.budget.escaped:
            out = join(out, Val(dict(self.budget.escaped)))
        return out

    def _is_closure_value(self, obj: Any) -> bool:
        frame: Frame | None = self
        while frame is not None:
            fn = frame.fn_obj
            if fn is not None and any(c is obj for c in self.budget.cells_of(fn)):
                return True
            frame = frame.parent
        return False

    def inline(self, fn: Any, args: list[Val], kwargs: dict[str, Val], closure: Frame | None,
               call: ast.Call | None = None) -> Val:
        """Analyse a callee's body with the actual argument values (bounded depth; cycles widen)."""
        everything = [*args, *kwargs.values()]
        key = fn.__code__ if hasattr(fn, "__code__") else fn
        if key in self.budget.stack:
            return trans_val(*everything)  # recursive: every argument flows (the body's effects are those analysed)
        if self.depth >= MAX_DEPTH:
            return self.opaque(fn, everything, call)  # too deep: an unknown callee
        if isinstance(fn, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef):
            node, fn_obj, module, parent = fn, None, self.module, closure
        else:
            try:
                nodes = _parse_code(fn.__code__)
            except Unanalysable:
                return self.opaque(fn, everything, call)  # an unknown callee: every argument flows
            if len(nodes) != 1:
                return self.opaque(fn, everything, call)
            node, fn_obj, module, parent = nodes[0], fn, fn.__module__, None
            if not _defaults_ok(fn):
                return self.opaque(fn, everything, call)
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
            frame.declare(node)
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
    # not the builtin ``hash``: ``hash(42) == 42`` (an int, and a tuple of ints, hash to a value that gives them back)
    return mod in HASH_MODULES or (mod, name) in CHECKSUMS


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
    """Defaults are driver-side constants (no column data); a mutable one (``acc=[]``) is state kept between calls,
    which the pass (one frame per call) does not model: such a function is an unknown callee."""
    defaults = [*(getattr(fn, "__defaults__", None) or ()), *(getattr(fn, "__kwdefaults__", None) or {}).values()]
    return all(_immutable(d) for d in defaults)


def _pure_module(obj: Any) -> bool:
    mod = getattr(obj, "__module__", None) or getattr(getattr(obj, "__self__", None), "__module__", None)
    if not isinstance(mod, str):
        return isinstance(obj, types.BuiltinFunctionType) and getattr(obj, "__self__", None) is None
    return mod.split(".")[0] in PURE_MODULES


_IMMUTABLE = (str, bytes, int, float, complex, bool, tuple, frozenset, range, type(None), re.Pattern,
              types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial)


def _immutable(obj: Any) -> bool:
    """Objects that cannot hold data a callee stored (modules, functions, constants, compiled patterns)."""
    return isinstance(obj, _IMMUTABLE) or (isinstance(obj, type) and obj.__module__ == "builtins") or isinstance(
        obj, enum.Enum | datetime.date | datetime.time | datetime.timedelta | decimal.Decimal)


def _root_name(e: ast.expr) -> str:
    while isinstance(e, ast.Attribute | ast.Subscript | ast.Starred):
        e = e.value
    return e.id if isinstance(e, ast.Name) else ""


def _inplace(e: ast.Call) -> bool:
    """``inplace=`` anything but a literal false (pandas: the receiver is modified, the call returns ``None``)."""
    for k in e.keywords:
        if k.arg == "inplace":
            return not (isinstance(k.value, ast.Constant) and not k.value.value)
    return False


def _rooted(a: ast.expr) -> bool:
    """An argument expression that names a variable's object (``buf``, ``self.items``, ``d["k"]``)."""
    while isinstance(a, ast.Attribute | ast.Subscript | ast.Starred):
        a = a.value
    return isinstance(a, ast.Name)


def _parts(v: Val) -> list[Val]:
    out, todo = [], [v]
    while todo and len(out) < 256:
        x = todo.pop()
        out.append(x)
        todo.extend(x.items or ())
        todo.extend((x.cols or {}).values())
        if x.elem is not None:
            todo.append(x.elem)
    return out


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
    return FlowResult(frame.ret, frame.cond, budget.hashes, budget.nodes)
