"""The abstract values of the UDF body analysis: taints (which sources a value carries, and how), structure, joins.

A value is the set of *sources* (UDF arguments by position, or DataFrame columns by name) it may carry, each with
the strongest way it got there (``IDENTITY`` < ``TRANSFORMATION``) and whether every path went through a hash
(masking), plus what is known of its structure (tuple items, iterable element, named columns, a function).
"""
from __future__ import annotations

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


class Unanalysable(Exception):
    """The function cannot be analysed; the message is the reason shown to the user."""


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


@dataclass(frozen=True)
class Hasher:
    """A hash object (``hashlib.sha256()``, ``hmac.new(key)``): what its ``update`` calls feed comes out masked."""

    label: str


_HASHERS: dict[str, Hasher] = {}


def hasher(label: str) -> Hasher:
    """One :class:`Hasher` per label: the data-flow join keeps a value's ``fn`` only when both sides share it."""
    return _HASHERS.setdefault(label, Hasher(label))


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



def _signature(v: Val) -> Any:
    """A hashable form of a value without structure (``None``: not memoisable)."""
    if v.items is not None or v.cols is not None or v.elem is not None or v.fn is not None:
        return None
    return frozenset(v.t.items())

