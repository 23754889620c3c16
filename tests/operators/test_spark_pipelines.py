"""SparkPipelinesLineageOperator (drop-in for SparkPipelinesOperator): arguments, the spark-submit it runs, and a
real ``dag.test()`` of ``dags/lineage_declarative_pipeline.py`` (``spark-pipelines run`` of a streaming table and two
materialized views in a local Spark Connect server, under the capture launcher).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from airflow_provider_lineage.operators.spark_pipelines import (
    SparkPipelinesLineageOperator,
    pipelines_cli_path,
    remote_command,
)
from tests.operators.ol_schema import validate_or_skip
from tests.support.ol_validate import column_edges

DAG_ID = "lineage_declarative_pipeline"

class TestSparkPipelinesLineageOperator:
    def test_takes_spark_pipelines_operators_arguments(self) -> None:
        from airflow.providers.apache.spark.operators.spark_pipelines import SparkPipelinesOperator

        op = SparkPipelinesLineageOperator(
            task_id="t",
            pipeline_spec="p/spark-pipeline.yml",
            pipeline_command="dry-run",
            conf={"a": "1"},
            driver_memory="1G",
            env_vars={"X": "1"},
            on_lineage_change="fail",
        )
        assert set(SparkPipelinesOperator.template_fields) <= set(op.template_fields)
        assert op.pipeline_args() == ["dry-run", "--spec", "p/spark-pipeline.yml"]
        assert SparkPipelinesLineageOperator(task_id="t").pipeline_args() == ["run"]
        assert pipelines_cli_path().endswith("pyspark/pipelines/cli.py")

    def test_bad_arguments_name_the_fix(self, monkeypatch: pytest.MonkeyPatch) -> None:
        with pytest.raises(ValueError, match="'init' creates a project"):
            SparkPipelinesLineageOperator(task_id="t", pipeline_command="init")
        with pytest.raises(ValueError, match="not local"):
            remote_command(["spark-submit", "--master", "yarn", "app.py"])
        monkeypatch.setenv(
            "AIRFLOW_CONN_SC", json.dumps({"conn_type": "spark_connect", "host": "localhost", "port": 15002})
        )
        with pytest.raises(ValueError, match="connect_server"):
            SparkPipelinesLineageOperator(task_id="t", conn_id="sc").execute({})

    def test_runs_spark_submit_with_a_local_connect_server(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
        op = SparkPipelinesLineageOperator(task_id="t", pipeline_spec="s.yml")
        cmd = op._get_hook()._build_spark_submit_command("launcher.py")
        assert cmd[cmd.index("--remote") + 1] == "local[2]" and "--master" not in cmd and "--name" not in cmd

@pytest.fixture(scope="module")
def dag_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    import os

    from tests.support.pipelines import run_self_emitting

    data = tmp_path_factory.mktemp("pipeline-data")
    here = os.getcwd()
    os.chdir(data)  # the pipeline's tables go to ./spark-warehouse of the driver's working folder
    try:
        yield run_self_emitting(DAG_ID, data)
    finally:
        os.chdir(here)

@pytest.mark.slow
@pytest.mark.timeout(2400)
class TestExampleDag:
    def test_every_flow_with_its_column_lineage(self, dag_run: dict[str, Any]) -> None:
        assert str(dag_run["dag_run"].state).endswith("success")
        done = [
            e
            for e in dag_run["events"]
            if e["eventType"] == "COMPLETE" and e["job"]["name"] == f"{DAG_ID}.run_pipeline"
        ]
        assert len(done) == 1
        validate_or_skip(done)
        outputs = {o["facets"]["symlinks"]["identifiers"][0]["name"].rsplit(".", 1)[-1]: o for o in done[0]["outputs"]}
        assert set(outputs) == {"booked_eur", "channel_totals", "customer_totals"}
        stream = column_edges(outputs["booked_eur"])  # the streaming table, from the landing folder
        assert {("transactions", "amount"), ("transactions", "fx_rate")} <= stream["amount_eur"]
        assert ("transactions", "status") in stream["txn_id"]  # the filter
        assert ("booked_eur", "amount_eur") in column_edges(outputs["channel_totals"])["total_eur"]
        assert ("booked_eur", "customer_id") in column_edges(outputs["customer_totals"])["customer_id"]

    def test_xcom_lineage_outputs_name_the_streaming_flow(self, dag_run: dict[str, Any]) -> None:
        from airflow.models.xcom import XComModel
        from airflow.utils.session import create_session
        from sqlalchemy import select

        from airflow_provider_lineage.plugins.store import decode

        with create_session() as session:
            value = session.execute(select(XComModel.value).where(
                XComModel.dag_id == DAG_ID, XComModel.run_id == dag_run["dag_run"].run_id,
                XComModel.task_id == "run_pipeline", XComModel.key == "lineage_outputs")).scalar_one()
        written = {d["table"].rsplit(".", 1)[-1]: d for d in decode(value)}
        assert written["booked_eur"]["streaming"]["state"] == "terminated"
        assert "streaming" not in written["channel_totals"]
