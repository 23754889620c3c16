"""RDD round trips through one Python function over Rows (``df.rdd.map(f).toDF([...])``, ``flatMap``,
``mapPartitions``, ``spark.createDataFrame(df.rdd.map(f), [...])``): the driver analyses ``f`` (the live function
object, as for UDFs: nothing is unpickled) with :func:`~airflow_provider_lineage.lineage.udf.rows.analyse_row_function`
and tells the engine, per output column of the new DataFrame's ``LogicalRDD``, which columns of the source
DataFrame it reads and how.

Only the simple shape is made precise: one function applied directly to ``df.rdd`` of a DataFrame whose every
column is a column of a relation it reads, unchanged (same exprId: no expression, no rename). Anything else (a
chain of functions, a source with computed columns, an unanalysable body) registers nothing and the engine keeps
its sound rule: every output column from every column read, with the reason (docs/engine.md).
"""
from __future__ import annotations

import functools
import threading
from typing import Any

from airflow_provider_lineage.lineage.logs import get_logger
from airflow_provider_lineage.lineage.udf.rows import KINDS, analyse_row_function
from airflow_provider_lineage.lineage.udf.source import snapshot

log = get_logger(__name__)

#: functions registered at most (a driver building RDDs in a loop must not grow memory without bound)
MAX_ENTRIES = 512
_FN = "_lineage_row_fn"
_SOURCE = "_lineage_source_df"


def _expr_ids(attrs: Any) -> list[tuple[int, str]]:
    seq = attrs.toList() if hasattr(attrs, "toList") else attrs
    out = []
    it = seq.iterator()
    while it.hasNext():
        a = it.next()
        out.append((int(a.exprId().id()), str(a.name())))
    return out


def _bare_columns(df: Any) -> bool:
    """Every output column of ``df`` is an attribute of a leaf of its optimized plan, unchanged (same exprId)."""
    plan = df._jdf.queryExecution().optimizedPlan()
    out = _expr_ids(plan.output())
    leaves = plan.collectLeaves()
    known: set[int] = set()
    it = leaves.iterator()
    while it.hasNext():
        known |= {i for i, _n in _expr_ids(it.next().output())}
    names = [n for _i, n in out]
    return bool(out) and all(i in known for i, _n in out) and len(set(names)) == len(names)


def _rdd_leaf_output(df: Any) -> list[tuple[int, str]] | None:
    plan = df._jdf.queryExecution().analyzed()
    leaves = plan.collectLeaves()
    it = leaves.iterator()
    found = None
    while it.hasNext():
        leaf = it.next()
        if leaf.getClass().getSimpleName() in ("LogicalRDD", "ExternalRDD"):
            if found is not None:
                return None
            found = _expr_ids(leaf.output())
    return found


class RddFunctions:
    """The analysed RDD functions of this driver, by the first exprId of the ``LogicalRDD`` they produce."""

    def __init__(self) -> None:
        self.entries: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._patched: list[tuple[Any, str, Any, Any]] = []

    # -- hooks -------------------------------------------------------------------------------------
    def install(self) -> None:
        """Tag ``df.rdd`` with its DataFrame, ``rdd.map/flatMap/mapPartitions(f)`` of such an RDD with ``f``, and
        analyse at ``createDataFrame`` (``toDF``) of a tagged RDD."""
        from pyspark.rdd import RDD
        from pyspark.sql.classic.dataframe import DataFrame
        from pyspark.sql.session import SparkSession

        for kind in KINDS:
            self._wrap_method(RDD, kind)
        orig_prop = DataFrame.__dict__.get("rdd")
        if isinstance(orig_prop, functools.cached_property):
            getter = orig_prop.func

            @functools.wraps(getter)  # keeps __wrapped__: other hooks of ``rdd`` find themselves in the chain
            def rdd(df: Any) -> Any:
                out = getter(df)
                try:
                    setattr(out, _SOURCE, df)
                except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
                    log.debug("could not tag df.rdd: %r", exc)
                return out

            prop = functools.cached_property(rdd)
            prop.__set_name__(DataFrame, "rdd")
            self._patched.append((DataFrame, "rdd", orig_prop, prop))
            DataFrame.rdd = prop  # type: ignore[method-assign,assignment]
        orig_create = SparkSession.createDataFrame
        registry = self

        @functools.wraps(orig_create)
        def createDataFrame(session: Any, data: Any, schema: Any = None, *args: Any, **kwargs: Any) -> Any:
            df = orig_create(session, data, schema, *args, **kwargs)
            if getattr(data, _FN, None) is not None:
                try:
                    registry.register(data, df, schema)
                except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
                    log.debug("RDD function analysis skipped: %r", exc)
            return df

        self._patched.append((SparkSession, "createDataFrame", orig_create, createDataFrame))
        SparkSession.createDataFrame = createDataFrame  # type: ignore[method-assign]

    def _wrap_method(self, owner: Any, kind: str) -> None:
        orig = getattr(owner, kind)

        @functools.wraps(orig)
        def method(rdd: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
            out = orig(rdd, f, *args, **kwargs)
            if getattr(rdd, _SOURCE, None) is not None:  # directly on df.rdd: the shape made precise
                try:
                    setattr(out, _FN, (kind, f, rdd, snapshot(f)))
                except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
                    log.debug("could not tag rdd.%s: %r", kind, exc)
            return out

        self._patched.append((owner, kind, orig, method))
        setattr(owner, kind, method)

    def uninstall(self) -> None:
        """Put back what :meth:`install` replaced, where the attribute is still this registry's wrapper: a hook
        another part of the capture put over it (the driver-jobs hook of ``DataFrame.rdd``) stays, with this
        wrapper under it (it only tags objects)."""
        for owner, name, orig, installed in reversed(self._patched):
            if owner.__dict__.get(name) is installed:
                setattr(owner, name, orig)
        self._patched.clear()

    # -- analysis ----------------------------------------------------------------------------------
    def register(self, rdd: Any, df: Any, schema: Any) -> None:
        kind, fn, parent, snap = getattr(rdd, _FN)
        source = getattr(parent, _SOURCE, None)
        if source is None or not _bare_columns(source):
            return
        out = _rdd_leaf_output(df)
        if not out:
            return
        fields = list(source.columns)
        rf = analyse_row_function(fn, kind, fields, snap)
        if not rf.analysed:
            return  # the engine's rule (every column read) already is the black box; it names the RDD round trip
        columns: dict[str, Any] = {}
        named = {k: v for k, v in rf.outputs.items() if not k.startswith("#") and k != "*"}
        for i, (_eid, name) in enumerate(out):
            if f"#{i}" in rf.outputs:
                per = rf.outputs[f"#{i}"]  # a tuple / list: by position, as toDF([...]) names them
            elif schema is None and name in named:
                per = named[name]  # Row(x=...) / {"x": ...} without a schema: the names are the body's own
            else:
                per = rf.outputs.get("*", {})
            columns[name] = {f: flow.__dict__ for f, flow in per.items()}
        entry = {"expr_ids": [e for e, _n in out], "kind": kind, "function": rf.function, "fields": fields,
                 "columns": columns, "widened": list(rf.widened)}
        with self._lock:
            if len(self.entries) >= MAX_ENTRIES:
                self.entries.pop(next(iter(self.entries)))
            self.entries[out[0][0]] = entry

    def for_ids(self, ids: set[int]) -> list[dict[str, Any]]:
        """The entries whose ``LogicalRDD`` is in a plan with these exprIds."""
        with self._lock:
            return [e for k, e in self.entries.items() if k in ids]
