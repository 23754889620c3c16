"""End to end through SparkLineageSubmitOperator (real spark-submit, issue 27): one application writes
datasets one way and reads them another (list, glob, table name vs folder, a table through an RDD, V2 JDBC
catalog CTAS/append/read vs JDBC dbtable vs JDBC query, dbtable write vs catalog read). Every reader names
the dataset exactly as its writer published it, and two runs of the same task give the same identities.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator
from tests.operators.ol_schema import validate_or_skip

APP = Path(__file__).parents[1] / "lineage" / "apps" / "dataset_names_app.py"


def _run(base: Path, events_file: Path) -> tuple[dict, dict]:
    op = SparkLineageSubmitOperator(
        task_id="names",
        application=str(APP),
        application_args=[str(base)],
        conf={"spark.ui.enabled": "false"},
        openlineage_config={"transport": {"type": "file", "log_file_path": str(events_file), "append": True}},
    )
    pushed: dict[str, object] = {}
    dag_run = SimpleNamespace(logical_date=dt.datetime(2026, 3, 1, tzinfo=dt.UTC), clear_number=0)
    ti = SimpleNamespace(
        dag_id="names_dag",
        task_id="names",
        run_id="scheduled__2026-03-01",
        try_number=1,
        map_index=-1,
        dag_run=dag_run,
        xcom_push=lambda key, value: pushed.__setitem__(key, value),
    )
    op.execute({"ti": ti})  # type: ignore[arg-type]
    events = [json.loads(line) for line in events_file.read_text().splitlines()]
    complete = [e for e in events if e["eventType"] == "COMPLETE"]
    assert len(complete) == 1, [e["eventType"] for e in events]
    validate_or_skip(events)
    return complete[0], pushed


def _sources(event: dict) -> dict[str, set[tuple[str, str]]]:
    """Output folder/table name -> the (namespace, name) of every input its column lineage names."""
    out: dict[str, set[tuple[str, str]]] = {}
    for o in event["outputs"]:
        fields = o["facets"]["columnLineage"]["fields"]
        out[o["name"]] = {(i["namespace"], i["name"]) for f in fields.values() for i in f["inputFields"]}
    return out


@pytest.mark.slow  # spark-submit end to end: the slow tier (issue 40)
def test_every_reader_names_the_dataset_as_its_writer_and_two_runs_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + ":" + os.environ["PATH"])
    base = tmp_path / "data"
    first, pushed = _run(base, tmp_path / "run1.jsonl")
    written = {(o["namespace"], o["name"]) for o in first["outputs"]}
    read = {(i["namespace"], i["name"]) for i in first["inputs"]}
    src = ("file", str(base / "src"))
    table = ("file", str(base / "wh" / "names_t"))
    t5, t6 = ("derby:memory:names_app", "app.t5"), ("derby:memory:names_app", "app.t6")
    assert read <= written, f"inputs no writer published: {read - written}"
    assert {src, table, t5, t6} <= written
    sources = _sources(first)
    expect = {"list": src, "glob": src, "by_name": table, "by_folder": table, "table_rdd": table,
              "catalog": t5, "dbtable": t5, "query": t5, "catalog_t6": src}
    for folder, dataset in expect.items():
        if folder == "catalog_t6":
            assert sources[str(base / "out" / folder)] == {t6}, folder
        else:
            assert sources[str(base / "out" / folder)] == {dataset}, folder
    assert sources["app.t5"] == {src} and sources["app.t6"] == {src}
    symlinks = {o["name"]: o["facets"].get("symlinks") for o in first["outputs"]}
    assert symlinks[table[1]]["identifiers"][0]["name"] == "default.names_t"
    assert symlinks["app.t5"] is None  # JdbcHandler: no symlink
    assert not first["run"]["facets"].get("extractionError"), first["run"]["facets"].get("extractionError")

    second, _ = _run(base, tmp_path / "run2.jsonl")
    assert second["run"]["runId"] == first["run"]["runId"]  # the same task try: the same run id
    assert second["job"] == first["job"] and second["run"]["facets"]["parent"] == first["run"]["facets"]["parent"]
    assert sorted((d["namespace"], d["name"]) for d in second["inputs"]) == sorted(
        (d["namespace"], d["name"]) for d in first["inputs"]
    )
    assert sorted((d["namespace"], d["name"]) for d in second["outputs"]) == sorted(
        (d["namespace"], d["name"]) for d in first["outputs"]
    )
    assert pushed["lineage_outputs"]
