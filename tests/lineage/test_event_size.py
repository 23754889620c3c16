"""An event over its transport's size limit is split per output dataset, no edge dropped (issue 36, item 4).

Real openlineage-python clients (file and http transports; the http one is only built, never sent to);
Kafka cannot run here, so its limit is read from a stand-in of the client's transport (kind + config).
"""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from openlineage.client import OpenLineageClient
from openlineage.client.serde import Serde

from airflow_provider_lineage.lineage import column_facet, transport
from airflow_provider_lineage.lineage.events import build_event, run_facets
from airflow_provider_lineage.lineage.facets import datasets_for
from airflow_provider_lineage.lineage.model import ParentRun
from benchmarks.lineage.event_size import wide_lineage
from tests.support.marquez_rules import MarquezModel
from tests.support.ol_validate import validate_event

RUN = "01930000-0000-7000-8000-000000000002"


def _event(outputs: int = 3, columns: int = 200, indirect: str = "dataset") -> Any:
    lins = [wide_lineage(columns=columns, keys=6, base=f"/data/lake{i}") for i in range(outputs)]
    ins, outs = datasets_for(lins, indirect=indirect)
    parent = ParentRun(namespace="airflow", name="dag.task", run_id="01930000-0000-7000-8000-0000000000aa")
    return build_event("COMPLETE", job_namespace="airflow", job_name="dag.task", run_id=RUN, inputs=ins, outputs=outs,
                       run_facets=run_facets(None, parent=parent))


def _dict(ev: Any) -> dict[str, Any]:
    return json.loads(Serde.to_json(ev))


