"""The relations at a plan's leaves: which files, tables or sources a write (or a driver action) reads.

:class:`RelationReader` is a mixin of :class:`~.listener.WriteCaptureListener` (kept apart for size): each leaf
node of the plans' DAG becomes a :class:`~airflow_provider_lineage.lineage.record.RelationInfo` (its exprIds and
columns, and the storage location, table, format or options that name its dataset).
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from airflow_provider_lineage.capture import identity
from airflow_provider_lineage.capture.output_readers import (
    _fill_streaming_v2,
    _fill_v2,
    _format_name,
    _scala_map,
    _seq,
    _table_name,
    _v2_table_name,
)
from airflow_provider_lineage.lineage.logs import get_logger
from airflow_provider_lineage.lineage.record import WRITE_COMMANDS, RelationInfo

if TYPE_CHECKING:
    from airflow_provider_lineage.capture.config import CaptureBudget

log = get_logger(__name__)

#: Leaves that point at another part of the plan (a CTE definition, a recursive CTE's previous
#: iteration), not at data: not relations (their exprIds may equal the real relation's).
_REFERENCE_LEAVES = frozenset({"CTERelationRef", "UnionLoopRef"})


class RelationReader:
    """The leaves' relations (a mixin: the attributes are :class:`~.listener.WriteCaptureListener`'s)."""

    _spark: Any
    #: root paths -> the folders they name, within one write's capture
    _folders: dict[tuple[str, ...], list[str]]

    def _attributes(self, attrs: Any) -> list[tuple[int, str, str]]:  # pragma: no cover - the listener's
        raise NotImplementedError

    def _relations_of(self, leaves: list[Any], started: float, budget: CaptureBudget) -> list[RelationInfo]:
        """The relations at the plans' leaves (each leaf node once, from the plan walk), deduplicated by exprIds."""
        seen: dict[tuple[int, ...], RelationInfo] = {}
        for leaf in leaves:
            if time.monotonic() - started > budget.write_s:
                raise _OverBudget
            cls = leaf.getClass().getSimpleName()
            if cls in WRITE_COMMANDS or cls in _REFERENCE_LEAVES:
                continue
            info = self._relation(leaf)
            if info is not None:
                seen.setdefault(tuple(info.expr_ids), info)
        return list(seen.values())

    def _cached_logical(self, node: Any) -> list[Any]:
        try:
            return [node.cacheBuilder().logicalPlan()]
        except Exception:  # noqa: BLE001 - never fail the user's Spark job for the capture
            return []

    def _relation(self, node: Any) -> RelationInfo | None:
        cls = node.getClass().getSimpleName()
        attrs = self._attributes(node.output())
        info = RelationInfo(
            node_class=cls,
            expr_ids=[i for i, _n, _t in attrs],
            columns=[{"name": n, "type": t} for _i, n, t in attrs],
        )
        if cls == "LogicalRelation":
            rel = node.relation()
            rel_cls = rel.getClass().getSimpleName()
            if rel_cls == "HadoopFsRelation":
                roots = [p.toString() for p in _seq(rel.location().rootPaths())]
                key = tuple(roots)  # a self-join or a union reads one table several times: stat its paths once
                if key not in self._folders:
                    self._folders[key] = identity.folders_of_files(self._spark, roots)  # a file read names its folder
                info.locations = list(self._folders[key])
                info.format = _format_name(rel.fileFormat().toString())
            elif rel_cls == "JDBCRelation":
                opts = _scala_map(rel.jdbcOptions().parameters())
                info.format = "jdbc"
                info.options = {k: v for k, v in opts.items() if k.lower() in ("url", "dbtable", "query")}
            else:
                info.format = rel_cls
            if node.catalogTable().isDefined():
                info.table = _table_name(node.catalogTable().get().identifier())
        elif cls == "HiveTableRelation":
            meta = node.tableMeta()
            info.table = _table_name(meta.identifier())
            info.format = "hive"
            try:
                info.locations = [meta.location().toString()]
            except Exception:  # noqa: BLE001, S110 - never fail the user's Spark job for the capture
                pass
        elif cls == "LogicalRDD":
            try:  # checkpoint()/localCheckpoint(): the plan before the checkpoint is gone from this plan
                rdd = node.rdd()
                if rdd.isCheckpointed() or rdd.getCheckpointFile().isDefined():
                    info.options = {"checkpoint": "true"}
                    info.origin = "checkpoint"
                else:  # an RDD over files or a file-based table: LogicalRDDVisitor's trace
                    trace = identity.rdd_trace(self._spark, rdd)
                    info.locations, info.read_columns = trace.paths, trace.read_columns
                    info.origin = trace.origin
            except Exception:
                log.debug("could not inspect LogicalRDD checkpoint state", exc_info=True)
        elif cls in ("StreamingDataSourceV2ScanRelation", "StreamingDataSourceV2Relation"):
            _fill_streaming_v2(info, node)  # a micro-batch's V2 source (Kafka, rate, ...): untested with Kafka here
        elif cls in ("DataSourceV2Relation", "DataSourceV2ScanRelation"):
            rel = node if cls == "DataSourceV2Relation" else node.relation()
            if _python_data_source(info, rel):
                return info
            _fill_v2(info, identity.v2_relation(self._spark, rel))
            info.table = info.table or _v2_table_name(rel)
            info.format = info.format or "v2"
        return info


def _python_data_source(info: RelationInfo, relation: Any) -> bool:
    """A ``pyspark.sql.datasource`` source (Spark's ``PythonTable``): named by its ``path`` option (``load(path)``)
    as a file location, else left unnamed (the engine reports an unknown input). ``True`` when it is one."""
    try:
        table = relation.table()
        if table.getClass().getSimpleName() != "PythonTable":
            return False
        name = str(table.name())
    except Exception:  # noqa: BLE001 - not a V2 relation with a table
        return False
    info.origin = "python_datasource"
    info.format = f"python:{name}"
    try:
        found = relation.options().asCaseSensitiveMap()
        options = {str(k).lower(): str(found.get(k)) for k in found.keySet()}
    except Exception:  # noqa: BLE001 - a relation without options
        options = {}
    path = options.get("path")
    if path:
        info.locations = [path]
        info.options = {"path": path}
    return True


class _OverBudget(Exception):
    """The per-write budget ran out."""
