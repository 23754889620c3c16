"""Pruned reads equal full reads; any doubt falls back to a full read with a warning."""
from __future__ import annotations

import os
import shutil
import tempfile
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_lineage import sieve as S

from .helpers import write_file
from .test_sync import FILE, PRED


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _full(spark, root, pred):
    import importlib

    rdr = importlib.import_module("airflow_provider_lineage.sieve.reader")
    df = spark.read.parquet(root)
    return df.filter(rdr.spark_condition("k", pred, S.open_index(root, "k").key_type))


@pytest.fixture()
def part_table(tmp_path) -> str:
    root = str(tmp_path / "pt")
    write_file(f"{root}/p=1/a.parquet", [1, 2, 3, None])
    write_file(f"{root}/p=1/b.parquet", [100, 101])
    write_file(f"{root}/p=2/c.parquet", [2, 500])
    S.build(None, root, "k")
    return root


def test_pruned_read_keeps_partition_columns(spark, part_table) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", S.SieveFallbackWarning)
        df = S.read(spark, part_table, "k", S.Eq(2))
    assert df.columns == ["k", "v", "p"]
    assert _rows(df) == _rows(_full(spark, part_table, S.Eq(2)))
    assert {r.p for r in df.collect()} == {1, 2}
    assert len(df.inputFiles()) == 2


def test_zero_candidates_empty_frame_with_schema(spark, part_table) -> None:
    df = S.read(spark, part_table, "k", S.Eq(42))
    assert df.schema == spark.read.parquet(part_table).schema
    assert df.inputFiles() == [] and df.count() == 0


def test_stale_prunes_missing_corrupt_fall_back_with_warning(spark, part_table) -> None:
    write_file(f"{part_table}/p=3/d.parquet", [2])
    with warnings.catch_warnings():
        warnings.simplefilter("error", S.SieveFallbackWarning)  # stale is answered, not a fallback
        df = S.read(spark, part_table, "k", S.Eq(2))
    assert _rows(df) == _rows(_full(spark, part_table, S.Eq(2))) and len(_rows(df)) == 3
    assert len(df.inputFiles()) == 3  # a.parquet and c.parquet from the index, d.parquet unindexed
    S.sync(None, part_table, "k")
    d = os.path.join(part_table, "_sieve", "k")
    seg = sorted(n for n in os.listdir(d) if n.startswith("seg-"))
    for n in seg:
        with open(os.path.join(d, n), "r+b") as fh:
            fh.seek(12)
            fh.write(b"\\xff\\xff")
    with pytest.warns(S.SieveFallbackWarning, match="corrupt|checksum"):
        df = S.read(spark, part_table, "k", S.Eq(2))
    assert len(_rows(df)) == 3
    shutil.rmtree(d)
    with pytest.warns(S.SieveFallbackWarning, match="no Sieve index"):
        assert len(_rows(S.read(spark, part_table, "k", S.IsNull()))) == 1


OPS = st.lists(st.one_of(st.tuples(st.just("append"), FILE), st.tuples(st.just("delete"), st.integers(0, 9)),
                         st.tuples(st.just("overwrite"), st.integers(0, 9), FILE)), max_size=3)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(initial=st.lists(FILE, min_size=1, max_size=4), ops=OPS, mode=st.sampled_from(["cow", "mor"]),
       preds=st.lists(PRED, min_size=1, max_size=3))
def test_pruned_read_equals_full_read(spark, initial, ops, mode, preds) -> None:
    root = tempfile.mkdtemp(prefix="sieve-read-")
    try:
        names = []
        for i, keys in enumerate(initial):
            names.append(f"{root}/p={i % 2}/f{i}.parquet")
            write_file(names[-1], keys)
        S.build(None, root, "k", error_bound=2, max_segment_keys=8, mode=mode)
        for j, op in enumerate(ops):
            if op[0] == "append":
                names.append(f"{root}/p={j % 2}/g{j}.parquet")
                write_file(names[-1], op[1])
            elif len(names) > 1 and op[0] == "delete":
                os.remove(names.pop(op[1] % len(names)))
            elif op[0] == "overwrite":
                write_file(names[op[1] % len(names)], op[2])
        S.sync(None, root, "k")
        with warnings.catch_warnings():
            warnings.simplefilter("error", S.SieveFallbackWarning)
            for pred in preds:
                assert _rows(S.read(spark, root, "k", pred)) == _rows(_full(spark, root, pred)), pred
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture()
def wide_table(tmp_path) -> str:
    """40 files (more than Spark's default listing threshold of 32), keys 0..39 one per file, plus 100."""
    root = str(tmp_path / "wide")
    for i in range(40):
        write_file(f"{root}/f{i:02d}.parquet", [i, 100])
    S.build(None, root, "k")
    return root


def test_all_files_needed_reads_the_table_root(spark, wide_table) -> None:
    # Every file holds key 100: the read is the plain full read (root + filter), not a file list.
    with warnings.catch_warnings():
        warnings.simplefilter("error", S.SieveFallbackWarning)
        df = S.read(spark, wide_table, "k", S.Eq(100))
    plan = df._jdf.queryExecution().optimizedPlan().toString()
    assert len(df.inputFiles()) == 40
    assert _rows(df) == _rows(_full(spark, wide_table, S.Eq(100)))
    # The relation's file index has the table root as its only root path.
    roots = df._jdf.queryExecution().analyzed().collectLeaves().head().relation().location().rootPaths()
    assert roots.size() == 1 and roots.head().toString().rstrip("/").endswith("wide"), plan


def test_nearly_all_files_read_as_table_and_share_is_tunable(spark, wide_table) -> None:
    pred = S.Range(0, 37)  # 38 of 40 files (95 %)
    df = S.read(spark, wide_table, "k", pred)
    assert len(df.inputFiles()) == 40 and _rows(df) == _rows(_full(spark, wide_table, pred))
    df = S.read(spark, wide_table, "k", pred, full_read_share=1.0)
    assert len(df.inputFiles()) == 38 and _rows(df) == _rows(_full(spark, wide_table, pred))


def test_long_file_list_restores_listing_threshold(spark, wide_table) -> None:
    key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    before = spark.conf.get(key)
    pred = S.Range(0, 34)  # 35 files > 32, < 90 % of 40
    df = S.read(spark, wide_table, "k", pred)
    assert spark.conf.get(key) == before
    assert len(df.inputFiles()) == 35 and _rows(df) == _rows(_full(spark, wide_table, pred))
