"""The output descriptor of each write command: where it writes, how, in which format, with which columns.

One reader per write command class (:data:`OUTPUT_READERS`, like the engine's ``RULES``), called by
:meth:`.listener.WriteCaptureListener._output`; :mod:`.streaming` adds the streaming writes'. The plan JSON nulls
these fields out, so they are read from the command objects over py4j.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from airflow_provider_lineage.capture import identity
from airflow_provider_lineage.capture.py4j_helpers import scala_seq as _seq
from airflow_provider_lineage.lineage.logs import get_logger
from airflow_provider_lineage.lineage.naming import KAFKA_OPTIONS
from airflow_provider_lineage.lineage.record import OutputInfo, RelationInfo

log = get_logger(__name__)


class WriteCaptureListener(Protocol):
    """What a reader uses of :class:`~.listener.WriteCaptureListener` (named here: no import cycle)."""

    _spark: Any

    def _fill_columns(self, out: OutputInfo, query: Any) -> None: ...

    def _attributes(self, attrs: Any) -> list[tuple[int, str, str]]: ...

    def _strings(self, values: Any) -> list[str]: ...

    def _table_location(self, ident: Any) -> str | None: ...


def _scala_map(scala_map: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    it = scala_map.iterator()
    while it.hasNext():
        kv = it.next()
        out[str(kv._1())] = str(kv._2())
    return out



# -- output descriptors, one reader per write command (the plan JSON nulls these fields out) ----------
OutputReader = Callable[["WriteCaptureListener", Any, OutputInfo], None]


def _hadoop_fs_insert(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    out.location = cmd.outputPath().toString()
    out.mode = cmd.mode().toString()
    out.format = _format_name(cmd.fileFormat().toString())
    out.partition_columns = [name for _i, name, _t in lst._attributes(cmd.partitionColumns())]
    out.columns = lst._strings(cmd.outputColumnNames())
    out.column_types = [typ for _i, _n, typ in lst._attributes(cmd.query().output())]
    if cmd.catalogTable().isDefined():
        out.table = _table_name(cmd.catalogTable().get().identifier())


def _data_source_table(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    table = cmd.table() if out.command.startswith("Create") else cmd.tableDesc()
    out.table = _table_name(table.identifier())
    out.mode = cmd.mode().toString()
    if table.provider().isDefined():
        out.format = table.provider().get().lower()
    out.partition_columns = [str(c) for c in _seq(table.partitionColumnNames())]
    lst._fill_columns(out, cmd.query())
    out.location = lst._table_location(table.identifier())


def _hive_table(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    insert = out.command == "InsertIntoHiveTable"
    table = cmd.table() if insert else cmd.tableDesc()
    out.table = _table_name(table.identifier())
    out.format = "hive"
    out.mode = ("Overwrite" if cmd.overwrite() else "Append") if insert else cmd.mode().toString()
    lst._fill_columns(out, cmd.query())
    out.location = lst._table_location(table.identifier())


def _save_into_data_source(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    opts = _scala_map(cmd.options())
    out.mode = cmd.mode().toString()
    out.format = _format_name(cmd.dataSource().getClass().getName())
    out.options = {k: v for k, v in opts.items() if k.lower() in ("url", "dbtable", "path", "table", *KAFKA_OPTIONS)}
    out.location = opts.get("path")
    lst._fill_columns(out, cmd.query())


def _fill_v2(info: Any, found: dict[str, Any]) -> None:
    """Copy :func:`.identity.v2_table`'s findings onto a RelationInfo/OutputInfo."""
    if found.get("table"):
        info.table = found["table"]
    if found.get("location"):
        if isinstance(info, RelationInfo):
            info.locations = [found["location"]]
        else:
            info.location = found["location"]
    if found.get("format"):
        info.format = found["format"]
    if found.get("url"):
        info.options = {**(info.options or {}), "url": found["url"]}
    if found.get("table_namespace"):
        info.options = {**(info.options or {}), "table_namespace": found["table_namespace"]}


def _fill_streaming_v2(info: RelationInfo, node: Any) -> None:
    """A streaming V2 source as a micro-batch reads it: its source name, and the options that name Kafka topics."""
    relation = node.relation() if node.getClass().getSimpleName() == "StreamingDataSourceV2ScanRelation" else node
    try:
        name = str(relation.table().name())
        info.format = "kafka" if "kafka" in name.lower() else name
    except Exception:  # noqa: BLE001 - an unnamed source
        info.format = "v2-stream"
    try:
        found = relation.options().asCaseSensitiveMap()
        options = {str(k): str(found.get(k)) for k in found.keySet()}
    except Exception:  # noqa: BLE001 - a relation without options
        options = {}
    info.options = {k: v for k, v in options.items() if k.lower() in KAFKA_OPTIONS}


