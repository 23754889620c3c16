"""Calls in a body under analysis: following a callee's body, or widening for one the pass cannot follow."""
from __future__ import annotations

import ast
import builtins
import functools
import inspect
import types
from typing import Any

from airflow_provider_lineage.lineage.udf.callees import (
    CALLING_BUILTINS,
    INTROSPECTION_ATTRS,
    NON_MUTATING,
    PURE_BUILTINS,
    RECEIVER_ONLY,
    _defaults_ok,
    _forbidden,
    _immutable,
    _inplace,
    _is_hash,
    _is_pandas_frame_ctor,
    _pure_module,
    _root_name,
    _rooted,
    hash_label,
)
from airflow_provider_lineage.lineage.udf.source import (
    _EMPTY_CELL,
    _REBOUND,
    _is_generator,
    _parse_code,
    _size,
    text_of,
)
from airflow_provider_lineage.lineage.udf.values import (
    EMPTY,
    MAX_DEPTH,
    MAX_NODES,
    Hasher,
    Unanalysable,
    Val,
    _parts,
    _signature,
    fns_of,
    hasher,
    join,
    join_taint,
    trans_val,
)


class Calls:
    """Mixin of :class:`~.interpreter.Frame`: calls, callee resolution and inlining (a frame of the same class
    analyses a callee's body; ``closure`` is the frame a lambda or nested def was defined in)."""

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
                why = f"`.{func.attr}(..., inplace=True)` changes its receiver in place: it takes every input"
                self.mutate(func.value, out, why)
            if func.attr not in NON_MUTATING:
                unknown = func.attr not in RECEIVER_ONLY
                why = f"`.{func.attr}()` is a method of unknown effect: its receiver and arguments may take every " \
                    "input of the call" if unknown else None
                if any(v.flat() for v in everything):
                    # (a method of a constant, a module or a compiled pattern changes no variable: no reason then)
                    held = self._may_hold(func.value) or not _rooted(func.value)
                    self.mutate(func.value, trans_val(*everything), why if held else None)
                if unknown and receiver.flat():
                    # a method of unknown effect may store the receiver into an argument (``df.to_csv(buf)``)
                    for a in [*e.args, *(k.value for k in e.keywords)]:
                        if self._may_hold(a):
                            self.mutate(a, out, why)
                if unknown and out.flat():
                    # ... or into state elsewhere (``repo.save(x)`` then ``load()``)
                    self.escape(out.flat(), f".{func.attr}()")
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
        name = text_of(func)
        if out.flat():
            if not fns:
                self.budget.widen(f"`{name}(...)` calls a value of unknown behaviour (a bound-method alias, a callable "
                                  "built at run time): its result, its object and its arguments take every input")
            # (the reason above covers a value of unknown behaviour; one of several known functions is said here)
            why = None if not fns else f"`{name}(...)` is a call of unknown effect: its object and arguments may " \
                "take every input"
            self.mutate(func, out, why)
            for a in [*e.args, *(k.value for k in e.keywords)]:
                if self._may_hold(a):
                    self.mutate(a, out, why)
            if not fns:
                self.escape(out.flat(), name)  # it may keep the data in state of its own
        if not fns and self.budget.escaped:
            out = self.with_escaped(out, f"the result of `{name}(...)`")
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
                frame: Any = self
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
        if default.flat() and attr not in NON_MUTATING and attr not in RECEIVER_ONLY:
            self.budget.widen(f"`.{attr}()` on a frame, Row or dict is not modelled per column: every column of it "
                              "flows to every column of the result")
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
        frame: Any = self
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
                    self.budget.widen(f"`{name}` was bound to another function after the UDF was pickled (the "
                                      "executors import the module's own): not followed, every argument flows")
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
                    out = self.with_escaped(EMPTY, f"`getattr(..., {attr!r})`")
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

    def opaque(self, obj: Any, everything: list[Val], e: ast.Call | None, skipped: str | None = None) -> Val:
        """A callee the pass does not follow: every argument flows into the result; a function value among them
        runs on the data; it may store one argument into another (``helper(out_list, value)``) or keep the data
        in state of its own, which a later call of such a callee, or a mutable global, may give back.

        :param skipped: why a Python helper whose body the pass would read was not followed (recursion depth,
            no source, a mutable default): a widening reason when data flows through it."""
        out = trans_val(*everything)
        if e is not None:
            out = join(out, self.run_fn_args(everything, everything, e))
        pure = _pure_module(obj)
        def name() -> str:
            return text_of(e.func) if e is not None else (getattr(obj, "__qualname__", None) or type(obj).__name__)

        if any(v.flat() for v in everything):
            if skipped is not None:
                self.budget.widen(f"helper `{name()}` not followed ({skipped}): every argument flows to its result")
            if e is not None and (len(e.args) + len(e.keywords) > 1 or _inplace(e)):
                for a in [*e.args, *(k.value for k in e.keywords)]:
                    if self._may_hold(a):
                        self.mutate(a, out, f"`{name()}(...)` is not followed: it may store one argument into another")
            if not pure:
                self.escape(out.flat(), name())
        if not pure and self.budget.escaped:
            out = self.with_escaped(out, f"the result of `{name()}(...)`")
        return out

    def _is_closure_value(self, obj: Any) -> bool:
        frame: Any = self
        while frame is not None:
            fn = frame.fn_obj
            if fn is not None and any(c is obj for c in self.budget.cells_of(fn)):
                return True
            frame = frame.parent
        return False

    def inline(self, fn: Any, args: list[Val], kwargs: dict[str, Val], closure: Any,
               call: ast.Call | None = None) -> Val:
        """Analyse a callee's body with the actual argument values (bounded depth; cycles widen)."""
        everything = [*args, *kwargs.values()]
        key = fn.__code__ if hasattr(fn, "__code__") else fn
        if key in self.budget.stack:
            # recursive: every argument flows (the body's effects are those analysed)
            if any(v.flat() for v in everything):
                name = getattr(fn, "name", None) or getattr(fn, "__qualname__", None) or "lambda"
                self.budget.widen(f"recursive call of `{name}`: every argument flows to its result")
            return trans_val(*everything)
        if self.depth >= MAX_DEPTH:
            return self.opaque(fn, everything, call, f"calls nested deeper than {MAX_DEPTH}")  # an unknown callee
        if isinstance(fn, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef):
            node, fn_obj, module, parent = fn, None, self.module, closure
        else:
            try:
                nodes = _parse_code(fn.__code__)
            except Unanalysable as exc:
                return self.opaque(fn, everything, call, str(exc))  # an unknown callee: every argument flows
            if len(nodes) != 1:
                return self.opaque(fn, everything, call, "its source is ambiguous")
            node, fn_obj, module, parent = nodes[0], fn, fn.__module__, None
            if not _defaults_ok(fn):
                return self.opaque(fn, everything, call, "a mutable default keeps state between calls")
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
            frame = type(self)(fn_obj, env, parent, self.budget, module, self.depth + 1)
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


