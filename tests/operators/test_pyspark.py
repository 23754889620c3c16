"""PySparkLineageOperator / ``@task.pyspark_lineage`` with a ``spark`` connection: the session is created in the
worker and captured in process. Real ``dag.test()`` runs of ``dags/lineage_connect_taskflow.py`` on local Spark
(``spark_conn_id=spark_default``); the Spark Connect path is tests/operators/test_pyspark_connect.py."""
from __future__ import annotations

import json
import os
from typing import Any

import pytest

from airflow_provider_lineage.operators.pyspark import PySparkLineageOperator
from tests.support.pipelines import env_for_spark, load_dag, migrate_db, read_events

DAG_ID = "lineage_connect_taskflow"
TASK = "customer_totals"


def _fn(spark: Any = None) -> None:
    return None


class TestArguments:
    def test_same_arguments_as_pyspark_operator_plus_lineage(self) -> None:
        from airflow.providers.apache.spark.operators.spark_pyspark import PySparkOperator

        op = PySparkLineageOperator(task_id="t", python_callable=_fn, conn_id="c", config_kwargs={"a": "1"},
                                    capture_dir="/x", on_lineage_change="fail", require_masked=["pii"])
        assert isinstance(op, PySparkOperator)
        assert set(PySparkOperator.template_fields) < set(op.template_fields)
        assert {"capture_dir", "on_lineage_change", "require_masked", "on_policy_violation"} <= set(op.template_fields)
        assert (op.conn_id, op.config_kwargs, op.capture_dir, op.on_lineage_change) == ("c", {"a": "1"}, "/x", "fail")
        assert [a.name for a in op.outlets] == ["spark_lineage_writes"]

    def test_lineage_arguments_spelled_alike_in_every_entry_point(self) -> None:
        """Both operators list the lineage arguments explicitly (keyword-only, for docs, IDEs and Airflow's
        ``default_args``/``partial``) and pass them to ``LineageTaskMixin``, their one home: same names, defaults and
        types in all three, so none drifts."""
        import inspect

        from airflow_provider_lineage.operators._lineage.task import LineageTaskMixin
        from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator

        def params(fn: Any, skip: set[str]) -> dict[str, tuple[Any, Any, Any]]:
            return {p.name: (p.kind, p.default, p.annotation) for p in inspect.signature(fn).parameters.values()
                    if p.name not in skip and p.kind is not inspect.Parameter.VAR_KEYWORD}

        shared = params(LineageTaskMixin.__init__, {"self"})
        assert len(shared) == 15
        assert params(SparkLineageSubmitOperator.__init__, {"self"}) == shared
        own = {"python_callable", "conn_id", "config_kwargs"}
        assert params(PySparkLineageOperator.__init__, {"self", *own}) == shared

    def test_bad_lineage_argument_names_the_fix(self) -> None:
        with pytest.raises(ValueError, match="use 'auto'"):
            PySparkLineageOperator(task_id="t", python_callable=_fn, lineage_emission="both")
        with pytest.raises(ValueError, match="on_lineage_change"):
            PySparkLineageOperator(task_id="t", python_callable=_fn, on_lineage_change="explode")

    def test_settings_as_the_provider_lineage_extras_left_out(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(
            "AIRFLOW_CONN_APL_LOCAL",
            json.dumps(
                {
                    "conn_type": "spark",
                    "host": "local[2]",
                    "extra": {"spark.sql.shuffle.partitions": "3", "capture_dir": "/c"},
                }
            ),
        )
        monkeypatch.setenv("AIRFLOW_CONN_APL_CONNECT", json.dumps(
            {"conn_type": "spark_connect", "host": "sc://127.0.0.1", "port": 15002, "login": "alice",
             "extra": {"capture_dir": "/srv/capture"}}))
        op = PySparkLineageOperator(task_id="t", python_callable=_fn, conn_id="apl_local",
                                    config_kwargs={"spark.sql.shuffle.partitions": "2"})
        conf, extras = op.spark_settings()
        assert conf["spark.master"] == "local[2]" and conf["spark.sql.shuffle.partitions"] == "2"
        assert "capture_dir" not in conf and extras["capture_dir"] == "/c"
        conf, extras = PySparkLineageOperator(task_id="t", python_callable=_fn, conn_id="apl_connect").spark_settings()
        assert conf["spark.remote"] == "sc://127.0.0.1:15002/;user_id=alice" and "spark.master" not in conf
        assert extras == {"capture_dir": "/srv/capture"}

    def test_the_connections_password_is_the_servers_token(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Issue 47: the token goes to the session (to ``localhost`` for a loopback IP: PySpark sends a token without
        TLS only there); ``use_ssl`` is a connection parameter, not a Spark property; the log never shows it."""
        from airflow_provider_lineage.operators.pyspark import _redacted

        for conn_id, host, extra, url in (
                ("apl_tok", "sc://127.0.0.1", {}, "sc://localhost:15002/;token=s3cr-t"),
                ("apl_tls", "sc://lineage.example.com", {"use_ssl": True},
                 "sc://lineage.example.com:15002/;token=s3cr-t;use_ssl=True")):
            monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(
                {"conn_type": "spark_connect", "host": host, "port": 15002, "password": "s3cr-t",
                 "extra": {"capture_dir": "/c", **extra}}))
            conf, _ = PySparkLineageOperator(task_id="t", python_callable=_fn, conn_id=conn_id).spark_settings()
            assert conf["spark.remote"] == url and "use_ssl" not in conf
            assert "token" not in _redacted(conf["spark.remote"])

    def test_the_provider_registers_the_task_decorator(self) -> None:
        from airflow.providers_manager import ProvidersManager
        from airflow.sdk import task

        decorators = ProvidersManager().taskflow_decorators
        assert "pyspark_lineage" in decorators
        assert task.pyspark_lineage is not None


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The example TaskFlow DAG on a local session (``spark_default`` = local[2]), self-emitting."""
    migrate_db()
    env_for_spark()
    for key in ("AIRFLOW__OPENLINEAGE__TRANSPORT", "OPENLINEAGE_URL", "OPENLINEAGE_CONFIG"):
        assert not os.environ.get(key), f"{key} is set: unset it so that the operators self-emit to the default file"
    from airflow_provider_lineage.lineage import transport

    data_dir = tmp_path_factory.mktemp("pyspark-local")
    path = transport.default_events_path()
    before = len(read_events(path))
    dag = load_dag(DAG_ID)
    run = dag.test(run_conf={"data_dir": str(data_dir), "rows": 400, "spark_conn_id": "spark_default"})
    return {"dag_run": run, "data_dir": data_dir, "events": read_events(path)[before:]}


def _xcom(run_id: str, key: str, task_id: str = TASK) -> Any:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.query(XComModel).filter_by(dag_id=DAG_ID, run_id=run_id, task_id=task_id, key=key).one()
        if not isinstance(row.value, str):
            return row.value
        try:
            return json.loads(row.value)
        except ValueError:  # a plain string return value
            return row.value


class TestLocalSession:
    def test_run_succeeds_and_returns_the_function_value(self, local_run: dict[str, Any]) -> None:
        assert "success" in str(local_run["dag_run"].state)
        mart = local_run["data_dir"] / "mart" / "customer_totals_connect"
        assert mart.is_dir()
        assert _xcom(local_run["dag_run"].run_id, "return_value") == str(mart)

    def test_written_dataset_in_xcom(self, local_run: dict[str, Any]) -> None:
        mart = str(local_run["data_dir"] / "mart" / "customer_totals_connect")
        assert _xcom(local_run["dag_run"].run_id, "lineage_outputs") == [
            {"namespace": "file", "name": mart, "table": None, "location": f"file:{mart}", "format": "parquet",
             "columns": ["customer_id", "channel", "total_eur", "txns"], "mode": "Overwrite"}]

    def test_column_lineage_record_for_the_ui(self, local_run: dict[str, Any]) -> None:
        record = _xcom(local_run["dag_run"].run_id, "column_lineage")
        assert record["status"] == "ok", record["problems"]
        assert record["job"]["name"] == f"{DAG_ID}.{TASK}"
        names = [d["name"] for d in record["datasets"]]
        edges = {(names[o], oc, names[i], ic, t, s) for o, oc, i, ic, t, s, _m in record["edges"]}
        src = str(local_run["data_dir"] / "transactions_connect")
        mart = str(local_run["data_dir"] / "mart" / "customer_totals_connect")
        assert {(mart, "total_eur", src, "amount", "DIRECT", "AGGREGATION"),
                (mart, "total_eur", src, "fx_rate", "DIRECT", "AGGREGATION"),
                (mart, "customer_id", src, "customer_id", "DIRECT", "IDENTITY")} <= edges

    def test_events_with_the_task_as_parent(self, local_run: dict[str, Any]) -> None:
        mine = [e for e in local_run["events"] if e["job"]["name"] == f"{DAG_ID}.{TASK}"]
        assert [e["eventType"] for e in mine] == ["START", "COMPLETE"]
        complete = mine[-1]
        assert complete["run"]["facets"]["parent"]["job"]["name"] == DAG_ID
        mart = str(local_run["data_dir"] / "mart" / "customer_totals_connect")
        assert [o["name"] for o in complete["outputs"]] == [mart]
        fields = complete["outputs"][0]["facets"]["columnLineage"]["fields"]
        assert {f["field"] for f in fields["total_eur"]["inputFields"]} >= {"amount", "fx_rate"}
        assert "extractionError" not in complete["run"]["facets"]

    def test_asset_event_for_the_written_table(self, local_run: dict[str, Any]) -> None:
        from airflow.models.asset import AssetEvent, AssetModel
        from airflow.utils.session import create_session

        mart = str(local_run["data_dir"] / "mart" / "customer_totals_connect")
        with create_session() as session:
            uris = [u for (u,) in session.query(AssetModel.uri).join(AssetEvent, AssetEvent.asset_id == AssetModel.id)
                    .filter(AssetEvent.source_dag_id == DAG_ID, AssetEvent.source_task_id == TASK,
                            AssetEvent.source_run_id == local_run["dag_run"].run_id)]
        assert uris == [f"file://{mart}"]

    def test_sql_write_of_the_second_task(self, local_run: dict[str, Any]) -> None:
        """``channel_summary``: a temp view and ``INSERT OVERWRITE DIRECTORY`` (InsertIntoDataSourceDirCommand)."""
        assert_sql_task(local_run)


def assert_sql_task(run: dict[str, Any]) -> None:
    mart = str(run["data_dir"] / "mart" / "customer_totals_connect")
    summary = str(run["data_dir"] / "mart" / "channel_summary_connect")
    run_id = run["dag_run"].run_id
    outputs = _xcom(run_id, "lineage_outputs", "channel_summary")
    assert [(d["name"], d["columns"], d["format"]) for d in outputs] == [
        (summary, ["channel", "total_eur", "txns"], "parquet")
    ]
    record = _xcom(run_id, "column_lineage", "channel_summary")
    assert record["status"] == "ok", record["problems"]
    names = [d["name"] for d in record["datasets"]]
    edges = {(names[o], oc, names[i], ic, t, s) for o, oc, i, ic, t, s, _m in record["edges"]}
    assert {(summary, "total_eur", mart, "total_eur", "DIRECT", "AGGREGATION"),
            (summary, "txns", mart, "txns", "DIRECT", "AGGREGATION"),
            (summary, "channel", mart, "channel", "DIRECT", "IDENTITY")} <= edges
