"""``sieve.files``: what Spark's Parquet source reads, checked against Spark itself.

Each layout, encoding and setting is read three ways on the same files: ``spark.read.parquet(root)``
(the truth), ``spark.read.format("sieve").load(root)`` and ``S.read`` (through an index built with
``read_file_keys``); the files listed, the schema and the rows must be Spark's. Files whose encoding
matters (INT96, the legacy calendar, VARIANT) are written by Spark.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve import files as SF
from airflow_provider_lineage.sieve import spark as sieve_spark
from airflow_provider_lineage.sieve.errors import SieveError
from airflow_provider_lineage.sieve.query import open_index
from airflow_provider_lineage.sieve.spark.schema import infer_value_type, partition_types, partition_value
from airflow_provider_lineage.sieve.spark.source import table_root
from airflow_provider_lineage.sieve.table import list_table_files, list_table_paths, resolve_table, spark_uri


def _write(path: str, k: int, **extra: pa.Array) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table({"k": pa.array([k, k + 1000], pa.int64()), **extra}), path)


def _pq(table: pa.Table, path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table, path)


def _strings(df: Any) -> list[tuple]:
    """Rows as strings computed by Spark (no Python datetime range or time zone in the way), sorted."""
    cols = [f"cast(`{c}` as string)" for c in df.columns]
    return sorted((tuple(r) for r in df.selectExpr(*cols).collect()), key=repr)


@pytest.fixture()
def registered(spark):
    sieve_spark.register(spark)
    return spark


@pytest.fixture()
def session_zone(spark):
    """A non-UTC session time zone for one test (Spark's partition and LEGACY rules use it)."""
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    sieve_spark.register(spark)  # the source takes the session's settings when registered
    yield spark
    spark.conf.set("spark.sql.session.timeZone", old)
    sieve_spark.register(spark)


# ---- pure rules (no Spark) ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "skipped"),
    [
        ("_SUCCESS", True),
        (".crc", True),
        ("a._COPYING_", True),
        ("_p=1", False),
        ("000001_0", False),
        ("x.parq", False),
        ("_metadata", True),
    ],
)
def test_file_names_spark_leaves_out(name: str, skipped: bool) -> None:
    assert SF.skipped_file(name) is skipped


def test_unescape_keeps_the_bytes_as_characters() -> None:
    assert SF.unescape("caf%C3%A9") == "caf\u00c3\u00a9"
    assert SF.unescape("a%2Fb") == "a/b"
    assert SF.unescape("50%") == "50%" and SF.unescape("%zz%4") == "%zz%4"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1e3", "decimal(4,0)"),
        ("1.", "decimal(1,0)"),
        ("1.0e3", "decimal(4,0)"),
        ("1.5", "double"),
        ("12345678901234567890", "decimal(20,0)"),
        ("7", "int"),
        ("1e400", "double"),
        ("+5", "int"),
    ],
)
def test_partition_number_inference_is_sparks(raw: str, expected: str) -> None:
    assert infer_value_type(raw).simpleString() == expected
    assert infer_value_type(raw, inference=False).simpleString() == "string"


def test_julian_rebase_of_days_matches_sparks_table() -> None:
    # LEGACY mode writes date'1000-01-05' as the hybrid calendar's day number of Julian 1000-01-05,
    # which is proleptic Gregorian 1000-01-10; reading maps it back. The calendars agree from 1582-10-15.
    epoch = dt.date(1970, 1, 1)
    julian = np.array([(dt.date(1000, 1, 10) - epoch).days, -141427, 0])
    got = SF.julian_to_gregorian_days(julian)
    assert epoch + dt.timedelta(days=int(got[0])) == dt.date(1000, 1, 5)
    assert list(got[1:]) == [-141427, 0]


