"""The capture never hurts the job (issue 36, item 3): off the listener-bus thread, under a budget,
``drainTimeoutSeconds`` always honoured.

In-process tests use the shared ``spark`` fixture (real ``local[2]``); the drain test runs
``spark-submit launcher.py`` for real with a deliberately slow analysis (the test hook
``AIRFLOW_LINEAGE_CAPTURE_TEST_HOOK``), and asserts on structure, never on times: the job's exit code and
output are the plain run's, and the driver exited while the hooked analysis was still sleeping (its write
is recorded as abandoned at the drain timeout, never as analysed).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from airflow_provider_lineage.capture.config import STATUS_FILE, CaptureBudget, LauncherConfig
from airflow_provider_lineage.capture.listener import TEST_HOOK_ENV, CaptureSession
from airflow_provider_lineage.lineage import events
from airflow_provider_lineage.lineage.record import CaptureRecord, collapse_nested, read_records
from airflow_provider_lineage.operators.spark_lineage import launcher_path
from tests.capture.test_launcher import APPS, _submit_env


def _write(spark, path: Path, budget: CaptureBudget) -> tuple[list[CaptureRecord], CaptureSession]:
    with CaptureSession(spark, budget=budget) as cap:
        spark.range(4).selectExpr("id", "id * 2 AS v").write.mode("overwrite").parquet(str(path / "a"))
        spark.read.parquet(str(path / "a")).selectExpr("v + 1 AS w").write.mode("overwrite").parquet(str(path / "b"))
    return cap.records, cap


def _published(records: list[CaptureRecord]) -> events.LineageResult:
    return events.analyze(records)


def test_past_the_per_write_budget_the_write_is_published_incomplete(spark, tmp_path):
    records, _cap = _write(spark, tmp_path, CaptureBudget(write_s=1e-6))
    assert [r.command for r in records] == ["InsertIntoHadoopFsRelationCommand"] * 2
    for rec in records:
        assert rec.plans is None and "per-write capture budget" in (rec.incomplete or "")
        assert "writeBudgetSeconds" in rec.capture_error
    result = _published(records)
    assert all("incomplete capture" in p.message for p in result.problems), result.problems
    out = result.lineages[-1]
    assert out.output is not None and out.output.name.endswith("/b")  # the output is still published
    assert out.columns == {} and out.approximate and "budget" in out.unknown[0]


def test_past_the_total_budget_later_writes_are_incomplete(spark, tmp_path):
    records, _cap = _write(spark, tmp_path, CaptureBudget(total_s=1e-6))
    # the first write spends the budget; the second is published without column lineage, with the reason
    assert records[0].plans is not None and records[0].incomplete is None
    assert records[1].plans is None and "totalBudgetSeconds" in records[1].incomplete
    lin = _published(records).lineages
    assert lin[0].columns and not lin[1].columns


def test_memory_guard_stops_the_plan_walk(spark, tmp_path):
    records, _cap = _write(spark, tmp_path, CaptureBudget(min_free_heap=0.9999))
    assert all(r.plans is None and "driver heap low" in r.incomplete for r in records)


def test_memory_guard_counts_live_data_not_garbage(spark):
    """With G1 the heap's raw use includes garbage not yet collected; once that figure is past the floor the
    guard reads what the last collection left in the heap's pools, or what each pool held after the last
    collection that reclaimed it (a young collection leaves the old generation's garbage), whichever is less."""
    from airflow_provider_lineage.capture import plan_walk

    gateway = spark.sparkContext._gateway
    jvm = spark.sparkContext._jvm
    jvm.java.lang.System.gc()
    walker = plan_walk.walker_class(gateway).newInstance()
    try:
        live = walker.usedAfterLastGc()
        collected = walker.usedAfterCollections()  # per pool, after the last collection that reclaimed it
    finally:
        gateway.detach(walker)
    runtime = jvm.java.lang.Runtime.getRuntime()
    assert 0 < live <= runtime.maxMemory()
    assert 0 < collected <= runtime.maxMemory()


def test_node_cap_stops_the_plan_walk(spark, tmp_path):
    records, _cap = _write(spark, tmp_path, CaptureBudget(max_nodes=5))
    assert all("more than 5 distinct plan and expression nodes" in r.incomplete for r in records)


def test_a_crashing_analysis_leaves_the_write_alone(spark, tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_HOOK_ENV, "crash")
    records, cap = _write(spark, tmp_path, CaptureBudget())
    assert spark.read.parquet(str(tmp_path / "b")).count() == 4  # the job did its work
    assert all("the capture failed" in r.incomplete and "deliberate crash" in r.incomplete for r in records)
    assert cap.listener is not None and len(cap.listener.errors) == 2


def test_plan_json_is_opt_in(spark, tmp_path):
    records, _cap = _write(spark, tmp_path, CaptureBudget())
    assert all(r.plans is not None and r.optimized_plan is None and r.analyzed_plan is None for r in records)
    records, _cap = _write(spark, tmp_path, CaptureBudget(plan_json=True))
    assert all(r.plans is not None and r.optimized_plan and r.analyzed_plan for r in records)


def test_budget_configuration_round_trips():
    cfg = LauncherConfig(
        capture_dir="/x", budget=CaptureBudget(write_s=5, total_s=60, min_free_heap=0.2, plan_json=True)
    )
    conf = cfg.to_spark_conf()
    back = LauncherConfig.resolve(conf.get, {})
    assert back.budget == CaptureBudget(write_s=5, total_s=60, min_free_heap=0.2, plan_json=True)
    assert LauncherConfig.resolve({}.get, {"AIRFLOW_LINEAGE_WRITE_BUDGET_SECONDS": "7"}).budget.write_s == 7
    for key, raw, fix in [
        ("writeBudgetSeconds", "0", "more than 0"),
        ("totalBudgetSeconds", "soon", "number of seconds"),
        ("minFreeHeap", "2", "between 0 and 1"),
    ]:
        with pytest.raises(ValueError, match=fix):
            LauncherConfig.resolve({f"spark.airflow_lineage.{key}": raw}.get, {})


@pytest.mark.slow  # spark-submit end to end: the slow tier (issue 40)
def test_drain_timeout_bounds_the_driver_whatever_the_capture_does(tmp_path):
    """The analysis of every write sleeps far longer than the drain timeout: the application still
    exits with its own code right after its last line, its output is complete, and the writes are
    reported as not analysed in time."""
    out = tmp_path / "app"
    out.mkdir()
    cap = tmp_path / "cap"
    env = _submit_env()
    env[TEST_HOOK_ENV] = "sleep:3600"
    cmd = ["spark-submit", "--master", "local[1]", "--driver-memory", "512m",
           "--conf", f"spark.airflow_lineage.captureDir={cap}", "--conf", "spark.airflow_lineage.drainTimeoutSeconds=5",
           launcher_path(), str(APPS / "writes_then_exit.py"), str(out), "3"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800, check=False)
    assert proc.returncode == 3, proc.stderr[-3000:]  # the application's own exit code
    assert (out / "df_out").is_dir() and (out / "sql_out").is_dir()
    status = json.loads((cap / STATUS_FILE).read_text())
    assert any("drainTimeoutSeconds" in p for p in status["problems"]), status["problems"]
    recs = collapse_nested(read_records(cap))
    # the write whose analysis was sleeping when the drain timed out: recorded incomplete, never analysed
    assert recs and all(r.plans is None for r in recs)
    assert any("did not finish within drainTimeoutSeconds" in (r.incomplete or "") for r in recs)
