from __future__ import annotations

import os
import sys

import pytest

from airflow_provider_lineage import sieve as S

from .helpers import write_file


def test_recommendations(tmp_path) -> None:
    root = str(tmp_path / "t")
    assert S.maintenance_status(root, "k").recommendation == "build"
    for i in range(4):
        write_file(f"{root}/f{i}.parquet", list(range(i * 100, i * 100 + 50)))
    S.build(None, root, "k", mode="mor", error_bound=1000)
    st = S.maintenance_status(root, "k")
    assert st.present and st.recommendation == "none" and st.version == 1
    write_file(f"{root}/f0.parquet", [1, 2])  # rewrite
    st = S.maintenance_status(root, "k")
    assert (st.files_changed, st.recommendation) == (1, "sync") and 0 < st.drift < 0.5
    S.sync(None, root, "k")
    for i in range(8):
        write_file(f"{root}/n{i}.parquet", [7000 + i])
        S.sync(None, root, "k")
    st = S.maintenance_status(root, "k")
    assert st.recommendation == "compact" and st.delta_count == 9 and st.delta_bytes > 0
    S.compact(root, "k")
    for i in range(4):
        os.remove(f"{root}/f{i}.parquet")
        os.remove(f"{root}/n{i}.parquet")
    st = S.maintenance_status(root, "k")
    assert st.recommendation == "rebuild" and st.files_removed == 8 and st.drift >= 0.5
    assert st.to_dict()["record_version"] == 1


def test_status_needs_no_spark(tmp_path) -> None:
    root = str(tmp_path / "t")
    write_file(f"{root}/a.parquet", [1])
    S.build(None, root, "k")
    before = set(sys.modules)
    S.maintenance_status(root, "k")
    assert not any(m.startswith("pyspark") for m in set(sys.modules) - before)


def test_drift_reasons_are_true_arithmetic(tmp_path) -> None:
    """A small table overwritten wholesale is called a rewrite (was "3 of 1 indexed files changed
    (drift 3.00)"); a partial drift names its parts, which add up to the drift it prints."""
    root = str(tmp_path / "small")
    write_file(f"{root}/part-0.parquet", list(range(10)))
    S.build(None, root, "k")
    os.remove(f"{root}/part-0.parquet")  # the overwrite of a one-file mart: two new files
    write_file(f"{root}/part-1.parquet", list(range(5)))
    write_file(f"{root}/part-2.parquet", list(range(5, 12)))
    st = S.maintenance_status(root, "k")
    assert st.recommendation == "rebuild"
    assert st.reason.startswith("table rewritten: all 1 indexed file removed or rewritten, 2 added"), st.reason

    root = str(tmp_path / "big")
    for i in range(4):
        write_file(f"{root}/f{i}.parquet", list(range(i * 100, i * 100 + 50)))
    S.build(None, root, "k")
    for i in range(2):
        os.remove(f"{root}/f{i}.parquet")
    write_file(f"{root}/n0.parquet", [7000])
    st = S.maintenance_status(root, "k")
    assert st.recommendation == "rebuild"
    assert st.reason == "1 added + 2 removed + 0 rewritten files against 4 indexed files (drift 0.75 >= 0.5)"
    assert (st.files_added + st.files_removed + st.files_changed) / 4 == st.drift


def test_status_and_maintain_follow_footer_checksums(tmp_path) -> None:
    from airflow_provider_lineage.sieve.maintain import maintain

    from .test_stale import _plain_table, _same_size_rewrite

    root = _plain_table(tmp_path)
    _same_size_rewrite(f"{root}/p=1/b.parquet", list(range(100, 199)) + [5000])
    st = S.maintenance_status(root, "k")  # the index records footers: the status compares them
    assert (st.recommendation, st.files_changed) == ("sync", 1)
    old = _plain_table(tmp_path / "old", freshness="stat")
    _same_size_rewrite(f"{old}/p=1/b.parquet", list(range(100, 199)) + [5000])
    assert S.maintenance_status(old, "k").recommendation == "none"  # stat cannot see it
    st = S.maintenance_status(old, "k", freshness="footer")
    assert st.recommendation == "rebuild" and "records none" in st.reason
    res = maintain(None, old, "k", freshness="footer")  # what SieveIndexOperator(freshness="footer") runs
    assert res.action == "rebuild" and res.status != "error", res
    assert S.open_index(old, "k").candidates(S.Eq(5000), freshness="footer") == [f"{old}/p=1/b.parquet"]
    with pytest.raises(S.SieveError, match="freshness='often' is unknown"):
        S.maintenance_status(old, "k", freshness="often")
    with pytest.raises(S.SieveError, match="freshness='often' is unknown"):
        maintain(None, old, "k", freshness="often")
