"""The seam over Airflow internals (``airflow_provider_lineage._compat``) against the installed Airflow.

These tests fail first when a provider release moves an internal the operators rely on.
"""
from __future__ import annotations

import json

import pytest
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from airflow_provider_lineage import _compat


@pytest.mark.parametrize(
    ("conn", "deploy_mode", "expected"),
    [
        ({"conn_type": "spark", "host": "local[2]"}, None, "client"),
        ({"conn_type": "spark", "host": "spark://127.0.0.1", "port": 7077, "extra": {"deploy-mode": "cluster"}}, None,
         "cluster"),
        ({"conn_type": "spark", "host": "spark://127.0.0.1", "port": 7077, "extra": {"deploy-mode": "cluster"}},
         "client", "client"),
    ],
)
def test_spark_submit_deploy_mode(
    monkeypatch: pytest.MonkeyPatch, conn: dict, deploy_mode: str | None, expected: str
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_COMPAT_SPARK", json.dumps(conn))
    op = SparkSubmitOperator(task_id="t", application="app.py", conn_id="compat_spark", deploy_mode=deploy_mode)
    assert _compat.spark_submit_deploy_mode(op) == expected


def test_reset_spark_submit_hook_rebuilds_it_with_the_current_application(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_COMPAT_SPARK", json.dumps({"conn_type": "spark", "host": "local[1]"}))
    op = SparkSubmitOperator(task_id="t", application="first.py", conn_id="compat_spark")
    first = op._get_hook()
    op._hook = first
    op.application = "second.py"
    _compat.reset_spark_submit_hook(op)
    assert op._hook is None
    assert op._get_hook() is not first


def test_openlineage_provider_active_follows_its_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.providers.openlineage import conf as ol_conf

    for name in ("AIRFLOW__OPENLINEAGE__TRANSPORT", "OPENLINEAGE_URL", "AIRFLOW__OPENLINEAGE__CONFIG_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AIRFLOW__OPENLINEAGE__DISABLED", raising=False)
    for fn in (ol_conf.is_disabled, ol_conf.transport, ol_conf.config_path):
        getattr(fn, "cache_clear", lambda: None)()
    assert _compat.openlineage_provider_active() is False
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__TRANSPORT", json.dumps({"type": "console"}))
    for fn in (ol_conf.is_disabled, ol_conf.transport, ol_conf.config_path):
        getattr(fn, "cache_clear", lambda: None)()
    try:
        assert _compat.openlineage_provider_active() is True
    finally:
        monkeypatch.delenv("AIRFLOW__OPENLINEAGE__TRANSPORT")
        for fn in (ol_conf.is_disabled, ol_conf.transport, ol_conf.config_path):
            getattr(fn, "cache_clear", lambda: None)()


def test_conf_is_airflows_configuration() -> None:
    from airflow_provider_lineage._compat import conf

    assert conf.getboolean("operators", "default_deferrable", fallback=False) in (True, False)
    assert conf.get("core", "dags_folder")
    with pytest.raises(AttributeError):
        _compat.no_such_name  # noqa: B018 - the module's __getattr__ must refuse unknown names


@pytest.mark.parametrize("name", _compat.EXCEPTIONS)
def test_task_exceptions_are_the_ones_this_airflow_catches(name: str) -> None:
    import airflow.exceptions as core

    exc = getattr(_compat, name)
    assert issubclass(exc, BaseException) and exc.__name__ == name
    sdk = pytest.importorskip("airflow.sdk.exceptions")
    assert exc is getattr(sdk, name, None) or exc is getattr(core, name)
