"""Issue 7.2: every answer is safe on a stale index (files added/rewritten since the index version
are candidates, removed files are not), for the API, the CLI and the pruned reader."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_lineage import sieve as S

from .helpers import apply_op, write_file, write_layout
from .test_cli import run
from .test_sync import FILE, PRED, exact


def _stale_table(tmp_path) -> str:
    root = str(tmp_path / "t")
    write_file(f"{root}/a.parquet", list(range(100)))
    write_file(f"{root}/b.parquet", list(range(100, 200)))
    write_file(f"{root}/r.parquet", list(range(200, 300)))
    S.build(None, root, "k")
    write_file(f"{root}/c.parquet", [5000, 50])  # added: 5000 lives only here
    os.remove(f"{root}/b.parquet")  # removed
    write_file(f"{root}/r.parquet", [7000])  # rewritten: now holds 7000, no longer 250
    return root


def test_lookup_on_stale_index(tmp_path) -> None:
    root = _stale_table(tmp_path)
    idx = S.open_index(root, "k")
    # c (added) and r (rewritten) are unindexed: candidates for every key; b (removed) never.
    assert idx.candidates(S.Eq(5000)) == [f"{root}/c.parquet", f"{root}/r.parquet"]
    assert idx.candidates(S.Eq(150)) == [f"{root}/c.parquet", f"{root}/r.parquet"]  # b is gone
    assert f"{root}/b.parquet" not in idx.candidates(S.Range(0, 10_000))
    assert f"{root}/r.parquet" in idx.candidates(S.Eq(7000))
    ans = idx.lookup(S.Eq(50))
    assert ans.files == (f"{root}/a.parquet", f"{root}/c.parquet", f"{root}/r.parquet")
    assert (ans.from_index, ans.unindexed, ans.removed_skipped, ans.stale, ans.table_files) == (1, 2, 0, True, 3)
    ans = idx.lookup(S.Eq(150))
    assert (ans.from_index, ans.unindexed, ans.removed_skipped) == (0, 2, 1)
    assert ans.summary().startswith("2 of 3 files (0 from the index, 2 unindexed)") and "sync" in ans.summary()
    # Opt-out: the caller vouches for freshness; the answer is the index's alone.
    fresh = idx.lookup(S.Eq(5000), assume_fresh=True)
    assert fresh.files == () and not fresh.stale and fresh.table_files == 3
    # A listing the caller already has is used as is.
    listing = S.list_table_files(root)
    assert idx.candidates(S.Eq(5000), listing=listing) == [f"{root}/c.parquet", f"{root}/r.parquet"]
    S.sync(None, root, "k")
    ans = S.open_index(root, "k").lookup(S.Eq(5000))
    assert ans.files == (f"{root}/c.parquet",) and (ans.from_index, ans.unindexed, ans.stale) == (1, 0, False)


def test_names_freshness_sees_added_and_removed_files_not_rewrites(tmp_path) -> None:
    root = _stale_table(tmp_path)
    idx = S.open_index(root, "k")
    # c (added) is unindexed, b (removed) never answered; r was rewritten in place under its
    # name, which a check of names cannot see: the index still answers r's old keys.
    ans = idx.lookup(S.Eq(150), freshness="names")
    assert ans.files == (f"{root}/c.parquet",)
    assert (ans.from_index, ans.unindexed, ans.removed_skipped, ans.stale, ans.table_files) == (0, 1, 1, True, 3)
    assert idx.candidates(S.Eq(250), freshness="names") == [f"{root}/c.parquet", f"{root}/r.parquet"]
    assert idx.candidates(S.Eq(7000), freshness="names") == [f"{root}/c.parquet"]  # the documented blind spot
    assert f"{root}/r.parquet" in idx.candidates(S.Eq(7000))  # the default stat check sees it
    with pytest.raises(S.SieveError, match="freshness='mtime' is unknown: use 'stat'"):
        idx.lookup(S.Eq(1), freshness="mtime")
    S.sync(None, root, "k")
    ans = S.open_index(root, "k").lookup(S.Eq(7000), freshness="names")
    assert ans.files == (f"{root}/r.parquet",) and not ans.stale and ans.table_files == 3


def test_names_freshness_on_a_partitioned_table(tmp_path) -> None:
    root = str(tmp_path / "t")
    write_file(f"{root}/day=1/a.parquet", [1, 2])
    write_file(f"{root}/day=2/b.parquet", [3, 4])
    S.build(None, root, "k")
    idx = S.open_index(root, "k")
    assert not idx.lookup(S.Eq(3), freshness="names").stale
    write_file(f"{root}/day=3/c.parquet", [3])
    os.remove(f"{root}/day=1/a.parquet")
    ans = idx.lookup(S.Eq(3), freshness="names")
    assert ans.files == (f"{root}/day=2/b.parquet", f"{root}/day=3/c.parquet") and ans.stale
    assert idx.candidates(S.Eq(1), freshness="names") == [f"{root}/day=3/c.parquet"]


def test_cli_query_on_stale_index(tmp_path) -> None:
    root = _stale_table(tmp_path)
    r = run("query", root, "k", "--eq", "5000")
    assert r.returncode == 0, r.stderr
    assert [json.loads(x)["file"] for x in r.stdout.splitlines()] == [f"{root}/c.parquet", f"{root}/r.parquet"]
    assert r.stderr.startswith("sieve: 2 of 3 files (0 from the index, 2 unindexed)")
    assert r.stderr.count("\n") == 1
    r = run("query", root, "k", "--eq", "150")
    assert f"{root}/b.parquet" not in r.stdout
    r = run("query", root, "k", "--eq", "5000", "--assume-fresh")
    assert r.stdout == "" and r.stderr == "sieve: 0 of 3 files (0 from the index, 0 unindexed)\n"
    r = run("query", root, "k", "--eq", "7000", "--freshness", "names")  # r rewritten in place: not seen
    assert [json.loads(x)["file"] for x in r.stdout.splitlines()] == [f"{root}/c.parquet"]


def test_pruned_read_on_stale_index(spark, tmp_path) -> None:
    root = _stale_table(tmp_path)
    full = spark.read.parquet(root)
    for pred, cond in ((S.Eq(5000), "k = 5000"), (S.Eq(150), "k = 150"), (S.Range(40, 60), "k between 40 and 60")):
        with warnings.catch_warnings():
            warnings.simplefilter("error", S.SieveFallbackWarning)
            df = S.read(spark, root, "k", pred, full_read_share=1.0)
        assert sorted(df.collect()) == sorted(full.filter(cond).collect()), pred
        files = S.open_index(root, "k").candidates(pred)
        assert sorted(p.removeprefix("file://") for p in df.inputFiles()) == files
    assert S.read(spark, root, "k", S.Eq(5000)).count() == 1
    assert S.read(spark, root, "k", S.Eq(5000), freshness="names").count() == 1  # c was added
    with pytest.raises(S.SieveError, match="freshness='x' is unknown"):
        S.read(spark, root, "k", S.Eq(5000), freshness="x")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial=st.lists(FILE, min_size=1, max_size=4),
       ops=st.lists(st.one_of(st.tuples(st.just("append"), FILE), st.tuples(st.just("delete"), st.integers(0, 9)),
                              st.tuples(st.just("overwrite"), st.integers(0, 9), FILE)), min_size=1, max_size=5),
       mode=st.sampled_from(["cow", "mor"]), preds=st.lists(PRED, min_size=2, max_size=6))
def test_stale_answers_superset_of_exact_without_sync(initial, ops, mode, preds) -> None:
    root = tempfile.mkdtemp(prefix="sieve-stale-")
    try:
        layout: dict[str, list[int | None]] = write_layout(root, initial)
        S.build(None, root, "k", error_bound=1, max_segment_keys=8, mode=mode)
        for j, op in enumerate(ops):
            apply_op(root, layout, op, j)
        idx = S.open_index(root, "k")  # never synced
        for pred in preds:
            got = set(idx.candidates(pred))
            assert exact(layout, pred) <= got <= set(layout), (pred, layout)
            if all(op[0] != "overwrite" for op in ops):  # new names only: a check of names is enough
                assert exact(layout, pred) <= set(idx.candidates(pred, freshness="names")) <= set(layout)
    finally:
        shutil.rmtree(root, ignore_errors=True)
