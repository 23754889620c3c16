"""capture/driver.py: which values may have passed through the driver (issue 46)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from airflow_provider_lineage.capture import driver
from airflow_provider_lineage.lineage import analyze_record
from airflow_provider_lineage.lineage.record import collapse_nested, read_records
from airflow_provider_lineage.operators.spark_lineage import launcher_path
from tests.capture.test_launcher import APPS, _submit_env


def test_constants_of_code_include_sql_literals_and_numbers():
    found = driver._constants_of('x = 5\ny = "SELECT * FROM t WHERE s = \'active\' AND n > 100"\nz = 1.5\n')
    assert {"5", "active", "100", "1.5"} <= found
    assert "SELECT" not in found  # words of SQL text are not literals


def _lit(value, dtype="string"):
    return {"class": "org.apache.spark.sql.catalyst.expressions.Literal", "value": value, "dataType": dtype}


def test_flagged_literals_leave_out_code_constants_null_booleans_and_trivial(monkeypatch):
    monkeypatch.setattr(driver, "code_constants", lambda: frozenset({"active", "100"}))
    nodes = [_lit("active"), _lit("100", "integer"), _lit("100.0", "double"), _lit(None), _lit("true", "boolean"),
             _lit("1", "integer"), _lit("e0@x.org"), _lit("42", "integer")]
    assert driver.flagged_literals(nodes) == [["e0@x.org", "string"], ["42", "integer"]]
    many = [_lit(f"v{i}") for i in range(driver.MAX_LITERALS + 2)]
    assert driver.flagged_literals(many) == "*"


@pytest.mark.slow
def test_launcher_app_round_trips(tmp_path: Path):
    """spark-submit of an application through the launcher: a literal of a ``first()`` value and
    ``createDataFrame(collect())`` get the returned column; a literal of the application's code does not."""
    out, cap = tmp_path / "out", tmp_path / "cap"
    out.mkdir()
    cmd = ["spark-submit", "--master", "local[1]", "--driver-memory", "512m",
           "--conf", f"spark.airflow_lineage.captureDir={cap}",
           launcher_path(), str(APPS / "driver_round_trips.py"), str(out)]
    proc = subprocess.run(cmd, env=_submit_env(), capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = {Path(r.output.location).name: r for r in collapse_nested(read_records(cap)) if r.output}
    lit = analyze_record(records["with_literal"])
    assert {(e.dataset.name.rsplit("/", 1)[-1], e.field) for e in lit.columns["contact"]} == {("customers", "email")}
    assert lit.approximate_columns["contact"][0].startswith("driver round trip")
    assert lit.columns["status"] == [] and "status" not in lit.approximate_columns  # "active" is in the code
    rows = analyze_record(records["from_rows"])
    assert ("customers", "email") in {(e.dataset.name.rsplit("/", 1)[-1], e.field) for e in rows.columns["email"]}
    assert ("customers", "name") not in {(e.dataset.name.rsplit("/", 1)[-1], e.field) for e in rows.columns["email"]}
