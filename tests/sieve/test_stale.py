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


# ---- freshness="footer": a rewrite that kept size and mtime ---------------------------------------------
def _plain_file(path: str, keys: list[int]) -> None:
    """Columns ``k`` and ``v``, uncompressed and without dictionaries: the size follows the row count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(range(len(keys)), pa.int64())}), path,
                   compression="none", use_dictionary=False)


def _same_size_rewrite(path: str, keys: list[int]) -> None:
    """Rewrite a file with other keys, the same size and its old mtime (what ``stat`` cannot see)."""
    st = os.stat(path)
    _plain_file(path, keys)
    assert os.stat(path).st_size == st.st_size  # the premise: size unchanged
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _plain_table(tmp_path, freshness: str = "footer", structure: str = "auto") -> str:
    root = str(tmp_path / "t")
    for i, name in enumerate(("a", "b", "c")):
        _plain_file(f"{root}/p={i % 2}/{name}.parquet", list(range(i * 100, i * 100 + 100)))
    S.build(None, root, "k", freshness=freshness, structure=structure)
    return root


@pytest.mark.parametrize("structure", ["segments", "hashed"])
def test_footer_freshness_sees_a_same_size_rewrite_with_its_mtime_restored(tmp_path, structure) -> None:
    root = _plain_table(tmp_path, structure=structure)
    b = f"{root}/p=1/b.parquet"
    _same_size_rewrite(b, list(range(100, 199)) + [5000])
    idx = S.open_index(root, "k")
    assert idx.candidates(S.Eq(5000)) == []  # the documented blind spot of "stat"
    ans = idx.lookup(S.Eq(5000), freshness="footer")
    assert ans.files == (b,) and (ans.from_index, ans.unindexed, ans.stale, ans.table_files) == (0, 1, True, 3)
    assert idx.candidates(S.Eq(5), freshness="footer") == [f"{root}/p=0/a.parquet", b]
    assert idx.is_stale(freshness="footer") and not idx.is_stale()
    listing = S.list_table_files(root)  # a listing the caller has: its footers are read too
    assert idx.candidates(S.Eq(5000), listing=listing, freshness="footer") == [b]
    # untouched table: the footer check finds nothing
    fresh = _plain_table(tmp_path / "fresh", structure=structure)
    ans = S.open_index(fresh, "k").lookup(S.Eq(150), freshness="footer")
    assert ans.files == (f"{fresh}/p=1/b.parquet",) and not ans.stale


def test_footer_freshness_on_an_index_without_checksums_is_a_clear_error(tmp_path) -> None:
    root = _plain_table(tmp_path, freshness="stat")
    idx = S.open_index(root, "k")
    with pytest.raises(S.SieveError, match="records no footer checksums .*sync\\(\\.\\.\\., freshness='footer'\\)"):
        idx.lookup(S.Eq(1), freshness="footer")
    with pytest.raises(S.SieveError, match="'stat' .*'footer' .*'names' .*'none'"):
        idx.lookup(S.Eq(1), freshness="crc")
    with pytest.raises(S.SieveError, match="freshness='crc' is unknown"):
        S.build(None, root, "k", freshness="crc")
    with pytest.raises(S.SieveError, match="freshness='crc' is unknown"):
        S.sync(None, root, "k", freshness="crc")


def test_cli_footer_freshness(tmp_path) -> None:
    root = str(tmp_path / "t")
    _plain_file(f"{root}/a.parquet", list(range(100)))
    r = run("build", root, "k", "--no-spark", "--freshness", "footer")
    assert r.returncode == 0, r.stderr
    _same_size_rewrite(f"{root}/a.parquet", list(range(99)) + [5000])
    assert run("query", root, "k", "--eq", "5000").stdout == ""  # stat: not seen
    r = run("query", root, "k", "--eq", "5000", "--freshness", "footer")
    assert [json.loads(x)["file"] for x in r.stdout.splitlines()] == [f"{root}/a.parquet"], r.stderr
    assert r.stderr.startswith("sieve: 1 of 1 files (0 from the index, 1 unindexed)")
    r = run("sync", root, "k", "--no-spark")
    assert json.loads(r.stdout)["files_changed"] == 1, r.stderr


def test_footer_freshness_answers_equal_sparks(spark, tmp_path) -> None:
    """S.read and format("sieve") with freshness="footer" after the rewrite: Spark's rows."""
    from airflow_provider_lineage.sieve import spark as sieve_spark

    root = _plain_table(tmp_path)
    _same_size_rewrite(f"{root}/p=1/b.parquet", list(range(100, 199)) + [5000])
    sieve_spark.register(spark)
    full = spark.read.parquet(root)
    for pred, cond in ((S.Eq(5000), "k = 5000"), (S.Range(150, 250), "k between 150 and 250")):
        want = sorted(full.filter(cond).collect())
        assert want  # the rewritten file holds rows the index does not know
        assert sorted(S.read(spark, root, "k", pred, freshness="footer", full_read_share=1.0).collect()) == want
        df = spark.read.format("sieve").option("freshness", "footer").load(root).where(cond)
        assert sorted(df.select(*full.columns).collect()) == want
    assert S.read(spark, root, "k", S.Eq(5000)).count() == 0  # stat: the blind spot the footer closes