def _v2_write(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    out.mode = {"AppendData": "Append", "ReplaceData": "Overwrite", "WriteDelta": "Merge"}.get(out.command, "Overwrite")
    out.table = _v2_table_name(cmd.table())
    _fill_v2(out, identity.v2_relation(lst._spark, cmd.table()))
    lst._fill_columns(out, cmd.query())


def _v2_table_as_select(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    out.mode = "Overwrite" if "Replace" in out.command else "ErrorIfExists"
    # the target is a ResolvedIdentifier: its catalog and identifier, never its plan text
    _fill_v2(out, identity.resolved_identifier(lst._spark, cmd))
    lst._fill_columns(out, cmd.query())


def _directory_insert(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    out.mode = "Overwrite" if cmd.overwrite() else "Append"
    if cmd.storage().locationUri().isDefined():
        out.location = cmd.storage().locationUri().get().toString()
    out.format = cmd.provider().lower() if out.command == "InsertIntoDataSourceDirCommand" else "hive"
    lst._fill_columns(out, cmd.query())


def _merge(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    out.table = _v2_table_name(cmd.targetTable())
    try:
        target = cmd.targetTable()
        while target.getClass().getSimpleName() != "DataSourceV2Relation" and target.children().size() == 1:
            target = target.children().head()
        _fill_v2(out, identity.v2_relation(lst._spark, target))
    except Exception:
        log.debug("could not name the MERGE target's storage", exc_info=True)
    out.mode = "Merge"


def _unresolved_insert(lst: WriteCaptureListener, cmd: Any, out: OutputInfo) -> None:
    """``InsertIntoStatement`` stays unresolved only when the write failed in analysis."""
    target = cmd.table()
    try:
        out.table = ".".join(str(p) for p in _seq(target.multipartIdentifier()))
    except Exception:  # noqa: BLE001 - fall back to the plan's own text
        out.table = str(target.toString()).strip()


#: Write command class -> the reader of its output descriptor (like the engine's ``RULES``).
OUTPUT_READERS: dict[str, OutputReader] = {
    "InsertIntoHadoopFsRelationCommand": _hadoop_fs_insert,
    "CreateDataSourceTableAsSelectCommand": _data_source_table,
    "SaveAsV1TableCommand": _data_source_table,
    "InsertIntoHiveTable": _hive_table,
    "CreateHiveTableAsSelectCommand": _hive_table,
    "OptimizedCreateHiveTableAsSelectCommand": _hive_table,
    "SaveIntoDataSourceCommand": _save_into_data_source,
    "AppendData": _v2_write,
    "OverwriteByExpression": _v2_write,
    "OverwritePartitionsDynamic": _v2_write,
    "ReplaceData": _v2_write,
    "WriteDelta": _v2_write,
    "CreateTableAsSelect": _v2_table_as_select,
    "ReplaceTableAsSelect": _v2_table_as_select,
    "AtomicCreateTableAsSelect": _v2_table_as_select,
    "AtomicReplaceTableAsSelect": _v2_table_as_select,
    "InsertIntoDataSourceDirCommand": _directory_insert,
    "InsertIntoHiveDirCommand": _directory_insert,
    "MergeIntoTable": _merge,
    "InsertIntoStatement": _unresolved_insert,
}

def _table_name(ident: Any) -> str:
    parts = []
    try:
        if ident.catalog().isDefined():
            parts.append(ident.catalog().get())
    except Exception:  # noqa: BLE001, S110 - never fail the user's Spark job for the capture
        pass
    if ident.database().isDefined():
        parts.append(ident.database().get())
    parts.append(ident.table())
    if len(parts) == 2:
        parts.insert(0, "spark_catalog")
    elif len(parts) == 1:
        parts = ["spark_catalog", "default", *parts]
    return ".".join(parts)


def _v2_table_name(relation: Any) -> str | None:
    try:
        if relation.identifier().isDefined():
            ident = relation.identifier().get()
            ns = list(ident.namespace())
            cat = relation.catalog().get().name() if relation.catalog().isDefined() else None
            return ".".join([*(x for x in [cat] if x), *ns, ident.name()])
    except Exception:  # noqa: BLE001, S110 - never fail the user's Spark job for the capture
        pass
    try:
        return str(relation.table().name())
    except Exception:  # noqa: BLE001 - never fail the user's Spark job for the capture
        return None


def _format_name(raw: str) -> str:
    low = raw.lower()
    for name in ("parquet", "orc", "csv", "json", "text", "avro", "jdbc", "noop", "delta", "iceberg", "kafka"):
        if name in low:
            return name
    return raw
