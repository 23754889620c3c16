"""``sieve.spark.enable(spark)``: ordinary Parquet scans read only the index's candidate files, through
Spark's own reader, and answer exactly as without it (real Spark ``local[2]``).

Each case compares, for one condition, the rows with and without the rule, and the files the scan reads
(``inputFiles()`` and the scan's ``number of files read`` metric) with the index's own candidates.
"""

from __future__ import annotations

import json
import logging
import os
import random
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve import spark as sieve_spark
from airflow_provider_lineage.sieve.predicates import Eq, In, IsNull, Range
from airflow_provider_lineage.sieve.spark import prune

from .helpers import write_file

N_FILES = 12
ROWS = 40


def _rows(df: Any) -> list[str]:
    """The rows as sorted reprs (NaN equals NaN)."""
    return sorted(repr(tuple(r)) for r in df.collect())


def _local(path: str) -> str:
    return path.removeprefix("file:")


def _files_read(df: Any) -> set[str]:
    return {os.path.normpath(_local(p)) for p in df.inputFiles()}


def _scan_metric(spark: Any, df: Any) -> int:
    """The Parquet scan's ``number of files read`` after running ``df`` (SQL metrics of the executed plan)."""
    df.collect()
    plan = df._jdf.queryExecution().executedPlan()
    text = []
    stack = [plan]
    while stack:
        node = stack.pop()
        name = node.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            stack.append(node.executedPlan())
            continue
        if name == "FileSourceScanExec":
            return int(node.metrics().apply("numFiles").value())
        text.append(name)
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    raise AssertionError(f"no FileSourceScanExec in {text}")


