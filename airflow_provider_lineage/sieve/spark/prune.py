"""Sieve inside Spark's planner: every Parquet scan of an indexed table reads only the files its
indexes cannot exclude, through Spark's own Parquet reader. Enable once, read as usual:

.. code-block:: python

    from airflow_provider_lineage.sieve import spark as sieve_spark

    sieve_spark.enable(spark)
    spark.read.parquet("/data/sales").where("customer_id = 42").count()   # reads the candidates only
    spark.sql("SELECT * FROM sales WHERE customer_id IN (1, 2)").explain() # FileScan parquet (Sieve: ...
    sieve_spark.disable(spark)

How: a Catalyst optimizer rule (``apl.sieve.SievePrune``, Java source in :mod:`.prune_rule_source`,
compiled in the driver JVM with Janino; no jar) is added to ``spark.experimental.extraOptimizations``.
For each ``Filter`` directly over a ``LogicalRelation(HadoopFsRelation(ParquetFileFormat))`` it returns
at once, in the JVM, when no column the condition reads has an index folder ``<table root>/_sieve/<column>``
(a remote root's ``_sieve`` is listed through Hadoop's ``FileSystem`` and remembered for
``spark.airflow_lineage.sieveIndexCheckSeconds``). Otherwise it translates the filter's conjuncts with Spark's own
``DataSourceStrategy.translateFilter`` (what Spark pushes to its sources: a column compared with a
literal, no casts) and makes one py4j call (:class:`Oracle`, :func:`decide`): the Python side answers from
the indexes alone with a small tree (AND / OR of leaves; a leaf is one predicate on one index: the file
ids it may match). Spark's listing never crosses py4j: each index version's file table (relative path,
size, modification time, id) is sent to the JVM once and kept there by the SHA-1 of its content, and the
rule matches Spark's own listing against it. The relation's location becomes a ``SieveFileIndex`` that
delegates to Spark's own index and drops the excluded files from what it lists; the ``Filter`` stays in
the plan.

Never a wrong answer: a file is excluded only when an index knows it *at the size and modification
time Spark listed* (a file added or rewritten after the index version is read) and the index proves
that no row of it can satisfy the condition. ``AND`` unions the excluded sets, ``OR`` intersects them;
a condition the index cannot prove (a cast, a non-binary collation, NaN, a value of another type), a
missing, damaged or unreadable index, or any error (in Python or in the rule) excludes nothing, and
the reason is logged once as a warning. Each narrowed scan is logged at INFO (``Sieve: 2 of 200 files
by customer_id``) and named with it in ``df.explain()`` and the Spark UI's SQL tab (``FileScan parquet
(Sieve: 2 of 200 files by customer_id)``: the relation is Spark's ``HadoopFsRelation`` with its name
extended; its root paths stay the table's, so lineage names the table); the scan's ``number of files
read`` metric counts the candidates. :func:`narrowings` gives the descriptions of a DataFrame's scans.

Planning cost: no py4j call for a scan without a condition on an indexed column; one per
narrowable scan (one more per index version for its file table, one for the INFO line when INFO is on);
an index opened once per version and each predicate's answer cached per version; one pass over Spark's
cached listing in the JVM (hash lookups).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import hashlib
import json
import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..errors import IndexUnavailable, SieveError
from ..fs import is_local, normalize
from ..predicates import Predicate
from ..query import SieveIndex
from ..storage import FileTable, IndexStore
from . import filters as F

log = logging.getLogger(__name__)

_CLASS = "apl.sieve.SievePrune"
#: Spark conf key the lineage launcher (and users of their own launch) set to enable pruning
CONF_KEY = "spark.airflow_lineage.sievePruning"
INDEX_FOLDER = "_sieve"

_lock = threading.Lock()
#: gateway id -> the compiled rule class (one compilation per driver JVM)
_classes: dict[int, Any] = {}
#: SparkSession id -> (the rule instance, the Python oracle): what disable() removes
_enabled: dict[int, tuple[Any, Oracle]] = {}
_warned: set[tuple[str, str]] = set()
_MAX_WARNED = 10_000


def _rule_class(gateway: Any) -> Any:
    """The compiled ``SievePrune`` class of this driver JVM (compiled once).

    The same few lines as ``capture.plan_walk.walker_class`` (the cores import each other nothing).
    """
    key = id(gateway)
    with _lock:
        hit = _classes.get(key)
        if hit is not None:
            return hit
        jvm = gateway.jvm
        loader = jvm.java.lang.Class.forName("org.apache.spark.sql.catalyst.rules.Rule").getClassLoader()
        compiler = jvm.org.codehaus.janino.SimpleCompiler()
        compiler.setParentClassLoader(loader)
        compiler.cook(rule_source(jvm))
        cls = compiler.getClassLoader().loadClass(_CLASS)
        gateway.detach(compiler)
        gateway.detach(loader)
        _classes[key] = cls
        return cls


def rule_source(jvm: Any) -> str:
    """The rule's Java source for this JVM's Scala: Spark 3.5 (Scala 2.12) declares ``FileIndex``'s sequences as
    ``scala.collection.Seq``, Spark 4 (Scala 2.13) as ``scala.collection.immutable.Seq``; Janino compiles against
    the classes on the driver's classpath, so the source names the one they use."""
    from .prune_rule_source import SOURCE

    if str(jvm.scala.util.Properties.versionNumberString()).startswith("2.12"):
        return SOURCE.replace("scala.collection.immutable.Seq", "scala.collection.Seq")
    return SOURCE


