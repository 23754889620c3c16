"""CI's compatibility cell besides the default environment: the oldest supported Airflow (3.0.x) with
Spark 3.5, through ``benchmarks/compat/compat.py`` (the full table is the script's job before a release).

A clean Airflow 3.0 venv the way users build it, then the wheel: nothing the user had changes, the
provider is listed, every example DAG imports; then the c1 example pipeline runs with ``dag.test()``
in that venv under Spark 3.5's own spark-submit, and its lineage is read from the events. The venvs
go to this run's temporary folder (fresh in CI); packages come from uv's cache.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AIRFLOW, SPARK = "3.0.6", "3.5.9"

#: the DAG ids the files in dags/ define
EXAMPLE_DAG_IDS = {"lineage_etl", "lineage_c1_transactions_mart", "lineage_guard", "lineage_guard_report",
                   "lineage_estate_scores", "lineage_estate_flags", "sieve_maintenance", "lineage_connect_taskflow",
                   "lineage_sql_and_streaming", "lineage_declarative_pipeline"}

pytestmark = [pytest.mark.compat, pytest.mark.slow, pytest.mark.timeout(1800)]


def test_oldest_airflow_with_spark_3_5(tmp_path: Path) -> None:
    out = tmp_path / "compat.json"
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "compat" / "compat.py"), "--airflow", AIRFLOW, "--spark", SPARK,
         "--pipelines", "c1", "--no-layer-tests", "--cache", str(tmp_path / "venvs"), "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=1500, check=False)
    assert out.is_file(), (run.stdout + run.stderr)[-4000:]
    result = json.loads(out.read_text())
    [row] = result["airflow_rows"]
    assert row["changed"] == {} and row["removed"] == [], row
    assert "pyspark" not in row["added"] and "pandas" not in row["added"], row["added"]
    assert row["provider_listed"], row
    # every example DAG imports under the old Airflow (a file may define several: lineage_guard, the estate chain)
    assert row["dag_errors"] == {} and set(row["dags"]) == EXAMPLE_DAG_IDS, row
    [cell] = result["cells"]
    assert cell["states"] == {"lineage_c1_transactions_mart": "success"}, (run.stdout + run.stderr)[-4000:]
    assert cell["spark_versions"] == [SPARK]
    [mart] = [v for k, v in cell["signature"].items() if k.endswith("/mart/transactions_c1")]
    assert mart["inputs"] == ["file/<data>/transactions"]
    assert ["account_hash", "file/<data>/transactions", "account_id", "DIRECT", "TRANSFORMATION"] in mart["edges"]
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
