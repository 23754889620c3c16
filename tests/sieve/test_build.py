"""Spark build (sieve.build, sieve.build_spark): types, partitioned tables, catalog tables, errors."""
from __future__ import annotations

import datetime as dt
import decimal
import importlib
import os

import pytest

from airflow_provider_lineage import sieve as S

build_mod = importlib.import_module("airflow_provider_lineage.sieve.build")
spark_mod = importlib.import_module("airflow_provider_lineage.sieve.build_spark")
S_storage = importlib.import_module("airflow_provider_lineage.sieve.storage")
table_mod = importlib.import_module("airflow_provider_lineage.sieve.table")


@pytest.fixture(scope="module")
def typed_table(spark, tmp_path_factory) -> str:
    from pyspark.sql import functions as F

    root = str(tmp_path_factory.mktemp("typed") / "t")
    df = spark.range(0, 3000).select(
        F.col("id").alias("k"), (F.col("id") % 3).alias("p"),
        F.date_from_unix_date((F.col("id") / 10).cast("int")).alias("d"),
        F.timestamp_micros(F.col("id") * 1_000_003).alias("ts"),
        F.to_timestamp_ntz(F.timestamp_micros(F.col("id") * 999_983).cast("string")).alias("ntz"),
        (F.col("id") / F.lit(7)).cast("decimal(12,3)").alias("dec"),
        F.when(F.col("id") % 97 == 0, None).otherwise(F.col("id")).alias("kn"),
        F.col("id").cast("string").alias("s"), F.array(F.col("id")).alias("arr"))
    df.repartition(4).write.partitionBy("p").parquet(root)
    return root


CASES = [
    ("k", S.Eq(1234)),
    ("d", S.Range(dt.date(1970, 3, 1), dt.date(1970, 3, 5))),
    ("ts", S.Range(dt.datetime(1970, 1, 1, 0, 0, 1), dt.datetime(1970, 1, 1, 0, 0, 2), True, False)),
    ("ntz", S.Eq(dt.datetime(1970, 1, 1, 0, 0, 0, 999_983))),
    ("dec", S.Eq(decimal.Decimal("176.286"))),
    ("kn", S.IsNull()),
    ("kn", S.In([5, 97, 98])),
    ("s", S.Eq("1234")),
    ("s", S.Range("12", "13", True, False)),
]


@pytest.fixture(scope="module")
def built(spark, typed_table, tmp_path_factory) -> dict[str, tuple[str, str]]:
    """Per column: (Spark-built index path, pyarrow-built index path)."""
    out = {}
    for column in sorted({c for c, _ in CASES}):
        base = tmp_path_factory.mktemp(f"idx_{column}")
        st = S.build(spark, typed_table, column, index_path=str(base / "spark"), error_bound=4, engine="spark")
        assert st.files == 12 and st.keys > 0 and st.rows == 3000 and st.segments > 0
        S.build(None, typed_table, column, index_path=str(base / "local"), error_bound=4)
        out[column] = (str(base / "spark"), str(base / "local"))
    return out