def _edges(events: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    out = set()
    for ev in events:
        for o in ev["outputs"]:
            facet = o["facets"]["columnLineage"]
            fields = [f["name"] for f in o["facets"]["schema"]["fields"]]
            out |= {(o["name"], *e) for e in column_facet.edges(facet, fields)}
    return out


def _file_client(tmp_path: Path) -> OpenLineageClient:
    client, _ = transport.client_for(transport.default_file_config(tmp_path / "events.jsonl"))
    return client


def test_an_event_over_the_limit_is_split_per_output_without_losing_an_edge(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    ev = _event()
    client = _file_client(tmp_path)
    size = transport.wire_bytes(client, ev)
    limit = size // 2
    monkeypatch.setenv(transport.LIMIT_ENV, str(limit))
    assert transport.event_limit(client) == limit
    notes: list[str] = []
    parts = transport.fit_events(client, [ev], notes)
    assert len(parts) == 3 and all(transport.wire_bytes(client, p) <= limit for p in parts)
    assert [p.eventType.value for p in parts] == ["RUNNING", "RUNNING", "COMPLETE"]
    assert {p.run.runId for p in parts} == {RUN} and all("parent" in p.run.facets for p in parts)
    docs = [_dict(p) for p in parts]
    assert _edges(docs) == _edges([_dict(ev)])  # no edge dropped
    assert all(validate_event(d) == [] for d in docs)
    model = MarquezModel().ingest_all(docs)  # every edge's input is an input of its own part
    assert (model.violations, model.dropped, model.lost()) == ([], [], [])
    assert len(notes) == 1 and f"{size} bytes is over the {limit}-byte limit" in notes[0]
    assert "sent as 3 events of the same run (no edge dropped" in notes[0]


def test_emit_all_sends_the_parts_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ev = _event()
    client = _file_client(tmp_path)
    monkeypatch.setenv(transport.LIMIT_ENV, str(transport.wire_bytes(client, ev) // 2))
    notes: list[str] = []
    assert transport.emit_all(client, [ev], notes=notes) == []
    lines = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [x["eventType"] for x in lines] == ["RUNNING", "RUNNING", "COMPLETE"] and len(notes) == 1
    monkeypatch.setenv(transport.LIMIT_ENV, "0")  # no limit: sent as is
    notes.clear()
    assert transport.emit_all(_file_client(tmp_path), [ev], notes=notes) == [] and notes == []
    assert len((tmp_path / "events.jsonl").read_text().splitlines()) == 4


def test_one_output_over_the_limit_is_split_by_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ev = _event(outputs=1, columns=600)
    client = _file_client(tmp_path)
    limit = transport.wire_bytes(client, ev) // 3
    monkeypatch.setenv(transport.LIMIT_ENV, str(limit))
    notes: list[str] = []
    parts = transport.fit_events(client, [ev], notes)
    assert len(parts) >= 4 and all(transport.wire_bytes(client, p) <= limit for p in parts)
    assert [p.eventType.value for p in parts][-1] == "COMPLETE" and "over the limit" not in notes[0].split("(no edge")[
        1
    ]
    docs = [_dict(p) for p in parts]
    assert _edges(docs) == _edges([_dict(ev)]) and all(validate_event(d) == [] for d in docs)
    # every part names the same output with its whole schema; the dataset-level list is stated once
    outs = [o for d in docs for o in d["outputs"]]
    assert {o["name"] for o in outs} == {"/data/lake0/features"}
    assert all(len(o["facets"]["schema"]["fields"]) == 600 for o in outs)
    assert sum(bool(o["facets"]["columnLineage"]["dataset"]) for o in outs) == 1
    model = MarquezModel().ingest_all(docs)
    assert (model.violations, model.dropped, model.lost()) == ([], [], [])
    assert len(model.stored) == sum(len(spec["inputFields"]) for d in [_dict(ev)] for o in d["outputs"]
                                    for spec in o["facets"]["columnLineage"]["fields"].values())


def test_what_cannot_fit_is_sent_whole_and_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ev = _event(outputs=1, columns=50)
    client = _file_client(tmp_path)
    monkeypatch.setenv(transport.LIMIT_ENV, "1000")  # less than the inputs' schemas alone
    notes: list[str] = []
    parts = transport.fit_events(client, [ev], notes)
    assert _edges([_dict(p) for p in parts]) == _edges([_dict(ev)])
    assert "still" in notes[0] and "over the limit" in notes[0] and "sent as is" in notes[0]


def test_transport_limits_and_gzip_wire_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(transport.LIMIT_ENV, raising=False)
    ev = _event(outputs=1, columns=1200)
    assert transport.event_limit(_file_client(tmp_path)) is None
    plain = OpenLineageClient(config={"transport": {"type": "http", "url": "http://127.0.0.1:9"}})
    gz = OpenLineageClient(config={"transport": {"type": "http", "url": "http://127.0.0.1:9", "compression": "gzip"}})
    assert transport.event_limit(plain) == transport.HTTP_EVENT_LIMIT == 1_000_000
    assert transport.wire_bytes(gz, ev) * 5 < transport.wire_bytes(plain, ev) == len(Serde.to_json(ev).encode())
    kafka = SimpleNamespace(transport=SimpleNamespace(kind="kafka", config=SimpleNamespace(config={})))
    assert transport.event_limit(kafka) == transport.KAFKA_EVENT_LIMIT  # type: ignore[arg-type]
    kafka.transport.config.config["max.request.size"] = "500000"
    assert transport.event_limit(kafka) == 500_000  # type: ignore[arg-type]
    monkeypatch.setenv(transport.LIMIT_ENV, "0")
    assert transport.event_limit(plain) is None


def test_1200_column_outputs_fit_the_limit_in_the_default_form_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """1,200 columns x 6 shared join/filter/sort keys: one output is one event under 1 MB in the dataset form
    (about 0.58 MB) and over it in the per-field form (about 1.9 MB: split by columns); two outputs in the
    dataset form are split into one event each, both under the limit, no edge lost."""
    monkeypatch.delenv(transport.LIMIT_ENV, raising=False)
    client = OpenLineageClient(config={"transport": {"type": "http", "url": "http://127.0.0.1:9"}})
    one = _event(outputs=1, columns=1200)
    assert transport.fit_events(client, [one]) == [one] and transport.wire_bytes(client, one) < 1_000_000
    legacy = _event(outputs=1, columns=1200, indirect="fields")
    parts = transport.fit_events(client, [legacy])
    assert len(parts) in (2, 3) and all(transport.wire_bytes(client, p) <= 1_000_000 for p in parts)
    assert _edges([_dict(p) for p in parts]) == _edges([_dict(legacy)])
    two = _event(outputs=2, columns=1200)
    parts = transport.fit_events(client, [two])
    assert len(parts) == 2 and all(transport.wire_bytes(client, p) <= 1_000_000 for p in parts)
    assert _edges([_dict(p) for p in parts]) == _edges([_dict(two)])
