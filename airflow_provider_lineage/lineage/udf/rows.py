"""Functions over ``Row``s of an RDD round trip (``df.rdd.map(f)``, ``flatMap(f)``, ``mapPartitions(f)``): which
fields of the input Row each output position or field reads, and how.

The same data-flow pass as Python UDF bodies (:func:`~.interpreter.analyse_callable`), run on the live function
object in the driver (nothing is unpickled): the parameter is a Row whose fields are the sources
(``r.email``, ``r["email"]`` read one field; anything else on the Row reads all of them). The result is precise
where the body builds its output from known parts (a tuple or list: per position ``"#i"``; ``Row(x=...)`` or a
dict with string keys: per field name), else every output reads every field, with the reason. Output positions
bind to the columns of ``toDF([...])`` / ``createDataFrame(rdd, [...])`` by position, never by the names of the
source's columns.
"""
from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_provider_lineage.lineage.udf.analysis import ArgFlow, _flows, describe
from airflow_provider_lineage.lineage.udf.interpreter import analyse_callable
from airflow_provider_lineage.lineage.udf.source import Snapshot, _is_generator, _parse_code, snapshot
from airflow_provider_lineage.lineage.udf.values import IDENT, Unanalysable, Val, join

#: RDD methods whose function this module analyses, and what their function is given / gives back.
KINDS = ("map", "flatMap", "mapPartitions")
#: an output that carries every field (no known structure)
ALL = "*"


@dataclass
class RowFlow:
    """What one RDD function does with the fields of its input Row.

    :param outputs: output position (``"#0"``, ``"#1"`` ...) or field name -> input field -> flow (only the fields
        it reads); ``"*"``: the output as a whole (every output column when nothing finer is known).
    :param reason: why the function was not analysed (``analysed=False``: every output reads every field).
    :param widened: analysed, but a construct widened the result (see :attr:`.analysis.UdfAnalysis.widened`).
    """

    kind: str
    function: str = ""
    analysed: bool = False
    reason: str | None = None
    outputs: dict[str, dict[str, ArgFlow]] = field(default_factory=dict)
    widened: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RowFlow:
        known = set(cls.__dataclass_fields__)
        d = {k: v for k, v in data.items() if k in known}
        d["outputs"] = {o: {i: ArgFlow(**f) for i, f in m.items()} for o, m in (d.get("outputs") or {}).items()}
        return cls(**d)

    def fields_of(self, output: str) -> dict[str, ArgFlow]:
        """The input fields output ``output`` (``"#i"`` or a name) reads: its own entry, else the whole value's."""
        return self.outputs.get(output, self.outputs.get(ALL, {}))


def _all_to_all(kind: str, fields: list[str], reason: str, function: str = "") -> RowFlow:
    return RowFlow(kind, function, False, reason, {ALL: {f: ArgFlow("TRANSFORMATION") for f in fields}})


def analyse_row_function(fn: Any, kind: str, fields: list[str], snap: Snapshot | None = None) -> RowFlow:
    """Analyse ``fn`` given to ``rdd.<kind>`` over Rows with ``fields`` (never raises: a function the pass cannot
    read gives every output every field, with the reason).

    :param kind: ``"map"`` (``fn(row) -> value``), ``"flatMap"`` (``fn(row) -> iterable of values``) or
        ``"mapPartitions"`` (``fn(iterator of rows) -> iterable of values``).
    :param snap: the globals/closure copy PySpark pickled with ``fn`` (see :func:`~.source.snapshot`).
    """
    function = describe(fn)
    if kind not in KINDS:
        return _all_to_all(kind, fields, f"RDD method `{kind}` not modelled", function)
    try:
        if snap is None:
            snap = snapshot(fn)
        return _analyse(fn, kind, fields, snap, function)
    except Unanalysable as exc:
        return _all_to_all(kind, fields, str(exc), function)
    except RecursionError:
        return _all_to_all(kind, fields, "body too deeply nested", function)
    except Exception as exc:  # noqa: BLE001 - an analysis bug must never cost the write its lineage
        return _all_to_all(kind, fields, f"analysis error ({type(exc).__name__}: {exc})", function)


def _element(v: Val) -> Val:
    """One element of the iterable ``v`` (a generator, a list or tuple literal, anything else as a whole)."""
    if v.elem is not None:
        return v.elem
    if v.items is not None:
        return functools.reduce(join, v.items, Val())
    return Val(v.flat())


def _analyse(fn: Any, kind: str, fields: list[str], snap: Snapshot, function: str) -> RowFlow:
    row = Val(cols={f: Val({f: (IDENT, False)}) for f in fields})
    param = Val(elem=row) if kind == "mapPartitions" else row
    res = analyse_callable(fn, [param], None, snap)
    # a generator function's result is already one yielded value; any other function returns the iterable
    ret = res.ret if kind == "map" or _yields(fn) else _element(res.ret)
    parts: dict[str, Val] = {}
    if ret.items is not None and not ret.t:
        parts = {f"#{i}": v for i, v in enumerate(ret.items)}
    elif ret.cols is not None and not ret.t:
        parts = dict(ret.cols)
    outputs = {ALL: _used(ret.flat(), res, fields)}
    for key, v in parts.items():
        outputs[key] = _used(v.flat(), res, fields)
    return RowFlow(kind, function, True, None, outputs, list(res.widened))


def _yields(fn: Any) -> bool:
    target = fn.func if isinstance(fn, functools.partial) else getattr(fn, "__func__", fn)
    code = getattr(target, "__code__", None)
    if code is None:
        return False
    nodes = _parse_code(code)
    return len(nodes) == 1 and _is_generator(nodes[0])


def _used(t: Any, res: Any, fields: list[str]) -> dict[str, ArgFlow]:
    flows = _flows(t, res.cond, res.hashes, list(fields))
    return {f: flow for f, flow in flows.items() if flow.used}
