"""Driver side of the UDF analysis: one Python function -> a JSON-able :class:`UdfAnalysis` (per-argument flows)
that travels in the capture record (``CaptureRecord.udfs``)."""
from __future__ import annotations

import functools
import time
import types
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_provider_lineage.lineage.graph import AGGREGATION, CONDITIONAL, IDENTITY, TRANSFORMATION, Trans
from airflow_provider_lineage.lineage.udf.interpreter import FlowResult, analyse_callable
from airflow_provider_lineage.lineage.udf.source import Snapshot, snapshot, snapshot_key
from airflow_provider_lineage.lineage.udf.values import IDENT, Src, Taint, Unanalysable, Val

# org.apache.spark.api.python.PythonEvalType
SCALAR = frozenset({100, 101, 200, 250})
ITERATOR = frozenset({204, 251})
AGGREGATE = frozenset({202, 203, 252, 253})
FRAME = frozenset({201, 209})  # grouped map: (pdf) or (key, pdf)
MAP_ITER = frozenset({205, 207})  # mapInPandas / mapInArrow: iterator of frames

#: Plan expressions that call a Python function (``PythonUDAF``: grouped-aggregate pandas UDFs, Spark 4).
UDF_CLASSES = frozenset({"PythonUDF", "PythonUDAF"})

_cache: dict[Any, UdfAnalysis] = {}
_CACHE_MAX = 2048


@dataclass
class ArgFlow:
    """What the UDF does with one argument (or, for frame UDFs, one input column)."""

    direct: str | None = None  # "IDENTITY" | "TRANSFORMATION" | None
    masking: bool = False
    conditional: bool = False
    via: list[str] = field(default_factory=list)  # hash functions on the way

    @property
    def used(self) -> bool:
        return self.direct is not None or self.conditional

    def steps(self, aggregate: bool = False) -> list[Trans]:
        out = []
        if self.direct is not None:
            step = IDENTITY if self.direct == "IDENTITY" else TRANSFORMATION
            if aggregate:
                step = AGGREGATION
            out.append(step.masked(self.masking))
        if self.conditional:
            out.append(CONDITIONAL)
        return out


@dataclass
class UdfAnalysis:
    """The analysis of one Python UDF, as carried in a capture record."""

    name: str
    eval_type: int = 100
    function: str = ""
    analysed: bool = False
    reason: str | None = None
    args: list[ArgFlow] = field(default_factory=list)
    #: frame UDFs (grouped map, mapInPandas): output column -> input column -> flow; ``"*"`` = any other
    columns: dict[str, dict[str, ArgFlow]] | None = None
    ms: float = 0.0
    candidates: int = 1
    #: struct-returning scalar UDFs whose body builds the struct (a dict, ``Row(x=...)`` or a tuple):
    #: per returned field (by name, or ``"#i"`` by position), the flow of each argument
    fields: dict[str, list[ArgFlow]] | None = None
    #: analysed, but some construct of the body was not modelled exactly and the pass widened (every input it may
    #: hold flows): why, one line per construct; the engine lists these in the write's approximate columns
    widened: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UdfAnalysis:
        known = set(cls.__dataclass_fields__)
        d = {k: v for k, v in data.items() if k in known}
        d["args"] = [ArgFlow(**a) for a in d.get("args") or []]
        if d.get("columns") is not None:
            d["columns"] = {o: {i: ArgFlow(**f) for i, f in m.items()} for o, m in d["columns"].items()}
        if d.get("fields") is not None:
            d["fields"] = {k: [ArgFlow(**f) for f in v] for k, v in d["fields"].items()}
        return cls(**d)


# -- driver side: analyse a function ------------------------------------------------------------
def fallback(name: str, nargs: int, eval_type: int, reason: str, function: str = "") -> UdfAnalysis:
    """Not analysed: every argument flows (DIRECT/TRANSFORMATION), and the reason is kept."""
    return UdfAnalysis(name, eval_type, function, False, reason,
                       [ArgFlow("TRANSFORMATION") for _ in range(nargs)])


def describe(fn: Any) -> str:
    target = fn.func if isinstance(fn, functools.partial) else fn
    mod = getattr(target, "__module__", None) or ""
    qual = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or type(target).__name__
    text = f"{mod}.{qual}" if mod and mod != "builtins" else str(qual)
    return f"partial({text})" if isinstance(fn, functools.partial) else text


def cache_key(fn: Any, nargs: int, eval_type: int, columns: tuple[str, ...]) -> Any:
    if isinstance(fn, functools.partial):
        inner = getattr(fn.func, "__code__", None) or id(fn.func)
        return ("partial", inner, len(fn.args), tuple(sorted(fn.keywords)), nargs, eval_type, columns)
    code = getattr(fn, "__code__", None)
    if isinstance(code, types.CodeType):
        # same code + same closure cells' functions: the closure may pick another helper
        cells = tuple(id(c.cell_contents) for c in (fn.__closure__ or ()) if _cell_is_function(c))
        return (code, cells, nargs, eval_type, columns)
    return (id(fn), nargs, eval_type, columns)


def _cell_is_function(cell: Any) -> bool:
    try:
        return callable(cell.cell_contents)
    except ValueError:
        return False


