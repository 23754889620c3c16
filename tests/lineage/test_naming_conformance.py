"""Conformance table: inputs -> (namespace, name[, symlink]) as openlineage-spark, the OpenLineage Java
client and Airflow's providers name them. Pure Python (no Spark): every row names its source.

Sources, abbreviated in the rows:
* ``spec``: OpenLineage naming spec (shared/openlineage-spec/naming.md), section "Dataset Naming".
* ``DIU``: openlineage client/java ``io.openlineage.client.utils.DatasetIdentifierUtils.fromURI`` (used by
  openlineage-spark's ``PathUtils.fromURI``: no authority -> namespace = scheme).
* ``PathUtils.fromCatalogTable``: openlineage-spark integration/spark/shared ``PathUtils`` (symlinks).
* ``PlanUtils.getDirectoryPath``: openlineage-spark (a file read names its folder).
* ``JDU``: client/java ``utils/jdbc/JdbcDatasetUtils`` + ``JdbcLocation`` (namespace lower-cased scheme and
  authority; name = URL database + table parts); extractors ``PostgresJdbcExtractor`` (5432),
  ``MySqlJdbcExtractor`` (3306, qualified tables kept), ``OracleJdbcExtractor`` (1521, SID/service),
  ``SqlServerJdbcExtractor`` (``;databaseName=``, ``\\instance``), ``GenericJdbcExtractor``,
  ``OverridingJdbcExtractor`` (default port per host).
* ``JdbcHandler``: openlineage-spark spark3 ``catalog/JdbcHandler`` (V2 JDBC catalog: URL + identifier).
* ``JdbcSparkUtils``: openlineage-spark (``query`` option parsed by openlineage-sql).
* ``airflow-postgres``/``airflow-mysql``/``airflow-trino``: each Airflow provider's ``assets/<db>.py``
  ``sanitize_uri`` (postgres://h:5432/db/schema/table ...); ``airflow-common-io``: the file asset converter.
* ``this``: a deliberate difference of this provider, documented in docs/lineage.md "Dataset names".
"""
from __future__ import annotations

import pytest

from airflow_provider_lineage.lineage.naming import (
    DatasetRef,
    asset_uri,
    dataset_for_jdbc,
    dataset_for_location,
    identity_problem,
    symlink_namespace,
)
from airflow_provider_lineage.lineage.record import OutputInfo, RelationInfo
from airflow_provider_lineage.lineage.sources import dataset_for_output, relation_sources

