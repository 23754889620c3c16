"""The Celery variant of the deployment (issue 31): ``./dev.sh up --executor celery``.

CeleryExecutor with Debian's ``redis-server`` as broker, PostgreSQL as metadata DB and result backend, two
Celery workers that share no local folder with each other (each its own ``AIRFLOW_HOME``, ``HOME``,
``TMPDIR`` and working folder), lineage events over HTTP to a local receiver, the example DAGs' tables and
Sieve indexes on S3 (a moto server on 127.0.0.1; Spark reaches it through Hadoop's S3A connector, whose jars
``./dev.sh`` fetches from PyPI), each worker's task logs served from its own address (docs/deploy.md, "The
Celery variant").

Too slow for CI's budget (a PostgreSQL server, redis, six Airflow processes and two ``lineage_etl`` runs,
one with a worker killed mid-task): it runs with ``APL_CELERY_DEPLOYMENT=1``::

    APL_CELERY_DEPLOYMENT=1 ./dev.sh test -n 0 tests/deployment/test_celery.py
"""
from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dev.deploy import CELERY_BUCKET, CELERY_WORKERS, WORKER_HOSTS, AirflowDeployment
from tests.deployment.helpers import cmdline, wait_for
from tests.support.deployment import read_events

pytestmark = [
    pytest.mark.skipif(os.environ.get("APL_CELERY_DEPLOYMENT") != "1",
                       reason="the Celery deployment runs with APL_CELERY_DEPLOYMENT=1 (too slow for CI)"),
    pytest.mark.deployment, pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(3600),
]

SPARK_TASKS = ("load", "build_marts")


@pytest.fixture(scope="module")
def celery(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AirflowDeployment]:
    env = {  # a killed worker's task is failed (and retried) after 60 s without heartbeat, not 300
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "60",
    }
    with AirflowDeployment(tmp_path_factory.mktemp("celery"), db="postgres", executor="celery", env=env) as dep:
        for dag_id in ("lineage_etl", "sieve_maintenance"):
            dep.unpause(dag_id)
        yield dep


def _descendants(root: int) -> list[int]:
    """Every live process below ``root`` (task supervisors start their own sessions: not its process group)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _task_workers(dep: AirflowDeployment) -> dict[str, set[str]]:
    """Which worker ran which task: the worker whose own folder holds the task's log."""
    out: dict[str, set[str]] = {}
    for w in CELERY_WORKERS:
        for log in (dep.worker_dir(w) / "logs").rglob("*.log"):
            task = next((p.split("=", 1)[1] for p in log.parts if p.startswith("task_id=")), None)
            if task:
                out.setdefault(task, set()).add(w)
    return out


def _s3_keys(dep: AirflowDeployment, prefix: str) -> list[str]:
    import boto3

    s3 = boto3.client("s3", endpoint_url=dep.s3_url, aws_access_key_id="testing", aws_secret_access_key="testing",
                      region_name="us-east-1")
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=CELERY_BUCKET, Prefix=prefix)
    return [o["Key"] for page in pages for o in page.get("Contents", [])]


def _log_text(dep: AirflowDeployment, run_id: str, task_id: str, try_number: int) -> str:
    """The task attempt's log as the UI gets it: the REST API, which fetches it from the worker's log server."""
    with dep.client("viewer") as c:
        res = c.get(f"/api/v2/dags/lineage_etl/dagRuns/{run_id}/taskInstances/{task_id}/logs/{try_number}",
                    params={"full_content": "true"}, headers={"Accept": "application/json"})
    assert res.status_code == 200, (task_id, res.status_code, res.text[:500])
    return json.dumps(res.json()["content"])


def _assert_logs_served(dep: AirflowDeployment, run_id: str, task_id: str, try_number: int, worker: str) -> None:
    text = _log_text(dep, run_id, task_id, try_number)
    assert f"http://{WORKER_HOSTS[worker]}:" in text, (task_id, worker, text[:2000])  # served by that worker
    assert "Could not read served logs" not in text, text[:2000]
    assert len(text) > 2000, (task_id, text)  # the task's own lines, not only the log source header


