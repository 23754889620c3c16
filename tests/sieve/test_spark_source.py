"""``spark.read.format("sieve")``: pushed filters pick files through the index, never a wrong answer.

Two levels: the planner and reader run in this process (no Spark: many random tables and filters
against a ground truth computed row by row), and real Spark ``local[2]`` for each filter kind, SQL,
stale and damaged indexes, a partitioned table and S3 (moto's server on 127.0.0.1), compared with
``spark.read.parquet`` under the same filter.
"""
from __future__ import annotations

import datetime as dt
import logging
import os
import shutil
from collections import Counter
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import datasource as D

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve import spark as sieve_spark
from airflow_provider_lineage.sieve.errors import SieveError
from airflow_provider_lineage.sieve.spark.source import SieveDataSource, SieveReader

from .helpers import write_file


def _rows(df: Any) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


@pytest.fixture()
def part_table(tmp_path) -> str:
    """Three files in two partitions; ``k`` indexed (a NULL in a.parquet)."""
    root = str(tmp_path / "pt")
    write_file(f"{root}/p=1/a.parquet", [1, 2, 3, None])
    write_file(f"{root}/p=1/b.parquet", [100, 101])
    write_file(f"{root}/p=2/c.parquet", [2, 500])
    S.build(None, root, "k")
    return root


def register_one_file_per_task(spark: Any) -> None:
    """Register the source with ``openCostInBytes`` above ``maxPartitionBytes``: Spark's packing (and the source's)
    then gives every file its own task, so a scan's ``getNumPartitions()`` counts the files it reads."""
    spark.conf.set("spark.sql.files.openCostInBytes", "256m")
    try:
        sieve_spark.register(spark)
    finally:
        spark.conf.unset("spark.sql.files.openCostInBytes")


@pytest.fixture()
def registered(spark):
    register_one_file_per_task(spark)
    yield spark
    sieve_spark.register(spark)  # the session's own packing again


# ---- Spark versions ----------------------------------------------------------------------------------
@pytest.mark.parametrize("version", ["3.5.3", "4.0.1", "4.0.0-preview2"])
def test_register_refuses_spark_without_python_filter_pushdown(version) -> None:
    with pytest.raises(SieveError, match=r"no filter push-down.*sieve\.read\(spark"):
        sieve_spark.check_spark_version(version)


def test_register_accepts_41_and_turns_pushdown_on(registered) -> None:
    sieve_spark.check_spark_version("4.1.0")
    sieve_spark.check_spark_version("5.0.0")
    assert registered.conf.get(sieve_spark.PUSHDOWN_CONF) == "true"


def test_register_can_leave_the_session_setting_alone(spark, part_table) -> None:
    spark.conf.set(sieve_spark.PUSHDOWN_CONF, "false")
    try:
        sieve_spark.register(spark, enable_pushdown=False)
        assert spark.conf.get(sieve_spark.PUSHDOWN_CONF) == "false"
        with pytest.raises(Exception, match="DATA_SOURCE_PUSHDOWN_DISABLED"):
            spark.read.format("sieve").load(part_table).where("k = 2").collect()
        sieve_spark.register(spark)
        assert spark.conf.get(sieve_spark.PUSHDOWN_CONF) == "true"
        assert _rows(spark.read.format("sieve").load(part_table).where("k = 2")) == [(2, 0, 2), (2, 1, 1)]
    finally:
        spark.conf.set(sieve_spark.PUSHDOWN_CONF, "true")


# ---- each filter kind through real Spark -------------------------------------------------------------
CASES = [  # condition, files the scan reads (one input partition each)
    ("k = 2", 2),
    ("k IN (100, 500)", 2),
    ("k BETWEEN 3 AND 100", 2),
    ("k > 1 AND k < 3", 2),
    ("k IS NULL", 1),
    ("k <=> 101", 1),
    ("k = 2 AND p = 2", 1),
    ("k = 42", 1),  # no file can match: Spark's one empty partition
    ("v = 1 OR k = 2", 3),  # a disjunction and a column without an index stay with Spark: every file
]


@pytest.mark.parametrize(("condition", "files"), CASES)
def test_each_filter_kind_prunes_and_equals_parquet(registered, part_table, condition, files) -> None:
    spark = registered
    df = spark.read.format("sieve").load(part_table).where(condition)
    assert df.rdd.getNumPartitions() == files
    assert _rows(df) == _rows(spark.read.parquet(part_table).where(condition))


