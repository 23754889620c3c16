"""Sieve inside Spark's planner: every Parquet scan of an indexed table reads only the files its
indexes cannot exclude, through Spark's own Parquet reader. Enable once, read as usual:

.. code-block:: python

    from airflow_provider_lineage.sieve import spark as sieve_spark

    sieve_spark.enable(spark)
    spark.read.parquet("/data/sales").where("customer_id = 42").count()   # reads the candidates only
    spark.sql("SELECT * FROM sales WHERE customer_id IN (1, 2)").explain() # Location: SieveFileIndex...
    sieve_spark.disable(spark)

How: a Catalyst optimizer rule (``apl.sieve.SievePrune``, Java source in :mod:`.prune_rule_source`,
compiled in the driver JVM with Janino; no jar) is added to ``spark.experimental.extraOptimizations``.
For each ``Filter`` directly over a ``LogicalRelation(HadoopFsRelation(ParquetFileFormat))`` it
translates the filter's conjuncts with Spark's own ``DataSourceStrategy.translateFilter`` (what Spark
pushes to its sources: a column compared with a literal, no casts), and asks this module (a py4j
callback, :class:`Oracle`) whether an index folder ``<table root>/_sieve/<column>`` exists for a
filtered column. Only then does it send Spark's file listing (path, size, modification time) and get
back the files to read. The relation's location becomes a ``SieveFileIndex`` that delegates to Spark's
own index and drops the excluded files from what it lists; the ``Filter`` stays in the plan.

Never a wrong answer: a file is excluded only when an index knows it *at the size and modification
time Spark listed* (a file added or rewritten after the index version is read) and the index proves
that no row of it can satisfy the condition. ``AND`` unions the excluded sets, ``OR`` intersects them;
a condition the index cannot prove (a cast, a non-binary collation, NaN, a value of another type), a
missing, damaged or unreadable index, or any error (in Python or in the rule) excludes nothing, and
the reason is logged once as a warning. Each narrowed scan is logged at INFO (``Sieve: 2 of 200 files
by customer_id``), ``df.explain()`` shows ``Location: SieveFileIndex`` and the scan's ``number of files
read`` metric counts the candidates. :func:`narrowings` gives the descriptions of a DataFrame's scans.

Planning cost: two py4j callbacks per filtered Parquet scan on an indexed table (one when the table
has no index), an index opened once per version (cached), one pass over Spark's listing.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, ClassVar

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
    """py4j callback the rule calls (``java.util.function.Function``): ``P``+request -> ``"files"``
    when an index may narrow the scan; ``F``+request with Spark's listing -> the answer (see
    :func:`answer`); ``E``+message: an error inside the rule (logged)."""

    class Java:
        implements: ClassVar[list[str]] = ["java.util.function.Function"]

    def apply(self, request: str) -> str:
        kind, body = request[:1], request[1:]
        try:
            if kind == "E":
                log.warning("Sieve: %s; the scan is read as Spark planned it", body)
                return ""
            req = json.loads(body)
            if kind == "P":
                return "files" if plan(req) is not None else ""
            if kind == "F":
                return answer(req)
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
    """What one request says: the table's root, its indexes on filtered columns, the filters."""

    root: str
    indexes: dict[str, str]
    columns: dict[str, str]
    filters: list[dict[str, Any]]


def _root_of(req: dict[str, Any]) -> str | None:
    where = req.get("location")
    if not where:
        roots = req.get("roots") or []
        if len(roots) != 1:
            return None  # several paths read at once: no one table
        where = roots[0]
    return _norm(where)


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
    root = _root_of(req)
    if root is None:
        return None
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
    return Scan(root, indexes, dict(req.get("columns") or {}), list(req["filters"]))


# ---- opened indexes, cached per version --------------------------------------------------------
@dataclass
class _Opened:
    index: SieveIndex
    known: dict[str, tuple[int, int]]  # path -> (size, mtime in ms): the files this version knows
    #: predicate -> the candidate paths of this version (a query planned again, e.g. count() after explain())
    answers: OrderedDict[Any, frozenset[str]] = field(default_factory=OrderedDict)

    def candidates(self, pred: Predicate) -> frozenset[str]:
        with _lock:
            hit = self.answers.get(pred)
        if hit is not None:
            return hit
        hit = frozenset(self.index.lookup(pred, assume_fresh=True).files)
        if len(hit) > _ANSWER_MAX_FILES:  # bounded memory: a wide answer is looked up again
            return hit
        with _lock:
            self.answers[pred] = hit
            while len(self.answers) > _ANSWERS_PER_INDEX:
                self.answers.popitem(last=False)
        return hit


