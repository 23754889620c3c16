"""Which datasets a captured relation reads and a write writes: naming applied to capture records.

The capture record says what Spark knew (paths, a catalog table, JDBC options, the V2 table's
properties, the application's ``fs.defaultFS`` / metastore settings in ``CaptureRecord.environment``);
this module turns that into :class:`~.naming.DatasetRef` identities, the same for every API that reaches
one physical dataset (docs/lineage.md, "Dataset names").
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from airflow_provider_lineage.lineage.naming import (
    DatasetRef,
    dataset_for_jdbc,
    dataset_for_location,
    datasets_for_kafka,
    glue_symlink_namespace,
    hive_symlink_namespace,
    is_kafka,
)
from airflow_provider_lineage.lineage.record import OutputInfo, RelationInfo

#: Leaf classes that read data with no dataset identity (driver-local data, generated rows).
LOCAL_LEAVES = frozenset({"LocalRelation", "Range", "OneRowRelation", "LocalTableScan"})
#: RDD leaves: named by the files/tables the driver traced the RDD to, else an unknown input.
RDD_LEAVES = frozenset({"LogicalRDD", "ExternalRDD"})


@dataclass
class RelationSources:
    """What one relation reads: datasets, and (for a parsed JDBC query) each column's origins.

    :param datasets: every dataset the relation reads.
    :param columns: Spark column -> ``[(dataset, origin column)]``, when known per column (a JDBC
        ``query`` the SQL parser mapped); ``None``: every column comes from every dataset, same name.
    :param note: a remark for the lineage notes (why columns are not mapped, an unknown RDD input).
    """

    datasets: list[DatasetRef] = field(default_factory=list)
    columns: dict[str, list[tuple[DatasetRef, str]]] | None = None
    note: str | None = None


def table_namespace(table: str | None, env: Mapping[str, str] | None, fmt: str | None = None) -> str | None:
    """The symlink namespace the catalog defines for a V1 session-catalog table: a Hive metastore
    (``hive://host:port``) or Glue (``aws:glue:region:account``), as openlineage-spark's
    ``PathUtils.fromCatalogTable``; ``None`` elsewhere (the location's parent folder is used)."""
    if not table or not env or not table.lower().startswith("spark_catalog."):
        return None
    if env.get("catalog_implementation") != "hive":
        return None
    ns = hive_symlink_namespace(env.get("metastore_uris", ""))
    if ns:
        return ns
    if env.get("glue_region") is not None and (fmt or "").lower() == "hive":
        return glue_symlink_namespace(env.get("glue_region", ""), env.get("glue_account", ""))
    return None


def _jdbc_catalog_table(table: str | None) -> str | None:
    """``dcat.app.t5`` -> ``app.t5`` (a JDBCTableCatalog identifier without the catalog)."""
    if not table:
        return None
    parts = table.split(".")
    return ".".join(parts[1:]) if len(parts) > 1 else table


def relation_sources(rel: RelationInfo, env: Mapping[str, str] | None = None) -> RelationSources:
    """The datasets (and column origins) of one captured relation; empty for local data."""
    if rel.node_class in LOCAL_LEAVES or rel.node_class == "InMemoryRelation":
        return RelationSources()
    env = env or {}
    opts = {k.lower(): v for k, v in (rel.options or {}).items()}
    if rel.node_class in RDD_LEAVES and not rel.locations and "url" not in opts:
        if opts.get("checkpoint") == "true":
            return RelationSources()
        return RelationSources(note=f"{rel.node_class}: an RDD the driver could not trace to files or tables "
                                    "(unknown input)")
    if (rel.format or "").lower() == "jdbc" or "url" in opts:
        url = opts.get("url", "jdbc:unknown:")
        dbtable = opts.get("dbtable")
        if dbtable and dbtable.strip().startswith("("):
            # ``dbtable`` = "(SELECT ...) alias": a query, as the ``query`` option
            inner = dbtable.strip()
            return _query_sources(url, inner[1:inner.rfind(")")], rel)
        if not dbtable and opts.get("query"):
            return _query_sources(url, opts["query"], rel)
        if not dbtable and rel.format == "jdbc-catalog":
            dbtable = _jdbc_catalog_table(rel.table)
        return RelationSources([dataset_for_jdbc(url, dbtable)])
    if is_kafka(rel.format, opts):  # a Kafka source: one dataset per topic (kafka://broker:port, topic)
        found = datasets_for_kafka(opts)
        return RelationSources(found, note=None if found else
                               "Kafka source without bootstrap servers or with subscribePattern: topics unknown")
    if rel.locations:
        # several files or partition folders of one table are one dataset
        tns = opts.get("table_namespace") or table_namespace(rel.table, env, rel.format)
        return RelationSources(list(dict.fromkeys(
            dataset_for_location(loc, table=rel.table, default_fs=env.get("default_fs"), table_namespace=tns)
            for loc in rel.locations
        )))
    if rel.table:
        return RelationSources([dataset_for_table(rel.table)])
    return RelationSources()


def datasets_for_relation(rel: RelationInfo, env: Mapping[str, str] | None = None) -> list[DatasetRef]:
    """The datasets one captured relation reads (empty for local data)."""
    return relation_sources(rel, env).datasets


def dataset_for_table(table: str) -> DatasetRef:
    """A catalog table without a storage location: namespace = catalog, name = the rest."""
    parts = table.split(".")
    if len(parts) >= 3:
        return DatasetRef(parts[0], ".".join(parts[1:]), table)
    return DatasetRef("spark_catalog", table, table)


def dataset_for_output(out: OutputInfo | None, env: Mapping[str, str] | None = None) -> DatasetRef | None:
    """The written dataset (``None`` when nothing is persisted: ``noop``, or identity unknown)."""
    if out is None or (out.format or "").lower() == "noop" or out.table == "noop-table":
        return None
    env = env or {}
    opts = {k.lower(): v for k, v in (out.options or {}).items()}
    if (out.format or "").lower() in ("jdbc", "jdbc-catalog") or ("url" in opts and ("dbtable" in opts or out.table)):
        dbtable = opts.get("dbtable") or (_jdbc_catalog_table(out.table) if out.format == "jdbc-catalog" else None)
        return dataset_for_jdbc(opts.get("url", "jdbc:unknown:"), dbtable)
    if is_kafka(out.format, opts):  # a Kafka sink: its ``topic`` option (a per-row topic column: not named)
        found = datasets_for_kafka(opts)
        return found[0] if len(found) == 1 else None
    if out.location:
        tns = opts.get("table_namespace") or table_namespace(out.table, env, out.format)
        return dataset_for_location(
            out.location, table=out.table, default_fs=env.get("default_fs"), table_namespace=tns
        )
    if out.table:
        return dataset_for_table(out.table)
    return None


# -- JDBC queries ------------------------------------------------------------------------------
def _query_sources(url: str, sql: str, rel: RelationInfo) -> RelationSources:
    """A JDBC ``query``: the tables the SQL reads (openlineage-sql, as openlineage-spark's
    ``JdbcSparkUtils``; sqlglot when it is not installed), columns mapped where the parser can."""
    from airflow_provider_lineage.lineage.sql_tables import parse_query

    dialect = url.split(":")[1] if url.lower().startswith("jdbc:") and url.count(":") >= 2 else None
    parsed = parse_query(sql, dialect)
    if not parsed.tables:
        return RelationSources(note=f"JDBC query not parsed ({parsed.reason}); its input is unknown")
    refs = {t: dataset_for_jdbc(url, t) for t in parsed.tables}
    datasets = list(dict.fromkeys(refs.values()))
    names = [c.get("name", "") for c in rel.columns]
    if parsed.columns is not None and all(n in parsed.columns for n in names):
        return RelationSources(datasets, {n: [(refs[t], f) for t, f in parsed.columns[n] if t in refs] for n in names})
    if len(datasets) == 1:
        return RelationSources(datasets)  # one table: Spark's columns are its columns (openlineage-spark: schema)
    reason = parsed.reason or "the parser mapped no column to its table"
    return RelationSources(
        datasets, {n: [] for n in names},
        note=f"JDBC query read {len(datasets)} tables; columns not mapped ({reason}): dataset-level inputs only",
    )
