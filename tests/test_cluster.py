"""Both example pipelines on a real Spark standalone cluster (a master and a worker on 127.0.0.1).

The cluster is started with ``spark-class`` by :func:`tests.support.cluster.standalone_cluster` and
stopped when the module ends, whatever happens. ``spark_default`` points at its master in client
deploy mode: every Spark task of ``lineage_c1_transactions_mart`` and ``lineage_etl`` runs its
executors on the worker (each pipeline once: the ETL's first run lands, loads, builds the marts and
builds the Sieve indexes; its second run, the same code paths with a sync, runs locally only). What
they publish must be what the same runs publish in ``local[2]`` (the session's ``example_c1`` /
``example_etl`` runs): the same OpenLineage events once run ids, times and the data folder are taken
out, and the same Sieve index results.

Cluster *deploy* mode cannot run here: Spark standalone masters refuse Python applications in
cluster deploy mode (SparkSubmit: "Cluster deploy mode is currently not supported for python
applications on standalone clusters"; YARN and Kubernetes, which accept them, cannot run on this
machine). ``test_cluster_deploy_mode_is_refused_for_python_apps`` pins that limit. What cluster
deploy mode changes for this provider -- the driver emits its own events, with the Airflow task as
parent, instead of handing capture records back to the task -- is exercised as far as the machine
allows: the launcher, configured exactly as the operator configures a cluster-mode driver, runs on
this cluster in client mode and its driver emits the events (``test_driver_emission_on_the_cluster``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.operators.spark_lineage import launcher_path
from tests.support.cluster import StandaloneCluster, standalone_cluster
from tests.support.environ import restore_environ
from tests.support.pipelines import run_self_emitting

pytestmark = pytest.mark.cluster

APPS = Path(__file__).parent / "capture" / "apps"
#: Fields of an index result that depend on the machine (speed, retries) or on the files' physical
#: names and mtimes (the compressed size of the index's file table), not on what was indexed.
PHYSICAL_FIELDS = {"seconds", "attempts", "index_bytes", "bytes_per_key", "details"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with standalone_cluster(tmp_path_factory.mktemp("spark-standalone")) as running:
        yield running


@pytest.fixture(scope="module")
def cluster_runs(cluster: StandaloneCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    conn = cluster.connection()
    return {
        "c1": run_self_emitting("lineage_c1_transactions_mart", tmp_path_factory.mktemp("c1-cluster"), spark_conn=conn),
        # The example tables are small: ``auto`` would read them on the driver; build on the executors.
        "etl": run_self_emitting("lineage_etl", tmp_path_factory.mktemp("etl-cluster"), spark_conn=conn,
                                 index_options={"engine": "spark"}),
    }


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in ("runId", "eventTime")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def normalized_events(result: dict[str, Any], runs: int | None = None) -> list[dict[str, Any]]:
    """The events (of the first ``runs`` DAG runs) without run ids and times, the data folder as ``<data>``."""
    events = result["events"]
    if runs is not None:
        dag_runs = list(dict.fromkeys(e["run"]["facets"]["parent"]["run"]["runId"] for e in events))
        keep = set(dag_runs[:runs])
        events = [e for e in events if e["run"]["facets"]["parent"]["run"]["runId"] in keep]
    text = json.dumps(events).replace(str(result["data_dir"]), "<data>")
    return [_strip(e) for e in json.loads(text)]


def index_results(result: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The ``index`` task's XCom of each run, without physical fields, with the data folder as ``<data>``."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    out = []
    for run in result["runs"]:
        with create_session() as session:
            value = session.query(XComModel).filter_by(dag_id=run.dag_id, run_id=run.run_id, task_id="index",
                                                       key="return_value").one().value
        value = json.loads(value) if isinstance(value, str) else value
        text = json.dumps(value).replace(str(result["data_dir"]), "<data>")
        out.append([{k: v for k, v in r.items() if k not in PHYSICAL_FIELDS} for r in json.loads(text)])
    return out


def _succeeded(result: dict[str, Any]) -> None:
    for run in result["runs"]:
        assert str(run.state) == "success", f"{run.dag_id} {run.run_id}: {run.state}"


class TestOnAStandaloneCluster:
    def test_the_cluster_runs_the_tasks(self, cluster: StandaloneCluster, cluster_runs: dict[str, Any]) -> None:
        for result in cluster_runs.values():
            _succeeded(result)
        apps = cluster.status()["completedapps"] + cluster.status()["activeapps"]
        # C1: build_mart; ETL: load, build_marts and the Sieve job.
        assert sorted(a["name"] for a in apps) == ["c1_transactions_mart", "etl_load", "etl_marts", "sieve-index"]
        assert all(a["state"] == "FINISHED" for a in apps), apps

    def test_c1_lineage_is_the_local_runs(self, cluster_runs: dict[str, Any], example_c1: dict[str, Any]) -> None:
        assert normalized_events(cluster_runs["c1"]) == normalized_events(example_c1)

    def test_etl_lineage_is_the_local_runs(self, cluster_runs: dict[str, Any], example_etl: dict[str, Any]) -> None:
        assert normalized_events(cluster_runs["etl"]) == normalized_events(example_etl, runs=1)

    def test_etl_index_results_are_the_local_runs(self, cluster_runs: dict[str, Any],
                                                  example_etl: dict[str, Any]) -> None:
        (cluster,), local = index_results(cluster_runs["etl"]), index_results(example_etl)[0]
        assert [r["action"] for r in cluster] == ["build"] * 4
        assert len(cluster) == len(local)
        for got, want in zip(cluster, local, strict=True):
            differ = {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)}
            assert not differ, (got["table"], got["column"], differ)

    def test_cluster_built_indexes_answer_like_the_data(self, cluster_runs: dict[str, Any]) -> None:
        """Every key of every indexed column: the candidates hold every file with the key."""
        import pyarrow.parquet as pq

        data = Path(cluster_runs["etl"]["data_dir"])
        for table, column in [("warehouse/transactions", "customer_id"), ("marts/customer_monthly", "customer_id")]:
            index = S.open_index(str(data / table), column,
                                 index_path=str(data / "indexes" / table.rsplit("/", 1)[-1] / column))
            by_key: dict[Any, set[str]] = {}
            for f in S.list_table_files(str(data / table)):
                for key in set(pq.read_table(f.path, columns=[column]).column(column).to_pylist()):
                    by_key.setdefault(key, set()).add(f.path)
            for key, files in by_key.items():
                answer = index.lookup(S.Eq(key))
                assert not answer.stale and files <= set(answer.files), (table, column, key)


def _spark_submit(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env["PATH"]
    return subprocess.run(["spark-submit", *args], check=False, env=env, capture_output=True, text=True, timeout=600)


def test_cluster_deploy_mode_is_refused_for_python_apps(cluster: StandaloneCluster, tmp_path: Path) -> None:
    """The limit the module docstring explains: a standalone master takes no Python app in cluster mode."""
    proc = _spark_submit(["--master", cluster.master_url, "--deploy-mode", "cluster", launcher_path(),
                          str(APPS / "writes_then_exit.py"), str(tmp_path), "0"])
    assert proc.returncode != 0
    assert "not supported for python applications on standalone clusters" in proc.stderr + proc.stdout


def test_driver_emission_on_the_cluster(cluster: StandaloneCluster, tmp_path: Path) -> None:
    """The launcher as a cluster-mode driver runs it (emit on, parent run from the task), executors on the worker."""
    events = tmp_path / "events.jsonl"
    conf = {
        "spark.airflow_lineage.captureDir": str(tmp_path / "capture"),
        "spark.airflow_lineage.emit": "true",
        "spark.airflow_lineage.openlineageConfig": json.dumps(
            {"transport": {"type": "file", "log_file_path": str(events), "append": True}}),
        "spark.airflow_lineage.jobNamespace": "cluster-ns",
        "spark.airflow_lineage.jobName": "dag_x.task_y.spark",
        "spark.openlineage.parentJobNamespace": "cluster-ns",
        "spark.openlineage.parentJobName": "dag_x.task_y",
        "spark.openlineage.parentRunId": "01a1fe21-84fa-7d44-9b7a-f2f04d15cd3f",
        "spark.openlineage.rootParentJobNamespace": "cluster-ns",
        "spark.openlineage.rootParentJobName": "dag_x",
        "spark.openlineage.rootParentRunId": "01a1fe21-84e3-775d-aaaf-77acf092e177",
        "spark.ui.enabled": "false",
    }
    args = ["--master", cluster.master_url, "--deploy-mode", "client"]
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    out = tmp_path / "out"
    out.mkdir()
    proc = _spark_submit([*args, launcher_path(), str(APPS / "writes_on_any_master.py"), str(out)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"executors: {cluster.master_url}" in proc.stdout
    emitted = [json.loads(line) for line in events.read_text().splitlines()]
    completes = [e for e in emitted if e["eventType"] == "COMPLETE" and e["outputs"]]
    assert completes, [e["eventType"] for e in emitted]
    for event in emitted:
        assert event["run"]["facets"]["parent"]["run"]["runId"] == "01a1fe21-84fa-7d44-9b7a-f2f04d15cd3f"
    assert {str(out / "df_out"), str(out / "sql_out")} <= {o["name"] for e in completes for o in e["outputs"]}


# -- issue 31: the driver elsewhere, with nothing of this package installed where it runs ---------------------------
def _bare_python(folder: Path) -> str:
    """An interpreter without site-packages (``python -S``): no Airflow, no openlineage-python, no package.

    Spark puts its own pyspark/py4j zips and the ``--py-files`` on the driver's and executors' PYTHONPATH,
    so what the driver can import is the standard library, pyspark and the shipped capture archive.
    """
    wrapper = folder / "bare-python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


@pytest.fixture(scope="module")
def remote_c1(cluster: StandaloneCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The C1 DAG on the cluster, its driver in a bare interpreter writing the capture records to S3 (moto)."""
    import boto3
    import pyspark

    from tests.support.s3 import new_bucket, s3_server

    base = tmp_path_factory.mktemp("c1-remote")
    bare = _bare_python(base)
    with s3_server() as endpoint:
        bucket = new_bucket()
        env = {"PYSPARK_PYTHON": bare, "PYSPARK_DRIVER_PYTHON": bare, "SPARK_HOME": str(Path(pyspark.__file__).parent),
               "PYTHONPATH": "",
               "AIRFLOW_CONN_CAPTURE_S3": json.dumps({"conn_type": "aws", "login": "testing", "password": "testing",
                                                      "extra": {"endpoint_url": endpoint, "region_name": "us-east-1"}})}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            result = run_self_emitting(
                "lineage_c1_transactions_mart", base / "data", spark_conn=cluster.connection(),
                task_overrides={"build_mart": {"capture_dir": f"s3://{bucket}/lineage", "capture_conn_id": "capture_s3",
                                               "keep_capture_records": True}})
        finally:
            restore_environ(saved)
        s3 = boto3.client("s3")
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
        status = [json.loads(s3.get_object(Bucket=bucket, Key=k)["Body"].read()) for k in keys
                  if k.endswith("_launcher.status.json")]
        yield {**result, "s3_keys": keys, "status": status}


