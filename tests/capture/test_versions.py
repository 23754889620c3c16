"""Known-broken Spark combinations are named (and the 4.2.0 Arrow-UDF hang avoided), on a real session."""
from __future__ import annotations

import pyspark

from airflow_provider_lineage.capture.versions import ARROW_UDF_CONF, check_session, mismatch, release


def test_release_reads_the_numbers() -> None:
    assert release("4.1.3") == (4, 1, 3)
    assert release("4.2.0.dev1") == (4, 2, 0)
    assert release("3.5") == (3, 5)


def test_mismatch_names_both_releases_and_the_fix() -> None:
    assert mismatch("4.1.3", "4.1.3") is None
    text = mismatch("4.2.0", "3.5.9")
    assert text is not None
    assert "pyspark is 4.2.0" in text and "Spark 3.5.9" in text and "will break" in text
    assert "pyspark==3.5.9" in text and "pyspark.zip" in text
    assert "may break" in (mismatch("4.1.2", "4.1.3") or "")


def test_a_matching_driver_gets_no_warning(spark) -> None:
    assert check_session(spark, pyspark.__version__) == []


def test_a_driver_of_another_release_is_named(spark) -> None:
    [text] = check_session(spark, "3.5.9")
    assert f"runs on Spark {spark.version}" in text


def test_pyspark_4_2_0_turns_arrow_python_udfs_off_and_says_so(spark) -> None:
    before = spark.conf.get(ARROW_UDF_CONF, "false")
    spark.conf.set(ARROW_UDF_CONF, "true")
    try:
        texts = check_session(spark, "4.2.0")
        assert spark.conf.get(ARROW_UDF_CONF) == "false"
        assert any("4.2.1" in t and "turned off" in t for t in texts)
        assert len(texts) == 2  # 4.2.0 also differs from the session's release
    finally:
        spark.conf.set(ARROW_UDF_CONF, before)
