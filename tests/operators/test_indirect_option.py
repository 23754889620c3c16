"""Where a task's every-row INDIRECT edges go: ``indirect_lineage=``, else ``[column_lineage] indirect_lineage``,
else the facet's dataset-level list (issue 36, item 4). Real operator and Airflow configuration."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator

ENV = "AIRFLOW__COLUMN_LINEAGE__INDIRECT_LINEAGE"


def test_default_option_and_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    op = SparkLineageSubmitOperator(task_id="t", application="a.py")
    assert op.indirect_lineage is None and op.resolved_indirect() == "dataset"
    monkeypatch.setenv(ENV, "Both")
    assert op.resolved_indirect() == "both"
    assert SparkLineageSubmitOperator(task_id="t2", application="a.py", indirect_lineage="fields").resolved_indirect() \
        == "fields"


def test_bad_values_name_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="indirect_lineage='columns' is not one of"):
        SparkLineageSubmitOperator(task_id="t", application="a.py", indirect_lineage="columns")
    monkeypatch.setenv(ENV, "columns")
    with pytest.raises(ValueError, match=r"\[column_lineage\] indirect_lineage = 'columns' is not one of"):
        SparkLineageSubmitOperator(task_id="t", application="a.py").resolved_indirect()


# -- issue 51: unset, the placement follows where the task's events go -------------------------------------------------
README_TRANSPORT = json.dumps({"type": "http", "url": "http://marquez:5000", "endpoint": "api/v1/lineage"})


@pytest.fixture
def nothing_chosen(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for key in [k for k in os.environ if k.startswith(("OPENLINEAGE", "AIRFLOW__OPENLINEAGE__"))] + [ENV]:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    return monkeypatch


def test_the_readme_transport_alone_puts_every_row_edges_on_fields(
    nothing_chosen: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    op = SparkLineageSubmitOperator(task_id="t", application="a.py")
    assert op.resolved_indirect() == "dataset"  # nothing configured: the embedded file reads the dataset list
    nothing_chosen.setenv("AIRFLOW__OPENLINEAGE__TRANSPORT", README_TRANSPORT)
    assert op.resolved_emission() == "provider"
    capfd.readouterr()
    assert op.resolved_indirect() == "both"
    assert op.resolved_indirect() == "both"
    out = capfd.readouterr()  # Airflow 3's task log (structlog) goes to the process streams
    said = [line for line in (out.out + out.err).splitlines() if "every-row edges" in line]
    assert len(said) == 1, said  # said once, with why
    assert "'both'" in said[0] and "http://marquez:5000/api/v1/lineage" in said[0] and "Marquez" in said[0]
    nothing_chosen.setenv(ENV, "dataset")  # an explicit setting always wins
    assert op.resolved_indirect() == "dataset"
    assert SparkLineageSubmitOperator(task_id="t2", application="a.py", indirect_lineage="fields").resolved_indirect() \
        == "fields"


def test_self_emission_and_composite_transports(nothing_chosen: pytest.MonkeyPatch) -> None:
    nothing_chosen.setenv("OPENLINEAGE_URL", "http://127.0.0.1:5000")  # the README's line without the provider
    assert SparkLineageSubmitOperator(task_id="t", application="a.py", lineage_emission="self").resolved_indirect() \
        == "both"
    composite = {"transport": {"type": "composite", "transports": [
        {"type": "file", "log_file_path": "/tmp/x.jsonl"}, {"type": "http", "url": "http://m:5000"}]}}
    op = SparkLineageSubmitOperator(
        task_id="t", application="a.py", lineage_emission="self", openlineage_config=composite
    )
    assert op.resolved_indirect() == "both"
    kafka = {"transport": {"type": "kafka", "topic": "ol", "config": {}}}
    assert SparkLineageSubmitOperator(task_id="t", application="a.py", lineage_emission="self",
                                      openlineage_config=kafka).resolved_indirect() == "dataset"
    off = SparkLineageSubmitOperator(task_id="t", application="a.py", lineage_emission="off")
    assert off.resolved_indirect() == "dataset"


def test_the_driver_that_emits_chooses_by_its_own_transport() -> None:
    from airflow_provider_lineage.capture.config import LauncherConfig

    marquez = json.dumps({"transport": {"type": "http", "url": "http://m:5000", "endpoint": "api/v1/lineage"}})
    conf = {"spark.airflow_lineage.emit": "true", "spark.airflow_lineage.openlineageConfig": marquez}
    cfg = LauncherConfig.resolve(conf.get, {})
    assert cfg.indirect == "both" and "Marquez" in (cfg.indirect_reason or "")
    explicit = LauncherConfig.resolve({**conf, "spark.airflow_lineage.indirectLineage": "dataset"}.get, {})
    assert explicit.indirect == "dataset" and explicit.indirect_reason is None
    # what an operator resolved is always passed on: the driver never re-chooses over it
    assert LauncherConfig(indirect="dataset").to_spark_conf()["spark.airflow_lineage.indirectLineage"] == "dataset"
