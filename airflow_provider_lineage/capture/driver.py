"""What the application returned to its driver: the capture's side of driver round trips and checkpoints.

A value can leave Spark's plans through the driver: ``rows = orders.collect()``, a lookup dict built from them
that a UDF reads, ``lit(df.first()["email"])``, ``spark.createDataFrame(rows)``, ``SET VAR v = (SELECT ...)``.
The write that puts it back has no plan edge to where it came from. The listener therefore analyses every action
that returns rows to the driver (``collect``/``first``/``take``/``head``/``tail``/``toPandas``: Spark names them
``collectToPython``, ``tailToPython``, ``collectAsArrowToPython``) and every session-variable command, as it
analyses writes, and keeps which input columns the returned values came from (:class:`DriverLog`). Each later
write's record carries them (``CaptureRecord.driver``) with the literals of its plan that are not constants of the
application's code (:func:`code_constants`; one equal to a value the driver received counts as data all the same,
:mod:`.driver_values`): the engine gives driver-local data, those literals and Python UDFs a
DIRECT edge from the returned columns, reason ``driver round trip`` (docs/engine.md).

``checkpoint()``/``localCheckpoint()`` run as actions named ``checkpoint``/``localCheckpoint`` on the plan being
checkpointed: its column lineage is kept by exprId (the checkpointed ``LogicalRDD`` keeps the plan's exprIds), so
a later write traces through the checkpoint.
"""
from __future__ import annotations

import ast
import os
import re
import sys
import sysconfig
import threading
from collections.abc import Callable, Iterable
from typing import Any

from airflow_provider_lineage.capture import driver_values
from airflow_provider_lineage.lineage.logs import get_logger

log = get_logger(__name__)

#: ``QueryExecutionListener`` function names of actions that return rows to the Python driver (Spark 3.5-4.1), and
#: the JVM-side names (a Scala/Java application, Spark Connect).
RETURNING_FUNCS = frozenset({
    "collectToPython", "tailToPython", "collectAsArrowToPython", "toPythonIterator", "collectAsArrowToR",
    "collect", "collectAsList", "head", "take", "takeAsList", "tail", "first", "toLocalIterator", "collectResult",
    "RDD action",  # an action over ``df.rdd`` / ``df.toJSON()`` (capture/driver_jobs.py)
    "collectArrow",  # a Spark Connect client's collect/take/first/head/toPandas/toLocalIterator (capture/connect.py)
})
#: Actions that checkpoint a DataFrame (their plan is the checkpointed data's).
CHECKPOINT_FUNCS = frozenset({"checkpoint", "localCheckpoint"})
#: Commands whose values go to the session (``SET VAR``, ``DECLARE VARIABLE ... DEFAULT (query)``).
VARIABLE_COMMANDS = frozenset({"SetVariable", "CreateVariable"})
#: Bounds of what a write's record carries.
MAX_RETURNS = 50
MAX_LITERALS = 500
MAX_CHECKPOINT_COLUMNS = 5000
#: Literal values that never count as driver data (Spark's own ``count(1)``, ``coalesce(x, '')`` ...).
TRIVIAL = frozenset({"0", "1", "-1", "", " "})


def is_driver_action(func_name: str, command: str) -> bool:
    return func_name in RETURNING_FUNCS or func_name in CHECKPOINT_FUNCS or command in VARIABLE_COMMANDS


