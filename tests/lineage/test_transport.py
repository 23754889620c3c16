"""Where events go: the embedded default file, the standard settings, and failures that never raise.

The HTTP case talks to a real local socket on 127.0.0.1 that refuses connections (Marquez itself
cannot run here).
"""
from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from airflow_provider_lineage.lineage import events, transport


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for key in list(os.environ):
        if key.startswith("OPENLINEAGE"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)  # no ./openlineage.yml
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.openlineage/openlineage.yml
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "home"))
    return tmp_path


def _event() -> object:
    return events.build_event("START", job_namespace="ns", job_name="job", run_id=events.new_run_id())


def test_nothing_configured_means_the_embedded_default_file(clean_env: Path) -> None:
    assert transport.environment_configured() is False
    client, where = transport.client_for()
    assert where == f"file {clean_env / 'home' / 'lineage' / 'events.jsonl'}"
    assert transport.emit_all(client, [_event()]) == []
    lines = (clean_env / "home" / "lineage" / "events.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["eventType"] == "START"


@pytest.mark.parametrize("setting", ["OPENLINEAGE_URL", "OPENLINEAGE__TRANSPORT__TYPE", "yaml"])
def test_standard_settings_are_detected(clean_env: Path, monkeypatch: pytest.MonkeyPatch, setting: str) -> None:
    if setting == "OPENLINEAGE_URL":
        monkeypatch.setenv(setting, "http://127.0.0.1:9")
    elif setting == "yaml":
        (clean_env / "openlineage.yml").write_text("transport:\n  type: console\n")
    else:
        monkeypatch.setenv(setting, "console")
    assert transport.environment_configured() is True


def test_refused_http_endpoint_is_reported_not_raised(clean_env: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client, where = transport.client_for(
        {"transport": {"type": "http", "url": f"http://127.0.0.1:{port}", "timeout": 2, "retry": {"total": 0}}}
    )
    assert where.startswith(f"http http://127.0.0.1:{port}")
    problems = transport.emit_all(client, [_event()])
    assert len(problems) == 1 and "START" in problems[0]
