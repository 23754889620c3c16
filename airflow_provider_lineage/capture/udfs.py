"""Driver side of UDF body analysis: remember every Python UDF the application creates, and hand the
lineage engine a JSON analysis of each UDF a write's plan uses.

The launcher wraps ``pyspark.sql.udf.UserDefinedFunction._create_judf`` (every Python UDF, pandas UDF,
``spark.udf.register``-ed function, ``applyInPandas``/``mapInPandas`` function goes through it once,
when its JVM twin is built) and keeps the live function object under the UDF's name. Nothing is read
back from the JVM: the cloudpickled command bytes are never touched, nothing is unpickled.

When a write is captured, :meth:`UdfRegistry.enrich` finds the ``PythonUDF`` expressions of the
optimized plan JSON (a pure-Python walk: no py4j calls), matches each to the functions registered
under its name (and eval type, return type, arity), and stores ``[{"result_id", "analysis"}]`` in the
record. Several different functions under one name (``<lambda>`` twice) are analysed each and their
flows are united: the answer can only grow, never lose an edge.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from airflow_provider_lineage.capture.rdds import RddFunctions
from airflow_provider_lineage.lineage.logs import get_logger
from airflow_provider_lineage.lineage.plan import TreeNode, is_tree_json, parse_tree
from airflow_provider_lineage.lineage.record import CaptureRecord
from airflow_provider_lineage.lineage.udf.analysis import (
    FRAME,
    MAP_ITER,
    UDF_CLASSES,
    ArgFlow,
    UdfAnalysis,
    analyse_udf,
    cache_key,
    fallback,
)
from airflow_provider_lineage.lineage.udf.source import Snapshot, snapshot, snapshot_key

log = get_logger(__name__)

MAX_PER_NAME = 64


@dataclass
class Registered:
    func: Any
    eval_type: int
    return_type: Any  # parsed DataType JSON, or None
    #: the globals / closure cells the function reaches, as when PySpark pickled it (what the executors run)
    snap: Snapshot | None = None


class UdfRegistry:
    """Python UDF functions created in this driver, by UDF name."""

    def __init__(self) -> None:
        self.by_name: dict[str, list[Registered]] = {}
        self._keys: set[Any] = set()
        self._overflow: set[str] = set()  # names with more than MAX_PER_NAME functions: not analysed
        self._lock = threading.Lock()
        self._patched: list[tuple[Any, str, Any]] = []
        self.enabled = True
        #: functions over Rows of RDD round trips (``df.rdd.map(f).toDF(...)``), analysed the same way
        self.rdds = RddFunctions()

    # -- hook ----------------------------------------------------------------------------------
    def add(self, name: str, func: Any, eval_type: int, return_type: Any = None) -> None:
        """Remember ``func``, with a :func:`~.udf.source.snapshot` of what it reaches taken now: PySpark pickles
        it now (``_create_judf``), so a helper redefined later is not what the executors run. The same function
        built again after such a change is kept twice (both analyses are united)."""
        try:
            snap: Snapshot | None = snapshot(func)
        except Exception:  # noqa: BLE001 - the analysis then reads the live globals
            snap = None
        key = (name, eval_type, cache_key(func, 0, eval_type, ()), json.dumps(return_type, sort_keys=True),
               snapshot_key(snap))
        with self._lock:
            if key in self._keys:
                return
            self._keys.add(key)
            entries = self.by_name.setdefault(name, [])
            if len(entries) < MAX_PER_NAME:
                entries.append(Registered(func, int(eval_type), return_type, snap))
            else:
                self._overflow.add(name)

    def install(self) -> None:
        """Wrap ``UserDefinedFunction._create_judf`` so every UDF's function is remembered."""
        from pyspark.sql.udf import UserDefinedFunction

        registry = self
        orig = UserDefinedFunction._create_judf

        def _create_judf(self: Any, func: Any) -> Any:
            judf = orig(self, func)
            try:
                rtype = None
                try:
                    rtype = json.loads(self.returnType.json())
                except Exception:  # noqa: BLE001 - the return type only narrows the match
                    rtype = None
                registry.add(self._name, self.func, self.evalType, rtype)
            except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
                log.debug("could not remember UDF %r: %r", getattr(self, "_name", "?"), exc)
            return judf

        _create_judf.__wrapped__ = orig  # type: ignore[attr-defined]
        _create_judf.__doc__ = orig.__doc__
        self._patched.append((UserDefinedFunction, "_create_judf", orig))
        UserDefinedFunction._create_judf = _create_judf  # type: ignore[method-assign]
        try:
            self.rdds.install()
        except Exception as exc:  # noqa: BLE001 - RDD functions then keep the engine's every-column rule
            log.debug("RDD function hooks not installed: %r", exc)

    def uninstall(self) -> None:
        self.rdds.uninstall()
        for owner, name, orig in reversed(self._patched):
            setattr(owner, name, orig)
        self._patched.clear()

    # -- records ---------------------------------------------------------------------------------
    def enrich(self, record: CaptureRecord) -> None:
        """Add the analysis of every Python UDF in the record's optimized plan (never raises)."""
        if not self.enabled or not (record.plans or record.optimized_plan):
            return
        try:
            from airflow_provider_lineage.lineage.engine import plan_trees

            optimized = plan_trees(record)[0]
            if optimized is None:
                return
            entries = []
            seen: set[int] = set()
            for node, columns in python_udfs(optimized):
                rid = _result_id(node)
                if rid is None or rid in seen:
                    continue
                seen.add(rid)
                entries.append({"result_id": rid, "analysis": self.analyse(node, columns).to_dict()})
            record.udfs = entries
            rdd_ids = {int(e) for rel in record.relations if rel.node_class in ("LogicalRDD", "ExternalRDD")
                       for e in rel.expr_ids}
            if rdd_ids:
                record.rdd_functions = self.rdds.for_ids(rdd_ids)
        except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
            log.warning("UDF analysis skipped for %s: %r", record.command, exc)

    def analyse(self, node: TreeNode, columns: list[str] | None) -> UdfAnalysis:
        name = str(node.fields.get("name", "?"))
        eval_type = int(node.fields.get("evalType", 100) or 100)
        nargs = len(node.children)
        frame = eval_type in FRAME or eval_type in MAP_ITER
        # Spark's named arguments (``f(note=sku, price=qty)``): each child binds to its parameter by name
        names = tuple(str(c.fields.get("key")) if c.cls == "NamedArgumentExpression" else None for c in node.children)
        arg_names = names if any(names) else None
        with self._lock:
            cands = list(self.by_name.get(name, []))
            if name in self._overflow:
                return fallback(name, nargs, eval_type, f"more than {MAX_PER_NAME} functions named {name!r}")
        cands = [c for c in cands if c.eval_type == eval_type] or cands
        dtype = node.fields.get("dataType")
        typed = [c for c in cands if c.return_type is None or dtype is None or _same_type(c.return_type, dtype)]
        cands = typed or cands
        if not cands:
            return fallback(name, nargs, eval_type, "function not found on the driver")
        results = [analyse_udf(c.func, name, nargs, eval_type, columns if frame else None, arg_names=arg_names,
                               snap=c.snap) for c in cands]
        fitting = [r for r in results if r.analysed or "arguments do not match" not in (r.reason or "")]
        return unite(fitting or results)


