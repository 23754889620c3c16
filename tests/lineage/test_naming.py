"""Dataset naming per the OpenLineage naming spec."""
from __future__ import annotations

import pytest

from airflow_provider_lineage.lineage.naming import (
    DatasetRef,
    dataset_for_jdbc,
    dataset_for_location,
    symlink_namespace,
)


@pytest.mark.parametrize(
    ("uri", "namespace", "name"),
    [
        ("file:/tmp/out", "file", "/tmp/out"),
        ("file:///tmp/out/", "file", "/tmp/out"),
        ("/tmp/x/../out", "file", "/tmp/out"),
        ("hdfs://nn:8020/warehouse/t", "hdfs://nn:8020", "/warehouse/t"),
        ("s3a://bucket/a/b/", "s3://bucket", "a/b"),
        ("s3n://bucket/k", "s3://bucket", "k"),
        ("s3://bucket/k", "s3://bucket", "k"),
        ("gs://bkt/p/q", "gs://bkt", "p/q"),
        ("abfss://cont@acct.dfs.core.windows.net/dir/f", "abfss://cont@acct.dfs.core.windows.net", "dir/f"),
        ("file://host1/data", "file://host1", "/data"),
        # Hive partition folders at the end fold into their table; elsewhere they are just names
        ("/lake/events/day=2024-01-01/hour=3", "file", "/lake/events"),
        ("file:/lake/events/day=2024-01-01/", "file", "/lake/events"),
        ("s3a://b/events/day=2024-01-01", "s3://b", "events"),
        ("/lake/a=b/events", "file", "/lake/a=b/events"),
    ],
)
def test_dataset_for_location(uri, namespace, name):
    ref = dataset_for_location(uri)
    assert (ref.namespace, ref.name) == (namespace, name)


def test_jdbc_urls():
    assert dataset_for_jdbc("jdbc:postgresql://db:5432/shop?ssl=true", "public.orders").key == (
        "postgres://db:5432",
        "shop.public.orders",
    )
    assert dataset_for_jdbc("jdbc:mysql://h:3306/app", "t").key == ("mysql://h:3306", "app.t")
    assert dataset_for_location("jdbc:postgresql://db:5432/shop").namespace == "postgres://db:5432"


def test_identity_ignores_the_table_symlink():
    a = DatasetRef("file", "/wh/t", "spark_catalog.default.t")
    assert a == DatasetRef("file", "/wh/t") and hash(a) == hash(DatasetRef("file", "/wh/t"))
    assert symlink_namespace(a) == "file:/wh"
    # openlineage-spark PathUtils.fromCatalogTable: the location's parent folder
    assert symlink_namespace(DatasetRef("file", "/wh/db.db/t", "spark_catalog.db.t")) == "file:/wh/db.db"
