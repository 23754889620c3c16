"""The example DAGs on a real deployment: api-server, scheduler (LocalExecutor), dag-processor and
triggerer processes (the session fixture ``deployment``, as ``./dev.sh up`` starts them), driven only
through the REST API as a real user of the simple auth manager, faults included.

The tests share one deployment and run in file order (one xdist group): each leaves the indexes
matching their tables, which the next one checks again.
"""
from __future__ import annotations

import datetime as dt
import re
import signal
import time
import warnings
from pathlib import Path
from typing import Any

import httpx
import pytest

from airflow_provider_lineage import sieve as S
from tests.deployment.helpers import (
    BLOCKED,
    INDEXED,
    add_late_file,
    day_filter,
    false_negatives,
    heavy_in_triggerer,
    index_path,
    pruned_equals_full,
    sigkill,
    spark_drivers,
    wait_for,
)
from tests.support.deployment import read_events

# The timeout covers the shared deployment's start and first lineage_etl run (setup of the first test).
pytestmark = [
    pytest.mark.xdist_group("deployment"),
    pytest.mark.deployment,
    pytest.mark.slow,
    pytest.mark.timeout(2400),
]

SPARK_JOBS = ("lineage_etl.load", "lineage_etl.build_marts")


def xcom(dep: Any, dag_id: str, run_id: str, task_id: str) -> Any:
    with dep.client("viewer") as c:
        res = c.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/return_value",
                    params={"deserialize": True})
        res.raise_for_status()
        return res.json()["value"]


def runs(dep: Any, dag_id: str) -> list[dict[str, Any]]:
    with dep.client("viewer") as c:
        res = c.get(f"/api/v2/dags/{dag_id}/dagRuns", params={"order_by": "run_after", "limit": 100})
        res.raise_for_status()
        return list(res.json()["dag_runs"])


def events_since(dep: Any, mark: int) -> list[dict[str, Any]]:
    """The events written after the first ``mark`` lines of the events file."""
    return read_events(dep.events_path)[mark:]


def assert_indexes_match(data_dir: Path) -> None:
    for table, column in INDEXED:
        assert false_negatives(data_dir, table, column) == [], (table, column)


@pytest.fixture(scope="module")
def dep(deployment: Any) -> Any:
    return deployment


def test_access_control_is_real(dep: Any) -> None:
    """No anonymous access; a viewer reads but cannot trigger (all-admins mode would hide both)."""
    assert httpx.get(f"{dep.api_url}/api/v2/dags").status_code == 401
    with dep.client("viewer") as c:
        assert c.get("/api/v2/dags/lineage_etl").status_code == 200
        assert c.post("/api/v2/dags/lineage_etl/dagRuns", json={"logical_date": None}).status_code == 403


def test_lineage_etl_twice(dep: Any) -> None:
    """Second run (the fixture ran the first): both succeed, every Spark output carries columnLineage,
    the second run syncs (not rebuilds) every index, pruned reads equal full reads."""
    dep.unpause("sieve_maintenance")  # before the run, so its asset event schedules a maintenance run
    mark = len(read_events(dep.events_path))
    second = dep.trigger("lineage_etl")
    dep.wait_success("lineage_etl", second, timeout=600)
    first = dep.etl_runs[0]
    dep.etl_runs.append(second)
    assert dep.run_state("lineage_etl", first) == "success"
    events = read_events(dep.events_path)
    for run_events in (events[:mark], events[mark:]):
        complete = [
            e for e in run_events if e["eventType"] == "COMPLETE" and e["job"]["name"].startswith("lineage_etl.")
        ]
        assert {e["job"]["name"] for e in complete} >= set(SPARK_JOBS)
        for e in complete:
            assert e["outputs"], e["job"]["name"]
            for out in e["outputs"]:
                assert out["facets"]["columnLineage"]["fields"], (e["job"]["name"], out["name"])
    results = xcom(dep, "lineage_etl", second, "index")
    assert len(results) == len(INDEXED)
    assert {(r["column"], r["action"], r["status"]) for r in results} == {
        (c, "sync", "ok") for _, c in INDEXED}, [(r["table"], r["action"], r["reason"]) for r in results]
    data = dep.data_dir
    assert pruned_equals_full(data, "warehouse/transactions", "txn_date", S.Eq(dt.date(2024, 1, 2)),
                              day_filter("txn_date", dt.date(2024, 1, 2))) > 0
    import pyarrow.compute as pc

    assert pruned_equals_full(data, "marts/customer_monthly", "customer_id", S.Range(5, 25),
                              (pc.field("customer_id") >= 5) & (pc.field("customer_id") <= 25)) > 0
    assert_indexes_match(data)