def enable(spark: Any) -> None:
    """Prune every Parquet scan of ``spark`` (a classic SparkSession) through the tables' Sieve
    indexes from now on. Idempotent; :func:`disable` undoes it."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        raise SieveError(
            "sieve.spark.enable needs a classic SparkSession (the optimizer rule runs in the "
            "driver JVM); a Spark Connect client cannot add one: start the lineage Connect "
            "server with Sieve pruning, or set spark.airflow_lineage.sievePruning=true on it"
        )
    from pyspark.java_gateway import ensure_callback_server_started

    gateway = spark.sparkContext._gateway
    ensure_callback_server_started(gateway)
    cls = _rule_class(gateway)
    with _lock:
        old = _enabled.pop(id(spark), None)
        rule = cls.newInstance()
        oracle = Oracle()
        rule.setOracle(oracle)
        rule.install(jsession.experimental(), True)
        _enabled[id(spark)] = (rule, oracle)
    if old is not None:
        _release(gateway, old[0])


def disable(spark: Any) -> None:
    """Stop pruning ``spark``'s scans (plans already made keep their narrowed scans)."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        return
    gateway = spark.sparkContext._gateway
    with _lock:
        old = _enabled.pop(id(spark), None)
    rule = old[0] if old is not None else _rule_class(gateway).newInstance()
    rule.install(jsession.experimental(), False)
    _release(gateway, rule)


def is_enabled(spark: Any) -> bool:
    """Whether ``spark``'s optimizer has the Sieve rule."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        return False
    return bool(_rule_class(spark.sparkContext._gateway).newInstance().installed(jsession.experimental()))


def enable_from_conf(spark: Any) -> bool:
    """:func:`enable` when the session's conf says ``spark.airflow_lineage.sievePruning=true`` (what the
    lineage launcher calls); never raises: a failure is logged and the job runs unpruned."""
    try:
        value = spark.conf.get(CONF_KEY, None) or os.environ.get("AIRFLOW_LINEAGE_SIEVE_PRUNING", "")
        if str(value).strip().lower() not in ("true", "1", "yes"):
            return False
        enable(spark)
        log.info("Sieve: pruning of Parquet scans enabled (%s)", CONF_KEY)
        return True
    except Exception as exc:  # noqa: BLE001 - pruning is an optimisation: the job runs without it
        log.warning("Sieve: pruning could not be enabled (%s): every scan reads as Spark plans it", exc)
        return False


def narrowings(df: Any) -> list[str]:
    """The narrowing of each scan of ``df``'s optimized plan, e.g. ``['Sieve: 2 of 200 files by k']``."""
    plan = df._jdf.queryExecution().optimizedPlan()
    rule = _rule_class(df.sparkSession.sparkContext._gateway).newInstance()
    return [line for line in str(rule.narrowings(plan)).split("\n") if line]