def test_arrow_batches_arrive_in_any_order_and_segments_never_overlap(spark, typed_table, built, tmp_path,
                                                                    monkeypatch) -> None:
    """Integer keys reach the driver as Arrow batches (decimals as rows). With many small batches
    from several range partitions, arriving in any order, the segments stay sorted and disjoint,
    no answer misses a file, and point answers are exact as with the pyarrow build."""
    import pyarrow.parquet as pq

    from .helpers import exact_for

    assert S.open_index(typed_table, "k", index_path=built["k"][0]).manifest.build_stats["transfer"] == "arrow"
    assert S.open_index(typed_table, "dec", index_path=built["dec"][0]).manifest.build_stats["transfer"] == "rows"
    monkeypatch.setattr(spark_mod, "ARROW_BATCH_ROWS", 97)
    st = S.build(spark, typed_table, "kn", index_path=str(tmp_path / "i"), rows_per_partition=400, engine="spark")
    a = S.open_index(typed_table, "kn", index_path=str(tmp_path / "i"))
    assert a.manifest.build_stats["partitions"] > 1 and st.segments >= 3000 // 97
    a = S.open_index(typed_table, "kn", index_path=str(tmp_path / "i"))
    S.build(None, typed_table, "kn", index_path=str(tmp_path / "j"))  # the same parameters, pyarrow
    b = S.open_index(typed_table, "kn", index_path=str(tmp_path / "j"))
    for m0, m1 in zip(a.metas, a.metas[1:]):
        assert m0.s_max < m1.s_min
    layout = {
        f.path: pq.read_table(f.path, columns=["kn"]).column(0).to_pylist() for f in S.list_table_files(typed_table)
    }
    for pred in [S.IsNull(), S.Eq(0), S.Eq(96), S.Eq(1234), S.In([7, 2999]), S.Range(90, 400), S.Range(None, 5)]:
        exact = exact_for(layout, pred)
        got = set(a.candidates(pred))
        assert exact <= got, pred
        if not isinstance(pred, S.Range):  # present keys, error bound 0: exact, as the pyarrow build
            assert got == exact == set(b.candidates(pred)), pred


def test_key_runs_never_split_a_key() -> None:
    """Pairs of one key split over batches (even over three, and NULL keys) come out in one run."""
    import numpy as np
    import pyarrow as pa

    def batch(keys: list[int | None]) -> pa.RecordBatch:
        return pa.record_batch([pa.array(keys, pa.int64()), pa.array(range(len(keys)), pa.int64())], ["k", "h"])

    stream = [batch([None, None]), batch([None, 1, 1]), batch([1, 1]), batch([1]), batch([1, 2]),
              batch([9, 9]), batch([3]), batch([3, 4]), batch([]), batch([4])]
    runs = list(spark_mod._key_runs(iter(stream)))
    seen: list[tuple[bool, int]] = []
    for keys, valid, _ in runs:
        groups = [(bool(v), int(k) if v else 0) for k, v in zip(keys, valid)]
        first = [g for i, g in enumerate(groups) if i == 0 or g != groups[i - 1]]
        assert not set(first) & set(seen), "a key in two runs"
        seen += first
    assert sum(len(r[0]) for r in runs) == 16
    assert [k for r in runs for k in np.asarray(r[0])[r[1]].tolist()] == [1] * 6 + [2, 9, 9, 3, 3, 4, 4]
    assert sum(int((~r[1]).sum()) for r in runs) == 3 and not runs[0][1].any()  # the NULL keys: one run


@pytest.mark.parametrize("column", ["k", "dec"])
def test_file_uris_spelled_otherwise_are_mapped_from_what_spark_reads(spark, typed_table, tmp_path, monkeypatch,
                                                                      column) -> None:
    """When Spark spells a file URI unlike the predicted one, the build maps the URIs Spark reports
    (Arrow and row paths) and answers as before."""
    monkeypatch.setattr(spark_mod, "spark_uri", lambda p: "file:///elsewhere/" + p.rsplit("/", 1)[-1])
    S.build(spark, typed_table, column, index_path=str(tmp_path / "i"), engine="spark")
    idx = S.open_index(typed_table, column, index_path=str(tmp_path / "i"))
    assert idx.manifest.build_stats["file_id_mapping"] == "observed"
    S.build(None, typed_table, column, index_path=str(tmp_path / "j"))  # the same parameters, pyarrow
    ref = S.open_index(typed_table, column, index_path=str(tmp_path / "j"))
    pred = S.Eq(1234) if column == "k" else S.Eq(decimal.Decimal("176.286"))
    assert set(idx.candidates(pred)) == set(ref.candidates(pred)) and idx.candidates(pred)