LOCATIONS = [
    # uri, default_fs, namespace, name, source
    ("file:/tmp/out", None, "file", "/tmp/out", "spec Local file system; DIU"),
    ("file:///tmp/out/", None, "file", "/tmp/out", "spec Local file system; DIU removeLastSlash"),
    ("/tmp/out", None, "file", "/tmp/out", "DIU isAbsoluteAndSchemeAuthorityNull -> file"),
    ("/tmp/x/../out", None, "file", "/tmp/out", "DIU (Path normalises ..)"),
    ("file://host1/data", None, "file://host1", "/data", "spec Remote file system file://{host}"),
    ("file://HOST1/data", None, "file://host1", "/data", "spec Remote file system (host names are case-insensitive)"),
    ("file://localhost/data", None, "file", "/data", "this: localhost is the local file system"),
    ("hdfs://nn:8020/warehouse/t", None, "hdfs://nn:8020", "/warehouse/t", "spec HDFS"),
    ("hdfs://nn/warehouse/t", None, "hdfs://nn", "/warehouse/t", "spec HDFS; DIU (authority as written)"),
    ("hdfs:/warehouse/t", "hdfs://nn:8020", "hdfs://nn:8020", "/warehouse/t", "spec HDFS; authority from fs.defaultFS"),
    ("hdfs:///warehouse/t", "hdfs://nn:8020", "hdfs://nn:8020", "/warehouse/t",
     "spec HDFS; authority from fs.defaultFS"),
    ("hdfs:/warehouse/t", None, "hdfs", "/warehouse/t", "DIU: no authority -> scheme"),
    ("hdfs:/warehouse/t", "file:///", "hdfs", "/warehouse/t", "DIU: a non-hdfs defaultFS gives no authority"),
    ("viewfs://cluster1/data/t", None, "viewfs://cluster1", "/data/t", "DIU scheme://authority"),
    ("dbfs:/mnt/lake/t", None, "dbfs", "/mnt/lake/t", "DIU: no authority -> scheme (openlineage-spark on Databricks)"),
    ("dbfs:/user/hive/warehouse/t/", None, "dbfs", "/user/hive/warehouse/t", "DIU removeLastSlash"),
    ("s3a://bucket/a/b/", None, "s3://bucket", "a/b", "spec S3 (s3a folded into s3)"),
    ("s3n://bucket/k", None, "s3://bucket", "k", "spec S3 (s3n folded into s3)"),
    ("s3://bucket/k", None, "s3://bucket", "k", "spec S3 {object key}"),
    ("s3://bucket/", None, "s3://bucket", "/", "airflow amazon s3 converter: empty key is /"),
    ("gs://bkt/p/q", None, "gs://bkt", "p/q", "spec GCS"),
    ("gcs://bkt/p/q", None, "gs://bkt", "p/q", "spec GCS (gcs alias)"),
    ("abfss://cont@acct.dfs.core.windows.net/dir/f", None, "abfss://cont@acct.dfs.core.windows.net", "dir/f",
     "spec ABFSS"),
    ("wasbs://cont@acct.blob.core.windows.net/dir", None, "wasbs://cont@acct.blob.core.windows.net", "dir",
     "spec WASBS"),
    ("oss://bucket/k/x", None, "oss://bucket", "k/x", "spec object-store form (Alibaba OSS)"),
    ("cos://bucket/k", None, "cos://bucket", "k", "spec object-store form"),
    # a list or glob of files of one folder is the folder
    ("/lake/src/*.parquet", None, "file", "/lake/src", "PlanUtils.getDirectoryPath (glob: the folder read)"),
    ("file:/lake/src/part-*.csv", None, "file", "/lake/src", "PlanUtils.getDirectoryPath (glob)"),
    ("s3a://b/src/day=*/x.parquet", None, "s3://b", "src", "PlanUtils.getDirectoryPath (glob in a folder)"),
    ("s3a://b/x/{a,b}/y", None, "s3://b", "x", "PlanUtils.getDirectoryPath (brace glob)"),
    ("/lake/src/part-00000-7c1f.snappy.parquet", None, "file", "/lake/src",
     "PlanUtils.getDirectoryPath (file -> folder)"),
    ("hdfs://nn:8020/lake/src/part-00003-aa.c000.csv", None, "hdfs://nn:8020", "/lake/src",
     "PlanUtils.getDirectoryPath"),
    ("/lake/out.parquet", None, "file", "/lake/out.parquet", "DIU (a folder named *.parquet stays itself)"),
    # Hive partition folders
    ("/lake/events/day=2024-01-01/hour=3", None, "file", "/lake/events", "this: partition folders fold into the table"),
    ("file:/lake/events/day=2024-01-01/", None, "file", "/lake/events", "this: partition folders fold into the table"),
    ("s3a://b/events/day=2024-01-01", None, "s3://b", "events", "this: partition folders fold into the table"),
    ("/lake/a=b/events", None, "file", "/lake/a=b/events", "this: only trailing partition folders fold"),
]


@pytest.mark.parametrize(("uri", "default_fs", "namespace", "name", "source"), LOCATIONS)
def test_locations(uri, default_fs, namespace, name, source):
    ref = dataset_for_location(uri, default_fs=default_fs)
    assert (ref.namespace, ref.name) == (namespace, name), source


def test_partition_folders_as_openlineage_spark_with_the_setting(monkeypatch):
    """Source: DIU (openlineage-spark names the folder it was given); setting documented in docs/lineage.md."""
    monkeypatch.setenv("AIRFLOW_LINEAGE_FOLD_PARTITION_FOLDERS", "false")
    assert dataset_for_location("/lake/events/day=2024-01-01").key == ("file", "/lake/events/day=2024-01-01")