def test_schema_and_sql_through_a_temporary_view(registered, part_table) -> None:
    spark = registered
    df = spark.read.format("sieve").load(part_table)
    assert df.schema == spark.read.parquet(part_table).schema
    df.createOrReplaceTempView("sieve_sales")
    got = spark.sql("SELECT k, p FROM sieve_sales WHERE k IN (2, 101) ORDER BY k, p").collect()
    assert [tuple(r) for r in got] == [(2, 1), (2, 2), (101, 1)]


def test_columns_option_projects(registered, part_table) -> None:
    spark = registered
    df = spark.read.format("sieve").option("columns", "k,p").load(part_table).where("k = 500")
    assert df.columns == ["k", "p"] and _rows(df) == [(500, 2)]
    with pytest.raises(Exception, match="nope"):
        spark.read.format("sieve").option("columns", "k,nope").load(part_table).schema  # noqa: B018


def test_bad_freshness_and_missing_table_are_clear_errors(registered, part_table, tmp_path) -> None:
    spark = registered
    with pytest.raises(Exception, match="freshness='often' is unknown"):
        spark.read.format("sieve").option("freshness", "often").load(part_table)
    with pytest.raises(Exception, match="does not exist"):
        spark.read.format("sieve").load(str(tmp_path / "nowhere"))


def test_stale_index_reads_new_files_and_skips_removed(registered, part_table) -> None:
    spark = registered
    write_file(f"{part_table}/p=2/d.parquet", [2, 7])  # added after the build: unindexed, read
    os.remove(f"{part_table}/p=1/b.parquet")  # removed: never read
    for condition, files in [("k = 2", 3), ("k = 101", 0), ("k = 7", 1)]:
        df = spark.read.format("sieve").load(part_table).where(condition)
        assert df.rdd.getNumPartitions() == max(files, 1), condition
        assert _rows(df) == _rows(spark.read.parquet(part_table).where(condition)), condition
    df = spark.read.format("sieve").option("freshness", "names").load(part_table).where("k = 7")
    assert _rows(df) == [(7, 1, 2)]


def test_damaged_index_reads_every_file_and_logs_why(registered, part_table, caplog) -> None:
    spark = registered
    manifest_dir = os.path.join(part_table, "_sieve", "k")
    for name in os.listdir(manifest_dir):
        path = os.path.join(manifest_dir, name)
        if os.path.isfile(path):
            with open(path, "r+b") as fh:  # every file of the index: whatever it reads is damaged
                fh.seek(0)
                fh.write(b"garbage!")
    df = spark.read.format("sieve").load(part_table).where("k = 2")
    assert df.rdd.getNumPartitions() == 3
    assert _rows(df) == _rows(spark.read.parquet(part_table).where("k = 2"))
    # the reason, from the planner (run here in-process, as Spark's planner worker runs it)
    reader = _reader(part_table)
    with caplog.at_level(logging.WARNING, logger="airflow_provider_lineage.sieve.spark.source"):
        reader.pushFilters([D.EqualTo(("k",), 2)])
        assert len(reader.candidate_files()) == 3
    assert "Sieve: full read of" in caplog.text and "for k" in caplog.text


def test_missing_index_is_a_plain_read(registered, part_table) -> None:
    spark = registered
    shutil.rmtree(os.path.join(part_table, "_sieve"))
    df = spark.read.format("sieve").load(part_table).where("k = 2")
    assert df.rdd.getNumPartitions() == 3
    assert _rows(df) == _rows(spark.read.parquet(part_table).where("k = 2"))


