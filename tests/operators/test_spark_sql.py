"""SparkSqlLineageOperator (drop-in for SparkSqlOperator), and a Structured Streaming job under
SparkLineageSubmitOperator: a real ``dag.test()`` of ``dags/lineage_sql_and_streaming.py`` on local Spark.

Airflow's OpenLineage provider is not configured, so both operators self-emit to the default events file;
the checks read those events and the XComs the run pushed, as a user would.
"""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_lineage.capture.sql_script import split_statements
from airflow_provider_lineage.operators.spark_sql import SparkSqlLineageOperator, parse_conf, sql_script_path
from tests.operators.ol_schema import validate_or_skip
from tests.support.ol_validate import column_edges

DAG_ID = "lineage_sql_and_streaming"
# two spark-submits and a Hive-less catalog: minutes on a loaded 2-core machine
pytestmark = pytest.mark.timeout(1800)

def _xcoms(dag_id: str, run_id: str, key: str) -> dict[str, Any]:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from airflow_provider_lineage.plugins.store import decode

    with create_session() as session:
        rows = session.execute(select(XComModel.task_id, XComModel.value).where(
            XComModel.dag_id == dag_id, XComModel.run_id == run_id, XComModel.key == key)).all()
    return {t: decode(v) for t, v in rows}

@pytest.fixture(scope="module")
def dag_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from tests.support.pipelines import run_self_emitting

    return run_self_emitting(DAG_ID, tmp_path_factory.mktemp("sql-streaming-data"))

def _complete(events: list[dict[str, Any]], task_id: str) -> dict[str, Any]:
    done = [e for e in events if e["eventType"] == "COMPLETE" and e["job"]["name"] == f"{DAG_ID}.{task_id}"]
    assert len(done) == 1, [(e["eventType"], e["job"]["name"]) for e in events]
    return done[0]

