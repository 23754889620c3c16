"""Reading a function as the executors run it: its source (AST) and the snapshot of the globals and closure
cells PySpark pickled with it."""
from __future__ import annotations

import ast
import functools
import inspect
import linecache
import sys
import textwrap
import types
from typing import Any

from airflow_provider_lineage.lineage.udf.values import Unanalysable

MAX_LINES = 600  # source lines of one function: longer ones are not even read

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
        reached = [*refs.values(), *(cells or ())]
        todo.extend(v for v in reached if isinstance(v, types.FunctionType | functools.partial))
    return out


def _by_reference(f: types.FunctionType) -> bool:
    mod = sys.modules.get(f.__module__ or "")
    return mod is not None and f.__module__ != "__main__" and vars(mod).get(f.__name__) is f


def snapshot_key(snap: Snapshot | None) -> Any:
    """A hashable identity of a snapshot's callables (a cache key part: another helper, another analysis)."""
    if not snap:
        return None
    return tuple(sorted((id(f), n, id(v)) for f, (refs, _c) in snap.items() for n, v in refs.items() if callable(v)))



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


@functools.lru_cache(maxsize=8192)
def _names(node: ast.AST) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))



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




def text_of(node: ast.AST, limit: int = 60) -> str:
    """Source text of a node for a reason line (shortened)."""
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - a reason's wording must never fail the analysis
        text = type(node).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"