class DriverLog:
    """Per application: the actions that returned values to the driver (and their input columns), the
    checkpointed plans' lineage, and what could not be analysed."""

    def __init__(self) -> None:
        self.returns: list[dict[str, Any]] = []
        self.checkpoints: dict[int, list[list[Any]]] = {}
        self.unseen: str | None = None
        #: a return whose values the Python driver did not receive (a session variable, a JVM-side action): its
        #: values cannot be told from code constants, so no literal is left out as one (see driver_values)
        self.values_elsewhere: str | None = None
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Forget every return (tests sharing one session between independent scenarios)."""
        with self._lock:
            self.returns.clear()
            self.checkpoints.clear()
            self.unseen = None
            self.values_elsewhere = None
        driver_values.RECEIVED.clear()

    def note_unseen(self, func_name: str, why: str) -> None:
        with self._lock:
            self.unseen = f"{func_name}: {why}"[:300]
            if func_name not in driver_values.PYTHON_RECEIVED:
                self.values_elsewhere = func_name

    def note(self, seq: int, func_name: str, command: str, lineage: Any, attrs: list[Any]) -> None:
        """Keep what one action returned (``lineage``: the engine's :class:`~..lineage.model.WriteLineage` of its
        plan, ``attrs`` its output attributes)."""
        if func_name in CHECKPOINT_FUNCS:
            edges_of = {name: lineage.columns.get(name, []) + list(lineage.dataset_edges)
                        for name, _t in lineage.output_fields}
            with self._lock:
                for (name, _t), a in zip(lineage.output_fields, attrs):
                    if len(self.checkpoints) < MAX_CHECKPOINT_COLUMNS and getattr(a, "id", -1) >= 0:
                        self.checkpoints[int(a.id)] = [_edge(e) for e in edges_of[name]]
            return
        variable = command in VARIABLE_COMMANDS
        sources: dict[tuple[str, str, str, str], None] = {}
        for edges in lineage.columns.values():
            for e in edges:
                if variable or e.type == "DIRECT":
                    sources[(e.dataset.namespace, e.dataset.name, e.dataset.table or "", e.field)] = None
        if variable:
            for e in lineage.dataset_edges:
                sources[(e.dataset.namespace, e.dataset.name, e.dataset.table or "", e.field)] = None
        if not sources:
            return  # local data or constants only: nothing a later write could leak
        entry = {"seq": seq, "func": command if variable else func_name, "sources": [list(s) for s in sources]}
        with self._lock:
            if variable or func_name not in driver_values.PYTHON_RECEIVED:
                self.values_elsewhere = str(entry["func"])
            if len(self.returns) >= MAX_RETURNS:  # one entry for the rest: the union of their columns
                last = self.returns[-1]
                last["func"] = "later actions"
                known = {tuple(s) for s in last["sources"]}
                last["sources"].extend(list(s) for s in sources if s not in known)
            else:
                self.returns.append(entry)

    def for_write(self, record: Any) -> dict[str, Any]:
        """``CaptureRecord.driver`` of a write (empty when nothing went through the driver before it)."""
        out: dict[str, Any] = {}
        with self._lock:
            returns = [dict(r, sources=list(r["sources"])) for r in self.returns]
            unseen = self.unseen
            cut_ids = {int(e) for rel in record.relations
                       if rel.node_class in ("LogicalRDD", "ExternalRDD")
                       and ((rel.options or {}).get("checkpoint") == "true" or rel.origin == "checkpoint")
                       for e in rel.expr_ids}
            checkpoints = {str(i): self.checkpoints[i] for i in cut_ids if i in self.checkpoints}
        if returns:
            out["returns"] = returns
        if unseen:
            out["unseen"] = unseen
        if checkpoints:
            out["checkpoints"] = checkpoints
        if (returns or unseen) and record.plans:
            out["literals"] = flagged_literals(_plan_nodes(record.plans), self._may_hold())
        return out

    def _may_hold(self) -> Any:
        """Whether a literal's text may be a value returned to the driver although it equals a code constant: one
        the Python driver received, or any when some values reached it unseen (driver_values)."""
        received = driver_values.RECEIVED
        if self.values_elsewhere is not None or self.unseen is not None or not received.active:
            return lambda _text: True
        return received.may_hold


def _edge(e: Any) -> list[Any]:
    return [e.dataset.namespace, e.dataset.name, e.dataset.table or "", e.field, e.type, e.subtype, bool(e.masking)]


def _plan_nodes(plans: Any) -> Iterable[dict[str, Any]]:
    nodes = plans.get("nodes") if isinstance(plans, dict) else None
    return [n for n in nodes or [] if isinstance(n, dict)]


def flagged_literals(nodes: Iterable[dict[str, Any]],
                     received: Callable[[str], bool] | None = None) -> list[list[str]] | str:
    """``[[value, dataType], ...]`` of the plan's literals that may hold a value returned to the driver: not NULL,
    not boolean, not trivial, and not a constant of the application's code unless ``received(text)`` says the driver
    may have received that very value (:mod:`.driver_values`: a value equal to a constant of some loaded module is
    still a value from the data); ``"*"`` past :data:`MAX_LITERALS`."""
    known = code_constants()
    out: dict[tuple[str, str], None] = {}
    for n in nodes:
        if not str(n.get("class", "")).endswith(".Literal"):
            continue
        value, dtype = n.get("value"), str(n.get("dataType", ""))
        if value is None or dtype in ("null", "boolean"):
            continue
        text = str(value)
        if text in TRIVIAL:
            continue
        if (text in known or _number_text(text) in known) and (received is None or not received(text)):
            continue
        out[(text, dtype)] = None
        if len(out) > MAX_LITERALS:
            return "*"
    return [list(k) for k in out]


_number_text = driver_values.number_text  # ``"10.0"`` -> ``"10"`` (a Python ``10`` written as a double literal)


# -- the application's code constants ---------------------------------------------------------------------
_QUOTED = re.compile(r"""'((?:[^'\\]|\\.){0,200})'|"((?:[^"\\]|\\.){0,200})"|`([^`]{0,200})`""")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")
_file_cache: dict[tuple[str, float], frozenset[str]] = {}
_constants: tuple[frozenset[str], frozenset[str]] | None = None
#: Application files whose constants count even when they are no longer a loaded module (the launcher's
#: ``runpy.run_path`` restores the launcher's ``__main__`` when the application returns, before the last writes
#: are analysed).
APP_FILES: list[str] = []
_MAX_FILES = 2000
_MAX_BYTES = 2_000_000