def _task_outputs(result: dict[str, Any], task_id: str) -> dict[str, Any]:
    """XCom ``lineage_outputs`` and ``column_lineage`` and the asset events of one task, run ids and data folder out."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    run = result["dag_run"]
    with create_session() as session:
        xcoms = {row.key: (json.loads(row.value) if isinstance(row.value, str) else row.value)
                 for row in session.query(XComModel).filter_by(dag_id=run.dag_id, run_id=run.run_id, task_id=task_id)
                 if row.key in ("lineage_outputs", "column_lineage")}
        assets = sorted((uri, extra) for uri, extra in session.query(AssetModel.uri, AssetEvent.extra)
                        .join(AssetEvent, AssetEvent.asset_id == AssetModel.id)
                        .filter(AssetEvent.source_dag_id == run.dag_id, AssetEvent.source_run_id == run.run_id,
                                AssetEvent.source_task_id == task_id))
    # the guard's run-to-run diff depends on which runs of the DAG came before in this metadata DB (the
    # client-mode run is the previous run of the remote one), not on where the driver ran
    if isinstance(xcoms.get("column_lineage"), dict):
        xcoms["column_lineage"].pop("diff", None)
    text = json.dumps({"xcom": xcoms, "assets": assets}).replace(str(result["data_dir"]), "<data>")
    return _strip_ids(json.loads(text))


def _strip_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_ids(v) for k, v in value.items() if k not in ("runId", "run_id", "eventTime")}
    if isinstance(value, list):
        return [_strip_ids(v) for v in value]
    return value


class TestDriverElsewhere:
    def test_the_driver_ran_from_the_shipped_archive_without_site_packages(self, remote_c1: dict[str, Any]) -> None:
        _succeeded(remote_c1)
        (status,) = remote_c1["status"]
        driver = status["payload"]["driver"]
        assert driver["no_site"] is True
        assert ".zip/airflow_provider_lineage/" in driver["capture_code"]  # imported from the archive
        assert "/lineage_c1_transactions_mart.build_mart/" in status["task_run"] and status["token"].startswith("run-")
        assert sum(k.endswith(".json") for k in remote_c1["s3_keys"]) == status["payload"]["captured"] + 1

    def test_same_lineage_xcom_record_and_asset_events_as_client_mode(
            self, remote_c1: dict[str, Any], cluster_runs: dict[str, Any]) -> None:
        client = cluster_runs["c1"]
        assert normalized_events(remote_c1) == normalized_events(client)
        got, want = _task_outputs(remote_c1, "build_mart"), _task_outputs(client, "build_mart")
        assert set(got["xcom"]) == {"lineage_outputs", "column_lineage"} and got["assets"]
        assert got == want