_open_cache: OrderedDict[tuple[str, int], _Opened] = OrderedDict()
_OPEN_CACHE_SIZE = 64
_ANSWERS_PER_INDEX = 256
_ANSWER_MAX_FILES = 10_000


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
    files = manifest.files
    if isinstance(files, FileTable):
        _ids, paths, sizes, mtimes = files.columns()
    else:
        entries = list(files.values())
        paths, sizes, mtimes = (
            [e.path for e in entries],
            [e.size for e in entries],
            [e.mtime_ns for e in entries],
        )
    known = {p: (s, m // 1_000_000) for p, s, m in zip(paths, sizes, mtimes)}
    opened = _Opened(SieveIndex(store, manifest), known)
    with _lock:
        _open_cache[key] = opened
        while len(_open_cache) > _OPEN_CACHE_SIZE:
            _open_cache.popitem(last=False)
    return opened


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


class _Eval:
    """Excluded files (Spark's path strings) of one scan's filter tree."""

    def __init__(self, scan: Scan, listing: list[tuple[str, str, int, int]]) -> None:
        self.scan = scan
        self.listing = listing  # (spark path, sieve path, size, mtime ms)
        self.opened: dict[str, _Opened | None] = {}
        self.used: set[str] = set()

    def index(self, column: str) -> _Opened | None:
        if column not in self.opened:
            try:
                self.opened[column] = _open(self.scan.indexes[column], column, self.scan.root)
            except (IndexUnavailable, SieveError, OSError, ValueError) as exc:
                _warn_once(self.scan.root, f"the index of column {column} cannot be used ({exc})")
                self.opened[column] = None
        return self.opened[column]

    def conjunction(self, nodes: list[dict[str, Any]]) -> set[str]:
        by_column: dict[str, list[F.Cond]] = {}
        excluded: set[str] = set()
        for n in nodes:
            if n["op"] == "and":
                excluded |= self.conjunction(n["children"])
            elif n["op"] == "or":
                excluded |= self.disjunction(n)
            elif n.get("column") in self.scan.indexes:
                try:
                    cond = _cond(n, self.scan.columns.get(n["column"], ""))
                except Unprovable as exc:
                    _warn_once(
                        self.scan.root,
                        f"a condition on indexed column {n['column']} cannot be proven by the index: {exc}",
                    )
                    continue
                by_column.setdefault(n["column"], []).append(cond)
        for column, conds in by_column.items():
            for pred in F.predicates(conds):
                excluded |= self.leaf(column, pred)
        return excluded

    def disjunction(self, node: dict[str, Any]) -> set[str]:
        out: set[str] | None = None
        for child in node["children"]:
            ex = self.conjunction([child])
            out = ex if out is None else out & ex
            if not out:
                return set()
        return out or set()

    def leaf(self, column: str, pred: Predicate) -> set[str]:
        opened = self.index(column)
        if opened is None:
            return set()
        try:
            hits = opened.candidates(pred)
        except (TypeError, ValueError, SieveError, OverflowError) as exc:
            _warn_once(self.scan.root, f"the index of column {column} cannot answer {pred} ({exc})")
            return set()
        known = opened.known
        excluded = {
            sp for sp, p, size, mtime in self.listing if p not in hits and known.get(p) == (size, mtime)
        }
        if excluded:
            self.used.add(column)
        return excluded


def answer(req: dict[str, Any]) -> str:
    """``K``/``X``, a description line, then the files to keep (``K``) or to exclude (``X``), one per
    line as Spark spelled them; "" to leave the scan as it is."""
    scan = plan(req)
    if scan is None:
        return ""
    listing = [(p, _norm(p), int(size), int(mtime)) for p, size, mtime in req["files"]]
    ev = _Eval(scan, listing)
    excluded = ev.conjunction(scan.filters)
    if not excluded:
        return ""
    total = len(listing)
    kept = [sp for sp, _p, _s, _m in listing if sp not in excluded]
    message = f"Sieve: {len(kept)} of {total} files by {', '.join(sorted(ev.used))}"
    log.info("%s (%s)", message, req.get("table") or scan.root)
    if len(kept) <= len(excluded):
        return "K\n" + message + "\n" + "\n".join(kept)
    return "X\n" + message + "\n" + "\n".join(sorted(excluded))
