"""Structured Streaming under ``@task.pyspark_lineage`` with a ``spark`` connection (the session in the worker): a real
``dag.test()`` of ``tests/operators/dags/pyspark_streaming.py`` on local[2]. Its function runs, over a Parquet source
of two files read one per micro-batch, a file sink with ``availableNow``, a ``foreachBatch`` with ``availableNow`` and
a query it leaves running: one write per query in XCom, column lineage from the source's columns, the running one
reported so. The Spark Connect twin is in tests/operators/test_pyspark_connect_streaming.py.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.pipelines import env_for_spark, migrate_db

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
DAG_ID = "pyspark_lineage_streaming"
TASK = "streams"


def write_source(folder: Path) -> None:
    """Two Parquet files of ``(id, v)``, without Spark (pyarrow): the source of the streaming queries."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    for part in range(2):
        ids = [part * 3 + i for i in range(3)]
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([i * 2 for i in ids], pa.int64())}),
                       folder / f"part-{part}.parquet")


def run_streaming_dag(data_dir: Path, conn_id: str) -> Any:
    """``dag.test()`` of the streaming DAG (its folder as a DAG bundle of its own, as
    tests/operators/test_guard_baseline.py)."""
    from tests.support.pipelines import dagbag_class

    folder = ROOT / "tests" / "operators" / "dags"
    mp = pytest.MonkeyPatch()
    mp.setenv("AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST", json.dumps([
        {"name": "streaming-tests", "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
         "kwargs": {"path": str(folder), "refresh_interval": 0}},
        {"name": "dags-folder", "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle", "kwargs": {}}]))
    try:
        bag = dagbag_class()(dag_folder=str(folder / "pyspark_streaming.py"))
        assert not bag.import_errors, bag.import_errors
        return bag.get_dag(DAG_ID).test(run_conf={"data_dir": str(data_dir), "conn_id": conn_id})
    finally:
        mp.undo()


def xcom(run_id: str, key: str) -> Any:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        value = session.query(XComModel).filter_by(dag_id=DAG_ID, run_id=run_id, task_id=TASK, key=key).one().value
    return json.loads(value) if isinstance(value, str) and value[:1] in "[{" else value


def edges(run_id: str) -> dict[str, dict[str, set[tuple[str, str]]]]:
    """``{output folder name: {column: {(input folder name, column)}}}`` of the task's column-lineage record."""
    record = xcom(run_id, "column_lineage")
    assert record["status"] == "ok", record["problems"]
    names = [Path(d["name"]).name for d in record["datasets"]]
    out: dict[str, dict[str, set[tuple[str, str]]]] = {}
    for o, oc, i, ic, *_rest in record["edges"]:
        out.setdefault(names[o], {}).setdefault(oc, set()).add((names[i], ic))
    return out


def assert_streaming_task(run: Any, data_dir: Path) -> None:
    assert "success" in str(run.state)
    outputs = {Path(o["name"]).name: o for o in xcom(run.run_id, "lineage_outputs")}
    assert sorted(outputs) == ["fb", "file_sink", "running"]  # one write per query, not one per micro-batch
    assert {n: o["name"] for n, o in outputs.items()} == {n: str(data_dir / n) for n in outputs}
    for name in ("file_sink", "fb"):
        assert outputs[name]["streaming"]["state"] == "terminated", outputs[name]
        assert outputs[name]["streaming"]["batches"] == 2, outputs[name]
    assert outputs["running"]["streaming"]["state"] == "running"
    assert outputs["running"]["streaming"]["name"] == "apl_left_running"
    found = edges(run.run_id)
    assert found["file_sink"] == {"w": {("src", "v")}, "id": {("src", "id")}}
    assert found["fb"] == {"id": {("src", "id")}, "w10": {("src", "v")}}
    assert found["running"]["w"] == {("src", "v")}


def test_streaming_queries_of_a_local_session(tmp_path: Path) -> None:
    migrate_db()
    env_for_spark()
    data_dir = tmp_path / "data"
    write_source(data_dir / "src")
    run = run_streaming_dag(data_dir, "spark_default")
    assert_streaming_task(run, data_dir)
