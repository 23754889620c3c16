"""Spark's pushed filters as Sieve predicates and Arrow expressions (no Spark needed)."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import datasource as D

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve.spark.filters import Cond, _successor, expression, from_spark, predicates


def test_ranges_on_one_column_merge_into_one_range() -> None:
    conds = [Cond("k", "gt", 3), Cond("k", "le", 10), Cond("k", "ge", 5), Cond("k", "lt", 10)]
    assert predicates(conds) == [S.Range(5, 10, True, False)]


def test_each_filter_kind() -> None:
    assert from_spark(D.EqualTo(("k",), 1)) == Cond("k", "eq", 1)
    assert from_spark(D.EqualNullSafe(("k",), None)) == Cond("k", "is_null")
    assert from_spark(D.In(("k",), [1, 2])) == Cond("k", "in", (1, 2))
    assert from_spark(D.IsNull(("k",))) == Cond("k", "is_null")
    assert from_spark(D.StringStartsWith(("s",), "ab")) == Cond("s", "starts_with", "ab")
    for kept in (D.IsNotNull(("k",)), D.Not(D.EqualTo(("k",), 1)), D.EqualTo(("a", "b"), 1),
                 D.StringContains(("s",), "x")):
        assert from_spark(kept) is None
    assert predicates([Cond("s", "starts_with", "ab")]) == [S.Range("ab", "ac", True, False)]
    assert predicates([Cond("k", "in", (1, None))]) == [S.In([1])]


def test_prefix_successor_in_code_point_order() -> None:
    assert _successor("ab") == "ac"
    assert _successor("a\U0010ffff") == "b"
    assert _successor("\U0010ffff") is None
    assert _successor("\ud7ff"[:0] + chr(0xD7FF)) == chr(0xE000)


def test_expressions_keep_what_spark_keeps() -> None:
    t = pa.table({"k": pa.array([1, 2, None], pa.int64())})
    assert t.filter(expression(Cond("k", "in", (1, None)), pa.int64()))["k"].to_pylist() == [1]
    assert t.filter(expression(Cond("k", "is_null"), pa.int64())).num_rows == 1
    assert t.filter(expression(Cond("k", "ge", 2), pa.int64()))["k"].to_pylist() == [2]
    assert t.filter(expression(Cond("k", "in", ()), pa.int64())).num_rows == 0
    s = pa.table({"s": ["ab", "abc", "b", None]})
    assert s.filter(expression(Cond("s", "starts_with", "ab"), pa.string()))["s"].to_pylist() == ["ab", "abc"]
    assert isinstance(expression(Cond("k", "eq", 1), pa.int64()), pc.Expression)