@pytest.mark.parametrize(("column", "pred"), CASES, ids=[f"{c}-{type(p).__name__}" for c, p in CASES])
def test_spark_build_matches_pyarrow_and_data(spark, typed_table, built, column, pred) -> None:
    from pyspark.sql import functions as F

    a = S.open_index(typed_table, column, index_path=built[column][0])
    b = S.open_index(typed_table, column, index_path=built[column][1])
    ka, kb = a.manifest.key_type, b.manifest.key_type
    # Spark writes TIMESTAMP as INT96, which pyarrow reads as a naive timestamp: same micros keys.
    assert (ka.kind.replace("_ntz", ""), ka.scale) == (kb.kind.replace("_ntz", ""), kb.scale)
    got = set(a.candidates(pred))
    assert got == set(b.candidates(pred))  # both engines agree on keys and file ids
    rdr = importlib.import_module("airflow_provider_lineage.sieve.reader")
    cond = rdr.spark_condition(column, pred, a.key_type)
    rows = spark.read.parquet(typed_table).filter(cond).select(F.input_file_name().alias("f")).distinct()
    exact = {table_mod.local_path(r.f) for r in rows.collect()}
    assert exact and exact <= got


def test_unsupported_and_partition_columns(spark, typed_table, tmp_path) -> None:
    with pytest.raises(S.UnsupportedKeyType, match="type array<bigint>.*supported are"):
        S.build(spark, typed_table, "arr", index_path=str(tmp_path / "x"))
    with pytest.raises(S.SieveError, match="partition column"):
        S.build(spark, typed_table, "p", index_path=str(tmp_path / "y"))
    with pytest.raises(S.SieveError, match="no column 'nope'"):
        S.build(spark, typed_table, "nope", index_path=str(tmp_path / "z"))


def test_engine_auto_reads_small_tables_with_pyarrow_and_large_ones_with_spark(spark, typed_table, tmp_path,
                                                                              monkeypatch) -> None:
    """``auto``: up to LOCAL_BUILD_MAX_ROWS rows on the driver (no Spark job), else Spark; both
    record the Spark schema for readers and give the same answers. Bad engine choices are named."""
    small = S.build(spark, typed_table, "k", index_path=str(tmp_path / "a"))
    monkeypatch.setattr(build_mod, "LOCAL_BUILD_MAX_ROWS", 2999)  # the table has 3000 rows
    large = S.build(spark, typed_table, "k", index_path=str(tmp_path / "b"))
    a = S.open_index(typed_table, "k", index_path=str(tmp_path / "a"))
    b = S.open_index(typed_table, "k", index_path=str(tmp_path / "b"))
    assert (a.manifest.build_stats["engine"], b.manifest.build_stats["engine"]) == ("pyarrow", "spark")
    assert small.rows == large.rows == 3000 and small.segments == large.segments
    assert a.manifest.schema_json == b.manifest.schema_json is not None
    assert a.manifest.key_type == b.manifest.key_type  # Spark's type names (lineage facets show them)
    for key in (5, 97, 1234, 10**9):
        assert a.candidates(S.Eq(key)) == b.candidates(S.Eq(key))
    with pytest.raises(S.SieveError, match="engine='fast' is unknown: use one of auto, spark, pyarrow"):
        S.build(spark, typed_table, "k", index_path=str(tmp_path / "c"), engine="fast")
    with pytest.raises(S.SieveError, match="engine='spark' needs a SparkSession"):
        S.build(None, typed_table, "k", index_path=str(tmp_path / "c"), engine="spark")
    assert not os.path.exists(tmp_path / "c")


def test_catalog_table(spark, tmp_path) -> None:
    spark.sql("DROP TABLE IF EXISTS sieve_cat")
    spark.range(0, 500).selectExpr("id AS k", "id % 5 AS g").repartition(3).write.format("parquet") \
        .saveAsTable("sieve_cat")
    idx_path = str(tmp_path / "cat_idx")
    S.build(spark, "sieve_cat", "k", index_path=idx_path)
    idx = S.open_index("sieve_cat", "k", index_path=idx_path)
    assert idx.table.kind == "catalog" and 1 <= len(idx.candidates(S.Eq(7))) <= 3
    df = S.read(spark, "sieve_cat", "k", S.Range(10, 20), index_path=idx_path)
    assert sorted(r.k for r in df.collect()) == list(range(10, 21))
    # the default location works too when Spark can resolve the table
    S.build(spark, "sieve_cat", "k")
    assert S.open_index("sieve_cat", "k", spark=spark).candidates(S.Eq(7))
    spark.sql("DROP TABLE sieve_cat")