def test_partitioned_table_types_as_sparks_parquet_reader(registered, tmp_path) -> None:
    """Partition folders of several types, a NULL partition and a column of every key kind."""
    spark = registered
    root = str(tmp_path / "typed")
    rows = [
        ("n=1/day=2024-01-01/s=a", [1, 2], "x"),
        ("n=2/day=2024-01-02/s=b%20c", [3, None], "y"),
        ("n=__HIVE_DEFAULT_PARTITION__/day=2024-01-03/s=__HIVE_DEFAULT_PARTITION__", [4], "z"),
    ]
    for i, (folder, keys, name) in enumerate(rows):
        os.makedirs(f"{root}/{folder}", exist_ok=True)
        pq.write_table(pa.table({
            "k": pa.array(keys, pa.int64()),
            "name": pa.array([f"{name}{j}" for j in range(len(keys))]),
            "when": pa.array([dt.date(2024, 1, 1 + i)] * len(keys)),
            "at": pa.array([dt.datetime(2024, 1, 1, i, tzinfo=dt.UTC)] * len(keys), pa.timestamp("us", tz="UTC")),
            "amount": pa.array([None] * len(keys), pa.decimal128(10, 2)),
        }), f"{root}/{folder}/part-{i}.parquet")
    S.build(None, root, "k")
    S.build(None, root, "name")
    S.build(None, root, "when")
    S.build(None, root, "at")
    full = spark.read.parquet(root)
    df = spark.read.format("sieve").load(root)
    assert df.schema == full.schema
    assert _rows(df) == _rows(full)
    for condition, files in [
        ("name = 'y0'", 1),
        ("name LIKE 'z%'", 1),
        ("`when` >= DATE'2024-01-02'", 2),
        ("at = TIMESTAMP'2024-01-01 01:00:00'", 1),
        ("n = 2", 1),
        ("s = 'b c'", 1),
    ]:  # a DataFrame per query: one reused within seconds reads its earlier scans' files too (.plans)
        got = spark.read.format("sieve").load(root).where(condition)
        assert got.rdd.getNumPartitions() == files, condition
        assert _rows(got) == _rows(full.where(condition)), condition


def test_load_reads_wide_scans_natively(registered, part_table) -> None:
    spark = registered
    narrow = sieve_spark.load(spark, part_table, "k = 500", native_share=0.5)  # 1 of 3 files
    wide = sieve_spark.load(spark, part_table, "k >= 0", native_share=0.5)
    assert "sieve" in narrow._jdf.queryExecution().executedPlan().toString()
    assert "parquet" in wide._jdf.queryExecution().executedPlan().toString().lower()
    assert _rows(narrow) == [(500, 1, 2)]
    assert _rows(wide) == _rows(spark.read.parquet(part_table).where("k >= 0"))
    everything = sieve_spark.load(spark, part_table, "k >= 0", native_share=1.01)
    assert "sieve" in everything._jdf.queryExecution().executedPlan().toString()


# ---- the planner and reader in this process: random tables and filters -------------------------------
def _reader(root: str, shared: bool = False, **options: str) -> SieveReader:
    """The planner as Spark runs it; ``shared=False``: as on a Spark that keeps one read per scan."""
    opts = {"path": root, **options}
    source = SieveDataSource(opts)
    reader = source.reader(source.schema())
    reader.shared = shared and reader.shared
    return reader


def _scan(reader: SieveReader, filters: list[Any]) -> tuple[list[tuple], list[Any], list[str]]:
    kept = list(reader.pushFilters(filters))
    parts = reader.partitions()  # packed as Spark packs (small files: a few tasks of several files)
    rows: list[tuple] = []
    for p in parts or [None]:
        for batch in reader.read(p):
            rows.extend(tuple(r.values()) for r in batch.to_pylist())
    return rows, kept, [f.path for p in parts for f in p.files]


def _holds(f: Any, row: dict[str, Any]) -> bool:
    """Spark's WHERE semantics of one pushed filter on one row (NULL is not true)."""
    if isinstance(f, D.Not):
        inner = _holds(f.child, row)
        return not inner and row[f.child.attribute[0]] is not None
    v = row[f.attribute[0]]
    if isinstance(f, D.IsNull):
        return v is None
    if isinstance(f, D.IsNotNull):
        return v is not None
    if isinstance(f, D.EqualNullSafe):
        return v == f.value
    if v is None:
        return False
    return {D.EqualTo: lambda: v == f.value, D.In: lambda: v in [x for x in f.value if x is not None],
            D.GreaterThan: lambda: v > f.value, D.GreaterThanOrEqual: lambda: v >= f.value,
            D.LessThan: lambda: v < f.value, D.LessThanOrEqual: lambda: v <= f.value}[type(f)]()


