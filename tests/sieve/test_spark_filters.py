"""Spark's pushed filters as Sieve predicates, Arrow expressions, row masks and row-group pruning (no Spark needed)."""
from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal

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


# ---- only what can be decided exactly is pushed (issue 48) ----------------------------------------------
def test_exact_refuses_what_python_cannot_decide_as_spark(monkeypatch) -> None:
    from pyspark.sql import types as T

    from airflow_provider_lineage.sieve.spark import filters as F

    monkeypatch.setattr(F, "_EXACT_DECODING", False)
    assert F.exact(Cond("k", "gt", -1), T.ShortType())
    assert F.exact(Cond("k", "eq", 2**63 - 1), T.LongType())
    assert not F.exact(Cond("k", "eq", 300), T.ByteType())  # out of the column's range: Spark decides
    assert not F.exact(Cond("k", "eq", True), T.LongType())
    for op in ("eq", "gt", "lt", "in"):  # NaN = NaN and NaN above every value in Spark
        assert not F.exact(Cond("x", op, (1.0,) if op == "in" else 1.0), T.DoubleType())
        assert not F.exact(Cond("x", op, (1.0,) if op == "in" else 1.0), T.FloatType())
    big = Decimal(1234567890123456789012345678901)  # 31 digits: PySpark's decoding may have rounded it
    assert not F.exact(Cond("d", "eq", big), T.DecimalType(38, 0))
    assert not F.exact(Cond("d", "in", (Decimal(1), big)), T.DecimalType(38, 0))
    assert F.exact(Cond("d", "eq", Decimal("12.5")), T.DecimalType(10, 1))
    assert not F.exact(Cond("d", "eq", Decimal("12.55")), T.DecimalType(10, 1))  # more scale than the column
    assert not F.exact(Cond("d", "eq", Decimal("NaN")), T.DecimalType(10, 1))
    monkeypatch.setattr(F, "_EXACT_DECODING", True)  # decoded exactly in Spark's planner: taken
    assert F.exact(Cond("d", "eq", big), T.DecimalType(38, 0))
    assert not F.exact(Cond("day", "eq", dt.datetime(2024, 1, 1)), T.DateType())
    assert F.exact(Cond("day", "eq", dt.date(1, 1, 1)), T.DateType())
    assert not F.exact(Cond("s", "eq", "a"), T.StringType("UTF8_LCASE"))  # collations compare otherwise
    assert F.exact(Cond("s", "starts_with", "a"), T.StringType())
    assert F.exact(Cond("k", "is_null"), T.LongType())
    assert not F.exact(Cond("k", "is_null"), T.DoubleType())


def test_exact_decoding_turns_undecodable_filters_into_placeholders(monkeypatch) -> None:
    import sys
    import types

    from airflow_provider_lineage.sieve.spark import filters as F

    calls = []

    def decode(json_dict):
        calls.append(json_dict)
        if json_dict["name"] == "bad":
            raise OverflowError("year -1 is out of range")
        import decimal

        return decimal.Decimal(10**35 + 1) * decimal.Decimal(1)  # rounded under the default 28-digit context

    fake = types.ModuleType(F._PLANNER_MODULE)
    fake.deserializeFilter = decode
    monkeypatch.setitem(sys.modules, F._PLANNER_MODULE, fake)
    monkeypatch.setattr(F, "_EXACT_DECODING", False)
    assert F.exact_decoding() and F._EXACT_DECODING
    assert fake.deserializeFilter({"name": "ok"}) == 10**35 + 1
    bad = fake.deserializeFilter({"name": "bad", "columnPath": ["d"]})
    assert isinstance(bad, F.Undecodable) and bad.attribute == ("d",) and from_spark(bad) is None
    once = fake.deserializeFilter
    F.exact_decoding()
    assert fake.deserializeFilter is once  # idempotent


def _spark_rows(df) -> list:
    return sorted(repr(tuple(r)) for r in df.collect())  # repr: NaN equals NaN


