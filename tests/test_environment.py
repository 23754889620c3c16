"""Guards the pinned Spark set (see pyproject.toml): one coherent pyspark release whose Python UDFs run.

Two traps this file exists for:

* ``apache-airflow-providers-apache-spark`` 6.x depends on ``pyspark-client``, which installs into
  the same ``pyspark/`` tree as the full ``pyspark``. A mismatched pair breaks Python UDFs at run
  time, so the driver's Python files, the workers' ``pyspark.zip`` and the JVM must be one release.
* pyspark 4.2.0 hangs Arrow-optimised Python UDFs over a Parquet table scan (UDFs over local data
  work, which is why a ``spark.range`` UDF check missed it). The UDF checks below therefore read a
  real Parquet table, and every one of them has a bounded wait.
"""
from __future__ import annotations

import importlib.metadata as md
import json
import re
import subprocess
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from airflow_provider_lineage.lineage.record import collapse_nested, read_records
from airflow_provider_lineage.operators.spark_lineage import launcher_path
from tests.capture.test_launcher import _submit_env

APPS = Path(__file__).parent / "capture" / "apps"
UDF_WAIT_SECONDS = 120  # a UDF over six rows takes seconds; the 4.2.0 hang never returns


def test_pyspark_is_one_coherent_full_distribution(spark) -> None:
    import pyspark

    version = pyspark.__version__
    assert md.version("pyspark") == md.version("pyspark-client") == version, (
        "pyspark and pyspark-client must be the same release: reinstall with ./dev.sh setup"
    )
    root = Path(pyspark.__file__).parent
    jars = root / "jars"
    assert jars.is_dir() and (jars / f"spark-sql_2.13-{version}.jar").is_file(), "pyspark's jars are missing"
    with zipfile.ZipFile(root / "python" / "lib" / "pyspark.zip") as zf:  # what Python workers import
        worker_version = zf.read("pyspark/version.py").decode()
    assert re.search(rf"__version__.*['\"]{re.escape(version)}['\"]", worker_version), worker_version
    assert spark.version == version  # the JVM


@pytest.fixture(scope="module")
def contacts(spark, tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("env") / "contacts"
    spark.createDataFrame([(1, "ab@x.org"), (2, None), (3, "cd@y.org")], "id long, email string") \
        .write.parquet(str(path))
    return spark.read.parquet(str(path))


def _mask(e):  # type: ignore[no-untyped-def]
    return (e.split("@")[0][:2] + "***") if e else None


@pytest.mark.timeout(UDF_WAIT_SECONDS)
@pytest.mark.parametrize("use_arrow", [True, False], ids=["arrow", "pickled"])
def test_python_udf_over_parquet_scan(contacts, use_arrow: bool) -> None:
    from pyspark.sql import functions as F

    mask = F.udf(_mask, "string", useArrow=use_arrow)
    got = sorted((r.id, r.m) for r in contacts.select("id", mask("email").alias("m")).collect())
    assert got == [(1, "ab***"), (2, None), (3, "cd***")]


@pytest.mark.timeout(UDF_WAIT_SECONDS)
def test_pandas_udf_and_to_pandas_over_parquet_scan(contacts) -> None:
    from pyspark.sql import functions as F

    @F.pandas_udf("long")
    def plus_one(s: pd.Series) -> pd.Series:
        return s + 1

    assert sorted(r.n for r in contacts.select(plus_one("id").alias("n")).collect()) == [2, 3, 4]
    assert sorted(contacts.toPandas()["id"].tolist()) == [1, 2, 3]


@pytest.mark.slow  # a spark-submit per UDF kind; the in-process UDF tests above stay in the fast tier
def test_udfs_over_a_table_through_the_launcher(tmp_path: Path) -> None:
    """spark-submit launcher + app: Python (Arrow and pickled), pandas and SQL UDFs inside writes."""
    out, cap = tmp_path / "out", tmp_path / "cap"
    out.mkdir()
    cmd = ["spark-submit", "--master", "local[2]", "--driver-memory", "512m",
           "--conf", f"spark.airflow_lineage.captureDir={cap}", launcher_path(), str(APPS / "udfs_over_table.py"),
           str(out)]
    try:
        proc = subprocess.run(cmd, check=False, env=_submit_env(), capture_output=True, text=True,
                              timeout=4 * UDF_WAIT_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"Python UDFs over a table scan did not finish in {4 * UDF_WAIT_SECONDS}s: the pinned "
                    "pyspark release hangs them (see pyproject.toml)")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    result = json.loads((out / "result.json").read_text())
    masked = [[1, "ab***"], [2, None], [3, "cd***"]]
    assert result["arrow_udf"] == result["python_udf"] == result["sql_udf"] == masked
    assert result["pandas_udf"] == [[1, 2], [2, 3], [3, 4]]
    assert sorted(result["to_pandas"], key=str) == [None, "ab***", "cd***"]

    from airflow_provider_lineage.lineage import analyze_record

    writes = [r for r in collapse_nested(read_records(cap)) if r.status == "success"]
    assert len(writes) == 5  # contacts, arrow_udf, python_udf, pandas_udf, sql_udf
    for record in writes[1:]:
        lin = analyze_record(record)
        derived = "n" if "n" in lin.columns else "m"
        sources = {(e.field, e.type) for e in lin.columns[derived]}
        # The launcher reads the UDF bodies: plus_one(id) is id + 1; mask(e) computes from e and also
        # branches on it (``... if e else None``), so email is DIRECT and INDIRECT CONDITIONAL.
        expected = {("id", "DIRECT")} if derived == "n" else {("email", "DIRECT"), ("email", "INDIRECT")}
        assert sources == expected, (record.command, lin.columns)
