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

This module enables the rule and holds the py4j oracle; the Python side's work is split by what it holds:
:mod:`.prune_scan` (what a request says: the table's root, its index folders), :mod:`.prune_opened` (indexes
opened and their file tables, cached per version), :mod:`.prune_decide` (the decision for one scan, and
:func:`answer`, its reference in Python). Their names are importable from here as before.

Planning cost: no py4j call for a scan without a condition on an indexed column; one per
narrowable scan (one more per index version for its file table, one for the INFO line when INFO is on);
an index opened once per version and each predicate's answer cached per version; one pass over Spark's
cached listing in the JVM (hash lookups).
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, ClassVar

from ..._jvm import janino_class
from ..errors import SieveError
from .prune_decide import Unprovable, answer, decide
from .prune_opened import _by_key, _open_cache, table_text
from .prune_scan import (
    INDEX_CHECK_CONF,
    INDEX_FOLDER,
    INDEX_PATHS_CONF,
    Scan,
    _norm,
    _root_of,
    _warn_once,
    _warned,
    configured_index_folders,
    log,
    plan,
)

__all__ = [
    "CONF_KEY",
    "INDEX_CHECK_CONF",
    "INDEX_FOLDER",
    "INDEX_PATHS_CONF",
    "Oracle",
    "Scan",
    "Unprovable",
    "answer",
    "configured_index_folders",
    "decide",
    "disable",
    "enable",
    "enable_from_conf",
    "is_enabled",
    "narrowings",
    "plan",
    "rule_source",
    "table_text",
]
_ = (_by_key, _open_cache, _warned)  # the caches, for tests and benchmarks that clear them

_CLASS = "apl.sieve.SievePrune"
#: Spark conf key the lineage launcher (and users of their own launch) set to enable pruning
CONF_KEY = "spark.airflow_lineage.sievePruning"

_lock = threading.Lock()
#: gateway id -> the compiled rule class (one compilation per driver JVM)
_classes: dict[int, Any] = {}
#: SparkSession id -> (the rule instance, the Python oracle): what disable() removes
_enabled: dict[int, tuple[Any, Oracle]] = {}


def _rule_class(gateway: Any) -> Any:
    """The compiled ``SievePrune`` class of this driver JVM (compiled once)."""
    key = id(gateway)
    with _lock:
        hit = _classes.get(key)
        if hit is None:
            hit = _classes[key] = janino_class(
                gateway, "org.apache.spark.sql.catalyst.rules.Rule", rule_source(gateway.jvm), _CLASS
            )
        return hit


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
