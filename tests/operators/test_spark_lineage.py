"""SparkLineageSubmitOperator: arguments, emission decision, records -> OperatorLineage (no spark-submit here;
tests/test_dags.py runs the operator end to end)."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_lineage.capture.listener import CaptureSession
from airflow_provider_lineage.capture.sink import RecordSink
from airflow_provider_lineage.lineage import events
from airflow_provider_lineage.operators.spark_lineage import (
    SparkLineageSubmitOperator,
    launcher_path,
    openlineage_provider_active,
)


def _clear_ol_caches() -> None:
    from airflow.providers.openlineage import conf as ol_conf

    for name in ("is_disabled", "transport", "config_path", "config_conn_id"):
        fn = getattr(ol_conf, name, None)
        if hasattr(fn, "cache_clear"):
            fn.cache_clear()


@pytest.fixture
def ol_transport(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """Airflow's OpenLineage provider configured with a file transport."""
    path = tmp_path / "provider-events.jsonl"
    monkeypatch.setenv(
        "AIRFLOW__OPENLINEAGE__TRANSPORT", json.dumps({"type": "file", "log_file_path": str(path), "append": True})
    )
    _clear_ol_caches()
    yield path
    monkeypatch.delenv("AIRFLOW__OPENLINEAGE__TRANSPORT")
    _clear_ol_caches()


@pytest.fixture
def ol_unconfigured(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in (
        "AIRFLOW__OPENLINEAGE__TRANSPORT",
        "OPENLINEAGE_URL",
        "OPENLINEAGE_CONFIG",
        "AIRFLOW__OPENLINEAGE__CONFIG_PATH",
    ):
        monkeypatch.delenv(key, raising=False)
    _clear_ol_caches()
    yield
    _clear_ol_caches()


class TestSparkLineageSubmitOperator:
    def test_is_a_spark_submit_operator_with_its_template_fields(self) -> None:
        from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

        op = SparkLineageSubmitOperator(
            task_id="t", application="app.py", application_args=["{{ ds }}"], conf={"a": "1"}
        )
        assert isinstance(op, SparkSubmitOperator)
        assert set(SparkSubmitOperator.template_fields) < set(op.template_fields)
        assert "capture_dir" in op.template_fields
        assert op.application == "app.py" and op.application_args == ["{{ ds }}"]

    def test_rejects_unknown_emission_mode_with_the_fix(self) -> None:
        with pytest.raises(ValueError, match="use 'auto'"):
            SparkLineageSubmitOperator(task_id="t", application="app.py", lineage_emission="both")

    def test_launcher_is_a_file_of_the_package(self) -> None:
        assert Path(launcher_path()).is_file() and launcher_path().endswith("capture/launcher.py")

    def test_emission_provider_when_configured(self, ol_transport: Path) -> None:
        assert openlineage_provider_active()
        assert SparkLineageSubmitOperator(task_id="t", application="a.py").resolved_emission() == "provider"

    def test_emission_self_when_not_configured(self, ol_unconfigured: None) -> None:
        assert not openlineage_provider_active()
        assert SparkLineageSubmitOperator(task_id="t", application="a.py").resolved_emission() == "self"
        assert (
            SparkLineageSubmitOperator(task_id="t", application="a.py", lineage_emission="off").resolved_emission()
            == "off"
        )

    def test_deploy_mode_from_connection(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
        assert SparkLineageSubmitOperator(task_id="t", application="a.py").resolved_deploy_mode() == "client"
        op = SparkLineageSubmitOperator(task_id="t", application="a.py", deploy_mode="cluster")
        assert op.resolved_deploy_mode() == "cluster"

    def test_records_become_operator_lineage(self, spark, tmp_path: Path) -> None:
        from pyspark.sql import functions as F

        src, dst, cap = tmp_path / "src", tmp_path / "dst", tmp_path / "cap"
        spark.range(5).withColumn("v", F.col("id") * 2).write.mode("overwrite").parquet(str(src))
        with CaptureSession(spark) as session:
            spark.read.parquet(str(src)).where("id > 1").select((F.col("v") + 1).alias("w")).write.mode(
                "overwrite"
            ).parquet(str(dst))
        sink = RecordSink(cap)
        for rec in session.records:
            sink.write(rec)
        op = SparkLineageSubmitOperator(task_id="t", application="a.py")
        result = op.process_capture_dir(str(cap))
        lineage = op.get_openlineage_facets_on_complete(None)
        assert lineage is not None
        assert len(result.records) == 1
        assert [o.name for o in lineage.outputs] == [str(dst)]
        assert [i.name for i in lineage.inputs] == [str(src)]
        col = lineage.outputs[0].facets["columnLineage"].fields["w"]
        assert {(f.name, f.field) for f in col.inputFields} >= {(str(src), "v")}
        assert lineage.outputs[0].facets["schema"].fields[0].name == "w"
        written = events.written_datasets(result)
        assert written == [
            {"namespace": "file", "name": str(dst), "table": None, "location": f"file:{dst}", "format": "parquet",
             "columns": ["w"], "mode": "Overwrite"}
        ]

    def test_missing_status_file_is_reported(self, tmp_path: Path) -> None:
        op = SparkLineageSubmitOperator(task_id="t", application="a.py")
        result = op.process_capture_dir(str(tmp_path / "nothing"))
        assert any("left no status file" in p.message for p in result.problems)
        facet = op.get_openlineage_facets_on_failure(None).run_facets["extractionError"]
        assert facet.failedTasks >= 1


class TestFailingApplication:
    """A real spark-submit of an application that writes, then raises: FAIL event, the write still reported."""

    def test_fail_event_with_error_and_the_successful_write(
        self, tmp_path: Path, ol_unconfigured: None, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import sys
        from types import SimpleNamespace

        monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[1]"}))
        monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
        monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + ":" + __import__("os").environ["PATH"])
        events_file = tmp_path / "events.jsonl"
        out = tmp_path / "out"
        out.mkdir()
        op = SparkLineageSubmitOperator(
            task_id="failing",
            application=str(Path(__file__).parents[1] / "capture" / "apps" / "stop_then_raise.py"),
            application_args=[str(out)],
            conf={"spark.ui.enabled": "false"},
            openlineage_config={"transport": {"type": "file", "log_file_path": str(events_file), "append": True}},
        )
        pushed: dict[str, object] = {}
        # the seam: a task-instance stand-in carrying only what execute() reads (ids) and xcom_push
        ti = SimpleNamespace(
            dag_id="adhoc_dag", task_id="failing", run_id="manual__1", try_number=1, map_index=-1,
            xcom_push=lambda key, value: pushed.__setitem__(key, value),
        )
        with pytest.raises(Exception, match="spark-submit"):
            op.execute({"ti": ti})  # type: ignore[arg-type]
        events = [json.loads(line) for line in events_file.read_text().splitlines()]
        assert [e["eventType"] for e in events] == ["START", "FAIL"]
        fail = events[1]
        assert "spark-submit" in fail["run"]["facets"]["errorMessage"]["message"]
        assert fail["run"]["facets"]["errorMessage"]["programmingLanguage"] == "python"
        assert [o["name"] for o in fail["outputs"]] == [str(out / "stopped_out")]
        assert pushed["lineage_outputs"][0]["name"] == str(out / "stopped_out")  # type: ignore[index]
        assert op.application.endswith("stop_then_raise.py")  # restored after the run
