"""The capture record: what the Spark driver keeps of one write; the lineage engine's input.

A :class:`CaptureRecord` crosses a process boundary (Spark driver -> Airflow worker), so it is a plain
dataclass serialised as JSON with a ``format_version``. One record per write command the application
ran: the Catalyst plans (format 2: one DAG of distinct plan and expression nodes, ``plans``; format 1
and the opt-in debugging form: ``toJSON()`` lists; exprIds intact either way), the identities of every leaf relation
(which the plan JSON leaves out: ``LogicalRelation.relation`` serialises as ``null``), and the output
descriptor (path, table, format, save mode, partitioning, column names), which the plan JSON also
nulls out.

No Airflow and no Spark imports here. The driver side (``capture/``) fills and writes records
(:mod:`airflow_provider_lineage.capture.sink`); everything else reads them from here.
"""
from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from airflow_provider_lineage.lineage.logs import get_logger
from airflow_provider_lineage.lineage.naming import catalog_identifier
from airflow_provider_lineage.lineage.plan import is_ref_list, is_run, ref_ids

#: 2: the plans are one DAG (``plans``, :func:`~.plan.load_dag`); 1: ``toJSON()`` lists only (still read).
FORMAT_VERSION = 2
READABLE_VERSIONS = frozenset({1, 2})

log = get_logger(__name__)

#: Simple class names of the logical commands that write data (resolved, as the listener sees them,
#: plus the unresolved statements a failed analysis leaves in ``QueryExecution.logical``).
WRITE_COMMANDS = frozenset(
    {
        "InsertIntoHadoopFsRelationCommand",
        "CreateDataSourceTableAsSelectCommand",
        "SaveAsV1TableCommand",
        "InsertIntoHiveTable",
        "CreateHiveTableAsSelectCommand",
        "OptimizedCreateHiveTableAsSelectCommand",
        "InsertIntoDataSourceCommand",
        "InsertIntoDataSourceDirCommand",
        "InsertIntoHiveDirCommand",
        "SaveIntoDataSourceCommand",
        "AppendData",
        "OverwriteByExpression",
        "OverwritePartitionsDynamic",
        "CreateTableAsSelect",
        "ReplaceTableAsSelect",
        "AtomicCreateTableAsSelect",
        "AtomicReplaceTableAsSelect",
        "MergeIntoTable",
        "InsertIntoStatement",
        "ReplaceData",
        "WriteDelta",
        # Structured Streaming: a micro-batch's logical root (capture/streaming.py puts it over the batch's
        # optimized query; one record per streaming query, not per micro-batch)
        "WriteToMicroBatchDataSourceV1",
        "WriteToMicroBatchDataSource",
        "WriteToContinuousDataSource",
    }
)

#: Write commands whose event wraps an inner write of the same output (saveAsTable, CTAS, RTAS).
WRAPPER_COMMANDS = frozenset(
    {
        "SaveAsV1TableCommand",
        "CreateDataSourceTableAsSelectCommand",
        "CreateHiveTableAsSelectCommand",
        "OptimizedCreateHiveTableAsSelectCommand",
        "CreateTableAsSelect",
        "ReplaceTableAsSelect",
        "InsertIntoDataSourceDirCommand",
        "InsertIntoHiveDirCommand",
    }
)


