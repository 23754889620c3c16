"""Spark's pushed filters as Sieve predicates, Arrow expressions, row masks and row-group pruning (no Spark needed)."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import datasource as D

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve.spark.filters import (
    Cond,
    _successor,
    expression,
    from_spark,
    mask,
    predicates,
    row_group_may_match,
)


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


# ---- the reader's own row filter: pyarrow.compute masks and row-group statistics -----------------------
INTS = st.one_of(st.none(), st.integers(-5, 40))
CONDS = st.one_of(
    st.builds(lambda op, v: Cond("k", op, v), st.sampled_from(["eq", "gt", "ge", "lt", "le"]), INTS),
    st.builds(lambda vs: Cond("k", "in", tuple(vs)), st.lists(INTS, max_size=4)),
    st.just(Cond("k", "is_null")),
)


@settings(max_examples=80, deadline=None)
@given(keys=st.lists(INTS, min_size=1, max_size=30), conds=st.lists(CONDS, min_size=1, max_size=3),
       group=st.integers(1, 7), sort=st.booleans())
def test_row_groups_and_masks_keep_what_the_expression_keeps(tmp_path_factory, keys, conds, group, sort) -> None:
    if sort:
        keys = sorted(keys, key=lambda k: (k is None, k or 0))
    table = pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(range(len(keys)), pa.int64())})
    path = str(tmp_path_factory.mktemp("rg") / "f.parquet")
    pq.write_table(table, path, row_group_size=group)
    expr = None
    for c in conds:
        e = expression(c, pa.int64())
        expr = e if expr is None else expr & e
    expected = table.filter(expr)["v"].to_pylist()

    pf = pq.ParquetFile(path)
    types = {f.name: f.type for f in pf.schema_arrow}
    groups = [i for i in range(pf.metadata.num_row_groups)
              if row_group_may_match(conds, pf.metadata.row_group(i), {"k": 0, "v": 1}, types)]
    got: list[int] = []
    for i in groups:
        t = pf.read_row_group(i)
        keep = None
        for c in conds:
            m = mask(c, t["k"])
            keep = m if keep is None else pc.and_kleene(keep, m)
        got += t.filter(keep, null_selection_behavior="drop")["v"].to_pylist()
    assert got == expected


def test_masks_on_dates_timestamps_strings_and_dictionaries() -> None:
    day = dt.date(2024, 1, 2)
    dates = pa.array([day, None, dt.date(2024, 1, 3)], pa.date32())
    assert mask(Cond("d", "ge", day), dates).to_pylist() == [True, None, True]
    naive = pa.array([dt.datetime(2024, 1, 1, 12)], pa.timestamp("us"))
    instant = dt.datetime(2024, 1, 1, 13, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert mask(Cond("t", "eq", instant), naive).to_pylist() == [True]
    assert mask(Cond("t", "in", (instant, None)), naive).to_pylist() == [True]
    words = pa.array(["ab", "abc", "b", None]).dictionary_encode()
    assert mask(Cond("s", "starts_with", "ab"), words).to_pylist() == [True, True, False, None]
    assert mask(Cond("s", "in", ("b",)), words).to_pylist() == [False, False, True, False]
    assert mask(Cond("s", "eq", None), words).to_pylist() == [False] * 4


def test_statistics_prune_only_integers_and_dates(tmp_path) -> None:
    path = str(tmp_path / "f.parquet")
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.int64()), "f": pa.array([1.0, float("nan")]),
                             "s": ["a", "b"]}), path)
    pf = pq.ParquetFile(path)
    rg, types = pf.metadata.row_group(0), {f.name: f.type for f in pf.schema_arrow}
    names = {"k": 0, "f": 1, "s": 2}
    assert not row_group_may_match([Cond("k", "gt", 2)], rg, names, types)
    assert not row_group_may_match([Cond("k", "in", (5, None))], rg, names, types)
    assert not row_group_may_match([Cond("k", "is_null")], rg, names, types)
    assert row_group_may_match([Cond("k", "ge", 2)], rg, names, types)
    assert row_group_may_match([Cond("f", "gt", 5.0)], rg, names, types)  # NaN > 5 in Spark
    assert row_group_may_match([Cond("s", "gt", "z")], rg, names, types)
    assert row_group_may_match([Cond("k", "eq", dt.date(2024, 1, 1))], rg, names, types)  # another type