JDBC = [
    # url, dbtable, namespace, name, source
    ("jdbc:postgresql://db:5432/shop", "public.orders", "postgres://db:5432", "shop.public.orders",
     "JDU PostgresJdbcExtractor"),
    ("jdbc:postgresql://db/shop", "public.orders", "postgres://db:5432", "shop.public.orders",
     "JDU PostgresJdbcExtractor default port 5432"),
    ("jdbc:postgresql://DB.Example.COM/shop", "public.orders", "postgres://db.example.com:5432", "shop.public.orders",
     "JdbcLocation.toNamespace lower-cases authority"),
    ("JDBC:postgresql://db:5432/shop", "t", "postgres://db:5432", "shop.t", "JdbcDatasetUtils strips (?i)jdbc:"),
    ("jdbc:postgresql://db:5432/shop?user=u&password=p", "s.t", "postgres://db:5432", "shop.s.t",
     "GenericJdbcExtractor: query string dropped"),
    ("jdbc:postgresql://u:p@db:5432/shop", "s.t", "postgres://db:5432", "shop.s.t",
     "GenericJdbcExtractor: URI host without credentials"),
    ("jdbc:postgresql://h1,h2:5433/shop", "s.t", "postgres://h1:5432,h2:5433", "shop.s.t",
     "OverridingJdbcExtractor default port per host"),
    ("jdbc:postgresql://db:5432/", "s.t", "postgres://db:5432", "s.t", "GenericJdbcExtractor: no database"),
    ("jdbc:mysql://h:3306/app", "t", "mysql://h:3306", "app.t", "JDU MySqlJdbcExtractor"),
    ("jdbc:mysql://h/app", "t", "mysql://h:3306", "app.t", "JDU MySqlJdbcExtractor default port 3306"),
    ("jdbc:mysql://h/app", "other.t", "mysql://h:3306", "other.t", "JDU MySqlJdbcExtractor: qualified table kept"),
    ("jdbc:mysql:loadbalance://h:3307/app", "t", "mysql://h:3307", "app.t",
     "JDU MySqlJdbcExtractor protocol mysql:part"),
    ("jdbc:mysql+srv://H/app", "t", "mysql://h:3306", "app.t", "JDU MySqlJdbcExtractor protocol mysql+srv"),
    ("jdbc:sqlserver://h:1433;databaseName=db;user=u", "dbo.t", "sqlserver://h:1433", "db.dbo.t",
     "JDU SqlServerJdbcExtractor databaseName"),
    ("jdbc:sqlserver://H;database=db", "dbo.t", "sqlserver://h", "db.dbo.t",
     "JDU SqlServerJdbcExtractor database property, no default port"),
    ("jdbc:sqlserver://h\\inst:1433;databaseName=db", "dbo.t", "sqlserver://h:1433/inst", "db.dbo.t",
     "JDU SqlServerJdbcExtractor instance"),
    ("jdbc:sqlserver://;serverName=h;portNumber=1500;databaseName=db", "t", "sqlserver://h:1500", "db.t",
     "JDU SqlServerJdbcExtractor properties in the URL"),
    ("jdbc:oracle:thin:@host:1521:ORCL", "hr.emp", "oracle://host:1521", "ORCL.hr.emp",
     "JDU OracleJdbcExtractor host:port:sid"),
    ("jdbc:oracle:thin:@//host:1521/svc", "hr.emp", "oracle://host:1521", "svc.hr.emp",
     "JDU OracleJdbcExtractor //host:port/service"),
    ("jdbc:oracle:thin:@//host/svc", "hr.emp", "oracle://host:1521", "svc.hr.emp",
     "JDU OracleJdbcExtractor default port 1521"),
    ("jdbc:oracle:thin:user/pw@HOST:1521:sid", "t", "oracle://host:1521", "sid.t",
     "JDU OracleJdbcExtractor drops credentials before @"),
    ("jdbc:oracle:thin:@tcp://host:1522/svc?x=1", "t", "oracle://host:1522", "svc.t",
     "JDU OracleJdbcExtractor tcp:// protocol, params dropped"),
    ("jdbc:db2://h:50000/sample", "s.t", "db2://h:50000", "sample.s.t", "JDU GenericJdbcExtractor (spec DB2)"),
    ("jdbc:teradata://h/db", "t", "teradata://h", "db.t", "JDU GenericJdbcExtractor"),
    ("jdbc:trino://h:8080/cat", "sch.t", "trino://h:8080", "cat.sch.t", "JDU GenericJdbcExtractor (spec Trino)"),
    ("jdbc:redshift://c.r.redshift.amazonaws.com:5439/dev", "public.t", "redshift://c.r.redshift.amazonaws.com:5439",
     "dev.public.t", "JDU GenericJdbcExtractor (spec Redshift)"),
    ("jdbc:derby:memory:db;create=true", "APP.t", "derby:memory:db", "APP.t",
     "this: Derby in-memory keeps its locator"),
    ("jdbc:derby:memory:db;create=true", "T", "derby:memory:db", "T", "JDU: the table as given (no database part)"),
    ("jdbc:derby:/var/db/x;create=true", "APP.t", "file:/var/db/x", "APP.t",
     "DerbyJdbcExtractor: file + database location"),
    ("jdbc:sqlite:/data/x.db", "t", "sqlite:/data/x.db", "t", "airflow-sqlite: sqlite:/{db_path} + table"),
    ("jdbc:derby:memory:db", '"app"."t5"', "derby:memory:db", "app.t5",
     "this: quotes dropped, as JdbcHandler's identifier app.t5"),
    ("jdbc:mysql://h/app", "`db`.`t`", "mysql://h:3306", "db.t",
     "this: quotes dropped; MySqlJdbcExtractor qualified table"),
]