@dataclass
class RelationInfo:
    """A leaf of the plan that reads data: a file relation, a catalog table, local data, a cache.

    :param node_class: simple class name (``LogicalRelation``, ``HiveTableRelation``, ``LogicalRDD``,
        ``LocalRelation``, ``DataSourceV2Relation``, ``InMemoryRelation``, ``Range`` ...).
    :param expr_ids: exprIds of the relation's output attributes, in order; the engine matches plan
        leaves to relations by these.
    :param columns: ``[{"name", "type"}]`` in the same order.
    :param locations: storage root URIs (``file:/abs/path``, ``hdfs://nn:8020/p``, ``s3a://b/k``).
    :param table: catalog identifier (``spark_catalog.default.t``) when the relation is a table.
    :param format: data source format (``parquet``, ``csv``, ``jdbc`` ...) when known.
    :param options: selected source options needed for identity (e.g. JDBC ``url``/``dbtable``).
    :param origin: where the data of an RDD leaf or a Python data source came from, when the driver could tell:
        ``"local"`` (an RDD of driver-local data: ``parallelize``, ``createDataFrame`` of a Python list or pandas
        frame), ``"files"`` (an RDD computed from file scans: ``df.rdd.map(...).toDF``, ``read.json(df.toJSON())``),
        ``"checkpoint"``, ``"python_datasource"``; ``None`` otherwise.
    :param read_columns: the columns the file scans under an RDD leaf read (``FileScanRDD.readSchema``): the
        columns an RDD round trip's values can come from.
    """

    node_class: str
    expr_ids: list[int]
    columns: list[dict[str, str]]
    locations: list[str] = field(default_factory=list)
    table: str | None = None
    format: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    origin: str | None = None
    read_columns: list[str] = field(default_factory=list)


@dataclass
class OutputInfo:
    """Where a write went.

    :param command: simple class name of the write command.
    :param location: storage URI written to (``file:/abs/path``), if known.
    :param table: catalog identifier, for ``saveAsTable``/``insertInto``/SQL writes to tables.
    :param format: ``parquet``, ``orc``, ``jdbc``, ``noop`` ...
    :param mode: Spark save mode (``Overwrite``, ``Append``, ``ErrorIfExists``, ``Ignore``).
    :param partition_columns: partition column names.
    :param columns: output column names in write order (``insertInto`` maps them by position).
    :param column_types: output column types, parallel to ``columns`` when known.
    :param options: identity-relevant options (e.g. JDBC ``url``/``dbtable``).
    """

    command: str
    location: str | None = None
    table: str | None = None
    format: str | None = None
    mode: str | None = None
    partition_columns: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    column_types: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)