def test_spark_answers_what_the_index_cannot_decide(spark, tmp_path) -> None:
    """Unsigned and narrower file types, DECIMAL(38) beyond 28 digits, dates outside Python's range and
    DOUBLE NaN: ``format("sieve")`` and ``S.read`` give ``spark.read.parquet``'s rows, never an error."""
    from airflow_provider_lineage.sieve import spark as sieve_spark

    sieve_spark.register(spark)
    big = Decimal(1234567890123456789012345678901)
    near = Decimal(1234567890123456789012345678900)  # rounds to big's 28 digits, as does big
    tables = {
        "u8": ([pa.array([1, 200], pa.uint8()), pa.array([3, 4], pa.uint8())], "x > -1", S.Range(-1, None, False)),
        "u64": (
            [pa.array([1, 2**64 - 1], pa.uint64()), pa.array([3, 4], pa.uint64())],
            "x = 18446744073709551615",
            S.Eq(2**64 - 1),
        ),
        "mixed": (
            [pa.array([1, 2**40], pa.int64()), pa.array([3, 4], pa.int32())],
            "x IN (3, 1099511627776)",
            S.In([3, 2**40]),
        ),
        "dec": (
            [pa.array([big, Decimal(5)], pa.decimal128(38, 0)), pa.array([near], pa.decimal128(38, 0))],
            f"x = {big}",
            S.Eq(big),
        ),
        "dec_in": (
            [pa.array([big, Decimal(5)], pa.decimal128(38, 0)), pa.array([near], pa.decimal128(38, 0))],
            f"x IN ({near}, 7)",
            S.In([near, 7]),
        ),
        "date": (
            [pa.array([dt.date(2020, 1, 1), dt.date(1, 1, 1)], pa.date32()), pa.array([dt.date(2021, 1, 1)])],
            "x > date'-0001-01-01'",
            S.Range(dt.date(1, 1, 1), None),
        ),
        "date_hi": (
            [pa.array([dt.date(2020, 1, 1), dt.date(9999, 12, 31)], pa.date32()), pa.array([dt.date(2021, 1, 1)])],
            "x < date'+10000-01-01'",
            S.Range(None, dt.date(9999, 12, 31)),
        ),
    }
    for name, (arrays, where, pred) in tables.items():
        root = str(tmp_path / name)
        for i, arr in enumerate(arrays):
            os.makedirs(root, exist_ok=True)
            pq.write_table(pa.table({"x": arr, "v": pa.array(range(len(arr)), pa.int64())}), f"{root}/f{i}.parquet")
        S.build(None, root, "x")
        expected = _spark_rows(spark.read.parquet(root).where(where))
        assert expected, name
        assert _spark_rows(spark.read.format("sieve").load(root).where(where)) == expected, name
        assert _spark_rows(S.read(spark, root, "x", pred)) == expected, name
    # DOUBLE with NaN: no index can key it; an index passed for it (indexPaths) must not decide NaN
    root = str(tmp_path / "nan")
    os.makedirs(root)
    pq.write_table(
        pa.table({"k": pa.array([1, 2], pa.int64()), "x": pa.array([1.0, float("nan")])}), f"{root}/a.parquet"
    )
    pq.write_table(pa.table({"k": pa.array([3], pa.int64()), "x": pa.array([2.0])}), f"{root}/b.parquet")
    S.build(None, root, "k")
    df = spark.read.format("sieve").option("indexPaths", json.dumps({"x": f"{root}/_sieve/k"})).load(root)
    # (Spark's own Parquet push-down skips the NaN row for x = 'NaN': row-group statistics leave NaN out)
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        for where in ("x = 'NaN'", "x > 1.5", "x >= 'NaN'", "x IN (1.0, 'NaN')", "x <=> 'NaN'"):
            expected = _spark_rows(spark.read.parquet(root).where(where))
            assert expected and _spark_rows(df.where(where)) == expected, where
    finally:
        spark.conf.unset("spark.sql.parquet.filterPushdown")
