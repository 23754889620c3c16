"""The current identity of a stored (namespace, name): what a re-index applies to old records (no Spark)."""
from __future__ import annotations

import pytest

from airflow_provider_lineage.lineage.canonical import canonical_identity

CASES = [
    # (stored namespace, stored name) -> current identity; why
    (("s3a://bucket", "data/events/part-00000-1a2b.snappy.parquet"), ("s3://bucket", "data/events")),  # s3a, part file
    (("s3n://bucket", "k/t"), ("s3://bucket", "k/t")),
    (("file", "/data/src/*.parquet"), ("file", "/data/src")),  # a glob names its folder
    (("file", "/data/events/day=2024-01-01/hour=3"), ("file", "/data/events")),  # partition folders fold
    (("file", "/data/out/part-00003-x.csv"), ("file", "/data/out")),
    (("file://HOST", "/p/t"), ("file://host", "/p/t")),
    (("postgres://DB.example.com", "shop.public.orders"), ("postgres://db.example.com:5432", "shop.public.orders")),
    (("postgres://h:5432/shop", "public.orders"), ("postgres://h:5432", "shop.public.orders")),
    (("mysql://H", "db.t"), ("mysql://h:3306", "db.t")),
    (("sqlserver://h:1433;databaseName=sales", "dbo.orders"), ("sqlserver://h:1433", "sales.dbo.orders")),
    # already current: unchanged
    (("s3://bucket", "data/events"), ("s3://bucket", "data/events")),
    (("postgres://db.example:5432", "shop.public.orders"), ("postgres://db.example:5432", "shop.public.orders")),
    (("hdfs://nn:8020", "/data/t"), ("hdfs://nn:8020", "/data/t")),
    (("dbfs", "/mnt/t"), ("dbfs", "/mnt/t")),
    # nothing the rules can read: unchanged
    (("kafka://broker:9092", "topic"), ("kafka://broker:9092", "topic")),
    (("bigquery", "p.d.t"), ("bigquery", "p.d.t")),
    (("file", "relative_name"), ("file", "relative_name")),
    (("postgres://", "t"), ("postgres://", "t")),
]


@pytest.mark.parametrize(("stored", "current"), CASES, ids=[f"{a[0]}:{a[1]}" for a, _ in CASES])
def test_stored_identity_under_current_rules(stored: tuple[str, str], current: tuple[str, str]) -> None:
    assert canonical_identity(*stored) == current
    assert canonical_identity(*current) == current  # idempotent


def test_partition_folders_kept_when_folding_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_LINEAGE_FOLD_PARTITION_FOLDERS", "false")
    assert canonical_identity("file", "/data/events/day=1") == ("file", "/data/events/day=1")


@pytest.mark.parametrize(("written", "lineage"), [
    (("s3a://bucket", "data/customers"), ("s3://bucket", "data/customers")),
    (("s3a://bucket/", "/data/customers/"), ("s3://bucket", "data/customers")),
    (("s3://bucket", "data/customers/day=2024-01-01"), ("s3://bucket", "data/customers")),
    (("file", "/data/customers/"), ("file", "/data/customers")),
    (("file://", "/data/customers"), ("file", "/data/customers")),
    (("file:///", "data/customers"), ("file", "/data/customers")),
    (("file", "file:///data/customers"), ("file", "/data/customers")),
    (("file", "s3a://bucket/data/customers/"), ("s3://bucket", "data/customers")),
    (("hdfs://NameNode:8020", "/data/customers"), ("hdfs://namenode:8020", "/data/customers")),
    (("postgres://DB.example.com", "shop.public.orders"), ("postgres://db.example.com:5432", "shop.public.orders")),
])
def test_a_declared_spelling_matches_the_lineage_identity(written: tuple[str, str], lineage: tuple[str, str]) -> None:
    """Issue 46 item 8: however a user spells a dataset in a tag declaration, it matches the name the lineage gives."""
    from airflow_provider_lineage.lineage.canonical import match_key

    assert match_key(*written) == match_key(*lineage) == (lineage[0].lower(), lineage[1])


def test_a_declared_path_keeps_its_case_and_a_different_dataset_stays_different() -> None:
    from airflow_provider_lineage.lineage.canonical import match_key

    assert match_key("file", "/data/Customers") != match_key("file", "/data/customers")
    assert match_key("s3://bucket", "data/customers") != match_key("s3://other", "data/customers")
    assert match_key("spark_catalog", "default.customers") == ("spark_catalog", "default.customers")


@pytest.mark.parametrize("stored", [("s3a://Lake-Bucket", "data/orders"), ("s3://LAKE-BUCKET/", "data/orders/"),
                                    ("S3N://lake-bucket", "data/orders/part-00000.parquet")])
def test_a_stored_identity_folds_host_case_as_a_declaration_does(stored: tuple[str, str]) -> None:
    """Issue 46 item 8 (the estate): what the index keys a record's dataset on (index_key) is what a declaration
    of the same dataset matches on (match_key), whatever the host's case; the path keeps its case."""
    from airflow_provider_lineage.lineage.canonical import index_key, match_key

    assert index_key(*stored) == match_key("s3a://Lake-Bucket/", "/data/orders/") == ("s3://lake-bucket", "data/orders")
    assert index_key("hdfs://NameNode:8020", "/w/Orders") == match_key("HDFS://namenode:8020", "/w/Orders")
    assert index_key("hdfs://namenode:8020", "/w/Orders") != index_key("hdfs://namenode:8020", "/w/orders")
    assert index_key("spark_catalog", "Default.Orders") == ("spark_catalog", "Default.Orders")