@dataclass
class CaptureRecord:
    """One write performed by the Spark application.

    :param status: ``"success"`` or ``"failure"`` (the write raised).
    :param error: the failure's message, or a capture problem (then ``status`` says what the
        write did and ``capture_error`` holds why the record is incomplete).
    :param plans: the optimized and analyzed plans as one DAG (``{"format": "dag-2", "nodes": [...],
        "roots": [optimized, analyzed]}``, a root ``-1`` when that plan is unavailable): each distinct JVM
        node once, nested trees as ``{"$t": id}``, a list of them as ``{"$ts": [...]}`` with runs of
        consecutive ids as ``[first, last]`` (:func:`~.plan.load_dag`). Its size grows with the
        distinct nodes, never with the paths through shared sub-expressions.
    :param optimized_plan: ``QueryExecution.optimizedPlan().toJSON()`` parsed (format 1 records; with
        ``spark.airflow_lineage.planJson=true`` also kept beside ``plans`` for debugging, never read
        when ``plans`` is there).
    :param analyzed_plan: ``QueryExecution.analyzed().toJSON()`` parsed (likewise); the engine uses the
        analyzed plan where the optimizer hides information (cached DataFrames).
    :param incomplete: why the capture gave up on this write's plan (the per-write or total time budget,
        the memory guard, an analysis that failed); the record then has its output and relations but no
        plans, ``capture_error`` says the same, and the engine publishes the output with no column
        lineage, marked approximate (never a partial graph presented as complete).
    :param wrappers: wrapper commands merged into this record by :func:`collapse_nested` (inner to
        outer, e.g. ``CreateDataSourceTableAsSelectCommand``, ``SaveAsV1TableCommand``).
    :param created: the write created its table (CTAS or ``saveAsTable`` of a table that did not exist).
    :param udfs: the driver's analysis of each Python UDF in the optimized plan,
        ``[{"result_id": PythonUDF.resultId, "analysis": UdfAnalysis.to_dict()}]`` (:mod:`.udf`); empty
        when UDF body analysis is off or the plan has none.
    :param rdd_functions: RDD round trips through one analysed function over Rows (``df.rdd.map(f).toDF(...)``,
        :mod:`airflow_provider_lineage.capture.rdds`): ``[{"expr_ids": [the LogicalRDD's output exprIds],
        "function", "kind", "fields": [source columns], "columns": {output column: {field: ArgFlow}},
        "widened": [why]}]``.
    :param environment: what naming needs of the application's settings: ``default_fs``
        (``fs.defaultFS``, for host-less ``hdfs:/p``), ``catalog_implementation`` (``hive``/``in-memory``),
        ``metastore_uris`` (``hive.metastore.uris``), ``glue_region``/``glue_account`` (Glue as the Hive
        metastore client); empty in records of older drivers.
    :param driver: what went through the Spark driver before this write (docs/engine.md, "What the capture cannot
        see"): ``returns`` (``[{"seq", "func", "sources": [[namespace, name, table, field], ...]}]``: each earlier
        action that returned rows to the driver or set a session variable, with the input columns its values came
        from), ``unseen`` (why some returns could not be analysed, then their columns are unknown inputs),
        ``literals`` (``[[value, dataType], ...]``: the literals of this write's plan that are not constants of the
        application's code, or equal a value the driver received, so may hold driver values; ``"*"``: every
        literal), ``checkpoints`` (exprId of a checkpointed column -> ``[[namespace, name, table, field, type,
        subtype, masking], ...]``, the lineage of the checkpointed plan as the capture saw it). Empty when nothing
        went through the driver.
    :param streaming: a Structured Streaming query's write (one record per query run, not per micro-batch):
        ``{query_id, run_id, name, sink, state, batches}``, ``state`` ``"terminated"``, ``"failed"`` or
        ``"running"`` (the application ended with the query still running); empty for a batch write.
    """

    command: str
    status: str
    func_name: str = ""
    output: OutputInfo | None = None
    relations: list[RelationInfo] = field(default_factory=list)
    optimized_plan: list[dict[str, Any]] | None = None
    analyzed_plan: list[dict[str, Any]] | None = None
    plans: dict[str, Any] | None = None
    incomplete: str | None = None
    spark_version: str = ""
    app_id: str = ""
    app_name: str = ""
    event_time: str = ""
    duration_ms: float | None = None
    error: str | None = None
    capture_error: str | None = None
    record_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    sequence: int = 0
    format_version: int = FORMAT_VERSION
    wrappers: list[str] = field(default_factory=list)
    created: bool = False
    udfs: list[dict[str, Any]] = field(default_factory=list)
    rdd_functions: list[dict[str, Any]] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    streaming: dict[str, Any] = field(default_factory=dict)
    driver: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The record as plain JSON-ready data. The plans (a DAG of hundreds of thousands of values on a wide,
        deep job) are put in as they are: ``asdict`` would deep-copy them first, which cost more than the
        plan walk itself (6.9 s of the capture worker's 12.1 s on the 500-column, 80-step stress job)."""
        light = replace(self, plans=None, optimized_plan=None, analyzed_plan=None)
        out = asdict(light)
        out.update(plans=self.plans, optimized_plan=self.optimized_plan, analyzed_plan=self.analyzed_plan)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), default=str)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CaptureRecord:
        version = data.get("format_version")
        if version not in READABLE_VERSIONS:
            raise ValueError(
                f"capture record format_version {version!r} is not supported (expected one of "
                f"{sorted(READABLE_VERSIONS)}): "
                "the Spark driver and the Airflow worker run different airflow-provider-lineage versions; "
                "install the same version on both"
            )
        data = dict(data)
        out = data.pop("output", None)
        rels = data.pop("relations", None) or []
        known = {f for f in cls.__dataclass_fields__}
        rec = cls(**{k: v for k, v in data.items() if k in known})
        rec.output = OutputInfo(**out) if out else None
        known_rel = set(RelationInfo.__dataclass_fields__)
        rec.relations = [RelationInfo(**{k: v for k, v in r.items() if k in known_rel}) for r in rels]
        return rec

    @classmethod
    def from_json(cls, text: str) -> CaptureRecord:
        return cls.from_dict(json.loads(text))