@pytest.mark.parametrize(("url", "dbtable", "namespace", "name", "source"), JDBC)
def test_jdbc(url, dbtable, namespace, name, source):
    ref = dataset_for_jdbc(url, dbtable)
    assert (ref.namespace, ref.name) == (namespace, name), source


SYMLINKS = [
    # ref, expected symlink namespace, source
    (DatasetRef("file", "/wh/t", "spark_catalog.default.t"), "file:/wh", "PathUtils.fromCatalogTable (parent folder)"),
    (DatasetRef("file", "/wh/db.db/t", "spark_catalog.db.t"), "file:/wh/db.db",
     "PathUtils.fromCatalogTable (parent folder)"),
    (DatasetRef("s3://b", "wh/db.db/t", "spark_catalog.db.t"), "s3://b/wh/db.db",
     "PathUtils.fromCatalogTable (parent URI)"),
    (DatasetRef("hdfs://nn:8020", "/wh/t", "spark_catalog.default.t"), "hdfs://nn:8020/wh",
     "PathUtils.fromCatalogTable"),
    (DatasetRef("file", "/wh/t", "spark_catalog.default.t", "hive://ms:9083"), "hive://ms:9083",
     "PathUtils.prepareHiveDatasetIdentifier"),
    (DatasetRef("s3://b", "wh/t", "spark_catalog.db.t", "aws:glue:eu-west-1:123"), "aws:glue:eu-west-1:123",
     "PathUtils.fromCatalogTable Glue branch"),
]


@pytest.mark.parametrize(("ref", "namespace", "source"), SYMLINKS)
def test_symlink_namespaces(ref, namespace, source):
    assert symlink_namespace(ref) == namespace, source


HIVE_ENV = {"catalog_implementation": "hive", "metastore_uris": "thrift://MS:9083,thrift://ms2:9083"}
GLUE_ENV = {"catalog_implementation": "hive", "glue_region": "eu-west-1", "glue_account": "123"}

RELATIONS = [
    # relation, env, (namespace, name), symlink (namespace, name) or None, source
    (RelationInfo("LogicalRelation", [1], [{"name": "a"}], locations=["file:/lake/src/part-00000-1.parquet",
                                                                       "file:/lake/src/part-00001-2.parquet"]),
     {}, ("file", "/lake/src"), None, "PlanUtils.getDirectoryPath: a list of files of one folder is one dataset"),
    (RelationInfo("LogicalRelation", [1], [{"name": "a"}], locations=["file:/wh/t"], table="spark_catalog.default.t"),
     {}, ("file", "/wh/t"), "file:/wh", "PathUtils.fromCatalogTable (no metastore)"),
    (RelationInfo("HiveTableRelation", [1], [{"name": "a"}], locations=["hdfs://nn:8020/wh/db.db/t"],
                  table="spark_catalog.db.t", format="hive"),
     HIVE_ENV, ("hdfs://nn:8020", "/wh/db.db/t"), "hive://ms:9083",
     "PathUtils.fromCatalogTable (Hive metastore, first URI)"),
    (RelationInfo("HiveTableRelation", [1], [{"name": "a"}], locations=["s3://b/wh/t"], table="spark_catalog.db.t",
                  format="hive"),
     GLUE_ENV, ("s3://b", "wh/t"), "aws:glue:eu-west-1:123", "PathUtils.fromCatalogTable (Glue client factory)"),
    (RelationInfo("LogicalRelation", [1], [{"name": "a"}], locations=["hdfs:/wh/t"], table="spark_catalog.default.t"),
     {"default_fs": "hdfs://nn:8020"}, ("hdfs://nn:8020", "/wh/t"), "hdfs://nn:8020/wh", "spec HDFS + fs.defaultFS"),
    (RelationInfo("DataSourceV2Relation", [1], [{"name": "a"}], locations=["s3://b/ice/db/t"], table="ice.db.t",
                  format="iceberg"),
     HIVE_ENV, ("s3://b", "ice/db/t"), "s3://b/ice/db",
     "IcebergHandler: table location, catalog table as symlink (no Hive symlink for V2 catalogs)"),
    (RelationInfo("DataSourceV2Relation", [1], [{"name": "a"}], locations=["file:/delta/t"],
                  table="spark_catalog.default.t", format="delta"),
     {}, ("file", "/delta/t"), "file:/delta", "DeltaHandler: properties location, identifier symlink"),
    (RelationInfo("DataSourceV2Relation", [1], [{"name": "a"}], table="dcat.app.t5", format="jdbc-catalog",
                  options={"url": "jdbc:postgresql://H/shop"}),
     {}, ("postgres://h:5432", "shop.app.t5"), None, "JdbcHandler: URL + identifier (no symlink)"),
    (RelationInfo("LogicalRelation", [1], [{"name": "a"}], format="jdbc",
                  options={"url": "jdbc:postgresql://h/shop", "dbtable": "app.t5"}),
     {}, ("postgres://h:5432", "shop.app.t5"), None, "JDU: the same table through JDBC options"),
]