def test_read_conf_follows_options_and_refuses_bad_values() -> None:
    conf = SF.ReadConf.from_options(
        {"casesensitive": "true", "int96RebaseModeInRead": "legacy", "timeZone": "+02:00"}
    )
    assert conf.case_sensitive and conf.int96_rebase == "LEGACY" and conf.time_zone == "+02:00"
    assert SF.ReadConf.from_options(conf.to_options()) == conf
    with pytest.raises(SieveError, match="use one of EXCEPTION, CORRECTED, LEGACY"):
        SF.ReadConf(datetime_rebase="SOMETIMES")
    with pytest.raises(SieveError, match="time zone 'Mars/Base' is unknown"):
        SF.ReadConf(time_zone="Mars/Base")


def test_a_bare_relative_path_is_a_path_for_load() -> None:
    assert table_root({"path": "sales"}) == os.path.abspath("sales")


def test_a_relative_folder_is_a_path_table(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _write(str(tmp_path / "sales" / "a.parquet"), 1)
    ref = resolve_table("sales")
    assert ref.kind == "path" and ref.root == str(tmp_path / "sales")


# ---- listing and partitions against Spark -----------------------------------------------------
LAYOUTS = {
    "no suffix, hidden, empty": [
        "000001_0",
        "x.parq",
        "_SUCCESS",
        ".a.crc",
        "b._COPYING_",
        "c.parquet!empty",
    ],
    "flat table with a sub folder": ["a.parquet", "sub/b.parquet"],
    "root files beside partitions": ["a.parquet", "p=1/b.parquet", "p=2/c.parquet"],
    "a folder below a partition": ["p=1/sub/b.parquet", "p=2/c.parquet", "p=2/_x=1", "p=2/.hidden/d.parquet"],
    "underscore partition folders": ["_p=1/a.parquet", "_p=2/b.parquet", "_sieve/c.parquet"],
    "escaped values": [
        "s=caf%C3%A9/a.parquet",
        "s=a%2Fb/b.parquet",
        "s=New York/c.parquet",
        "s=__HIVE_DEFAULT_PARTITION__/d.parquet",
    ],
    "decimal folder values": ["d=1e3/a.parquet", "d=1./b.parquet", "d=5/c.parquet"],
    "partitions under a plain folder": ["sub/x=1/a.parquet", "sub/x=2/b.parquet"],
}
CONFLICTS = {
    "a plain folder beside partitions": ["sub/b.parquet", "p=1/b.parquet"],
    "partition depths differ": ["p=1/a.parquet", "p=2/q=3/b.parquet"],
}


def _make(root: str, files: list[str]) -> None:
    for i, rel in enumerate(files):
        if rel.endswith("!empty"):
            path = f"{root}/{rel[:-6]}"
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "wb").close()
        else:
            _write(f"{root}/{rel}", i)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_listing_partitions_schema_and_rows_are_sparks(registered, tmp_path, layout: str) -> None:
    spark = registered
    root = str(tmp_path / "t")
    _make(root, LAYOUTS[layout])
    from pyspark.sql import functions as F

    truth = spark.read.parquet(root)
    spark_files = {r[0] for r in truth.select(F.input_file_name()).distinct().collect()}
    listed = list_table_files(root)
    assert {spark_uri(f.path) for f in listed} == spark_files
    # names only (no stat): empty files too, which readers skip as Spark does
    assert {p for p in list_table_paths(root) if os.path.getsize(p)} == {f.path for f in listed}
    # partition values typed from the listing are Spark's values for the same file
    types = partition_types([f.partition for f in listed])
    assert [(n, t.simpleString()) for n, t in types] == [
        (f.name, f.dataType.simpleString()) for f in truth.schema.fields if f.name != "k"
    ]
    sieve = spark.read.format("sieve").load(root)
    assert sieve.schema == truth.schema
    assert _strings(sieve) == _strings(truth)
    # and through an index (keys read with read_file_keys) under a pushed filter
    S.build(None, root, "k")
    where = "k >= 1 AND k < 1000"
    assert _strings(spark.read.format("sieve").load(root).where(where)) == _strings(truth.where(where))
    got = S.read(spark, root, "k", S.Range(1, 999))
    assert _strings(got) == _strings(truth.where(where))
    for f in listed:
        for name, raw in f.partition.items():
            typ = dict(types)[name]
            partition_value(raw, typ)  # every listed value reads as its column's type