def test_spark_uri_prediction_matches_spark(spark, tmp_path) -> None:
    from pyspark.sql import functions as F

    from .helpers import write_file

    root = str(tmp_path / "odd")
    write_file(f"{root}/p=a b%c/x y+z.parquet", [1, 2])
    (u,) = {r[0] for r in spark.read.parquet(root).select(F.input_file_name()).collect()}
    assert table_mod.spark_uri(f"{root}/p=a b%c/x y+z.parquet") == u
    st = S.build(spark, root, "k", engine="spark")
    assert st.keys == 2
    assert S.open_index(root, "k").candidates(S.Eq(1)) == [f"{root}/p=a b%c/x y+z.parquet"]


# ---- an index is what it says (issue 48) ---------------------------------------------------------------
def test_a_failed_build_leaves_no_folder_behind(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"f": pa.array([1.5, 2.5]), "k": pa.array([1, 2], pa.int64())}), str(root / "a.parquet"))
    with pytest.raises(S.UnsupportedKeyType):
        S.build(None, str(root), "f")
    assert not (root / "_sieve").exists()  # neither _sieve/f nor an emptied _sieve
    S.build(None, str(root), "k")
    with pytest.raises(S.UnsupportedKeyType):
        S.build(None, str(root), "f")
    assert sorted(os.listdir(root / "_sieve")) == ["k"]  # the other index and its folder stay


# ---- the session's read settings (issue 48: build and sync read files as the session's Spark does) ----------
@pytest.mark.parametrize("structure", ["segments", "hashed"])
def test_build_and_sync_read_files_with_the_sessions_rebase_mode(spark, tmp_path, structure) -> None:
    """A file written by pyarrow (no Spark metadata) with dates before 1582: Spark's reader follows
    ``spark.sql.parquet.datetimeRebaseModeInRead``; under LEGACY it shifts them from the hybrid calendar.
    The index built and synced with that session maps the keys Spark reads, not the stored days."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    root = str(tmp_path / "t")
    os.makedirs(root)

    def write(name: str, days: list[dt.date]) -> str:
        path = f"{root}/{name}"
        pq.write_table(pa.table({"d": pa.array(days, pa.date32()), "v": pa.array(range(len(days)), pa.int64())}), path)
        return path

    a = write("a.parquet", [dt.date(1000, 1, 5), dt.date(1000, 3, 1)])
    write("b.parquet", [dt.date(2000, 1, 1), dt.date(2000, 1, 2)])
    key = "spark.sql.parquet.datetimeRebaseModeInRead"
    old = spark.conf.get(key, None)
    spark.conf.set(key, "LEGACY")
    try:
        S.build(spark, root, "d", engine="pyarrow", structure=structure)
        full = spark.read.parquet(root)
        ancient = sorted(r.d for r in full.where("d < date'1500-01-01'").collect())
        assert len(ancient) == 2 and dt.date(1000, 1, 5) not in ancient  # Spark shifted the stored days
        idx = S.open_index(root, "d")
        for value in ancient:
            assert idx.candidates(S.Eq(value)) == [a], value
            assert sorted(S.read(spark, root, "d", S.Eq(value)).collect()) == \
                sorted(full.where(f"d = date'{value.isoformat()}'").collect())
        c = write("c.parquet", [dt.date(1200, 6, 1)])
        S.sync(spark, root, "d")
        full = spark.read.parquet(root)
        (shifted,) = [r.d for r in full.where(F.input_file_name().endswith("c.parquet")).collect()]
        assert shifted != dt.date(1200, 6, 1)
        assert S.open_index(root, "d").candidates(S.Eq(shifted), assume_fresh=True) == [c]
    finally:
        if old is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, old)