def _release(gateway: Any, obj: Any) -> None:
    try:
        gateway.detach(obj)
    except Exception:  # noqa: BLE001, S110 - already released
        pass


def _warn_once(root: str, reason: str) -> None:
    key = (root, reason)
    if key in _warned:
        return
    if len(_warned) > _MAX_WARNED:
        _warned.clear()
    _warned.add(key)
    log.warning("Sieve: %s; the scan of %s reads every file Spark listed", reason, root)


# ---- the Python side of the rule ---------------------------------------------------------------
class Oracle:
    """py4j callback the rule calls (``java.util.function.Function``): ``Q``+request -> the decision for
    one scan (see :func:`decide`); ``T``+key -> a file table (:func:`table_text`); ``I``+line: a narrowed
    scan (logged at INFO); ``E``+message: an error inside the rule (logged)."""

    class Java:
        implements: ClassVar[list[str]] = ["java.util.function.Function"]

    def apply(self, request: str) -> str:
        kind, body = request[:1], request[1:]
        try:
            if kind == "Q":
                return decide(json.loads(body))
            if kind == "T":
                return table_text(body)
            if kind == "I":
                message, _, where = body.partition("\t")
                log.info("%s (%s)", message, _norm(where) if where.startswith("file:") else where)
                return ""
            if kind == "E":
                log.warning("Sieve: %s; the scan is read as Spark planned it", body)
                return ""
        except Exception as exc:  # noqa: BLE001 - never fail the user's query: no narrowing
            root = "a Parquet table"
            try:
                root = _root_of(json.loads(body)) or root
            except Exception:  # noqa: BLE001, S110
                pass
            _warn_once(root, f"an error while choosing files ({type(exc).__name__}: {exc})")
        return ""

    def toString(self) -> str:
        return "SievePruneOracle"


@dataclass
class Scan:
    """What one request says: the table's root (Sieve's spelling and Spark's), its indexes on filtered
    columns, the filters."""

    root: str
    spark_root: str
    indexes: dict[str, str]
    columns: dict[str, str]
    filters: list[dict[str, Any]]


def _spark_root(req: dict[str, Any]) -> str | None:
    """The table's root as Spark spells it (the catalog's location, else the one path read)."""
    where = req.get("location")
    if not where:
        roots = req.get("roots") or []
        if len(roots) != 1:
            return None  # several paths read at once: no one table
        where = roots[0]
    return str(where)


def _root_of(req: dict[str, Any]) -> str | None:
    where = _spark_root(req)
    return None if where is None else _norm(where)


def _norm(spark_path: str) -> str:
    """A Hadoop ``Path.toString()`` (already decoded and normalised by Hadoop) as Sieve spells paths."""
    if spark_path.startswith("file:"):
        rest = spark_path[5:]
        if rest.startswith("///"):
            rest = rest[2:]
        return rest if rest.startswith("/") and "/." not in rest else os.path.normpath(rest)
    if "://" not in spark_path:
        return os.path.abspath(spark_path)
    return normalize(spark_path.replace("%", "%25"))  # normalize() decodes; the path is decoded already


def _index_folders(root: str) -> dict[str, str]:
    """Indexed column -> index folder under ``<root>/_sieve/``."""
    base = root.rstrip("/") + "/" + INDEX_FOLDER
    if is_local(root):
        try:
            return {
                e.name: e.path for e in os.scandir(base) if e.is_dir() and not e.name.startswith((".", "_"))
            }
        except (FileNotFoundError, NotADirectoryError):
            return {}
    import posixpath

    import pyarrow.fs as pafs

    from ..fs import resolve

    filesystem, inner = resolve(base)
    try:
        infos = filesystem.get_file_info(pafs.FileSelector(inner, allow_not_found=True))
    except OSError as exc:
        _warn_once(root, f"its indexes cannot be listed ({exc})")
        return {}
    return {
        posixpath.basename(i.path): f"{base}/{posixpath.basename(i.path)}"
        for i in infos
        if i.type == pafs.FileType.Directory and not posixpath.basename(i.path).startswith((".", "_"))
    }