def test_workers_share_no_local_folder(celery: AirflowDeployment) -> None:
    homes = [celery.worker_dir(w) for w in CELERY_WORKERS]
    assert len(set(homes)) == 2 and not any(a in b.parents or a == b for a in homes for b in homes if a is not b)
    for w in CELERY_WORKERS:  # (the worker's setproctitle overwrites /proc/PID/environ: check its folder)
        assert Path(os.readlink(f"/proc/{celery.procs[w].pid}/cwd")) == celery.worker_dir(w)
        assert (celery.worker_dir(w) / "airflow.cfg").is_file()  # its own AIRFLOW_HOME
    assert celery.data_uri == f"s3://{CELERY_BUCKET}/lineage_demo"


def test_lineage_etl_and_sieve_maintenance_green_with_lineage_from_every_worker(celery: AirflowDeployment) -> None:
    run_id = celery.trigger("lineage_etl")
    celery.wait_success("lineage_etl", run_id, timeout=1200)
    # The asset event of the index task starts sieve_maintenance, which runs on a worker too.
    def maintenance_done() -> Any:
        with celery.client("viewer") as c:
            runs = c.get("/api/v2/dags/sieve_maintenance/dagRuns").json()["dag_runs"]
        return [r for r in runs if r["state"] == "success"]

    wait_for("a green sieve_maintenance run", maintenance_done, timeout=900, every=5)
    # The Column lineage tab: every Spark task's record, whichever worker ran it.
    with celery.client("viewer") as c:
        graph = c.get(f"/column-lineage/api/dags/lineage_etl/runs/{run_id}/graph").json()
    assert {t["task_id"] for t in graph["tasks"]} >= set(SPARK_TASKS), graph.get("tasks")
    ran_on = _task_workers(celery)
    assert all(ran_on.get(t) for t in SPARK_TASKS), ran_on
    # Every task's log through the REST API (what the UI shows), served by the worker that ran it.
    tis = celery.task_instances("lineage_etl", run_id)
    for task, ti in tis.items():
        worker = next(w for w, host in WORKER_HOSTS.items() if host == ti["hostname"])
        assert worker in ran_on.get(task, set()), (task, ti["hostname"], ran_on)
        _assert_logs_served(celery, run_id, task, ti["try_number"], worker)
    # Tables and indexes on S3, none on a local disk.
    assert any(k.endswith(".parquet") for k in _s3_keys(celery, "lineage_demo/warehouse/transactions/"))
    assert any(k.endswith(".parquet") for k in _s3_keys(celery, "lineage_demo/marts/customer_monthly/"))
    for index in ("transactions/txn_date", "transactions/customer_id", "transactions_enriched/txn_date",
                  "customer_monthly/customer_id"):
        assert _s3_keys(celery, f"lineage_demo/indexes/{index}/"), index
    assert not [p for p in celery.home.rglob("lineage_demo") if p.is_dir()]
    # Events over HTTP at the receiver, a COMPLETE with outputs per Spark task.
    events = read_events(celery.received_events_path)
    for task in SPARK_TASKS:
        assert any(e["eventType"] == "COMPLETE" and e["job"]["name"] == f"lineage_etl.{task}" and e.get("outputs")
                   for e in events), task


def test_a_worker_killed_mid_task_the_retry_on_the_other_worker_succeeds(celery: AirflowDeployment) -> None:
    run_id = celery.trigger("lineage_etl")

    def driver() -> Any:
        for w in CELERY_WORKERS:
            for pid in _descendants(celery.procs[w].pid):
                if any("SparkSubmit" in a for a in cmdline(pid)) and any(
                    a.endswith("etl_load.py") for a in cmdline(pid)
                ):
                    return w
        return None

    victim = wait_for("the load task's Spark driver under a worker", driver, timeout=600, every=0.5)
    # The worker and everything it runs (task supervisor, task, spark-submit, the driver JVM), as when its
    # machine dies.
    root = celery.procs[victim].pid
    for pid in [root, *_descendants(root)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pgid in celery.groups[victim]:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    celery.wait_success("lineage_etl", run_id, timeout=1500)
    ti = celery.task_instances("lineage_etl", run_id)["load"]
    assert ti["try_number"] >= 2, ti
    other = next(w for w in CELERY_WORKERS if w != victim)
    assert other in _task_workers(celery).get("load", set())
    assert ti["hostname"] == WORKER_HOSTS[other]
    _assert_logs_served(celery, run_id, "load", ti["try_number"], other)  # the retry's log, from the other worker
    with celery.client("viewer") as c:
        graph = c.get(f"/column-lineage/api/dags/lineage_etl/runs/{run_id}/graph").json()
    assert {t["task_id"] for t in graph["tasks"]} >= set(SPARK_TASKS)