@pytest.mark.parametrize("layout", list(CONFLICTS))
def test_tables_spark_cannot_read_are_errors_here_too(spark, tmp_path, layout: str) -> None:
    root = str(tmp_path / "t")
    _make(root, CONFLICTS[layout])
    with pytest.raises(Exception, match="CONFLICTING"):
        spark.read.parquet(root).collect()
    with pytest.raises(SieveError, match="Conflicting"):
        list_table_files(root)


def test_timestamp_folders_and_a_stored_partition_column_in_a_non_utc_session(session_zone, tmp_path) -> None:
    spark = session_zone
    root = str(tmp_path / "t")
    _write(f"{root}/t=2024-01-01 10%3A00%3A00/a.parquet", 1)
    _write(f"{root}/t=2024-06-01 23%3A30%3A00/b.parquet", 2)
    overlap = str(tmp_path / "o")
    _write(f"{overlap}/p=5/a.parquet", 1, p=pa.array([9, 9], pa.int64()))  # the folder's value wins
    for path in (root, overlap):
        truth = spark.read.parquet(path)
        sieve = spark.read.format("sieve").load(path)
        assert sieve.schema == truth.schema
        assert _strings(sieve) == _strings(truth)
    where = "t = timestamp'2024-01-01 10:00:00'"  # a local time of the session's zone
    truth = spark.read.parquet(root).where(where)
    assert truth.count() == 2
    assert _strings(spark.read.format("sieve").load(root).where(where)) == _strings(truth)
    assert _strings(sieve_spark.load(spark, root, where, native_share=2.0)) == _strings(truth)


# ---- reading files as Spark reads them -----------------------------------------------------------
ANCIENT = [
    "1500-06-01 00:00:00",
    "1000-01-05 12:00:00",
    "2300-01-01 00:00:00",
    "9999-12-31 23:59:59",
    "2024-03-01 08:00:00",
    "1899-12-31 23:00:00",
]


