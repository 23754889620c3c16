"""Driver-side facts that dataset names need (py4j): the application's file-system and catalog settings,
the storage of V2 catalog tables, files read -> their folder, and the files/tables behind an RDD.

Used by :mod:`.listener`; every function is defensive (a failure returns nothing, never raises into Spark).
Mirrors openlineage-spark: ``PlanUtils.getDirectoryPath`` (a file read names its folder),
``LogicalRDDVisitor``/``Rdds.findFileLikeRdds`` (an RDD traced to its HadoopRDD/NewHadoopRDD/FileScanRDD
inputs), the catalog handlers (Iceberg/Delta: the table's ``location`` property; ``JdbcHandler``: the
catalog's JDBC URL + the identifier), ``SparkConfUtils.getMetastoreUri`` and the Glue client factory.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_lineage.capture.py4j_helpers import scala_seq
from airflow_provider_lineage.lineage.logs import get_logger

log = get_logger(__name__)

GLUE_FACTORY = "com.amazonaws.glue.catalog.metastore.AWSGlueDataCatalogHiveClientFactory"
_MAX_FILE_CHECKS = 64
_MAX_RDD_NODES = 2000


def environment(spark: Any) -> dict[str, str]:
    """``fs.defaultFS``, the catalog implementation, Hive metastore URIs and Glue settings of the session."""
    env: dict[str, str] = {}
    try:
        hconf = spark.sparkContext._jsc.hadoopConfiguration()
        conf = spark.sparkContext.getConf()
        env["default_fs"] = str(hconf.get("fs.defaultFS") or "")
        env["catalog_implementation"] = str(conf.get("spark.sql.catalogImplementation", "in-memory"))
        uris = (conf.get("spark.sql.hive.metastore.uris", None) or conf.get("spark.hadoop.hive.metastore.uris", None)
                or hconf.get("hive.metastore.uris") or "")
        env["metastore_uris"] = str(uris)
        if (hconf.get("hive.metastore.client.factory.class") or "") == GLUE_FACTORY:
            env["glue_region"] = os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION") or ""
            env["glue_account"] = str(conf.get("spark.glue.accountId", "") or "")
    except Exception:
        log.debug("could not read the session's file-system/catalog settings", exc_info=True)
    return env


def folders_of_files(spark: Any, paths: list[str]) -> list[str]:
    """Each path that is a file -> its folder (``PlanUtils.getDirectoryPath``); folders stay; order kept."""
    if not paths:
        return paths
    try:
        jvm = spark.sparkContext._jvm
        hconf = spark._jsparkSession.sessionState().newHadoopConf()
    except Exception:  # noqa: BLE001 - never fail the user's Spark job for the capture
        return paths
    out: list[str] = []
    all_files = True
    for i, raw in enumerate(paths):
        if i >= _MAX_FILE_CHECKS:
            # thousands of files: the ones checked were files of folders; the rest are named alike
            out.append(_parent(raw) if all_files else raw)
            continue
        try:
            p = jvm.org.apache.hadoop.fs.Path(raw)
            is_file = bool(p.getFileSystem(hconf).getFileStatus(p).isFile())
        except Exception:  # noqa: BLE001 - a path we cannot stat is named as given
            is_file = False
        all_files = all_files and is_file
        out.append(_parent(raw) if is_file else raw)
    return list(dict.fromkeys(out))


def _parent(path: str) -> str:
    head, _, _tail = path.rstrip("/").rpartition("/")
    return head or "/"


def v2_table(spark: Any, catalog: Any, ident: Any) -> dict[str, Any]:
    """``{table, location, format, url}`` of a V2 catalog table, from the catalog and the table's properties.

    ``table`` is ``catalog.namespace.name``; ``location`` the table's ``location`` property (Iceberg, Delta,
    a session-catalog table) or a path identifier (Delta ``delta.`/p```); a ``JDBCTableCatalog`` gives
    ``format="jdbc-catalog"`` and its ``url`` (``spark.sql.catalog.<name>.url``), as ``JdbcHandler``.
    """
    out: dict[str, Any] = {}
    try:
        cat_name = str(catalog.name())
        namespace = [str(x) for x in ident.namespace()]
        name = str(ident.name())
        from airflow_provider_lineage.lineage.naming import quote_if_needed

        out["table"] = ".".join([cat_name, *(quote_if_needed(p) for p in [*namespace, name])])
    except Exception:  # noqa: BLE001 - never fail the user's Spark job for the capture
        return out
    cls = _class_name(catalog)
    if cls.endswith("JDBCTableCatalog"):
        out["format"] = "jdbc-catalog"
        try:
            out["url"] = str(spark.conf.get(f"spark.sql.catalog.{cat_name}.url"))
        except Exception:
            log.debug("JDBC catalog %s has no url setting", cat_name, exc_info=True)
        return out
    if name.startswith("/") or "://" in name:
        out["location"] = name  # a path identifier (delta.`/p`, parquet.`/p`)
    elif cls in ("SparkCatalog", "SparkSessionCatalog"):  # Iceberg: the catalog's type decides the symlink
        try:
            from airflow_provider_lineage.lineage.naming import iceberg_symlink_namespace

            conf = {
                k: str(spark.conf.get(f"spark.sql.catalog.{cat_name}.{k}", "") or "")
                for k in ("type", "uri", "warehouse")
            }
            ns = iceberg_symlink_namespace(conf)
            if ns:
                out["table_namespace"] = ns
        except Exception:  # the symlink falls back to the location's folder
            log.debug("could not read Iceberg catalog %s settings", cat_name, exc_info=True)
    try:
        props = catalog.loadTable(ident).properties()
        loc = props.get("location")
        if loc and "location" not in out:
            out["location"] = str(loc)
        provider = props.get("provider") or props.get("format")
        if provider:
            out["format"] = str(provider).split("/")[0].lower()
    except Exception:
        log.debug("could not load V2 table %s for its properties", out.get("table"), exc_info=True)
    return out


def v2_relation(spark: Any, relation: Any) -> dict[str, Any]:
    """:func:`v2_table` for a ``DataSourceV2Relation`` (reads, and the target of AppendData & co)."""
    try:
        if relation.catalog().isDefined() and relation.identifier().isDefined():
            info = v2_table(spark, relation.catalog().get(), relation.identifier().get())
            if "location" not in info and info.get("format") != "jdbc-catalog":
                loc = relation.table().properties().get("location")
                if loc:
                    info["location"] = str(loc)
            return info
    except Exception:
        log.debug("could not name a V2 relation", exc_info=True)
    return {}


def resolved_identifier(spark: Any, cmd: Any) -> dict[str, Any]:
    """The target of CTAS/RTAS: ``cmd.name()`` is a ``ResolvedIdentifier(catalog, identifier)`` (Spark 3.4+)."""
    try:
        target = cmd.name()
        return v2_table(spark, target.catalog(), target.identifier())
    except Exception:  # noqa: BLE001 - older Spark: (catalog, tableName) fields
        try:
            return v2_table(spark, cmd.catalog(), cmd.tableName())
        except Exception:  # noqa: BLE001 - never fail the user's Spark job for the capture
            return {}


@dataclass
class RddTrace:
    """What an RDD leaf's dependencies show: the files read, the columns the file scans read, where the data is
    from (``"files"``, ``"local"``: only driver-local collections, else ``None``: unknown)."""

    paths: list[str] = field(default_factory=list)
    read_columns: list[str] = field(default_factory=list)
    origin: str | None = None


#: RDDs of driver-local data (``parallelize``, ``createDataFrame`` of a list or a pandas frame).
_LOCAL_RDDS = frozenset({"ParallelCollectionRDD"})


def rdd_inputs(spark: Any, rdd: Any) -> list[str]:
    """The files an RDD reads (:func:`rdd_trace`'s paths)."""
    return rdd_trace(spark, rdd).paths


def rdd_trace(spark: Any, rdd: Any) -> RddTrace:
    """The files an RDD reads, found in its dependencies (``Rdds.findFileLikeRdds`` + ``PlanUtils.findRDDPaths``):
    ``HadoopRDD`` input paths, ``NewHadoopRDD`` input dirs, ``FileScanRDD`` files -> their folders; the columns
    the ``FileScanRDD`` scans read; and whether every root of the RDD is driver-local data."""
    paths: list[str] = []
    columns: list[str] = []
    roots: set[str] = set()
    seen: set[int] = set()
    stack = [rdd]
    while stack and len(seen) < _MAX_RDD_NODES:
        r = stack.pop()
        try:
            rid = int(r.id())
        except Exception:  # noqa: BLE001, S112 - never fail the user's Spark job for the capture
            continue
        if rid in seen:
            continue
        seen.add(rid)
        cls = _class_name(r)
        try:
            if cls == "HadoopRDD":
                jvm = spark.sparkContext._jvm
                paths += [str(p) for p in jvm.org.apache.hadoop.mapred.FileInputFormat.getInputPaths(r.getJobConf())]
            elif cls == "NewHadoopRDD":
                dirs = r.getConf().get("mapreduce.input.fileinputformat.inputdir") or ""
                paths += [d for d in str(dirs).split(",") if d]
            elif cls == "FileScanRDD":
                for part in scala_seq(r.filePartitions()):
                    for f in list(part.files()):
                        paths.append(
                            _parent(str(f.filePath().toString() if hasattr(f.filePath(), "toString") else f.filePath()))
                        )
                try:
                    columns += [str(n) for n in r.readSchema().fieldNames()]
                except Exception:
                    log.debug("no readSchema on FileScanRDD", exc_info=True)
        except Exception:
            log.debug("could not read the input paths of %s", cls, exc_info=True)
        try:
            deps = scala_seq(r.dependencies())
        except Exception:  # noqa: BLE001 - never fail the user's Spark job for the capture
            roots.add("?")
            continue
        if not deps:
            roots.add(cls)
        for dep in deps:
            stack.append(dep.rdd())
    if stack:
        roots.add("?")  # not walked to the end
    paths = list(dict.fromkeys(paths))
    origin = "files" if paths else ("local" if roots and roots <= _LOCAL_RDDS else None)
    return RddTrace(paths, list(dict.fromkeys(columns)), origin)


def _class_name(obj: Any) -> str:
    try:
        return str(obj.getClass().getSimpleName())
    except Exception:  # noqa: BLE001 - a released or foreign py4j object: no name, never fail the capture
        return ""