@pytest.mark.parametrize(("rel", "env", "key", "symlink", "source"), RELATIONS)
def test_relations(rel, env, key, symlink, source):
    refs = relation_sources(rel, env).datasets
    assert [r.key for r in refs] == [key], source
    assert (symlink_namespace(refs[0]) if refs[0].table else None) == symlink, source


def test_jdbc_query_reads_the_tables_of_the_sql():
    """Source: JdbcSparkUtils.extractQueryFromSpark (openlineage-sql) -> one dataset per table read."""
    rel = RelationInfo(
        "LogicalRelation",
        [1, 2],
        [{"name": "id"}, {"name": "y"}],
        format="jdbc",
        options={
            "url": "jdbc:postgresql://h/shop",
            "query": "SELECT o.id, i.x AS y FROM public.orders o JOIN public.items i ON o.id = i.id",
        },
    )
    src = relation_sources(rel)
    assert {r.key for r in src.datasets} == {
        ("postgres://h:5432", "shop.public.orders"),
        ("postgres://h:5432", "shop.public.items"),
    }
    assert src.columns is not None
    assert [(r.name, f) for r, f in src.columns["y"]] == [("shop.public.items", "x")]
    one = relation_sources(
        RelationInfo(
            "LogicalRelation",
            [1],
            [{"name": "a"}],
            format="jdbc",
            options={"url": "jdbc:postgresql://h/shop", "dbtable": "(select a from s.t) q"},
        )
    )
    assert [r.key for r in one.datasets] == [("postgres://h:5432", "shop.s.t")]
    bad = relation_sources(RelationInfo("LogicalRelation", [1], [{"name": "a"}], format="jdbc",
                                        options={"url": "jdbc:postgresql://h/shop", "query": "this is not sql ((("}))
    assert bad.datasets == [] and "not parsed" in (bad.note or "")


OUTPUTS = [
    (OutputInfo("CreateTableAsSelect", table="dcat.app.t5", format="jdbc-catalog",
                options={"url": "jdbc:postgresql://h/shop"}),
     ("postgres://h:5432", "shop.app.t5"), "JdbcHandler (V2 CTAS on a JDBC catalog)"),
    (OutputInfo("AppendData", table="dcat.app.t5", format="jdbc-catalog", options={"url": "jdbc:postgresql://h/shop"}),
     ("postgres://h:5432", "shop.app.t5"), "JdbcHandler (AppendData)"),
    (OutputInfo("SaveIntoDataSourceCommand", format="jdbc",
                options={"url": "jdbc:postgresql://h:5432/shop", "dbtable": "app.t5"}),
     ("postgres://h:5432", "shop.app.t5"), "JDU (df.write.jdbc)"),
    (OutputInfo("InsertIntoHadoopFsRelationCommand", location="file:/lake/out/day=1"),
     ("file", "/lake/out"), "this: partition folder folds into the table"),
    (OutputInfo("AppendData", table="ice.db.t", location="s3a://b/ice/db/t", format="iceberg"),
     ("s3://b", "ice/db/t"), "IcebergHandler: table location"),
    (OutputInfo("InsertIntoHadoopFsRelationCommand", location="noop", format="noop"), None,
     "this: noop persists nothing"),
]


@pytest.mark.parametrize(("out", "key", "source"), OUTPUTS)
def test_outputs(out, key, source):
    ref = dataset_for_output(out)
    assert (ref.key if ref else None) == key, source