def analyse_udf(fn: Callable[..., Any], name: str, nargs: int, eval_type: int,
                columns: list[str] | None = None, arg_names: tuple[str | None, ...] | None = None,
                snap: Snapshot | None = None) -> UdfAnalysis:
    """Analyse the UDF function ``fn`` called with ``nargs`` plan arguments (never raises).

    :param columns: the input column names of a frame UDF (grouped map / mapInPandas), in order.
    :param arg_names: per plan argument, the parameter name it was passed to (Spark's named arguments,
        ``f(price=qty)``), or ``None`` for a positional one; the flows stay in plan-argument order.
    :param snap: the globals and closure cells of ``fn`` (and the helpers it reaches) as PySpark pickled them
        (:func:`~.source.snapshot` taken when the UDF was built): names resolve there, as on the executors.
        ``None``: as they are now.
    """
    if snap is None:
        try:
            snap = snapshot(fn)  # the names as they are now: a helper redefined since is another analysis
        except Exception:  # noqa: BLE001 - the pass then reads the live globals
            snap = None
    key = (cache_key(fn, nargs, eval_type, tuple(columns or ())), arg_names, snapshot_key(snap))
    hit = _cache.get(key)
    if hit is not None:
        if hit.name == name:
            return hit
        named = UdfAnalysis.from_dict(hit.to_dict())
        named.name = name
        return named
    t0 = time.perf_counter()
    try:
        result = _analyse(fn, name, nargs, eval_type, columns, arg_names, snap)
    except Unanalysable as exc:
        result = fallback(name, nargs, eval_type, str(exc), describe(fn))
    except RecursionError:
        result = fallback(name, nargs, eval_type, "body too deeply nested", describe(fn))
    except Exception as exc:  # noqa: BLE001 - an analysis bug must never cost the write its lineage
        result = fallback(name, nargs, eval_type, f"analysis error ({type(exc).__name__}: {exc})", describe(fn))
    result.ms = round((time.perf_counter() - t0) * 1000, 3)
    if len(_cache) > _CACHE_MAX:
        _cache.clear()
    _cache[key] = result
    return result


def _flows(t: Taint, cond: Taint, hashes: dict[Src, set[str]], keys: list[Src]) -> dict[Src, ArgFlow]:
    out: dict[Src, ArgFlow] = {}
    for s in keys:
        f = ArgFlow()
        if s in t:
            kind, masked = t[s]
            f.direct = "IDENTITY" if kind == IDENT and not masked else "TRANSFORMATION"
            f.masking = masked
            f.via = sorted(hashes.get(s, ())) if masked else []
        f.conditional = s in cond
        out[s] = f
    return out


def _analyse(fn: Any, name: str, nargs: int, eval_type: int, columns: list[str] | None,
             arg_names: tuple[str | None, ...] | None = None, snap: Snapshot | None = None) -> UdfAnalysis:
    function = describe(fn)
    if eval_type in SCALAR or eval_type in AGGREGATE:
        names = arg_names if arg_names is not None and len(arg_names) == nargs else (None,) * nargs
        params = [Val({i: (IDENT, False)}) for i in range(nargs) if names[i] is None]
        kw = {n: Val({i: (IDENT, False)}) for i, n in enumerate(names) if n is not None}
        res = analyse_callable(fn, params, kw, snap)
        return _scalar(res, name, eval_type, function, nargs)
    if eval_type in ITERATOR:
        args = [Val({i: (IDENT, False)}) for i in range(nargs)]
        batch = args[0] if nargs == 1 else Val(items=args)
        res = analyse_callable(fn, [Val(elem=batch)], None, snap)
        return _scalar(res, name, eval_type, function, nargs)
    if eval_type in FRAME or eval_type in MAP_ITER:
        if not columns:
            raise Unanalysable("input columns unknown")
        frame = Val(cols={c: Val({c: (IDENT, False)}) for c in columns})
        if eval_type in MAP_ITER:
            params = [Val(elem=frame)]
        else:
            code = getattr(getattr(fn, "func", fn), "__code__", None)
            argc = code.co_argcount if code is not None else 1
            key = Val({c: (1, False) for c in columns})  # the grouping key: some of the columns
            params = [key, frame] if argc >= 2 else [frame]
        res = analyse_callable(fn, params, None, snap)
        ret = res.ret
        if eval_type in MAP_ITER and ret.elem is not None:
            ret = ret.elem
        cols: dict[str, dict[str, ArgFlow]] = {}
        default = _flows(ret.flat(), res.cond, res.hashes, list(columns))
        cols["*"] = {c: f for c, f in default.items() if f.used}
        for out_name, v in (ret.cols or {}).items():
            per = _flows(v.flat(), res.cond, res.hashes, list(columns))
            cols[out_name] = {c: f for c, f in per.items() if f.used}
        return UdfAnalysis(name, eval_type, function, True, None, [], cols, widened=list(res.widened))
    raise Unanalysable(f"eval type {eval_type} not modelled")


def _scalar(res: FlowResult, name: str, eval_type: int, function: str, nargs: int) -> UdfAnalysis:
    flows = _flows(res.ret.flat(), res.cond, res.hashes, list(range(nargs)))
    out = UdfAnalysis(name, eval_type, function, True, None, [flows[i] for i in range(nargs)],
                      widened=list(res.widened))
    parts: dict[str, Val] = {}
    if res.ret.cols is not None and not res.ret.t:
        parts = dict(res.ret.cols)
    elif res.ret.items is not None and not res.ret.t:
        parts = {f"#{i}": v for i, v in enumerate(res.ret.items)}
    if parts:
        out.fields = {}
        for key, v in parts.items():
            per = _flows(v.flat(), res.cond, res.hashes, list(range(nargs)))
            out.fields[key] = [per[i] for i in range(nargs)]
    return out