def unite(results: list[UdfAnalysis]) -> UdfAnalysis:
    """One analysis covering several candidate functions: every flow of any of them (sound)."""
    if len(results) == 1:
        return results[0]
    first = results[0]
    failed = [r for r in results if not r.analysed]
    if failed:
        out = UdfAnalysis.from_dict(failed[0].to_dict())
        out.candidates = len(results)
        return out
    n = max(len(r.args) for r in results)
    args = [ArgFlow() for _ in range(n)]
    for r in results:
        for i, f in enumerate(r.args):
            args[i] = _unite_flow(args[i], f)
    columns = None
    if all(r.columns is not None for r in results):
        columns = {}
        for r in results:
            for out_col, per in (r.columns or {}).items():
                dest = columns.setdefault(out_col, {})
                for c, f in per.items():
                    dest[c] = _unite_flow(dest.get(c, ArgFlow()), f)
        star = columns.get("*", {})
        for out_col, per in columns.items():  # a column one candidate names, another only has in "*"
            for c, f in star.items():
                per[c] = _unite_flow(per.get(c, ArgFlow()), f)
    widened = list(dict.fromkeys(w for r in results for w in r.widened))
    return UdfAnalysis(first.name, first.eval_type, " | ".join(sorted({r.function for r in results})), True, None,
                       args, columns, sum(r.ms for r in results), len(results), widened=widened)


def _unite_flow(a: ArgFlow, b: ArgFlow) -> ArgFlow:
    if a.direct is None:
        direct, masking = b.direct, b.masking
    elif b.direct is None:
        direct, masking = a.direct, a.masking
    else:
        direct = "TRANSFORMATION" if "TRANSFORMATION" in (a.direct, b.direct) else "IDENTITY"
        masking = a.masking and b.masking
    return ArgFlow(direct, masking, a.conditional or b.conditional, sorted(set(a.via) | set(b.via)) if masking else [])


def _same_type(registered: Any, planned: Any) -> bool:
    if isinstance(planned, str):
        try:
            planned = json.loads(planned) if planned.startswith(("{", '"')) else planned
        except ValueError:
            pass
    return registered == planned


def _result_id(node: TreeNode) -> int | None:
    raw = node.fields.get("resultId")
    return int(raw["id"]) if isinstance(raw, dict) and "id" in raw else None


def python_udfs(plan_json: list[dict[str, Any]] | TreeNode) -> Iterator[tuple[TreeNode, list[str] | None]]:
    """Every ``PythonUDF`` of a plan (a plan JSON or a loaded tree; in any field, nested plans included),
    with the input column names of frame UDFs (their children are the frame's columns). Each node is
    visited once, also when a DAG record shares it between many parents (pre-order, children first)."""
    stack: list[TreeNode] = [parse_tree(plan_json)]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.cls in UDF_CLASSES:
            yield node, [c.name for c in node.children]
        nested: list[TreeNode] = []
        for val in node.fields.values():
            if isinstance(val, TreeNode) or is_tree_json(val):
                nested.append(parse_tree(val))
            elif isinstance(val, list):
                for item in val:
                    if is_tree_json(item):
                        nested.append(parse_tree(item))
                    elif isinstance(item, list):
                        nested.extend(parse_tree(sub) for sub in item if is_tree_json(sub))
        stack.extend(reversed(nested))
        stack.extend(reversed(node.children))