#: Spark conf key: indexes kept outside ``<table root>/_sieve/`` (``S.build(..., index_path=...)``), a JSON object
#: ``{"<table root or catalog table name>": {"<column>": "<index folder>"}}``
INDEX_PATHS_CONF = "spark.airflow_lineage.sieveIndexPaths"


def configured_index_folders(req: dict[str, Any], root: str) -> dict[str, str]:
    """Indexed column -> index folder for this scan's table from the session's ``spark.airflow_lineage.
    sieveIndexPaths`` (the rule sends it with the request): a key is a table root (spelled as Sieve or Spark
    spells paths) or a catalog table name (``sales``, ``db.sales``, ``spark_catalog.db.sales``)."""
    text = req.get("indexPaths")
    if not text:
        return {}
    try:
        mapping = json.loads(text)
        if not isinstance(mapping, dict):
            raise TypeError("not an object")
    except (ValueError, TypeError) as exc:
        _warn_once(root, f"{INDEX_PATHS_CONF} is not a JSON object of table -> {{column: index folder}} ({exc}), "
                         'e.g. {"/data/sales": {"customer_id": "/indexes/sales/customer_id"}}')
        return {}
    table = str(req.get("table") or "").lower()
    out: dict[str, str] = {}
    for key, columns in mapping.items():
        key = str(key)
        if "/" in key or ":" in key:
            hit = _norm(key).rstrip("/") == root.rstrip("/")
        else:
            hit = bool(table) and (table == key.lower() or table.endswith("." + key.lower()))
        if hit and isinstance(columns, dict):
            out.update({str(c): normalize(str(p)) if "://" in str(p) else _norm(str(p)) for c, p in columns.items()})
    return out


def _leaf_columns(node: dict[str, Any]) -> set[str]:
    if node["op"] in ("and", "or"):
        out: set[str] = set()
        for c in node["children"]:
            out |= _leaf_columns(c)
        return out
    return {node["column"]} if "column" in node else set()


