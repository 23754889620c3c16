"""Partition folder values typed and widened as Spark's partition inference does (no Spark needed)."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from pyspark.sql import types as T

from airflow_provider_lineage.sieve.errors import SieveError
from airflow_provider_lineage.sieve.spark.schema import infer_value_type, partition_types, partition_value


@pytest.mark.parametrize(("raw", "expected"), [
    ("1", T.IntegerType()), ("-7", T.IntegerType()), ("007", T.IntegerType()),
    ("3000000000", T.LongType()), ("123456789012345678901234", T.DecimalType(24, 0)),
    ("1.5", T.DoubleType()), ("2024-01-01", T.DateType()), ("2024-01-01 10:00:00", T.TimestampType()),
    ("2024-13-01", T.StringType()), ("abc", T.StringType()), ("__HIVE_DEFAULT_PARTITION__", T.NullType()),
])
def test_one_value(raw, expected) -> None:
    assert infer_value_type(raw) == expected


@pytest.mark.parametrize(("values", "expected"), [
    (["1", "2"], T.IntegerType()),
    (["1", "3000000000"], T.LongType()),
    (["1", "1.5"], T.DoubleType()),
    (["1", "123456789012345678901234"], T.DecimalType(24, 0)),
    (["2024-01-01", "2024-01-01 10:00:00"], T.TimestampType()),
    (["1", "abc"], T.StringType()),
    (["2024-01-01", "7"], T.StringType()),
    (["__HIVE_DEFAULT_PARTITION__", "4"], T.IntegerType()),
    (["__HIVE_DEFAULT_PARTITION__"], T.StringType()),
])
def test_values_of_one_column_widen(values, expected) -> None:
    assert partition_types([{"p": v} for v in values]) == [("p", expected)]


def test_values_read_as_their_type() -> None:
    assert partition_value("007", T.IntegerType()) == 7
    assert partition_value("007", T.StringType()) == "007"
    assert partition_value("2024-01-02", T.DateType()) == dt.date(2024, 1, 2)
    assert partition_value("12", T.DecimalType(24, 0)) == Decimal(12)
    assert partition_value("__HIVE_DEFAULT_PARTITION__", T.IntegerType()) is None
    assert partition_value("2024-01-01 10:00:00", T.TimestampType()) == dt.datetime(2024, 1, 1, 10, tzinfo=dt.UTC)
    with pytest.raises(SieveError, match="cannot be read as int"):
        partition_value("abc", T.IntegerType())