def read_records(directory: str | os.PathLike[str], errors: list[str] | None = None) -> list[CaptureRecord]:
    """Read every record of a run folder in write order.

    An unreadable file (truncated, not JSON, another format version) never costs the other records: it is
    skipped, logged, and described in ``errors`` (``"<path>: <reason>"``) when a list is given.
    """
    out: list[CaptureRecord] = []
    folder = Path(directory)
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.json")):
        try:
            out.append(CaptureRecord.from_json(path.read_text(encoding="utf-8")))
        except Exception as exc:  # noqa: BLE001 - any bad file is reported, never fatal
            reason = f"{path}: {type(exc).__name__}: {str(exc)[:300]}"
            log.warning("skipped unreadable capture record %s", reason)
            if errors is not None:
                errors.append(reason)
    return out


#: Wrappers that create their table (CTAS, ``saveAsTable`` of a new table).
CREATE_WRAPPERS = frozenset(
    {
        "CreateDataSourceTableAsSelectCommand",
        "CreateHiveTableAsSelectCommand",
        "OptimizedCreateHiveTableAsSelectCommand",
        "CreateTableAsSelect",
        "AtomicCreateTableAsSelect",
    }
)


def collapse_nested(records: Iterable[CaptureRecord]) -> list[CaptureRecord]:
    """Merge the events Spark posts for one logical write into one record (the inputs are not modified).

    ``saveAsTable`` and CTAS post the inner file write first, then a ``CreateDataSourceTableAsSelect``
    and (for ``saveAsTable``) a ``SaveAsV1TableCommand`` wrapper. The inner record has the real
    write plan; the wrapper knows the table and the user's save mode. Keep the inner record, give it
    the wrapper's table identity and save mode, list the wrapper in ``wrappers``, drop the wrapper.
    A wrapper without an inner write of its own output is kept. The batch writes of a ``foreachBatch`` query
    are folded into one record per query run and output first (:func:`fold_foreach_batch`). Idempotent.
    """
    kept: list[CaptureRecord] = []
    for rec in fold_foreach_batch(records):
        append_collapsed(kept, rec)
    return kept


def append_collapsed(kept: list[CaptureRecord], rec: CaptureRecord) -> None:
    """Append ``rec`` to ``kept`` (one record per logical write), merging a wrapper into the write it wraps."""
    if not (rec.command in WRAPPER_COMMANDS and kept and _same_output(kept[-1], rec)):
        kept.append(rec)
        return
    inner = kept[-1]
    prev = replace(
        inner, output=replace(inner.output) if inner.output else None, wrappers=[*inner.wrappers, rec.command]
    )
    if prev.output and rec.output:
        if rec.command in CREATE_WRAPPERS and not prev.output.table:
            # the inner write went to a path with no catalog table yet: this write created the table
            prev.created = True
        prev.output.table = prev.output.table or rec.output.table
        prev.output.format = prev.output.format or rec.output.format
        prev.output.location = prev.output.location or rec.output.location
        prev.output.mode = rec.output.mode or prev.output.mode  # the wrapper's is the user's save mode
    if rec.status == "failure" and prev.status != "failure":
        prev.status, prev.error = rec.status, rec.error
    kept[-1] = prev


def _same_output(a: CaptureRecord, b: CaptureRecord) -> bool:
    if not a.output or not b.output:
        return False
    if a.output.table and b.output.table:
        return catalog_identifier(a.output.table) == catalog_identifier(b.output.table)
    if a.output.location and b.output.location:
        return _norm_location(a.output.location) == _norm_location(b.output.location)
    return False


