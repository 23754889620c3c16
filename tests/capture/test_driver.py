"""capture/driver.py: which values may have passed through the driver (issue 46)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from airflow_provider_lineage.capture import driver, driver_values
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


def test_a_received_value_equal_to_a_code_constant_is_still_flagged(monkeypatch):
    """Issue 46's order gap: a value the driver received (``x1@m``) that is also a constant of some loaded module (a
    test module, an ``ADMIN_EMAIL``) is not taken for a constant of the code: the literal stays flagged."""
    monkeypatch.setattr(driver, "code_constants", lambda: frozenset({"x1@m", "active", "30"}))
    received = driver_values.ReceivedValues()
    received.active = True
    rows = list(received.scan([("c1", "x1@m", 30.0, None, True), {"k": ["nested"]}]))
    assert rows[0][1] == "x1@m"  # the rows themselves unchanged
    nodes = [_lit("x1@m"), _lit("active"), _lit("30.0", "double"), _lit("nested")]
    assert driver.flagged_literals(nodes, received.may_hold) == [["x1@m", "string"], ["30.0", "double"],
                                                                ["nested", "string"]]
    assert driver.flagged_literals(nodes) == [["nested", "string"]]  # by value alone: the gap


def test_to_json_rows_count_with_their_fields_values():
    received = driver_values.ReceivedValues()
    received.add('{"cust_id":1,"email":"x1@m","tags":["t"]}')
    assert received.may_hold("x1@m") and received.may_hold("t") and received.may_hold("1")
    assert not received.may_hold("x2@m")


def test_values_the_scan_cannot_enumerate_turn_the_constant_rule_off(monkeypatch):
    monkeypatch.setattr(driver_values, "MAX_DISTINCT", 3)
    received = driver_values.ReceivedValues()
    received.add(("a", "b"))
    assert not received.may_hold("active") and received.incomplete is None
    received.add(("c", "d"))  # past the bound: every literal may hold a received value
    assert received.may_hold("active") and "distinct" in received.incomplete
    other = driver_values.ReceivedValues()
    other.add((object(),))  # a value whose texts cannot be listed
    assert other.may_hold("active") and "object" in other.incomplete


def test_a_return_the_python_driver_did_not_receive_flags_constants_too(monkeypatch):
    """A session variable's value (or a JVM action's rows) never passes the Python driver: no literal is left out
    as a code constant after it."""
    monkeypatch.setattr(driver, "code_constants", lambda: frozenset({"active"}))
    monkeypatch.setattr(driver_values.RECEIVED, "active", True)
    log_ = driver.DriverLog()
    log_.clear()  # the process's received values too
    assert log_._may_hold()("active") is False
    log_.values_elsewhere = "SetVariable"
    assert log_._may_hold()("active") is True
    log_.clear()
    assert log_.values_elsewhere is None


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
