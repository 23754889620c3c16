"""LauncherConfig: Spark properties win over the environment, round trip through --conf, clear errors."""
from __future__ import annotations

import pytest

from airflow_provider_lineage.capture.config import LauncherConfig
from airflow_provider_lineage.lineage.model import ParentRun


def test_round_trip_through_spark_conf() -> None:
    cfg = LauncherConfig(capture_dir="/tmp/cap", emit=True, openlineage_config={"transport": {"type": "console"}},
                         job_namespace="ns", job_name="dag.task.spark", drain_timeout_s=12.5,
                         parent=ParentRun("ns", "dag.task", "01a1fe21-84fa-7d44-9b7a-f2f04d15cd3f",
                                          "ns", "dag", "01a1fe21-84e3-775d-aaaf-77acf092e177"))
    conf = cfg.to_spark_conf()
    again = LauncherConfig.resolve(conf.get, environ={})
    assert again == cfg


def test_spark_property_wins_over_environment() -> None:
    conf = {"spark.airflow_lineage.captureDir": "/from/conf"}
    env = {"AIRFLOW_LINEAGE_CAPTURE_DIR": "/from/env", "AIRFLOW_LINEAGE_EMIT": "true"}
    cfg = LauncherConfig.resolve(conf.get, environ=env)
    assert cfg.capture_dir == "/from/conf" and cfg.emit is True and cfg.active


def test_nothing_configured_is_inactive() -> None:
    assert not LauncherConfig.resolve({}.get, environ={}).active


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("openlineageConfig", "{not json", "openlineageConfig is not valid JSON"),
        ("openlineageConfig", "[1, 2]", "must be a JSON object"),
        ("drainTimeoutSeconds", "soon", "must be a number of seconds"),
    ],
)
def test_bad_values_name_the_property(key: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LauncherConfig.resolve({f"spark.airflow_lineage.{key}": value}.get, environ={})


def test_sieve_pruning_round_trips() -> None:
    cfg = LauncherConfig(capture_dir="/tmp/cap", sieve_pruning=True)
    conf = cfg.to_spark_conf()
    assert conf["spark.airflow_lineage.sievePruning"] == "true"
    assert LauncherConfig.resolve(conf.get, environ={}) == cfg
    assert not LauncherConfig.resolve({}.get, environ={}).sieve_pruning
    assert LauncherConfig.resolve({}.get, environ={"AIRFLOW_LINEAGE_SIEVE_PRUNING": "true"}).sieve_pruning