def _library_roots() -> tuple[str, ...]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            roots.add(sysconfig.get_paths()[key])
        except KeyError:
            continue
    own = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this package: not the application
    roots.add(own)
    return tuple(os.path.abspath(r) + os.sep for r in roots if r)


def _user_modules() -> list[Any]:
    roots = _library_roots()
    out = []
    for name, mod in list(sys.modules.items()):
        path = getattr(mod, "__file__", None)
        if not path or not str(path).endswith(".py"):
            continue
        full = os.path.abspath(str(path))
        if name != "__main__" and (full.startswith(roots) or "site-packages" in full or "dist-packages" in full):
            continue
        if name.startswith(("pyspark", "py4j", "_pytest", "pytest", "pluggy")):
            continue
        out.append(mod)
    return out[:_MAX_FILES]


def _constants_of(source: str) -> frozenset[str]:
    found: set[str] = set()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or isinstance(node.value, bool) or node.value is None:
            continue
        v = node.value
        if isinstance(v, str):
            found.add(v)
            for m in _QUOTED.finditer(v):  # SQL text: its quoted literals and numbers are constants too
                found.add(next(g for g in m.groups() if g is not None))
            found.update(_NUMBER.findall(v))
        elif isinstance(v, (int, float)):
            found.add(str(v))
            found.add(_number_text(str(v)))
        elif isinstance(v, bytes):
            found.add(v.decode("utf-8", "replace"))
    return frozenset(found)


def code_constants() -> frozenset[str]:
    """Every string and number constant of the application's own modules (``__main__`` and the modules loaded
    from outside the Python installation and site-packages), with the quoted literals and numbers inside its
    strings (SQL text). Cached per file; recomputed when modules were loaded since."""
    global _constants
    mods = _user_modules()
    files = [(os.path.abspath(str(m.__file__)), m) for m in mods]
    files += [(os.path.abspath(p), None) for p in APP_FILES]
    key_set = frozenset(p for p, _m in files)
    if _constants is not None and _constants[0] == key_set:
        return _constants[1]
    acc: set[str] = set()
    for path, mod in files:
        try:
            key = (path, os.path.getmtime(path))
        except OSError:
            key = (path, -1.0)
        got = _file_cache.get(key)
        if got is None:
            source = _source_of(mod, path)
            got = _file_cache[key] = _constants_of(source) if source else frozenset()
        acc |= got
    _constants = (key_set, frozenset(acc))
    return _constants[1]


def _source_of(mod: Any | None, path: str) -> str | None:
    try:
        if os.path.getsize(path) <= _MAX_BYTES:
            with open(path, encoding="utf-8", errors="replace") as fh:
                return fh.read()
    except OSError:
        pass
    if mod is None:
        return None
    try:  # a module in a zip (--py-files): its loader has the source
        loader = getattr(mod, "__loader__", None)
        text = loader.get_source(mod.__name__) if loader is not None else None
        return text if text and len(text) <= _MAX_BYTES else None
    except Exception:
        log.debug("no source for %s", getattr(mod, "__name__", "?"), exc_info=True)
        return None
