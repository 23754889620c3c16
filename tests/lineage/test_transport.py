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


# -- issue 51: where the every-row edges go when nobody chose (Marquez ignores the facet's dataset-level list) -----
MARQUEZ = {"type": "http", "url": "http://marquez:5000", "endpoint": "api/v1/lineage"}


@pytest.mark.parametrize(
    ("config", "blind"),
    [
        (MARQUEZ, "http://marquez:5000/api/v1/lineage"),
        ({"type": "http", "url": "http://marquez:5000/"}, "http://marquez:5000/api/v1/lineage"),  # the default endpoint
        ({**MARQUEZ, "endpoint": "/api/v1/lineage/"}, "http://marquez:5000/api/v1/lineage"),
        ({"type": "HTTP", "url": "http://m:5000", "endpoint": "api/v1/lineage"}, "http://m:5000/api/v1/lineage"),
        ({"type": "async_http", "url": "http://m:5000"}, "http://m:5000/api/v1/lineage"),
        ({"type": "composite", "transports": [{"type": "console"}, MARQUEZ]}, "http://marquez:5000/api/v1/lineage"),
        ({"type": "composite", "transports": {"a": {"type": "file", "log_file_path": "x"}, "m": MARQUEZ}},
         "http://marquez:5000/api/v1/lineage"),
        ({"type": "transform", "transformer_class": "x.Y", "transport": MARQUEZ}, "http://marquez:5000/api/v1/lineage"),
        ({"type": "http", "url": "http://collector:8080", "endpoint": "v1/events"}, None),  # another http consumer
        ({"type": "file", "log_file_path": "/tmp/e.jsonl"}, None),
        ({"type": "kafka", "topic": "ol", "config": {}}, None),
        ({"type": "composite", "transports": [{"type": "console"}]}, None),
        ({}, None),
        (None, None),
    ],
)
def test_which_consumers_ignore_the_dataset_level_list(config: object, blind: str | None) -> None:
    assert transport.dataset_list_blind(config) == blind  # type: ignore[arg-type]
    placement, why = transport.auto_indirect(config)  # type: ignore[arg-type]
    assert placement == ("both" if blind else "dataset")
    assert (blind in why) if blind else "dataset-level list" in why


def test_environment_transport_reads_the_standard_places(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert transport.environment_transport() is None
    monkeypatch.setenv("OPENLINEAGE_URL", "http://127.0.0.1:5000")  # the README's line for users without the provider
    assert transport.auto_indirect(transport.environment_transport())[0] == "both"
    monkeypatch.setenv("OPENLINEAGE_ENDPOINT", "v1/ingest")
    assert transport.auto_indirect(transport.environment_transport())[0] == "dataset"
    monkeypatch.delenv("OPENLINEAGE_URL")
    monkeypatch.delenv("OPENLINEAGE_ENDPOINT")
    (clean_env / "openlineage.yml").write_text("transport:\n  type: http\n  url: http://marquez:5000\n")
    assert transport.dataset_list_blind(transport.environment_transport()) == "http://marquez:5000/api/v1/lineage"