def _asset_run(dep: Any) -> str:
    return wait_for("an asset-triggered sieve_maintenance run",
                    lambda: next((r["dag_run_id"] for r in runs(dep, "sieve_maintenance")
                                  if r["run_type"] == "asset_triggered"), None), timeout=180)


def _wait_deferred(dep: Any, run_id: str) -> None:
    dep.wait_task_state("sieve_maintenance", run_id, "wait", {"deferred"}, timeout=240)


def _maintained(dep: Any, run_id: str, late: Path, retried: tuple[str, ...] = ()) -> dict[str, tuple[int, str]]:
    """The run succeeded, its maintain task synced the late file into both transactions indexes
    (here or in a concurrent watcher's run), and every index matches its table. Returns the attempts
    and "state mismatch" entries of ``wait`` and ``maintain``."""
    dep.wait_success("sieve_maintenance", run_id, timeout=900)
    tis = dep.task_instances("sieve_maintenance", run_id)
    # The DAG retries maintain (mode auto decides again) and wait (apache/airflow#72716: a stale executor
    # event can fail the attempt that just resumed from deferral); say why a first attempt failed. A
    # mismatch need not cost an attempt: the resumed attempt may start before the scheduler fails it, and
    # then its success stands.
    seen: dict[str, tuple[int, str]] = {}
    for task_id in ("wait", "maintain"):
        tries = int(tis[task_id].get("try_number") or 1)
        mismatches = dep.state_mismatches("sieve_maintenance", run_id, task_id)
        seen[task_id] = tries, mismatches
        if (tries > 1 or mismatches) and task_id not in retried:  # ``retried``: set up by the test on purpose
            warnings.warn(f"sieve_maintenance.{task_id} in {run_id} took {tries} attempts:\n" + mismatches
                          + dep.attempt_logs("sieve_maintenance", run_id, task_id, range(1, tries)), stacklevel=2)
    idx = S.open_index(str(late.parent), "txn_date",
                       index_path=str(dep.data_dir / "indexes" / "transactions" / "txn_date"))
    assert str(late) in set(idx.candidates(S.Eq(dt.date(2023, 12, 30))))
    assert_indexes_match(dep.data_dir)
    return seen


def test_asset_triggered_maintenance_defers_and_resumes_on_a_separate_write(dep: Any) -> None:
    """lineage_etl.index's asset event makes the scheduler create a sieve_maintenance run; its sensor
    finds the indexes current and defers; the triggerer resumes it when someone else adds a file."""
    run_id = _asset_run(dep)
    _wait_deferred(dep, run_id)
    late = add_late_file(dep.data_dir, "late-asset-run", 9_100_001)
    _maintained(dep, run_id, late)
    # Issue 21: this provider's trigger blocked the triggerer's loop 0.49-0.58 s at every start by
    # loading numpy and pyarrow into it. What is checked is that cause, in the real triggerer: none
    # of its processes but the Sieve check child has mapped them (a deferred run's trigger ran there
    # just now). Airflow's "blocked" lines name no trigger and, on a loaded 2-core machine, reach
    # 0.4-0.5 s with no trigger running at all (CPU starvation): they are reported, not asserted.
    assert heavy_in_triggerer(dep) == {}
    blocked = [line for line in dep.log("triggerer").splitlines()
               if BLOCKED in line and float(re.search(r"blocked for ([0-9.]+) seconds", line).group(1)) >= 0.4]
    if blocked:
        warnings.warn("triggerer stalls of 0.4 s or more (any cause):\n" + "\n".join(blocked), stacklevel=1)


def _end_other_watchers(dep: Any) -> None:
    """Mark every active sieve_maintenance run failed: another watcher (the hourly scheduled run the
    scheduler creates at start, an asset-triggered one) would sync the test's late file first and
    leave the test's own sensor nothing to see until its 25-minute watch ends."""
    with dep.client() as c:
        for r in runs(dep, "sieve_maintenance"):
            if r["state"] in ("queued", "running"):
                c.patch(f"/api/v2/dags/sieve_maintenance/dagRuns/{r['dag_run_id']}",
                        json={"state": "failed"}).raise_for_status()


def _sync_all(dep: Any) -> None:
    """Every index current (the core's sync): the test's sensor then finds nothing before its own write,
    whatever an earlier test left behind."""
    for table, column in INDEXED:
        S.sync(None, str(dep.data_dir / table), column, index_path=index_path(dep.data_dir, table, column))


