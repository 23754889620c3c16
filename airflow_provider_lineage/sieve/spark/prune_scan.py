"""What one request of the Sieve pruning rule says (see :mod:`.prune`): the table's root as Sieve and Spark spell it,
its index folders (``<root>/_sieve/<column>`` or the session's ``spark.airflow_lineage.sieveIndexPaths``) and the
filters on indexed columns, spelled as the relation spells its columns.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Any

from ..fs import is_local, normalize

#: one logger for the rule's Python side (its modules split what it holds, not what it says)
log = logging.getLogger("airflow_provider_lineage.sieve.spark.prune")
INDEX_FOLDER = "_sieve"
_warned: set[tuple[str, str]] = set()
_MAX_WARNED = 10_000


def _warn_once(root: str, reason: str) -> None:
    key = (root, reason)
    if key in _warned:
        return
    if len(_warned) > _MAX_WARNED:
        _warned.clear()
    _warned.add(key)
    log.warning("Sieve: %s; the scan of %s reads every file Spark listed", reason, root)


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
#: Spark conf key: how long (seconds, default 10; 0: not at all) the rule, in the JVM, remembers which index folders a
#: remote table root has (``<root>/_sieve``, listed through Hadoop's FileSystem) to skip the Python call for a scan
#: without a condition on an indexed column; a remembered answer only decides whether Python is asked
INDEX_CHECK_CONF = "spark.airflow_lineage.sieveIndexCheckSeconds"


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
