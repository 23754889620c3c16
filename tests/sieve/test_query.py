from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve.query import intervals_of

from .helpers import write_file


def test_gaps_between_segments_answer_no_file(tmp_path) -> None:
    root = str(tmp_path / "t")
    # Adversarial layout of the seed: every file holds two far-apart stretches, nothing between.
    for i in range(5):
        write_file(f"{root}/f{i}.parquet", list(range(0, 300, 1)) + list(range(5000, 5300)))
    S.build(None, root, "k", error_bound=4)
    idx = S.open_index(root, "k")
    assert idx.candidates(S.Eq(2500)) == []
    assert idx.candidates(S.Range(1000, 4000)) == []
    assert len(idx.candidates(S.Eq(10))) == 5
    assert len(idx.candidates(S.Range(4000, 5000))) == 5
    assert idx.candidates(S.Range(6000)) == [] and idx.candidates(S.Range(None, -1)) == []


def test_point_range_in_exact_on_steep_layout(tmp_path) -> None:
    root = str(tmp_path / "t")
    for i in range(4):
        write_file(f"{root}/f{i}.parquet", [k for k in range(400) if k % 4 == i])
    S.build(None, root, "k", error_bound=0)
    idx = S.open_index(root, "k")
    assert idx.candidates(S.Eq(6)) == [f"{root}/f2.parquet"]
    assert idx.candidates(S.In([1, 5, 9])) == [f"{root}/f1.parquet"]
    assert idx.candidates(S.In([])) == []
    assert len(idx.candidates(S.Range(10, 11))) == 2
    assert idx.candidates(S.Range(10, 11, low_inclusive=False)) == [f"{root}/f3.parquet"]
    assert idx.segments_loaded >= 1


def test_intervals_of_predicates() -> None:
    kt = S.KeyType("date", "date")
    d = dt.date(1970, 1, 11)
    assert intervals_of(S.Eq(d), kt) == [(10, 10)]
    assert intervals_of(S.Range(d, None, low_inclusive=False), kt) == [(11, None)]
    assert intervals_of(S.Range(d, d, low_inclusive=False), kt) == []
    assert intervals_of(S.In([d, None, d]), kt) == [(10, 10)]


def test_date_and_decimal_tables(tmp_path) -> None:
    root = str(tmp_path / "d")
    base = dt.date(2024, 1, 1)
    write_file(f"{root}/a.parquet", [base, base + dt.timedelta(days=1)], pa.date32())
    write_file(f"{root}/b.parquet", [base + dt.timedelta(days=300), None], pa.date32())
    S.build(None, root, "k")
    idx = S.open_index(root, "k")
    assert idx.candidates(S.Eq(base)) == [f"{root}/a.parquet"]
    assert idx.candidates(S.Range(dt.date(2024, 6, 1))) == [f"{root}/b.parquet"]
    assert idx.candidates(S.IsNull()) == [f"{root}/b.parquet"]
    with pytest.raises(TypeError, match="datetime.date"):
        idx.candidates(S.Eq(5))