def _spark_written(spark, root: str, name: str, conf: dict[str, str], rows: list[str]) -> None:
    from airflow_provider_lineage.sieve.build_spark import session_conf

    with session_conf(spark, conf):  # the caller's settings restored after
        df = spark.createDataFrame([(i, r) for i, r in enumerate(rows)], "id int, s string").selectExpr(
            "id", "cast(s as timestamp) ts", "cast(substr(s, 1, 10) as date) d"
        )
        df.coalesce(1).write.mode("overwrite").parquet(f"{root}/{name}")


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
def test_int96_and_legacy_calendar_files_written_by_spark(registered, tmp_path, zone: str) -> None:
    spark = registered
    root = str(tmp_path / "t")
    base = {"spark.sql.session.timeZone": zone}
    _spark_written(
        spark,
        root,
        "p=legacy96",
        {
            **base,
            "spark.sql.parquet.outputTimestampType": "INT96",
            "spark.sql.parquet.int96RebaseModeInWrite": "LEGACY",
            "spark.sql.parquet.datetimeRebaseModeInWrite": "LEGACY",
        },
        ANCIENT,
    )
    _spark_written(
        spark,
        root,
        "p=corrected96",
        {
            **base,
            "spark.sql.parquet.outputTimestampType": "INT96",
            "spark.sql.parquet.int96RebaseModeInWrite": "CORRECTED",
            "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
        },
        ANCIENT,
    )
    _spark_written(
        spark,
        root,
        "p=legacymicros",
        {
            **base,
            "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
            "spark.sql.parquet.datetimeRebaseModeInWrite": "LEGACY",
        },
        ANCIENT,
    )
    truth = spark.read.parquet(root)
    sieve = spark.read.format("sieve").load(root)
    assert sieve.schema == truth.schema
    assert _strings(sieve) == _strings(truth)  # rows read by the sieve source's own reader
    # the index maps every key to the files Spark finds it in (keys read with read_file_keys)
    from pyspark.sql import functions as F

    # both structures: segments (keys by read_file_keys) and hashed (hashes by hashed.read_file_hashes, footer ranges)
    for column, structure in [(c, st) for c in ("ts", "d") for st in ("segments", "hashed")]:
        where_index = f"{tmp_path}/idx_{structure}/{column}"
        S.build(spark, root, column, engine="pyarrow", structure=structure, index_path=where_index)
        idx = open_index(root, column, index_path=where_index)
        in_range = truth.where("ts < timestamp'9999-01-01'")  # a Python datetime's range, in any zone
        per_value = (
            in_range.withColumn("file", F.input_file_name())
            .groupBy(column)
            .agg(F.collect_set("file").alias("f"))
            .collect()
        )
        for row in per_value:
            got = {spark_uri(f) for f in idx.lookup(S.Eq(row[column])).files}
            assert set(row["f"]) <= got, (column, structure, row[column])
        old = idx.lookup(S.Range(None, row[column], high_inclusive=True)).files  # a range through footer bounds
        assert set(row["f"]) <= {spark_uri(f) for f in old}, (column, structure, "range")
    for where in (
        f"ts = timestamp'1500-06-01 00:00:00 {zone}'",
        "d = date'1000-01-05'",
        "ts > timestamp'2200-01-01'",
        "d < date'1600-01-01'",
        f"ts < timestamp'1900-01-01 00:00:00 {zone}'",
    ):
        want = _strings(truth.where(where))
        assert want, where
        assert _strings(spark.read.format("sieve").load(root).where(where)) == want, where
    old_dates = _strings(S.read(spark, root, "d", S.Range(None, dt.date(1600, 1, 1), high_inclusive=False)))
    assert old_dates == _strings(truth.where("d < date'1600-01-01'"))


def test_nulls_in_a_column_spark_wrote_as_not_nullable(registered, tmp_path) -> None:
    spark = registered
    root = str(tmp_path / "t")
    spark.range(3).write.parquet(f"{root}/p=1")  # id: bigint NOT NULL in the Spark schema of the footer
    _pq(pa.table({"id": pa.array([None, 7], pa.int64())}), f"{root}/p=2/b.parquet")
    truth = spark.read.parquet(root)
    assert all(f.nullable for f in truth.schema.fields)
    S.build(None, root, "id")
    sieve = spark.read.format("sieve").load(root)
    assert sieve.schema == truth.schema
    for where in ("id IS NULL", "id = 7", "id < 2"):
        assert _strings(sieve.where(where)) == _strings(truth.where(where)), where
    assert _strings(S.read(spark, root, "id", S.IsNull())) == _strings(truth.where("id IS NULL"))


def test_column_name_case_differs_between_files(registered, tmp_path) -> None:
    spark = registered
    root = str(tmp_path / "t")
    _pq(pa.table({"k": pa.array([1, 2], pa.int64())}), f"{root}/a.parquet")
    _pq(pa.table({"K": pa.array([3, 40], pa.int64())}), f"{root}/b.parquet")
    truth = spark.read.parquet(root)
    S.build(None, root, "k")
    assert set(open_index(root, "k").lookup(S.Eq(40)).files) == {f"{root}/b.parquet"}
    for where in ("k = 40", "k > 1", "k IS NULL"):
        want = _strings(truth.where(where))
        assert _strings(spark.read.format("sieve").load(root).where(where)) == want, where
    assert _strings(S.read(spark, root, "k", S.Eq(40))) == [("40",)]


