"""``python -m airflow_provider_lineage.connect_server``: its command line and Spark settings (no server started here;
a real one on loopback: tests/operators/test_pyspark_connect.py)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from airflow_provider_lineage import connect_server as cs


def test_spark_settings_add_the_plugin_port_and_marker() -> None:
    conf = cs.spark_conf(port=15010, capture_dir="/srv/cap", host="127.0.0.1",
                         conf={"spark.plugins": "com.example.Mine", "spark.executor.memory": "2g"})
    assert conf["spark.plugins"] == f"com.example.Mine,{cs.PLUGIN}"
    assert conf["spark.connect.grpc.binding.port"] == "15010"
    assert conf["spark.connect.grpc.binding.address"] == "127.0.0.1"
    assert conf["spark.airflow_lineage.connectServer"] == "/srv/cap"
    assert conf["spark.executor.memory"] == "2g"


def test_capture_dir_paths_made_absolute_uris_kept(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cs.normalized_capture_dir("cap") == str(tmp_path / "cap")
    assert cs.normalized_capture_dir("s3://bucket/lineage/") == "s3://bucket/lineage"


def test_bad_conf_pair_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="KEY=VALUE"):
        cs.parse_conf(["spark.executor.memory"])
    res = subprocess.run([sys.executable, "-m", "airflow_provider_lineage.connect_server", "--port", "15002",
                          "--capture-dir", "/tmp/x", "--conf", "novalue"], check=False, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "KEY=VALUE" in res.stderr