KEYS = st.one_of(st.none(), st.integers(0, 60))
FILES = st.lists(st.tuples(st.integers(1, 3), st.lists(KEYS, min_size=1, max_size=8)), min_size=1, max_size=6)
VALUES = st.integers(-2, 62)
FILTER = st.one_of(
    st.builds(lambda v: D.EqualTo(("k",), v), VALUES),
    st.builds(lambda v: D.EqualNullSafe(("k",), v), st.one_of(st.none(), VALUES)),
    st.builds(lambda vs: D.In(("k",), tuple(vs)), st.lists(st.one_of(st.none(), VALUES), max_size=4)),
    st.builds(lambda v: D.GreaterThan(("k",), v), VALUES),
    st.builds(lambda v: D.GreaterThanOrEqual(("k",), v), VALUES),
    st.builds(lambda v: D.LessThan(("k",), v), VALUES),
    st.builds(lambda v: D.LessThanOrEqual(("k",), v), VALUES),
    st.just(D.IsNull(("k",))),
    st.just(D.IsNotNull(("k",))),
    st.builds(lambda v: D.Not(D.EqualTo(("k",), v)), VALUES),
    st.builds(lambda v: D.EqualTo(("p",), v), st.integers(0, 4)),
    st.builds(lambda v: D.GreaterThan(("v",), v), st.integers(0, 8)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=FILES, later=st.lists(st.tuples(st.integers(1, 3), st.lists(KEYS, min_size=1, max_size=5)), max_size=2),
       remove=st.booleans(), filters=st.lists(FILTER, min_size=1, max_size=3))
def test_pushed_filters_never_drop_a_matching_row(tmp_path_factory, files, later, remove, filters) -> None:
    root = str(tmp_path_factory.mktemp("rand"))
    table: dict[str, list[Any]] = {}
    for i, (p, keys) in enumerate(files):
        path = f"{root}/p={p}/f{i}.parquet"
        write_file(path, keys)
        table[path] = [(k, j, p) for j, k in enumerate(keys)]
    S.build(None, root, "k")
    for i, (p, keys) in enumerate(later):  # after the build: the index is stale
        path = f"{root}/p={p}/g{i}.parquet"
        write_file(path, keys)
        table[path] = [(k, j, p) for j, k in enumerate(keys)]
    if remove and len(table) > 1:
        gone = min(table)
        os.remove(gone)
        del table[gone]
    rows, kept, read = _scan(_reader(root), list(filters))
    rows = [r for r in rows if all(_holds(f, dict(zip("kvp", r))) for f in kept)]  # what Spark still filters
    expected = [r for rs in table.values() for r in rs if all(_holds(f, dict(zip("kvp", r))) for f in filters)]
    assert Counter(rows) == Counter(expected)
    holding = {
        path for path, rs in table.items() if any(all(_holds(f, dict(zip("kvp", r))) for f in filters) for r in rs)
    }
    assert holding <= set(read)
    assert all(isinstance(f, D.Not | D.IsNotNull) or f.attribute == ("v",) for f in kept)


def test_string_prefix_and_decimal_and_binary_columns(tmp_path) -> None:
    root = str(tmp_path / "kinds")
    values = [("C-0001", b"\x00\x01", "1.50"), ("C-0002", b"\x00\x02", "2.00"), ("D-0001", b"\xff", None),
              ("C-0001\U0010ffff", b"\x00", "3.25")]
    os.makedirs(root)
    for i, (s, b, d) in enumerate(values):
        pq.write_table(pa.table({"s": [s], "b": pa.array([b], pa.binary()),
                                 "d": pa.array([None if d is None else Decimal(d)], pa.decimal128(10, 2))}),
                       f"{root}/f{i}.parquet")
    for col in ("s", "b", "d"):
        S.build(None, root, col)

    for filters, expected in [
        ([D.StringStartsWith(("s",), "C-0001")], {"C-0001", "C-0001\U0010ffff"}),
        ([D.StringStartsWith(("s",), "C-")], {"C-0001", "C-0002", "C-0001\U0010ffff"}),
        ([D.EqualTo(("b",), b"\xff")], {"D-0001"}),
        ([D.In(("d",), (Decimal("1.50"), Decimal("3.25")))], {"C-0001", "C-0001\U0010ffff"}),
        ([D.GreaterThan(("d",), Decimal("1.50")), D.LessThan(("s",), "C-0002")], {"C-0001\U0010ffff"}),
    ]:
        rows, kept, read = _scan(_reader(root), filters)
        assert not kept and {r[0] for r in rows} == expected, filters
        assert len(read) == len(expected), filters


# ---- S3 (moto's server on 127.0.0.1) ---------------------------------------------------------------
def test_s3_table_through_the_sieve_fs_layer(registered) -> None:
    pytest.importorskip("moto.server", reason="moto[server] is in the dev extra: ./dev.sh setup")
    from tests.support.s3 import ENV, new_bucket, put_parquet, s3_server

    spark = registered
    sc = spark.sparkContext
    saved = dict(sc.environment)
    with s3_server() as endpoint:
        try:
            # Spark's Python workers get the session's environment (spark.executorEnv.* on a cluster)
            sc.environment.update(ENV, AWS_ENDPOINT_URL=endpoint)
            register_one_file_per_task(spark)
            root = f"s3://{new_bucket()}/sales"
            layout = {}
            for i in range(4):
                keys = list(range(i * 10, i * 10 + 15)) + ([None] if i == 1 else [])
                path = f"{root}/day=2024-01-0{i + 1}/part-{i}.parquet"
                put_parquet(path, keys)
                layout[path] = keys
            S.build(None, root, "k")
            df = spark.read.format("sieve").load(root)
            assert [f.name for f in df.schema.fields] == ["k", "v", "day"]
            for condition, expected in [
                ("k = 12", {(12, 1), (12, 2)}),
                ("k >= 44", {(44, 4)}),
                ("k IS NULL", {(None, 2)}),
            ]:
                got = spark.read.format("sieve").load(root).where(condition)  # a DataFrame per query (.plans)
                assert {(r.k, r.day.day) for r in got.collect()} == expected, condition
                assert got.rdd.getNumPartitions() == len(expected), condition
            put_parquet(f"{root}/day=2024-01-05/part-9.parquet", [12])  # stale: read as unindexed
            assert df.where("k = 12").count() == 3
        finally:
            sc.environment.clear()
            sc.environment.update(saved)
            sieve_spark.register(spark)


# ---- the reader worker's path: light imports, cheap task start -----------------------------------------
_WORKER = """
import pickle, sys, zipimport
reader, partition = pickle.loads(sys.stdin.buffer.read())
rows = sum(b.num_rows for b in reader.read(partition))
heavy = [m for m in ("pyarrow.dataset", "airflow_provider_lineage.sieve.query", "airflow_provider_lineage.sieve.hashed",
                     "airflow_provider_lineage.sieve.table") if m in sys.modules]
zips = [k for k, v in sys.path_importer_cache.items() if isinstance(v, zipimport.zipimporter)]
print(rows, heavy, len(zips) if sys.version_info < (3, 13) else 0)
"""


def test_reader_worker_imports_no_planner_modules_and_keeps_no_zip_importers(part_table, tmp_path) -> None:
    """What Spark's reader worker does with a task: unpickle the reader and its partition and read. It
    must not import the planner's modules (the index, the listing) or pyarrow.dataset, and must leave no
    zip importer for the next task's importlib.invalidate_caches() to re-read (Python < 3.13)."""
    import pickle
    import subprocess
    import sys
    import zipfile

    reader = _reader(part_table)
    reader.pushFilters([D.EqualTo(("k",), 2)])
    part = next(p for p in reader.candidate_files() if p.path.endswith("a.parquet"))
    archive = tmp_path / "lib.zip"  # a package imported from a zip, as Spark's workers import pyspark
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipped_pkg/__init__.py", "")
        z.writestr("zipped_pkg/sub/__init__.py", "")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(archive), os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    code = "import zipped_pkg.sub\n" + _WORKER
    out = subprocess.run([sys.executable, "-c", code], input=pickle.dumps((reader, part)), env=env,
                         capture_output=True, check=True).stdout.decode().split(None, 1)
    assert out[0] == "1"  # the one row with k = 2 in a.parquet
    assert out[1].strip() == "[] 0"


# ---- Spark 4.1 keeps one planned read per relation (issue 48) -----------------------------------------
@pytest.fixture()
def wide_table(tmp_path) -> str:
    """Six files, each holding keys i*1000+6 and i*1000+203; ``k`` indexed."""
    root = str(tmp_path / "wide")
    os.makedirs(root)
    for i in range(6):
        pq.write_table(pa.table({"k": pa.array([i * 1000 + 6, i * 1000 + 203], pa.int64()), "v": [1, 2]}),
                       f"{root}/f{i}.parquet")
    S.build(None, root, "k")
    return root


def test_a_relation_scanned_twice_in_one_query_answers_as_parquet(registered, wide_table) -> None:
    """Union, self-join, EXISTS and a temporary view scanned twice: Spark 4.1 reads every scan of the
    relation with the read planned last; the answer is still ``spark.read.parquet``'s, through
    ``format("sieve")`` and through ``S.read``."""
    spark = registered
    df = spark.read.format("sieve").load(wide_table)
    pdf = spark.read.parquet(wide_table)
    cases = [
        (df.where("k = 6").union(df.where("k = 1203")), pdf.where("k = 6").union(pdf.where("k = 1203"))),
        (df.where("k = 6").alias("a").join(df.where("k = 1006").alias("b"), "v"),
         pdf.where("k = 6").alias("a").join(pdf.where("k = 1006").alias("b"), "v")),
    ]
    for got, expected in cases:
        assert _rows(expected) and _rows(got) == _rows(expected)
    df.createOrReplaceTempView("sieve_twice")
    pdf.createOrReplaceTempView("parquet_twice")
    for sql in ("SELECT * FROM {t} a WHERE k = 6 AND EXISTS (SELECT 1 FROM {t} b WHERE b.k = 1006 AND b.v = a.v)",
                "SELECT * FROM {t} WHERE k = 6 UNION ALL SELECT * FROM {t} WHERE k = 5203"):
        expected = _rows(spark.sql(sql.format(t="parquet_twice")))
        assert expected and _rows(spark.sql(sql.format(t="sieve_twice"))) == expected, sql
    a, b = S.read(spark, wide_table, "k", S.Eq(6)), S.read(spark, wide_table, "k", S.Eq(1203))
    assert _rows(a.union(b)) == _rows(pdf.where("k = 6").union(pdf.where("k = 1203")))
    # a DataFrame per query still reads only its own files
    assert spark.read.format("sieve").load(wide_table).where("k = 6").rdd.getNumPartitions() == 1


def test_plans_of_one_relation_read_each_others_files(wide_table) -> None:
    """The planner under Spark 4.1: the later plan of a relation reads the earlier plan's files too and
    filters no row (Spark does, as the plan claims no filter); a new relation starts afresh."""
    source = SieveDataSource({"path": wide_table})
    first, second = source.reader(source.schema()), source.reader(source.schema())
    assert first.shared and second.shared
    one = D.EqualTo(("k",), 6)
    assert first.pushFilters([one]) == [one]  # claimed none: Spark filters every row again
    assert [p.path.rsplit("/", 1)[1] for p in first.candidate_files()] == ["f0.parquet"]
    second.pushFilters([D.EqualTo(("k",), 1203)])
    parts = second.candidate_files()
    assert [p.path.rsplit("/", 1)[1] for p in parts] == ["f0.parquet", "f1.parquet"]
    assert not any(p.filter_rows for p in parts)
    rows = [r for p in parts for batch in second.read(p) for r in batch.to_pylist()]
    assert sorted(r["k"] for r in rows) == [6, 203, 1006, 1203]  # every row: Spark's filters decide
    other = SieveDataSource({"path": wide_table})
    alone = other.reader(other.schema())
    alone.pushFilters([D.EqualTo(("k",), 1203)])
    assert [(p.path.rsplit("/", 1)[1], p.filter_rows) for p in alone.candidate_files()] == [("f1.parquet", True)]


def test_underscore_columns_are_indexed_and_folders_without_an_index_are_not(registered, tmp_path) -> None:
    """An index on ``_id`` prunes; an empty ``_sieve/k`` folder (a build that never committed) is no index:
    Spark keeps its filter, and the answer is ``spark.read.parquet``'s."""
    spark = registered
    root = str(tmp_path / "under")
    os.makedirs(root)
    for i in range(3):
        pq.write_table(pa.table({"_id": pa.array([i * 10, i * 10 + 1], pa.int64()),
                                 "k": pa.array([i, i], pa.int64())}), f"{root}/f{i}.parquet")
    S.build(None, root, "_id")
    os.makedirs(f"{root}/_sieve/k")
    df = spark.read.format("sieve").load(root).where("_id = 11")
    assert df.rdd.getNumPartitions() == 1
    assert _rows(df) == _rows(spark.read.parquet(root).where("_id = 11")) == [(11, 1)]
    assert _rows(S.read(spark, root, "_id", S.Eq(11))) == [(11, 1)]
    reader = _reader(root)
    kept = reader.pushFilters([D.EqualTo(("k",), 1), D.EqualTo(("_id",), 11)])
    assert kept == [D.EqualTo(("k",), 1)]  # not an index: Spark filters k
    assert _rows(spark.read.format("sieve").load(root).where("k = 1")) == \
        _rows(spark.read.parquet(root).where("k = 1"))


# ---- candidate files packed into tasks as Spark's file sources pack them (issue 49 item 7) ---------------
def _sized_table(root: str, n: int = 14) -> None:
    """``n`` files of distinct sizes (``i * 37 + 5`` rows each); ``k`` indexed."""
    os.makedirs(root)
    for i in range(n):
        rows = i * 37 + 5
        pq.write_table(pa.table({"k": pa.array(range(i * 1000, i * 1000 + rows), pa.int64()),
                                 "v": pa.array([i] * rows, pa.int64())}), f"{root}/f{i:02d}.parquet")
    sizes = [os.path.getsize(f"{root}/f{i:02d}.parquet") for i in range(n)]
    assert len(set(sizes)) == n  # no ties: Spark's order among equal sizes is its listing's
    S.build(None, root, "k")


def _spark_groups(spark: Any, root: str) -> set[frozenset[str]]:
    """The files of each input partition of ``spark.read.parquet(root)`` (Spark's own packing)."""
    from pyspark.sql import functions as fn

    rows = spark.read.parquet(root).select(fn.input_file_name().alias("f"), fn.spark_partition_id().alias("p"))
    groups: dict[int, set[str]] = {}
    for r in rows.distinct().collect():
        groups.setdefault(r.p, set()).add(os.path.basename(r.f))
    return {frozenset(g) for g in groups.values()}


@pytest.mark.parametrize("conf", [{}, {"spark.sql.files.maxPartitionBytes": "9m"},
                                  {"spark.sql.files.maxPartitionBytes": "12MB",
                                   "spark.sql.files.openCostInBytes": "3m"},
                                  {"spark.sql.files.minPartitionNum": "5"}])
def test_files_are_packed_into_tasks_as_spark_packs_them(spark, tmp_path, conf) -> None:
    """The source's tasks hold the same files as ``spark.read.parquet``'s under the session's settings (Spark itself
    is the reference: ``input_file_name()`` and ``spark_partition_id()`` of its scan)."""
    from airflow_provider_lineage.sieve.spark.source import packing_options

    root = str(tmp_path / "sized")
    _sized_table(root)
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        want = _spark_groups(spark, root)
        reader = _reader(root, **packing_options(spark))
        reader.pushFilters([])
        got = {frozenset(os.path.basename(f.path) for f in p.files) for p in reader.partitions()}
        assert got == want
        sieve_spark.register(spark)
        df = spark.read.format("sieve").load(root)
        assert df.rdd.getNumPartitions() == len(want) == spark.read.parquet(root).rdd.getNumPartitions()
        assert _rows(df) == _rows(spark.read.parquet(root))
        picked = spark.read.format("sieve").load(root).where("k IN (4, 13040)")
        assert _rows(picked) == [(13040, 13), (4, 0)]  # sorted by repr
    finally:
        for key in conf:
            spark.conf.unset(key)
        sieve_spark.register(spark)


def test_byte_sizes_and_packing_options_are_read_as_spark_reads_them() -> None:
    from airflow_provider_lineage.sieve.spark.source import FilePartition, _byte_size, pack

    assert [_byte_size(v) for v in ("134217728", "128m", "128MB", "4k", "1g", " 2 mb ")] == [
        134217728, 128 << 20, 128 << 20, 4096, 1 << 30, 2 << 20]
    with pytest.raises(SieveError, match="not a byte size.*128MB"):
        _byte_size("lots")
    files = [FilePartition(f"/t/f{i}") for i in range(4)]
    sizes = {"/t/f0": 10, "/t/f1": 40, "/t/f2": 30, "/t/f3": 20}
    # split = min(100, max(5, (100 + 20) // 1)) = 100: f1+f2+f3 (105 with open costs) then f0
    packed = pack(files, sizes, {"maxPartitionBytes": "100", "openCostInBytes": "5"})
    assert [[f.path for f in p.files] for p in packed] == [["/t/f1", "/t/f2", "/t/f3"], ["/t/f0"]]
    # an open cost at the split size: every file its own task
    packed = pack(files, sizes, {"maxPartitionBytes": "100", "openCostInBytes": "100"})
    assert len(packed) == 4