def _write(path: str, ks: list[int | None], cs: list[int]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(
        pa.table(
            {
                "k": pa.array(ks, pa.int64()),
                "c": pa.array(cs, pa.int64()),
                "v": pa.array(range(len(ks)), pa.int64()),
            }
        ),
        path,
    )


def _table(root: str, layout: str, structure: str) -> dict[str, list[int | None]]:
    """``N_FILES`` files; ``k`` sorted across files (``sorted``) or random (``random``), a NULL in one file;
    ``c`` a second indexed column (the file number times 10, plus 0..3)."""
    rng = random.Random(7)
    keys = list(range(N_FILES * ROWS))
    if layout == "random":
        rng.shuffle(keys)
    layout_keys: dict[str, list[int | None]] = {}
    for i in range(N_FILES):
        ks: list[int | None] = list(keys[i * ROWS : (i + 1) * ROWS])
        if i == 3:
            ks[0] = None
        path = os.path.join(root, f"part-{i:03d}.parquet")
        _write(path, ks, [i * 10 + j % 4 for j in range(ROWS)])
        layout_keys[path] = ks
    S.build(None, root, "k", structure=structure)
    S.build(None, root, "c", structure=structure)
    return layout_keys


# ---- the Python side alone (the requests the rule sends), no Spark -------------------------------------
def _request(
    root: str,
    filters: list[dict[str, Any]],
    files: list[list[Any]] | None = None,
    columns: dict[str, str] | None = None,
    names: dict[str, str] | None = None,
) -> dict[str, Any]:
    if files is None:
        files = []
        for n in sorted(os.listdir(root)):
            if n.endswith(".parquet"):
                st = os.stat(os.path.join(root, n))
                files.append([f"file:{root}/{n}", st.st_size, st.st_mtime_ns // 1_000_000])
    return {
        "roots": [f"file:{root}"],
        "location": None,
        "table": None,
        "columns": columns or {"k": "bigint", "c": "bigint", "v": "bigint"},
        "names": names or {},
        "partitionColumns": [],
        "filters": filters,
        "untranslated": [],
        "files": files,
    }


def _int(column: str, op: str, value: int) -> dict[str, Any]:
    return {"op": op, "column": column, "value": {"t": "int", "v": str(value)}}


def _kept(answer: str, req: dict[str, Any]) -> set[str]:
    if not answer:
        return {os.path.basename(f[0]) for f in req["files"]}
    kind, _message, *paths = answer.split("\n")
    listed = {f[0] for f in req["files"]}
    paths = [p for p in paths if p]
    chosen = set(paths) if kind == "K" else listed - set(paths)
    return {os.path.basename(p) for p in chosen}


def test_answers_keep_unknown_and_changed_files_and_combine_as_and_or(tmp_path) -> None:
    root = str(tmp_path / "t")
    _table(root, "sorted", "segments")
    req = _request(root, [_int("k", "eq", 17)])
    assert _kept(prune.answer(req), req) == {"part-000.parquet"}
    # a file Spark lists that the index does not know, or knows at another size or time, is read
    req["files"].append([f"file:{root}/part-new.parquet", 10, 1])
    req["files"][5][1] += 1
    assert _kept(prune.answer(req), req) == {"part-000.parquet", "part-005.parquet", "part-new.parquet"}
    # AND: excluded by either index; OR: only when both exclude
    and_ = _request(root, [_int("k", "eq", 17), _int("c", "eq", 21)])
    assert _kept(prune.answer(and_), and_) == set()
    or_ = _request(root, [{"op": "or", "children": [_int("k", "eq", 17), _int("c", "eq", 21)]}])
    assert _kept(prune.answer(or_), or_) == {"part-000.parquet", "part-002.parquet"}
    # an OR with a branch on a column without an index excludes nothing
    open_ = _request(root, [{"op": "or", "children": [_int("k", "eq", 17), _int("v", "eq", 1)]}])
    assert prune.answer(open_) == ""
    # the query's spelling of a column is mapped to the relation's by the rule (exprIds)
    upper = _request(root, [_int("K", "eq", 17)], names={"K": "k"})
    assert _kept(prune.answer(upper), upper) == {"part-000.parquet"}


@pytest.mark.parametrize(
    ("leaf", "columns", "reason"),
    [
        ({"op": "eq", "column": "k", "value": {"t": "nan", "v": "NaN"}}, None, "NaN"),
        ({"op": "eq", "column": "k", "value": {"t": "str", "v": "17"}}, None, "cannot answer"),
        (_int("k", "eq", 17), {"k": "string collate UTF8_LCASE"}, "collation"),
        (_int("k", "eq", 17), {"k": "double"}, "double"),
    ],
)
def test_unprovable_leaves_exclude_nothing_and_say_why(tmp_path, caplog, leaf, columns, reason) -> None:
    root = str(tmp_path / "t")
    _table(root, "sorted", "segments")
    prune._warned.clear()
    req = _request(root, [leaf], columns=columns)
    with caplog.at_level(logging.WARNING, logger="airflow_provider_lineage.sieve.spark.prune"):
        assert prune.answer(req) == ""
    assert reason in caplog.text


@pytest.fixture()
def pruning(spark) -> Iterator[Any]:
    # a session shared with other tests of this process may carry index paths an in-process task set (the example
    # sieve_maintenance DAG's reader does, through its builder's config): each test here starts without them
    left = spark.conf.get(prune.INDEX_PATHS_CONF, None)
    spark.conf.unset(prune.INDEX_PATHS_CONF)
    sieve_spark.enable(spark)
    prune._warned.clear()
    yield spark
    sieve_spark.disable(spark)
    if left is not None:
        spark.conf.set(prune.INDEX_PATHS_CONF, left)


def _candidates(root: str, column: str, pred: Any) -> set[str]:
    return set(S.open_index(root, column).candidates(pred))


def _without(spark: Any, query: Callable[[], Any]) -> list[tuple]:
    sieve_spark.disable(spark)
    try:
        return _rows(query())
    finally:
        sieve_spark.enable(spark)


# condition -> the files the index leaves (k's and c's indexes)
CASES: list[tuple[str, Callable[[Callable[[str, Any], set[str]]], set[str]]]] = [
    ("k = 17", lambda q: q("k", Eq(17))),
    ("k IN (3, 250, 9999)", lambda q: q("k", In([3, 250, 9999]))),
    ("k BETWEEN 100 AND 130", lambda q: q("k", Range(100, 130))),
    ("k > 400", lambda q: q("k", Range(400, None, False))),
    ("k <= 5", lambda q: q("k", Range(None, 5))),
    ("k IS NULL", lambda q: q("k", IsNull())),
    ("k <=> 42", lambda q: q("k", Eq(42))),
    ("k <=> NULL", lambda q: q("k", IsNull())),
    ("k = 17 OR k = 300", lambda q: q("k", Eq(17)) | q("k", Eq(300))),
    ("k = 17 AND c = 21", lambda q: q("k", Eq(17)) & q("c", Eq(21))),
    ("k = 17 OR c = 21", lambda q: q("k", Eq(17)) | q("c", Eq(21))),
    (
        "(k < 50 OR k > 420) AND c >= 100",
        lambda q: (
            (q("k", Range(None, 50, True, False)) | q("k", Range(420, None, False)))
            & q("c", Range(100, None))
        ),
    ),
    ("K = 17", lambda q: q("k", Eq(17))),  # a case-insensitive name resolves to k
]


@pytest.mark.slow
@pytest.mark.parametrize(("layout", "structure"), [("sorted", "segments"), ("random", "hashed")])
@pytest.mark.parametrize(("condition", "expect"), CASES, ids=[c for c, _ in CASES])
def test_each_filter_kind_reads_the_candidates_and_answers_as_spark(
    pruning, tmp_path, layout, structure, condition, expect
) -> None:
    spark = pruning
    root = str(tmp_path / "t")
    _table(root, layout, structure)

    def query() -> Any:
        return spark.read.parquet(root).where(condition)

    want = expect(lambda column, pred: _candidates(root, column, pred))
    df = query()
    assert _files_read(df) == want
    assert _rows(df) == _without(spark, query)
    assert _scan_metric(spark, query()) == len(want)
    if len(want) < N_FILES:
        # "by" names the indexes that excluded a file: each a column of the condition (an OR branch whose
        # index can exclude no file of the table, e.g. a range on random keys, names none)
        (line,) = prune.narrowings(df)
        head, _, by = line.partition(" files by ")
        assert head == f"Sieve: {len(want)} of {N_FILES}"
        named = set(by.split(", "))
        assert named and named <= {c for c in ("c", "k") if f"{c} " in condition.lower()}, line


def test_point_in_and_range_read_the_candidates(pruning, tmp_path) -> None:
    """The fast tier's share of the matrix above."""
    spark = pruning
    root = str(tmp_path / "t")
    _table(root, "sorted", "segments")
    for condition, pred in [
        ("k = 17", Eq(17)),
        ("k IN (3, 250)", In([3, 250])),
        ("k BETWEEN 100 AND 130", Range(100, 130)),
    ]:

        def query(c: str = condition) -> Any:
            return spark.read.parquet(root).where(c)

        df = query()
        assert _files_read(df) == _candidates(root, "k", pred), condition
        assert _rows(df) == _without(spark, query), condition


@pytest.mark.slow
def test_ranges_on_a_random_layout_are_narrowed_too(pruning, tmp_path) -> None:
    spark = pruning
    root = str(tmp_path / "t")
    _table(root, "random", "segments")
    for condition in ("k BETWEEN 100 AND 103", "k > 470"):
        df = spark.read.parquet(root).where(condition)
        assert _rows(df) == _without(spark, lambda c=condition: spark.read.parquet(root).where(c))
        assert len(_files_read(df)) <= N_FILES


def test_sql_explain_and_the_info_line(pruning, tmp_path, caplog, capsys) -> None:
    spark = pruning
    root = str(tmp_path / "t")
    _table(root, "sorted", "segments")
    spark.read.parquet(root).createOrReplaceTempView("sieve_prune_sales")
    with caplog.at_level(logging.INFO, logger="airflow_provider_lineage.sieve.spark.prune"):
        df = spark.sql("SELECT v FROM sieve_prune_sales WHERE k = 17")
        assert _rows(df) == [repr((17,))]
    assert f"Sieve: 1 of {N_FILES} files by k" in caplog.text
    df.explain()
    text = capsys.readouterr().out
    # the scan's name says it (the Spark UI's SQL tab shows the same node name); its location stays the table's
    assert f"FileScan parquet (Sieve: 1 of {N_FILES} files by k) [" in text
    # the table's root; Spark cuts it past spark.sql.maxMetadataStringLength (a long temporary path ends in "...")
    assert f"Location: SieveFileIndex(1 paths)[file:{root}]"[:90] in text
    df.explain("formatted")
    assert f"Scan parquet (Sieve: 1 of {N_FILES} files by k)" in capsys.readouterr().out
    assert prune.narrowings(df) == [f"Sieve: 1 of {N_FILES} files by k"]
    # the relation is still Spark's HadoopFsRelation (by class and by simple name) over the table's root
    relation = df._jdf.queryExecution().optimizedPlan().collectLeaves().head().relation()
    assert relation.getClass().getSimpleName() == "HadoopFsRelation"
    assert relation.getClass().getSuperclass().getName().endswith("datasources.HadoopFsRelation")
    assert [p.toString() for p in _scala_list(relation.location().rootPaths())] == [f"file:{root}"]


def _scala_list(seq: Any) -> list[Any]:
    return [seq.apply(i) for i in range(seq.size())]


def test_a_scan_without_a_condition_on_an_indexed_column_makes_no_python_call(
    pruning, tmp_path, monkeypatch
) -> None:
    """The rule answers in the JVM when no column the condition reads has an index folder (and when the
    table has no ``_sieve`` at all): nothing crosses py4j for such a scan."""
    spark = pruning
    root = str(tmp_path / "t")
    _table(root, "sorted", "segments")
    bare = str(tmp_path / "bare")
    _write(os.path.join(bare, "p0.parquet"), [1, 2], [1, 2])
    calls: list[dict[str, Any]] = []
    decide = prune.decide

    def counted(req: dict[str, Any]) -> str:
        calls.append(req)
        return decide(req)

    monkeypatch.setattr(prune, "decide", counted)
    for path, condition in [(root, "v = 3"), (root, "v > 3 AND v < 9"), (bare, "k = 1")]:
        df = spark.read.parquet(path).where(condition)
        assert _rows(df) == _without(spark, lambda p=path, c=condition: spark.read.parquet(p).where(c))
    assert calls == []
    assert len(_files_read(spark.read.parquet(root).where("k = 17 AND v > 3"))) == 1
    assert len(calls) == 1


def test_a_rebuilt_index_is_another_file_table(pruning, tmp_path) -> None:
    """The JVM keeps each version's file table by the SHA-1 of its content: an index deleted and built
    again (the same version number, other file ids: a file now sorts first) is fetched again, never
    matched with the old table's ids, even once the Python side has forgotten the old version."""
    import shutil

    spark = pruning
    root = str(tmp_path / "t")
    _table(root, "sorted", "segments")

    def query() -> Any:
        return spark.read.parquet(root).where("k = 17")

    assert {os.path.basename(p) for p in _files_read(query())} == {"part-000.parquet"}
    shutil.rmtree(os.path.join(root, "_sieve"))
    _write(os.path.join(root, "a-first.parquet"), [100_000], [0])  # file id 0 now; part-000 is id 1
    S.build(None, root, "k")
    prune._open_cache.clear()
    df = query()
    assert {os.path.basename(p) for p in _files_read(df)} == {"part-000.parquet"}
    assert _rows(df) == _without(spark, query)
    assert len(_rows(df)) == 1


def test_each_scan_of_a_query_is_narrowed_on_its_own(pruning, tmp_path) -> None:
    """A union of two filtered reads of one table and a join with another: every Parquet scan gets its
    own candidates; the answer is the plain read's."""
    spark = pruning
    root = str(tmp_path / "t")
    _table(root, "sorted", "segments")

    def query() -> Any:
        t = spark.read.parquet(root)
        both = t.where("k = 17").unionByName(t.where("k IN (300, 301)"))
        return both.join(t.where("c = 21").select("c"), "c", "left").select("k", "v")

    df = query()
    assert sorted(prune.narrowings(df)) == [
        f"Sieve: 1 of {N_FILES} files by c",
        f"Sieve: 1 of {N_FILES} files by k",
        f"Sieve: 1 of {N_FILES} files by k",
    ]
    assert _rows(df) == _without(spark, query)


def test_disable_reads_every_file(pruning, tmp_path) -> None:
    spark = pruning
    root = str(tmp_path / "t")
    _table(root, "sorted", "segments")
    assert prune.is_enabled(spark)
    sieve_spark.disable(spark)
    assert not prune.is_enabled(spark)
    assert len(_files_read(spark.read.parquet(root).where("k = 17"))) == N_FILES
    sieve_spark.enable(spark)
    sieve_spark.enable(spark)  # idempotent: one rule
    assert len(_files_read(spark.read.parquet(root).where("k = 17"))) == 1


def test_catalog_table(pruning, tmp_path) -> None:
    spark = pruning
    spark.sql("DROP TABLE IF EXISTS sieve_prune_cat")
    spark.range(0, 600, 1, 6).selectExpr("id AS k", "id % 5 AS v").write.saveAsTable("sieve_prune_cat")
    location = spark.sql("DESCRIBE FORMATTED sieve_prune_cat").where("col_name = 'Location'").first()[1]
    root = _local(location)
    S.build(None, root, "k")

    def query() -> Any:
        return spark.sql("SELECT k, v FROM sieve_prune_cat WHERE k IN (5, 550)")

    df = query()
    assert _files_read(df) == _candidates(root, "k", In([5, 550]))
    assert len(_files_read(df)) == 2
    assert _rows(df) == _without(spark, query) == [repr((5, 0)), repr((550, 0))]
    spark.sql("DROP TABLE sieve_prune_cat")


def test_partitioned_table(pruning, tmp_path) -> None:
    spark = pruning
    root = str(tmp_path / "pt")
    write_file(f"{root}/p=1/a.parquet", [1, 2, 3, None])
    write_file(f"{root}/p=1/b.parquet", [100, 101])
    write_file(f"{root}/p=2/c.parquet", [2, 500])
    write_file(f"{root}/p=2/d.parquet", [700, 800])
    S.build(None, root, "k")
    for condition, files in [
        ("k = 2", 2),
        ("k = 2 AND p = 2", 1),
        ("k >= 100 AND p = 1", 1),
        ("p = 2", 2),
        ("k IS NULL", 1),
        ("k = 42", 0),
    ]:

        def query(c: str = condition) -> Any:
            return spark.read.parquet(root).where(c)

        df = query()
        assert _rows(df) == _without(spark, query), condition
        assert _scan_metric(spark, query()) == files, condition


def test_stale_index_reads_new_and_rewritten_files(pruning, tmp_path) -> None:
    spark = pruning
    root = str(tmp_path / "t")
    _table(root, "sorted", "segments")
    _write(os.path.join(root, "part-new.parquet"), [17, 1000], [0, 0])  # added after the index: read
    _write(os.path.join(root, "part-005.parquet"), [17], [0])  # rewritten in place: read

    def query() -> Any:
        return spark.read.parquet(root).where("k = 17")

    df = query()
    read = {os.path.basename(p) for p in _files_read(df)}
    assert read == {"part-000.parquet", "part-005.parquet", "part-new.parquet"}
    assert _rows(df) == _without(spark, query)
    assert len(_rows(df)) == 3


def test_damaged_index_reads_every_file_with_one_warning(pruning, tmp_path, caplog) -> None:
    spark = pruning
    root = str(tmp_path / "t")
    _table(root, "sorted", "segments")
    folder = os.path.join(root, "_sieve", "k")
    for name in os.listdir(folder):
        if name.startswith("manifest"):
            with open(os.path.join(folder, name), "r+b") as fh:
                fh.write(b"garbage!")

    def query() -> Any:
        return spark.read.parquet(root).where("k = 17")

    with caplog.at_level(logging.WARNING, logger="airflow_provider_lineage.sieve.spark.prune"):
        df = query()
        assert len(_files_read(df)) == N_FILES
        assert _rows(df) == _without(spark, query)
        query().count()
    warnings = [r for r in caplog.records if "index of column k cannot be used" in r.getMessage()]
    assert len(warnings) == 1, caplog.text
    # the other index still narrows a conjunction
    assert len(_files_read(spark.read.parquet(root).where("k = 17 AND c = 21"))) == 1


def test_missing_index_is_a_plain_scan(pruning, tmp_path) -> None:
    spark = pruning
    root = str(tmp_path / "t")
    for i in range(3):
        _write(os.path.join(root, f"p{i}.parquet"), [i], [i])
    df = spark.read.parquet(root).where("k = 1")
    assert len(_files_read(df)) == 3 and _rows(df) == [repr((1, 1, 0))]
    assert prune.narrowings(df) == []


def test_an_error_inside_the_rule_leaves_the_scan_with_a_warning(
    pruning, tmp_path, caplog, monkeypatch
) -> None:
    spark = pruning
    root = str(tmp_path / "t")
    _table(root, "sorted", "segments")

    def query() -> Any:
        return spark.read.parquet(root).where("k = 17")

    expected = _without(spark, query)
    # an answer the JVM side cannot use: the rule itself fails on it
    monkeypatch.setattr(prune, "decide", lambda req: "garbage")
    with caplog.at_level(logging.WARNING, logger="airflow_provider_lineage.sieve.spark.prune"):
        df = query()
        assert len(_files_read(df)) == N_FILES and _rows(df) == expected
    assert "could not be narrowed" in caplog.text and "unexpected answer" in caplog.text
    # an exception on the Python side
    caplog.clear()

    def boom(req: Any) -> str:
        raise RuntimeError("boom")

    monkeypatch.setattr(prune, "decide", boom)
    with caplog.at_level(logging.WARNING, logger="airflow_provider_lineage.sieve.spark.prune"):
        df = query()
        assert len(_files_read(df)) == N_FILES and _rows(df) == expected
    assert "RuntimeError: boom" in caplog.text


def test_conditions_the_index_cannot_prove_read_every_file(pruning, tmp_path, caplog) -> None:
    spark = pruning
    root = str(tmp_path / "s")
    os.makedirs(root)
    for i, names in enumerate([["abc", "x"], ["ABC", "y"], ["zzz", None]]):
        pq.write_table(
            pa.table({"s": pa.array(names), "d": pa.array([float("nan"), 1.5])}),
            os.path.join(root, f"p{i}.parquet"),
        )
    S.build(None, root, "s")
    cases = [
        "s COLLATE UTF8_LCASE = 'abc'",
        "CAST(s AS BINARY) = CAST('abc' AS BINARY)",
        "upper(s) = 'ABC'",
        "s = 'abc' OR d = 1.5",
    ]
    with caplog.at_level(logging.WARNING, logger="airflow_provider_lineage.sieve.spark.prune"):
        for condition in cases:

            def query(c: str = condition) -> Any:
                return spark.read.parquet(root).where(c)

            df = query()
            assert len(_files_read(df)) == 3, condition
            assert _rows(df) == _without(spark, query), condition
    assert "cannot be proven by the index" in caplog.text
    # and a provable one narrows
    df = spark.read.parquet(root).where("s = 'abc'")
    assert len(_files_read(df)) == 1 and _rows(df) == [repr(("abc", float("nan")))]


def test_enable_from_conf(spark, tmp_path) -> None:
    root = str(tmp_path / "t")
    _table(root, "sorted", "segments")
    try:
        spark.conf.set(prune.CONF_KEY, "false")
        assert not prune.enable_from_conf(spark)
        assert len(_files_read(spark.read.parquet(root).where("k = 17"))) == N_FILES
        spark.conf.set(prune.CONF_KEY, "true")
        assert prune.enable_from_conf(spark)
        assert len(_files_read(spark.read.parquet(root).where("k = 17"))) == 1
    finally:
        spark.conf.unset(prune.CONF_KEY)
        sieve_spark.disable(spark)


# ---- without touching the job: the launcher's Spark property -------------------------------------
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_launcher_property_prunes_an_unchanged_application(tmp_path) -> None:
    """``spark-submit launcher.py app.py`` with ``spark.airflow_lineage.sievePruning=true`` (what
    ``sieve_pruning=True`` on the operators sets): the application's scan reads the candidates, and the
    capture still names the table (not the candidate files) as the write's input."""
    import subprocess
    import sys
    from pathlib import Path

    from airflow_provider_lineage.lineage.record import read_records
    from airflow_provider_lineage.operators.spark_lineage import launcher_path

    root = str(tmp_path / "t")
    _table(root, "sorted", "segments")
    results = {}
    for pruned in (True, False):
        out = tmp_path / f"out-{pruned}"
        out.mkdir()
        env = dict(os.environ)
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        cmd = [
            "spark-submit",
            "--master",
            "local[1]",
            "--driver-memory",
            "512m",
            "--conf",
            f"spark.airflow_lineage.captureDir={out / 'cap'}",
            "--conf",
            f"spark.airflow_lineage.sievePruning={str(pruned).lower()}",
            launcher_path(),
            str(Path(__file__).parent / "prune_app.py"),
            root,
            str(out),
        ]
        run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=800, check=False)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        results[pruned] = json.loads((out / "result.json").read_text())
        records = [r for r in read_records(out / "cap") if r.status == "success"]
        assert records, run.stderr[-3000:]
        reads = {
            loc.removeprefix("file:").rstrip("/")
            for r in records
            for rel in r.relations
            for loc in rel.locations
        }
        assert reads == {root}, reads
    assert results[True] == {"files": 1, "rows": 1}
    assert results[False] == {"files": N_FILES, "rows": 1}


# ---- an object store: s3a:// on a moto server, Hadoop's S3A connector -----------------------------------
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_s3a_table_reads_the_candidates(tmp_path) -> None:
    """An index built for ``s3://bucket/sales`` (partitioned, one file added after the build): in a driver with
    Hadoop's S3A connector, ``spark.read.parquet("s3a://...")`` reads the index's candidates plus the unindexed
    file, and answers as the same session without ``enable``. A scan with no condition on an indexed column (a table
    without ``_sieve``, a condition on another column) makes no Python call: the rule lists ``<root>/_sieve`` through
    Hadoop's S3A file system and remembers it per root for ``spark.airflow_lineage.sieveIndexCheckSeconds``; an index
    built later is used once that has passed. The S3A jars come from PyPI (once, 181 MB)."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("moto.server", reason="moto[server] is in the dev extra: ./dev.sh setup")
    from tests.support.s3 import new_bucket, put_parquet, s3_server, s3a_jars, s3a_spark_conf

    jars = s3a_jars()
    conditions = {"k = 17": Eq(17), "k IN (3, 55, 1000)": In([3, 55, 1000]), "k BETWEEN 21 AND 34": Range(21, 34),
                  "k > 900": Range(900, None, False)}
    with s3_server() as endpoint:
        root = f"s3://{new_bucket()}/sales"
        for i in range(6):
            put_parquet(f"{root}/day=2024-01-0{i % 2 + 1}/part-{i}.parquet", list(range(i * 10, i * 10 + 10)))
        S.build(None, root, "k")
        candidates = {c: {p.replace("s3://", "s3a://", 1) for p in _candidates(root, "k", pred)}
                      for c, pred in conditions.items()}
        late = f"{root}/day=2024-01-02/late.parquet"  # after the build: the index does not know it
        put_parquet(late, [17, 1000])
        bare, fresh = root.replace("/sales", "/bare"), root.replace("/sales", "/fresh")
        for i in range(2):
            put_parquet(f"{bare}/part-{i}.parquet", [i, i + 1])
            put_parquet(f"{fresh}/part-{i}.parquet", [i * 10 + j for j in range(10)])
        spec, out = tmp_path / "spec.json", tmp_path / "out.json"
        table = root.replace("s3://", "s3a://", 1)

        def s3a(uri: str) -> str:
            return uri.replace("s3://", "s3a://", 1)

        conf = {**s3a_spark_conf(endpoint, jars), prune.INDEX_CHECK_CONF: "1"}
        spec.write_text(json.dumps({
            "conf": conf, "table": table, "conditions": list(conditions),
            "quiet": [[table, "v = 3"], [table, "day = '2024-01-01' AND v > 2"], [s3a(bare), "k = 1"],
                      [s3a(bare), "k = 1"]],
            "later": {"table": s3a(fresh), "condition": "k = 5", "build": fresh, "column": "k", "wait": 1.5},
        }))
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        run = subprocess.run([sys.executable, str(Path(__file__).parent / "prune_s3_app.py"), str(spec), str(out)],
                             env=env, capture_output=True, text=True, timeout=800, check=False)
        assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(out.read_text())
    for condition, want in candidates.items():
        got = results[condition]
        assert set(got["pruned"]["files"]) == want | {late.replace("s3://", "s3a://", 1)}, condition
        assert len(got["plain"]["files"]) == 7, condition
        assert got["pruned"]["rows"] == got["plain"]["rows"], condition
        assert got["pruned"]["narrowings"] == [f"Sieve: {len(want) + 1} of 7 files by k"], condition
    assert len(results["k = 17"]["pruned"]["rows"]) == 2  # one from the indexed file, one from the late one
    assert [q["calls"] for q in results["quiet"]] == [0, 0, 0, 0]
    assert [q["rows"] for q in results["quiet"]] == [6, 21, 2, 2]
    before, after = results["later"]
    assert (before["calls"], before["narrowings"], before["rows"]) == (0, [], 1)
    assert (after["calls"], after["narrowings"], after["rows"]) == (1, ["Sieve: 1 of 2 files by k"], 1)


# ---- indexes kept outside <root>/_sieve/ (S.build(..., index_path=...)) -----------------------------------
def test_index_at_a_custom_path_is_found_through_the_session_conf(pruning, tmp_path, caplog) -> None:
    """``spark.airflow_lineage.sieveIndexPaths`` names the folders of indexes built with ``index_path``: keyed by
    the table's root, or by its catalog name; without it the table has no index (every file)."""
    spark = pruning
    root = str(tmp_path / "t")
    rng = random.Random(3)
    for i in range(N_FILES):
        ks: list[int | None] = [i * ROWS + j for j in range(ROWS)]
        _write(os.path.join(root, f"part-{i:03d}.parquet"), ks, [rng.randrange(100) for _ in range(ROWS)])
    folder = str(tmp_path / "indexes" / "t_k")
    S.build(None, root, "k", index_path=folder)
    assert not os.path.exists(os.path.join(root, "_sieve"))
    want = set(S.open_index(root, "k", index_path=folder).candidates(Eq(17)))
    assert len(want) == 1

    def query() -> Any:
        return spark.read.parquet(root).where("k = 17")

    assert len(_files_read(query())) == N_FILES  # not configured: no index known
    try:
        spark.conf.set(prune.INDEX_PATHS_CONF, json.dumps({f"file:{root}": {"k": folder}}))
        df = query()
        assert _files_read(df) == want
        assert prune.narrowings(df) == [f"Sieve: 1 of {N_FILES} files by k"]
        assert _rows(df) == _without(spark, query)
        # a catalog table over the same files, keyed by its name
        spark.sql("DROP TABLE IF EXISTS sieve_prune_custom")
        spark.sql(f"CREATE TABLE sieve_prune_custom USING parquet LOCATION '{root}'")
        spark.conf.set(prune.INDEX_PATHS_CONF, json.dumps({"sieve_prune_custom": {"k": folder}}))
        df = spark.sql("SELECT k, v FROM sieve_prune_custom WHERE k = 17")
        assert _files_read(df) == want
        # an index of another table at the configured folder: one warning, every file
        spark.conf.set(prune.INDEX_PATHS_CONF, json.dumps({"sieve_prune_custom": {"k": str(tmp_path / "nothing")}}))
        with caplog.at_level(logging.WARNING, logger="airflow_provider_lineage.sieve.spark.prune"):
            assert len(_files_read(spark.sql("SELECT k FROM sieve_prune_custom WHERE k = 17"))) == N_FILES
        assert "the index of column k cannot be used" in caplog.text
        spark.conf.set(prune.INDEX_PATHS_CONF, "[not json")
        assert len(_files_read(query())) == N_FILES
    finally:
        spark.conf.unset(prune.INDEX_PATHS_CONF)
        spark.sql("DROP TABLE IF EXISTS sieve_prune_custom")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_hive_format_table_and_a_custom_index_path(tmp_path) -> None:
    """``CREATE TABLE ... STORED AS PARQUET`` in a session with Hive support (pip's pyspark ships the Hive jars;
    embedded Derby metastore): Spark converts the Hive relation to its Parquet reader, so SQL reads only the
    candidates: of the index under the table's ``_sieve/`` and of one at a custom ``index_path`` named by
    ``spark.airflow_lineage.sieveIndexPaths``. Answers as without ``enable``."""
    import subprocess
    import sys
    from pathlib import Path

    out = tmp_path / "out.json"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    run = subprocess.run([sys.executable, str(Path(__file__).parent / "prune_hive_app.py"), str(tmp_path), str(out)],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=800, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["serde"] and "parquet" in result["serde"].lower()  # a Hive-format table, not a datasource one
    for condition, case in result["cases"].items():
        assert case["pruned"]["files"] == case["candidates"], condition
        assert 0 < len(case["candidates"]) < case["plain"]["files"], condition
        assert case["pruned"]["rows"] == case["plain"]["rows"], condition
        assert case["pruned"]["narrowings"], (condition, case["pruned"]["plan"])
