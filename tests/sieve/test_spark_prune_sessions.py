"""``prune_sessions.enable_for_new_sessions``: the sessions of an enabled root session (as Spark Connect makes its
client sessions, with ``newSession()``) narrow their Parquet scans too (real Spark ``local[2]``)."""

from __future__ import annotations

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve.predicates import Eq
from airflow_provider_lineage.sieve.spark import prune, prune_sessions

from .test_spark_prune import N_FILES, _files_read, _rows, _table


def test_sessions_of_an_enabled_root_narrow_their_scans(spark, tmp_path) -> None:
    root = str(tmp_path / "t")
    _table(root, "sorted", "segments")
    want = set(S.open_index(root, "k").candidates(Eq(17)))
    earlier = spark.newSession()
    earlier.range(1).collect()  # its optimizer built before the call
    prune_sessions.enable_for_new_sessions(spark)
    prune_sessions.enable_for_new_sessions(spark)  # idempotent
    try:
        assert prune_sessions.enabled_for_new_sessions(spark)
        for session in (spark.newSession(), earlier):  # they share the root's extensions, made before or after
            df = session.read.parquet(root).where("k = 17")
            assert _files_read(df) == want
            assert prune.narrowings(df) == [f"Sieve: 1 of {N_FILES} files by k"]
            assert _rows(df) == [repr((17, 1, 17))]
    finally:
        prune_sessions.disable_for_new_sessions(spark)
    assert not prune_sessions.enabled_for_new_sessions(spark)
    for session in (spark.newSession(), earlier, spark):  # switched off: every file again
        df = session.read.parquet(root).where("k = 17")
        assert len(_files_read(df)) == N_FILES
        assert _rows(df) == [repr((17, 1, 17))]
    prune_sessions.enable_for_new_sessions(spark)  # on again
    try:
        assert _files_read(spark.newSession().read.parquet(root).where("k = 17")) == want
    finally:
        prune_sessions.disable_for_new_sessions(spark)