def _norm_location(uri: str) -> str:
    """``file:/p``, ``file:///p`` and ``/p`` are the same local path."""
    for prefix in ("file://", "file:"):
        if uri.startswith(prefix):
            uri = uri[len(prefix):]
            break
    return "/" + uri.strip("/") if uri.startswith("/") else uri.rstrip("/")


# -- foreachBatch: the writes of one streaming query, folded into one record per output ----------------
#: ``CaptureRecord.streaming["sink"]`` of a ``foreachBatch`` query's record (its micro-batch plan, no dataset).
FOREACH_BATCH_SINK = "ForeachBatchSink"


def fold_foreach_batch(records: Iterable[CaptureRecord]) -> list[CaptureRecord]:
    """One record per ``foreachBatch`` query run and output, with the streaming source as its input.

    The function of ``foreachBatch`` writes each micro-batch as a batch write over a ``LogicalRDD`` (the
    batch's rows); the streaming capture hands over one more record per query run (``streaming.sink ==
    "ForeachBatchSink"``): the first micro-batch's plan, whose output attributes are the ``LogicalRDD``'s
    (their exprIds are the same in every batch of a run, and unique in the driver). Each batch write over such
    a ``LogicalRDD`` gets the query's plan in place of the ``LogicalRDD`` (its column lineage then reaches the
    streaming source's columns), the writes of one run to one output are kept once (the first, with the
    query's ``streaming`` state), and the query's own record is dropped (it writes no dataset). Records of other
    writes are returned unchanged, in order; the inputs are not modified. Idempotent.
    """
    items = list(records)
    try:
        return _fold(items)
    except Exception:  # an unexpected record shape: the writes as captured (per micro-batch)
        log.warning("could not fold the foreachBatch writes into their streaming queries", exc_info=True)
        return items


def _fold(items: list[CaptureRecord]) -> list[CaptureRecord]:
    queries = {key: rec for rec in items if (key := _foreach_batch_key(rec)) is not None}
    if not queries:
        return items
    out: list[CaptureRecord] = []
    kept: dict[tuple[Any, ...], int] = {}
    for rec in items:
        if _foreach_batch_key(rec) is not None:
            continue
        query = _query_of(rec, queries)
        if query is None:
            out.append(rec)
            continue
        key = (query.streaming.get("run_id"), rec.command, _output_key(rec))
        if key in kept:
            _count_batch_write(out[kept[key]], rec)
            continue
        kept[key] = len(out)
        out.append(_spliced(rec, query))
    return out


def _foreach_batch_key(rec: CaptureRecord) -> tuple[str, tuple[int, ...]] | None:
    if rec.streaming.get("sink") != FOREACH_BATCH_SINK or not rec.streaming.get("output_ids"):
        return None
    return rec.app_id, tuple(int(i) for i in rec.streaming["output_ids"])


def _query_of(rec: CaptureRecord, queries: dict[tuple[str, tuple[int, ...]], CaptureRecord]) -> CaptureRecord | None:
    """The ``foreachBatch`` query whose micro-batch a ``LogicalRDD`` of ``rec`` is."""
    for rel in rec.relations:
        if rel.node_class == "LogicalRDD":
            query = queries.get((rec.app_id, tuple(rel.expr_ids)))
            if query is not None:
                return query
    return None


def _output_key(rec: CaptureRecord) -> tuple[str | None, str | None]:
    if rec.output is None:
        return None, None
    table = catalog_identifier(rec.output.table) if rec.output.table else None
    return table, _norm_location(rec.output.location) if rec.output.location else None


def _count_batch_write(first: CaptureRecord, rec: CaptureRecord) -> None:
    first.streaming["batch_writes"] = int(first.streaming.get("batch_writes", 1)) + 1
    if rec.status == "failure" and first.status != "failure":
        first.status, first.error = rec.status, rec.error


