"""Iceberg and Delta tables named from the properties their catalogs expose (no Iceberg/Delta jars here:
no Maven in this environment, so the catalogs are stand-ins that answer the calls the driver makes).

What the stand-ins return is what the catalogs' sources define: Iceberg ``SparkTable.properties()`` holds
``location``, ``provider=iceberg`` and ``format=iceberg/parquet``; Delta ``DeltaTableV2.properties()``
holds ``location`` and ``provider=delta``; ``Identifier`` is namespace + name; a Delta path identifier's
name is the path. Expected identities: openlineage-spark ``IcebergHandler`` (location; symlink
``Identifier.toString()`` under the catalog type's namespace) and ``DeltaHandler`` (location or path
identifier; symlink the identifier under the location's folder).
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from airflow_provider_lineage.capture import identity
from airflow_provider_lineage.lineage.naming import symlink_namespace, table_name_without_catalog
from airflow_provider_lineage.lineage.record import OutputInfo, RelationInfo
from airflow_provider_lineage.lineage.sources import dataset_for_output, relation_sources


class _Named:
    def __init__(self, cls: str) -> None:
        self._cls = cls

    def getClass(self):
        return SimpleNamespace(getSimpleName=lambda: self._cls)


class Catalog(_Named):
    def __init__(self, cls: str, name: str, props: dict[str, str]) -> None:
        super().__init__(cls)
        self._name, self._props = name, props

    def name(self) -> str:
        return self._name

    def loadTable(self, ident):
        return SimpleNamespace(properties=lambda: self._props)


def ident(*parts: str):
    return SimpleNamespace(namespace=lambda: list(parts[:-1]), name=lambda: parts[-1])


class Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default=None):
        return self.values.get(key, default)


def spark(conf: dict[str, str] | None = None):
    return SimpleNamespace(conf=Conf(conf or {}))


ICEBERG_PROPS = {"location": "s3a://lake/wh/db/orders", "provider": "iceberg", "format": "iceberg/parquet"}

CASES = [
    # catalog, conf, identifier, expected (namespace, name), symlink (namespace, name), source
    (
        Catalog("SparkCatalog", "ice", ICEBERG_PROPS),
        {"spark.sql.catalog.ice.type": "hive", "spark.sql.catalog.ice.uri": "thrift://MS:9083"},
        ident("db", "orders"),
        ("s3://lake", "wh/db/orders"),
        ("hive://ms:9083", "db.orders"),
        "IcebergHandler + HiveCatalogTypeHandler",
    ),
    (
        Catalog("SparkCatalog", "ice", ICEBERG_PROPS),
        {"spark.sql.catalog.ice.type": "rest", "spark.sql.catalog.ice.uri": "http://rest:8181/"},
        ident("db", "orders"),
        ("s3://lake", "wh/db/orders"),
        ("http://rest:8181", "db.orders"),
        "IcebergHandler + RestCatalogTypeHandler (catalog uri)",
    ),
    (
        Catalog("SparkCatalog", "ice", ICEBERG_PROPS),
        {"spark.sql.catalog.ice.type": "hadoop", "spark.sql.catalog.ice.warehouse": "s3a://lake/wh"},
        ident("db", "orders"),
        ("s3://lake", "wh/db/orders"),
        ("s3://lake/wh", "db.orders"),
        "IcebergHandler + HadoopCatalogTypeHandler (warehouse)",
    ),
    (
        Catalog(
            "SparkSessionCatalog", "spark_catalog", {**ICEBERG_PROPS, "location": "hdfs://nn:8020/wh/db.db/orders"}
        ),
        {},
        ident("db", "orders"),
        ("hdfs://nn:8020", "/wh/db.db/orders"),
        ("hdfs://nn:8020/wh/db.db", "db.orders"),
        "IcebergHandler (SparkSessionCatalog), no catalog type: the location's folder",
    ),
    (
        Catalog("DeltaCatalog", "spark_catalog", {"location": "file:/lake/delta/events", "provider": "delta"}),
        {},
        ident("default", "events"),
        ("file", "/lake/delta/events"),
        ("file:/lake/delta", "default.events"),
        "DeltaHandler (properties location)",
    ),
    (
        Catalog("DeltaCatalog", "spark_catalog", {"provider": "delta"}),
        {},
        ident("delta", "/lake/delta/raw"),
        ("file", "/lake/delta/raw"),
        ("file:/lake/delta", "delta.`/lake/delta/raw`"),
        "DeltaHandler.isPathIdentifier (path identifier)",
    ),
]


@pytest.mark.parametrize(("catalog", "conf", "ident_", "key", "symlink", "source"), CASES)
def test_v2_catalog_tables_are_named_by_storage_with_the_table_as_symlink(catalog, conf, ident_, key, symlink, source):
    found = identity.v2_table(spark(conf), catalog, ident_)
    rel = RelationInfo("DataSourceV2Relation", [1], [{"name": "a"}])
    from airflow_provider_lineage.capture.output_readers import _fill_v2

    _fill_v2(rel, found)
    (ref,) = relation_sources(rel).datasets
    assert ref.key == key, source
    assert (symlink_namespace(ref), table_name_without_catalog(ref.table)) == symlink, source
    out = OutputInfo("AppendData")  # the same table written (AppendData, CTAS, MERGE use the same lookup)
    _fill_v2(out, found)
    assert dataset_for_output(out).key == key, source


def test_jdbc_catalog_is_named_by_its_url_and_identifier():
    """JdbcHandler: the catalog's JDBC URL + the identifier; no symlink."""
    cat = Catalog("JDBCTableCatalog", "dcat", {})
    found = identity.v2_table(
        spark({"spark.sql.catalog.dcat.url": "jdbc:postgresql://PG/shop"}), cat, ident("app", "t5")
    )
    out = OutputInfo("CreateTableAsSelect")
    from airflow_provider_lineage.capture.output_readers import _fill_v2

    _fill_v2(out, found)
    ref = dataset_for_output(out)
    assert ref.key == ("postgres://pg:5432", "shop.app.t5") and ref.table is None