ASSETS = [
    ("postgres://h:5432", "shop.public.t", "postgres://h:5432/shop/public/t", "airflow-postgres sanitize_uri"),
    ("postgres://h:5432", "shop.t", "postgres://h:5432/shop/default/t",
     "airflow-postgres sanitize_uri (empty schema -> default)"),
    ("mysql://h:3306", "app.t", "mysql://h:3306/app/t", "airflow-mysql sanitize_uri"),
    ("trino://h:8080", "cat.sch.t", "trino://h:8080/cat/sch/t", "airflow-trino sanitize_uri"),
    ("redshift://c:5439", "dev.public.t", "redshift://c:5439/dev/public/t", "airflow-amazon redshift sanitize_uri"),
    ("file", "/data/t", "file:///data/t", "airflow-common-io file converter"),
    ("s3://b", "k/t", "s3://b/k/t", "airflow-amazon s3 converter"),
    ("hdfs://nn:8020", "/data/t", "hdfs://nn:8020/data/t", "spec HDFS as URI"),
]


@pytest.mark.parametrize(("namespace", "name", "uri", "source"), ASSETS)
def test_asset_uris(namespace, name, uri, source):
    assert asset_uri(namespace, name) == uri, source


GUARD = [
    (
        "dcat",
        "ResolvedIdentifier org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog@2e385d57, app.t5\n",
        "this: newline",
    ),
    ("dcat", "ResolvedIdentifier(JDBCTableCatalog@2e385d57, app.t5)", "this: object hash"),
    ("org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog", "t", "this: Java class name"),
    ("spark_catalog", "Relation[a#1L] parquet", "this: plan text"),
    ("", "t", "this: empty namespace"),
]


@pytest.mark.parametrize(("namespace", "name", "source"), GUARD)
def test_guard_refuses_non_identities(namespace, name, source):
    assert identity_problem(namespace, name), source


def test_table_counts_at_least_80_rows():
    rows = len(LOCATIONS) + len(JDBC) + len(SYMLINKS) + len(RELATIONS) + len(OUTPUTS) + len(ASSETS) + len(GUARD)
    assert rows >= 80
    for row in LOCATIONS + JDBC + ASSETS + GUARD:
        assert row[-1]  # every row names its source


def test_event_builder_refuses_a_plan_text_name_and_keeps_the_write():
    """A V2 CTAS whose table name is the ResolvedIdentifier's plan text (the old capture): the write is
    analysed and summarised, the output is left out of the events, and a problem says why."""
    from airflow_provider_lineage.lineage import events
    from airflow_provider_lineage.lineage.record import CaptureRecord
    from tests.lineage.synthetic import node, relation

    bad = "ResolvedIdentifier org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog@2e385d57, app.t5\n"
    ident = node("ResolvedIdentifier", [], pkg="org.apache.spark.sql.catalyst.analysis.", catalog=None, identifier=None)
    plan = node("CreateTableAsSelect", [ident, relation([("a", 1)])], name=0, partitioning=[], query=1, tableSpec=None)
    rel = RelationInfo("LogicalRelation", [1], [{"name": "a", "type": "bigint"}], locations=["file:/data/src"])
    rec = CaptureRecord(
        command="CreateTableAsSelect",
        status="success",
        optimized_plan=plan,
        relations=[rel],
        sequence=1,
        output=OutputInfo("CreateTableAsSelect", table=f"dcat.{bad}", columns=["a"], column_types=["bigint"]),
    )
    result = events.analyze([rec])
    assert len(result.lineages) == 1 and result.lineages[0].output is None  # the write is still captured
    assert any("left out of the lineage events" in p.message and "dcat" not in (p.task or "x") for p in result.problems)
    inputs, outputs = events.datasets(result)
    assert outputs == [] and [(i.namespace, i.name) for i in inputs] == [("file", "/data/src")]
    assert events.written_datasets(result) == []


def test_jdbc_query_falls_back_to_sqlglot_without_openlineage_sql(monkeypatch):
    """Without openlineage-sql (it comes with Airflow's OpenLineage provider) sqlglot parses the query."""
    import builtins

    from airflow_provider_lineage.lineage.sql_tables import parse_query

    real_import = builtins.__import__

    def no_ol_sql(name, *args, **kwargs):
        if name == "openlineage_sql":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ol_sql)
    parsed = parse_query("SELECT o.id, i.x AS y FROM public.orders o JOIN public.items i ON o.id = i.id", "postgresql")
    assert parsed.parser == "sqlglot"
    assert parsed.tables == ["public.orders", "public.items"]
    assert parsed.columns == {"id": [("public.orders", "id")], "y": [("public.items", "x")]}