def test_triggerer_sigkill_while_deferred(dep: Any) -> None:
    """The triggerer dies (SIGKILL) while the sensor is deferred; a write lands meanwhile; the
    restarted triggerer picks the trigger up again and the sensor completes."""
    _end_other_watchers(dep)
    _sync_all(dep)
    run_id = dep.trigger("sieve_maintenance")
    _wait_deferred(dep, run_id)
    dep.stop("triggerer", sig=signal.SIGKILL)
    late = add_late_file(dep.data_dir, "late-while-triggerer-down", 9_100_002)
    time.sleep(2)
    assert dep.task_instances("sieve_maintenance", run_id)["wait"]["state"] == "deferred"
    dep.start("triggerer")
    _maintained(dep, run_id, late)


def test_stale_executor_event_after_a_quick_trigger(dep: Any) -> None:
    """apache/airflow#72716 (and #67287) on purpose: the sensor defers while the scheduler is paused, so the
    executor's "success" for the attempt that deferred is still unread when the trigger fires; resumed, the
    scheduler queues the TI again, then reads that stale event and fails the TI as killed externally
    ("state mismatch"). The example DAG's ``retries=1`` on ``wait`` must carry the run to its end anyway."""
    _end_other_watchers(dep)
    _sync_all(dep)
    run_id = dep.trigger("sieve_maintenance")
    wait_for("wait running its first check", lambda: dep.task_instances("sieve_maintenance", run_id)
             .get("wait", {}).get("state") == "running", timeout=240, every=0.1)
    with dep.paused("scheduler"):  # its LocalExecutor workers run on: the first check defers
        _wait_deferred(dep, run_id)
        late = add_late_file(dep.data_dir, "late-quick-trigger", 9_100_003)
        # the triggerer resumes the TI itself (scheduled, next_method set) without the scheduler
        dep.wait_task_state("sieve_maintenance", run_id, "wait", {"scheduled"}, timeout=120)
    _, mismatches = _maintained(dep, run_id, late, retried=("wait",))["wait"]
    # The race as set up: the scheduler's first loop after the pause queues the TI, reads the stale event
    # and marks the TI up for retry. The retry runs (2 attempts), or the resumed attempt had already
    # started and its success stands (1 attempt); with retries=0 the run fails. Should a later Airflow
    # guard the case, there is no mismatch at all.
    if not mismatches:
        warnings.warn("the stale executor event did not fail the resumed sensor: Airflow guards the race now",
                      stacklevel=1)


def test_scheduler_sigkill_mid_run(dep: Any) -> None:
    """The scheduler dies (SIGKILL, its LocalExecutor workers left running) while lineage_etl runs;
    restarted, it takes the run over and the run completes."""
    run_id = dep.trigger("lineage_etl")
    dep.wait_task_state("lineage_etl", run_id, "load", {"running"}, timeout=240)
    dep.kill("scheduler", signal.SIGKILL)
    time.sleep(3)
    dep.start("scheduler")
    dep.wait_success("lineage_etl", run_id, timeout=600)
    dep.etl_runs.append(run_id)
    assert_indexes_match(dep.data_dir)


def test_spark_driver_sigkill_mid_write(dep: Any) -> None:
    """The Spark driver of lineage_etl.load is SIGKILLed while it writes: the attempt fails with a
    FAIL event, the retry succeeds, no COMPLETE names an output that was not written, and every
    index stays readable with no false negative."""
    mark = len(read_events(dep.events_path))
    run_id = dep.trigger("lineage_etl")
    drivers = wait_for("the load task's Spark driver", lambda: spark_drivers(dep, "etl_load.py"),
                       timeout=240, every=0.2)
    table = dep.data_dir / "warehouse" / "transactions"

    def writing() -> bool:  # the committer's staging folder exists while the write runs
        assert any(Path(f"/proc/{pid}").exists() for pid in drivers), "the driver ended before its write was seen"
        return (table / "_temporary").exists()

    wait_for("the write to start", writing, timeout=400, every=0.02)
    for pid in drivers:
        sigkill(pid)
    dep.wait_success("lineage_etl", run_id, timeout=600)
    ti = dep.task_instances("lineage_etl", run_id)["load"]
    assert ti["try_number"] == 2, ti
    events = [e for e in events_since(dep, mark) if e["job"]["name"] == "lineage_etl.load"]
    kinds = [e["eventType"] for e in events]
    assert "FAIL" in kinds and kinds.count("COMPLETE") == 1, kinds
    for e in read_events(dep.events_path):
        if e["eventType"] == "COMPLETE" and e["job"]["name"] in SPARK_JOBS:
            for out in e.get("outputs", []):
                if out["namespace"] == "file":
                    assert S.list_table_files(out["name"]), f"COMPLETE names {out['name']}, which holds no file"
    assert_indexes_match(dep.data_dir)