def _renamed(node: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """The filter tree with the query's column spelling replaced by the relation's (``K`` -> ``k``)."""
    if node["op"] in ("and", "or"):
        return {**node, "children": [_renamed(c, names) for c in node["children"]]}
    if "column" in node:
        return {**node, "column": names.get(node["column"], node["column"])}
    return node


def plan(req: dict[str, Any]) -> Scan | None:
    """The scan when an index may narrow it (a filtered column has an index folder), else None.
    Warns (once) about conditions on an indexed column that Spark cannot express as a pushed filter."""
    spark_root = _spark_root(req)
    if spark_root is None:
        return None
    root = _norm(spark_root)
    names = req.get("names") or {}
    req["filters"] = [_renamed(f, names) for f in req["filters"]]
    for u in req.get("untranslated") or []:
        u["columns"] = [names.get(c, c) for c in u.get("columns") or []]
    partition = set(req.get("partitionColumns") or [])
    filtered = set()
    for f in req["filters"]:
        filtered |= _leaf_columns(f)
    untranslated = [u for u in req.get("untranslated") or [] if u.get("columns")]
    if not (filtered or untranslated):
        return None
    indexes = {c: p for c, p in {**_index_folders(root), **configured_index_folders(req, root)}.items()
               if c not in partition}
    if not indexes:
        return None
    for u in untranslated:
        hit = sorted(set(u["columns"]) & set(indexes))
        if hit:
            _warn_once(
                root,
                f"the condition {u['sql']} on indexed column {', '.join(hit)} cannot be proven by "
                "the index (a cast, a function or a comparison of columns): it excludes no file",
            )
    if not filtered & set(indexes):
        return None
    return Scan(root, spark_root, indexes, dict(req.get("columns") or {}), list(req["filters"]))


# ---- opened indexes, cached per version --------------------------------------------------------
@dataclass
class _Opened:
    index: SieveIndex
    #: the live files as the JVM keeps them: "<n>\n" + "id\tsize\tmtime ms\trelative path" lines
    text: str
    #: the SHA-1 of ``text``: the JVM's key for the table (content-addressed: a rebuilt index is another table)
    key: str
    live: int
    #: predicate -> the encoded hits of this version, or None (excludes nothing): a query planned again
    answers: OrderedDict[Any, str | None] = field(default_factory=OrderedDict)

    def hits(self, pred: Predicate) -> str | None:
        """``i`` + the ids of the files ``pred`` may match (comma-separated), or ``b`` + a base64 bitmap of
        them (whichever is shorter); None when every live file may match (nothing to exclude)."""
        with _lock:
            if pred in self.answers:
                self.answers.move_to_end(pred)
                return self.answers[pred]
        ids = self.index.candidate_ids(pred)
        if len(ids) >= self.live:
            out = None
        else:
            listed = "i" + ",".join(map(str, sorted(ids)))
            top = max(ids, default=0)
            if len(listed) > (top // 8 + 1) * 4 // 3 + 8:
                bits = np.zeros(top + 1, dtype=bool)
                bits[np.fromiter(ids, dtype=np.int64, count=len(ids))] = True
                out = "b" + base64.b64encode(np.packbits(bits, bitorder="little").tobytes()).decode()
            else:
                out = listed
        if out is None or len(out) <= _ANSWER_MAX_CHARS:  # bounded memory: a longer answer is looked up again
            with _lock:
                self.answers[pred] = out
                while len(self.answers) > _ANSWERS_PER_INDEX:
                    self.answers.popitem(last=False)
        return out


_open_cache: OrderedDict[tuple[str, int], _Opened] = OrderedDict()
#: table key -> the opened index holding its text (what the JVM asks for with ``T``)
_by_key: OrderedDict[str, _Opened] = OrderedDict()
_OPEN_CACHE_SIZE = 64
_ANSWERS_PER_INDEX = 256
_ANSWER_MAX_CHARS = 64_000


def _file_table(manifest: Any, root: str) -> tuple[str, int]:
    """The JVM's file table of a version (rows of files outside ``root`` left out: never matched) and its
    number of live files."""
    files = manifest.files
    if isinstance(files, FileTable):
        ids, paths, sizes, mtimes = files.columns()
    else:
        ids = list(files)
        entries = [files[i] for i in ids]
        paths, sizes, mtimes = (
            [e.path for e in entries],
            [e.size for e in entries],
            [e.mtime_ns for e in entries],
        )
    base = root.rstrip("/") + "/"
    n = len(base)
    rows = [
        f"{i}\t{size}\t{mtime // 1_000_000}\t{p[n:]}"
        for i, p, size, mtime in zip(ids, paths, sizes, mtimes)
        if p.startswith(base) and "\n" not in p
    ]
    return f"{len(rows)}\n" + "\n".join(rows), len(ids)


def _open(path: str, column: str, root: str) -> _Opened:
    """The latest version of the index at ``path`` (raises IndexUnavailable / SieveError)."""
    store = IndexStore(path)
    try:
        version = store.latest_version()
    except OSError as exc:
        raise IndexUnavailable(f"cannot list {path} ({exc})") from exc
    if version is None:
        raise IndexUnavailable(f"no committed index version at {path}")
    key = (path, version)
    with _lock:
        hit = _open_cache.get(key)
        if hit is not None:
            _open_cache.move_to_end(key)
            return hit
    manifest = store.load_manifest(version)
    if manifest.column != column:
        raise IndexUnavailable(f"the index at {path} is for column {manifest.column!r}")
    if manifest.table.root != root:
        raise IndexUnavailable(f"the index at {path} is for table {manifest.table.root}")
    text, live = _file_table(manifest, root)
    opened = _Opened(SieveIndex(store, manifest), text, hashlib.sha1(text.encode()).hexdigest(), live)
    with _lock:
        _open_cache[key] = opened
        _by_key[opened.key] = opened
        while len(_open_cache) > _OPEN_CACHE_SIZE:
            _open_cache.popitem(last=False)
        while len(_by_key) > _OPEN_CACHE_SIZE:
            _by_key.popitem(last=False)
    return opened


def table_text(key: str) -> str:
    """The file table the JVM asks for by key ("" when it is no longer here: the scan is not narrowed)."""
    with _lock:
        opened = _by_key.get(key)
    return "" if opened is None else opened.text


# ---- values and predicates ---------------------------------------------------------------------
class Unprovable(Exception):
    """A condition the index cannot answer exactly as Spark evaluates it."""


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _value(v: dict[str, str] | None) -> Any:
    if v is None:
        return None
    t, s = v["t"], v["v"]
    if t == "int":
        return int(s)
    if t == "str":
        return s
    if t == "date":
        return dt.date.fromisoformat(s)
    if t == "ts":
        return _EPOCH + dt.timedelta(microseconds=int(s))
    if t == "ntz":
        return dt.datetime.fromisoformat(s)
    if t == "dec":
        return decimal.Decimal(s)
    if t == "bin":
        return bytes.fromhex(s)
    if t == "nan":
        raise Unprovable(f"a NaN or infinite value ({s})")
    raise Unprovable(f"a value of type {t} ({s})")


def _cond(leaf: dict[str, Any], column_type: str) -> F.Cond:
    t = column_type.lower()
    if "collate" in t and "utf8_binary" not in t:
        raise Unprovable(f"column type {column_type} compares strings by a collation, the index by bytes")
    if t in ("float", "double"):
        raise Unprovable(f"column type {column_type} (NaN and -0.0 order)")
    op = leaf["op"]
    if op == "in":
        return F.Cond(leaf["column"], "in", tuple(_value(v) for v in leaf["values"]))
    if op == "is_null":
        return F.Cond(leaf["column"], "is_null")
    value = _value(leaf.get("value"))
    if op == "eq_null_safe":
        return F.Cond(leaf["column"], "is_null") if value is None else F.Cond(leaf["column"], "eq", value)
    if op == "starts_with" and not isinstance(value, str):
        raise Unprovable("a prefix that is not a string")
    return F.Cond(leaf["column"], op, value)


Tree = tuple  # ("L", table key, column, hits) | ("A" | "O", [children]); None: excludes nothing


class _Eval:
    """The decision tree of one scan's filter tree: AND (any child excludes a file), OR (every child
    does), leaves (one predicate on one index: its hits)."""

    def __init__(self, scan: Scan) -> None:
        self.scan = scan
        self.opened: dict[str, _Opened | None] = {}

    def index(self, column: str) -> _Opened | None:
        if column not in self.opened:
            try:
                self.opened[column] = _open(self.scan.indexes[column], column, self.scan.root)
            except (IndexUnavailable, SieveError, OSError, ValueError) as exc:
                _warn_once(self.scan.root, f"the index of column {column} cannot be used ({exc})")
                self.opened[column] = None
        return self.opened[column]

    def conjunction(self, nodes: list[dict[str, Any]]) -> Tree | None:
        by_column: dict[str, list[F.Cond]] = {}
        children: list[Tree] = []
        for n in nodes:
            if n["op"] == "and":
                sub = self.conjunction(n["children"])
            elif n["op"] == "or":
                sub = self.disjunction(n)
            else:
                sub = None
                if n.get("column") in self.scan.indexes:
                    try:
                        cond = _cond(n, self.scan.columns.get(n["column"], ""))
                    except Unprovable as exc:
                        _warn_once(
                            self.scan.root,
                            f"a condition on indexed column {n['column']} cannot be proven by the index: {exc}",
                        )
                        continue
                    by_column.setdefault(n["column"], []).append(cond)
            if sub is not None:
                children.append(sub)
        for column, conds in by_column.items():
            for pred in F.predicates(conds):
                leaf = self.leaf(column, pred)
                if leaf is not None:
                    children.append(leaf)
        if not children:
            return None
        return children[0] if len(children) == 1 else ("A", children)

    def disjunction(self, node: dict[str, Any]) -> Tree | None:
        children = []
        for child in node["children"]:
            sub = self.conjunction([child])
            if sub is None:  # a branch that excludes nothing: neither does the OR
                return None
            children.append(sub)
        return ("O", children) if children else None

    def leaf(self, column: str, pred: Predicate) -> Tree | None:
        opened = self.index(column)
        if opened is None:
            return None
        try:
            hits = opened.hits(pred)
        except (TypeError, ValueError, SieveError, OverflowError) as exc:
            _warn_once(self.scan.root, f"the index of column {column} cannot answer {pred} ({exc})")
            return None
        return None if hits is None else ("L", opened.key, column, hits)


def decide(req: dict[str, Any]) -> str:
    """What the rule does with one scan, from the indexes alone (Spark's listing stays in the JVM); ""
    leaves the scan as it is. Lines: ``N1`` (log the narrowing at INFO) or ``N0``; the table's root as
    Spark spells it (each listed file's path relative to it is looked up in the file tables); the number of
    file tables and their keys (``T``+key fetches one the JVM does not hold); then the tree in prefix
    notation, a node a line: ``A<n>`` / ``O<n>`` and their n children, ``L<table>\t<column>\t<hits>``
    (``hits`` as :meth:`_Opened.hits`). A listed file is excluded by a leaf when the leaf's file table
    knows it at the size and modification time Spark listed and its id is not a hit."""
    scan = plan(req)
    if scan is None:
        return ""
    tree = _Eval(scan).conjunction(scan.filters)
    if tree is None:
        return ""
    keys: list[str] = []
    body: list[str] = []

    def emit(node: Tree) -> None:
        if node[0] == "L":
            _, key, column, hits = node
            if key not in keys:
                keys.append(key)
            body.append(f"L{keys.index(key)}\t{column}\t{hits}")
        else:
            body.append(f"{node[0]}{len(node[1])}")
            for child in node[1]:
                emit(child)

    emit(tree)
    flag = "N1" if log.isEnabledFor(logging.INFO) else "N0"
    return "\n".join([flag, scan.spark_root, str(len(keys)), *keys, *body])


def answer(req: dict[str, Any]) -> str:
    """:func:`decide` applied to a listing in Python, as the rule applies it in the JVM (the reference
    for tests): ``K``/``X``, a description line, then the files to keep (``K``) or to exclude (``X``) as
    Spark spelled them; "" when nothing is excluded. ``req["files"]``: ``[path, size, mtime ms]``."""
    text = decide(req)
    if not text:
        return ""
    lines = text.split("\n")
    base = lines[1].rstrip("/") + "/"
    keys = lines[3 : 3 + int(lines[2])]
    tables = []
    for key in keys:
        rows: dict[str, tuple[int, int, int]] = {}
        for line in table_text(key).split("\n")[1:]:
            fid, size, mtime, rel = line.split("\t", 3)
            rows[rel] = (int(fid), int(size), int(mtime))
        tables.append(rows)
    pos = 3 + len(keys)
    used: set[str] = set()

    def parse() -> Any:
        nonlocal pos
        line = lines[pos]
        pos += 1
        if line[0] in "AO":
            return (line[0], [parse() for _ in range(int(line[1:]))])
        slot, column, hits = line[1:].split("\t", 2)
        if hits[0] == "b":
            raw = np.unpackbits(np.frombuffer(base64.b64decode(hits[1:]), np.uint8), bitorder="little")
            ids = set(np.flatnonzero(raw).tolist())
        else:
            ids = {int(x) for x in hits[1:].split(",") if x}
        return ("L", tables[int(slot)], column, ids)

    tree = parse()

    def excluded(node: Any, rel: str | None, size: int, mtime: int) -> bool:
        if node[0] == "L":
            _, rows, column, ids = node
            row = rows.get(rel) if rel is not None else None
            if row is None or row[1:] != (size, mtime) or row[0] in ids:
                return False
            used.add(column)
            return True
        results = [excluded(c, rel, size, mtime) for c in node[1]]
        return any(results) if node[0] == "A" else all(results)

    kept, dropped = [], []
    for path, size, mtime in req["files"]:
        rel = path[len(base) :] if path.startswith(base) else None
        (dropped if excluded(tree, rel, int(size), int(mtime)) else kept).append(path)
    if not dropped:
        return ""
    message = f"Sieve: {len(kept)} of {len(kept) + len(dropped)} files by {', '.join(sorted(used))}"
    if len(kept) <= len(dropped):
        return "K\n" + message + "\n" + "\n".join(kept)
    return "X\n" + message + "\n" + "\n".join(sorted(dropped))