def _spliced(rec: CaptureRecord, query: CaptureRecord) -> CaptureRecord:
    """``rec`` with the query's plan in place of the micro-batch's ``LogicalRDD`` and the query's relations."""
    ids = [int(i) for i in query.streaming["output_ids"]]
    streaming = {k: v for k, v in query.streaming.items() if k != "output_ids"}
    streaming["batch_writes"] = 1
    merged = replace(rec, streaming=streaming, udfs=[*rec.udfs, *query.udfs])
    plans = _spliced_plans(rec.plans, query.plans, ids)
    if plans is None:  # no plan to splice (an incomplete capture): the write is kept, its input stays the batch
        return merged
    merged.plans = plans
    merged.relations = [r for r in rec.relations if not (r.node_class == "LogicalRDD" and r.expr_ids == ids)]
    merged.relations += [r for r in query.relations if r not in merged.relations]
    return merged


def _spliced_plans(dag: dict[str, Any] | None, query_dag: dict[str, Any] | None,
                   ids: list[int]) -> dict[str, Any] | None:
    """The write's plan DAG with each ``LogicalRDD`` node of output ``ids`` replaced by the query's analyzed query
    (the child of its streaming write root: its output attributes are the ``LogicalRDD``'s, where the optimizer
    may have re-pointed some to the source's); ``None`` when either DAG is missing or has no such node."""
    if not dag or not query_dag or dag.get("format") != query_dag.get("format"):
        return None
    nodes = list(dag.get("nodes") or [])
    query_nodes = list(query_dag.get("nodes") or [])
    roots = [r for r in reversed(query_dag.get("roots") or []) if isinstance(r, int) and 0 <= r < len(query_nodes)]
    if not roots:
        return None
    children = query_nodes[roots[0]].get("$c") or []
    if len(children) != 1:
        return None
    offset = len(nodes)
    nodes += [_shifted(n, offset) for n in query_nodes]
    replacement = nodes[offset + children[0]]
    hits = [i for i in range(offset) if _is_batch_rdd(nodes, i, ids)]
    if not hits:
        return None
    for i in hits:
        nodes[i] = replacement
    return {**dag, "nodes": nodes}


def _is_batch_rdd(nodes: list[dict[str, Any]], index: int, ids: list[int]) -> bool:
    node = nodes[index]
    if not str(node.get("class", "")).endswith(".LogicalRDD"):
        return False
    found: list[int] = []
    output = node.get("output") or []
    listed = ref_ids(output, len(nodes))
    if listed is not None:
        output = [{"$t": i} for i in listed]
    for attr in output:
        if isinstance(attr, dict) and isinstance(attr.get("$t"), int) and 0 <= attr["$t"] < len(nodes):
            attr = nodes[attr["$t"]]
        elif isinstance(attr, list) and attr and isinstance(attr[0], dict):
            attr = attr[0]
        expr_id = attr.get("exprId") if isinstance(attr, dict) else None
        if not isinstance(expr_id, dict) or "id" not in expr_id:
            return False
        found.append(int(expr_id["id"]))
    return found == ids


def _shifted(value: Any, offset: int) -> Any:
    """A DAG node (or field value) with every node id (``$c`` lists, ``{"$t": id}``, ``{"$ts": [...]}``) moved
    by ``offset``."""
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get("$t"), int):
            return {"$t": value["$t"] + offset}
        if is_ref_list(value):  # an item that is not an id or a run stays as it is: load_dag names it
            return {"$ts": [i + offset if isinstance(i, int) else [i[0] + offset, i[1] + offset] if is_run(i) else i
                            for i in value["$ts"]]}
        return {k: ([c + offset for c in v] if k == "$c" and isinstance(v, list) else _shifted(v, offset))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_shifted(v, offset) for v in value]
    return value