def test_unsigned_and_narrower_file_types(registered, tmp_path) -> None:
    spark = registered
    root = str(tmp_path / "t")
    _pq(
        pa.table({"k": pa.array([1, 6_000_000_000], pa.int64()), "u": pa.array([0, 255], pa.uint8())}),
        f"{root}/a.parquet",
    )
    _pq(
        pa.table({"k": pa.array([5, 7], pa.int32()), "u": pa.array([3, 200], pa.uint8())}),
        f"{root}/b.parquet",
    )  # an INT32 file under the BIGINT schema the first file gives
    truth = spark.read.parquet(root)
    S.build(None, root, "k")
    S.build(None, root, "u")
    sieve = spark.read.format("sieve").load(root)
    assert sieve.schema == truth.schema
    for where in ("u > -1", "u = 255", "u < 300", "k > 5000000000", "k = 7", "k < -3000000000"):
        assert _strings(sieve.where(where)) == _strings(truth.where(where)), where


def test_a_variant_column_reads_as_spark_reads_it(registered, tmp_path) -> None:
    spark = registered
    query = """SELECT id AS k, parse_json('{"a": ' || id || '}') AS v FROM range(4)"""
    plain, shredded = str(tmp_path / "plain"), str(tmp_path / "shredded")
    spark.conf.set("spark.sql.variant.writeShredding.enabled", "false")
    try:
        spark.sql(query).write.parquet(plain)  # value + metadata binaries
    finally:
        spark.conf.unset("spark.sql.variant.writeShredding.enabled")
    spark.sql(query).write.parquet(shredded)  # Spark 4.1's default: shredded (typed_value)
    for root in (plain, shredded):
        S.build(None, root, "k")
    truth = spark.read.parquet(plain)
    sieve = spark.read.format("sieve").load(plain)
    assert sieve.schema == truth.schema
    assert _strings(sieve.where("k = 2")) == _strings(truth.where("k = 2")) == [("2", '{"a":2}')]
    # shredded: no Python decoder, so load() reads natively and the source's error says so
    assert _strings(sieve_spark.load(spark, shredded, "k = 2")) == [("2", '{"a":2}')]
    with pytest.raises(Exception, match=r"stored shredded.*spark\.read\.parquet after .*sieve\.spark\.enable\(spark\)"
                                         r".*sieve\.spark\.load"):
        spark.read.format("sieve").load(shredded).where("k = 2").collect()
    # the fix the error names: Spark's own reader, narrowed to the index's candidates
    sieve_spark.enable(spark)
    try:
        df = spark.read.parquet(shredded).where("k = 2")
        assert _strings(df) == [("2", '{"a":2}')]
        files = {os.path.normpath(p.removeprefix("file:")) for p in df.inputFiles()}
        assert files == set(S.open_index(shredded, "k").candidates(S.Eq(2)))
    finally:
        sieve_spark.disable(spark)


def test_session_settings_case_sensitive_and_no_partition_inference(spark, tmp_path) -> None:
    root = str(tmp_path / "t")
    _pq(pa.table({"k": pa.array([1, 2], pa.int64())}), f"{root}/d=1e3/a.parquet")
    _pq(pa.table({"K": pa.array([3, 40], pa.int64())}), f"{root}/d=7/b.parquet")
    settings = {
        "spark.sql.caseSensitive": "true",
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    }
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        sieve_spark.register(spark)  # the source takes the session's settings
        truth = spark.read.parquet(root)
        assert truth.schema["d"].dataType.simpleString() == "string"
        sieve = spark.read.format("sieve").load(root)
        assert sieve.schema == truth.schema
        assert _strings(sieve) == _strings(truth)  # b's K is not k: NULLs, as Spark reads it
        assert _strings(sieve_spark.load(spark, root, "d = '1e3'", native_share=2.0)) == _strings(
            truth.where("d = '1e3'")
        )
    finally:
        for key in settings:
            spark.conf.unset(key)
        sieve_spark.register(spark)