class TestSparkSqlLineageOperator:
    def test_takes_spark_sql_operators_arguments(self) -> None:
        from airflow.providers.apache.spark.operators.spark_sql import SparkSqlOperator

        op = SparkSqlLineageOperator(task_id="t", sql="SELECT 1", conf="a=1,b=2", master="local[2]",
                                     executor_cores=1, executor_memory="1G", num_executors=1, yarn_queue="q",
                                     name="n", verbose=False, require_masked=["pii"], on_lineage_change="fail")
        assert set(SparkSqlOperator.template_fields) <= set(op.template_fields)
        assert tuple(SparkSqlOperator.template_ext) == tuple(op.template_ext)
        assert op.resolved_master() == "local[2]"
        assert op.application == sql_script_path() and op.statements_args() == ["-e", "SELECT 1"]
        assert op._conn_id == "spark_sql_default"

    def test_master_from_a_spark_sql_connection_else_yarn(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_SQL_DEFAULT", json.dumps({"conn_type": "spark_sql", "host": "local[1]"}))
        op = SparkSqlLineageOperator(task_id="t", sql="SELECT 1")
        assert op.resolved_master() == "local[1]"
        assert op._get_hook()._connection["master"] == "local[1]"  # what spark-submit gets
        assert SparkSqlLineageOperator(task_id="t", sql="x", conn_id="nowhere").resolved_master() == "yarn"

    def test_a_sql_file_is_passed_with_f(self) -> None:
        assert SparkSqlLineageOperator(task_id="t", sql="/x/y.hql").statements_args() == ["-f", "/x/y.hql"]

    def test_bad_arguments_name_the_fix(self) -> None:
        with pytest.raises(ValueError, match="key=value"):
            parse_conf("a=1,oops")
        with pytest.raises(TypeError, match="SparkLineageSubmitOperator"):
            SparkSqlLineageOperator(task_id="t", sql="x", application="a.py")
        assert parse_conf({"a": 1}) == {"a": 1} and parse_conf(None) == {}

    def test_statements_split_like_spark_sql(self) -> None:
        script = """-- a comment; with a semicolon
        SELECT 'a;b' AS `c;d`, "e;f" /* g; h */ ; ; INSERT INTO t VALUES ('it\\'s;');
        -- trailing comment only"""
        assert split_statements(script) == [
            "-- a comment; with a semicolon\n        SELECT 'a;b' AS `c;d`, \"e;f\" /* g; h */",
            "INSERT INTO t VALUES ('it\\'s;')",
        ]

    @pytest.mark.slow  # spark-submit end to end: the slow tier (issue 40)
    def test_failing_statement_fails_the_task_after_the_earlier_writes(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A real spark-submit: the first statement writes, the second fails; the write is still reported."""
        from tests.support.pipelines import env_for_spark

        env_for_spark()
        events_file = tmp_path / "events.jsonl"
        out = tmp_path / "out"
        op = SparkSqlLineageOperator(
            task_id="failing_sql", master="local[1]",
            sql=f"INSERT OVERWRITE DIRECTORY '{out}' USING parquet SELECT id, id * 2 AS twice FROM range(3);"
                "SELECT * FROM no_such_table",
            conf={"spark.ui.enabled": "false", "spark.sql.catalogImplementation": "in-memory"},
            openlineage_config={"transport": {"type": "file", "log_file_path": str(events_file), "append": True}},
            lineage_emission="self",
        )
        pushed: dict[str, Any] = {}
        ti = SimpleNamespace(dag_id="adhoc_dag", task_id="failing_sql", run_id="manual__1", try_number=1, map_index=-1,
                             xcom_push=lambda key, value: pushed.__setitem__(key, value))
        with pytest.raises(Exception, match="spark-submit"):
            op.execute({"ti": ti})  # type: ignore[arg-type]
        events = [json.loads(line) for line in events_file.read_text().splitlines()]
        assert [e["eventType"] for e in events] == ["START", "FAIL"]
        assert [o["name"] for o in events[1]["outputs"]] == [str(out)]
        assert pushed["lineage_outputs"][0]["columns"] == ["id", "twice"]
        assert op.application_args is None and op.conf == {"spark.ui.enabled": "false",
                                                           "spark.sql.catalogImplementation": "in-memory"}

@pytest.mark.slow  # two spark-submits in a dag.test() run
class TestExampleDag:
    def test_run_succeeds(self, dag_run: dict[str, Any]) -> None:
        assert str(dag_run["dag_run"].state).endswith("success")

    def test_sql_statements_column_lineage(self, dag_run: dict[str, Any]) -> None:
        event = _complete(dag_run["events"], "sql_mart")
        validate_or_skip([event])
        [output] = event["outputs"]
        assert output["name"] == str(dag_run["data_dir"] / "mart" / "channel_totals")
        edges = column_edges(output)
        assert ("transactions", "channel") in edges["channel"]
        assert {("transactions", "amount"), ("transactions", "fx_rate")} <= edges["amount_eur"]
        assert ("transactions", "status") in edges["txns"]  # the WHERE filter influences every row
        assert [i["name"] for i in event["inputs"]] == [str(dag_run["data_dir"] / "transactions")]
        parent = event["run"]["facets"]["parent"]
        assert parent["job"]["name"] == DAG_ID

    def test_streaming_query_one_event_with_column_lineage_from_the_source(self, dag_run: dict[str, Any]) -> None:
        event = _complete(dag_run["events"], "stream_increment")
        validate_or_skip([event])
        [output] = event["outputs"]
        assert output["name"] == str(dag_run["data_dir"] / "mart" / "stream_increment")
        edges = column_edges(output)
        assert {("transactions", "amount"), ("transactions", "fx_rate"), ("transactions", "status")} <= edges[
            "amount_eur"
        ]
        assert ("transactions", "account_id") in edges["account_hash"]
        assert [i["name"] for i in event["inputs"]] == [str(dag_run["data_dir"] / "transactions")]

    def test_xcoms_of_both_tasks(self, dag_run: dict[str, Any]) -> None:
        run_id = dag_run["dag_run"].run_id
        outputs = _xcoms(DAG_ID, run_id, "lineage_outputs")
        assert outputs["sql_mart"][0]["columns"] == ["channel", "txns", "amount_eur"]
        stream = outputs["stream_increment"][0]
        assert stream["mode"] == "Append" and stream["streaming"]["state"] == "terminated"
        records = _xcoms(DAG_ID, run_id, "column_lineage")
        assert set(records) >= {"sql_mart", "stream_increment"}
