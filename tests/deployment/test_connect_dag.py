"""The Spark Connect example DAG on a real deployment (issue 38): api-server, scheduler, dag-processor and
triggerer (the shared ``deployment`` fixture) with a lineage Connect server on loopback that requires a token, as
``./dev.sh up`` runs them (the connection's password is the token). The connection ``spark_connect_default`` is added
through the REST API, as a user would; the tasks' sessions are remote, the server captures their writes, and
each task reads its record back from the
connection's ``capture_dir``: XCom, OpenLineage events with the task as parent, the run's lineage graph.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.support.connect import ConnectServer, connect_server
from tests.support.deployment import read_events

pytestmark = [pytest.mark.xdist_group("deployment"), pytest.mark.deployment, pytest.mark.slow,
              pytest.mark.timeout(2400)]

DAG_ID = "lineage_connect_taskflow"
CONN_ID = "spark_connect_default"


@pytest.fixture(scope="module")
def connect_run(deployment: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    base = tmp_path_factory.mktemp("connect-dag")
    with connect_server(base / "server", token=True) as server:  # as ./dev.sh up: the server requires a token
        conn = {"connection_id": CONN_ID, "conn_type": "spark_connect", "host": "sc://127.0.0.1",
                "port": server.port, "password": server.token,
                "extra": json.dumps({"capture_dir": str(server.capture_dir)})}
        with deployment.client("admin") as client:
            client.delete(f"/api/v2/connections/{CONN_ID}")
            client.post("/api/v2/connections", json=conn).raise_for_status()
        mark = len(read_events(deployment.events_path))
        data = base / "data"
        run_id = deployment.trigger(DAG_ID, conf={"data_dir": str(data), "rows": 800})
        try:
            deployment.wait_success(DAG_ID, run_id, timeout=900)
            yield {"run_id": run_id, "data": data, "server": server,
                   "events": read_events(deployment.events_path)[mark:]}
        finally:
            with deployment.client("admin") as client:
                client.delete(f"/api/v2/connections/{CONN_ID}")


def _xcom(deployment: Any, run_id: str, task_id: str, key: str) -> Any:
    with deployment.client("viewer") as client:
        res = client.get(f"/api/v2/dags/{DAG_ID}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}/"
                         f"xcomEntries/{key}", params={"deserialize": True})
        res.raise_for_status()
        value = res.json()["value"]
    return json.loads(value) if isinstance(value, str) else value


def test_column_lineage_of_each_remote_task(deployment: Any, connect_run: dict[str, Any]) -> None:
    data: Path = connect_run["data"]
    src, mart = str(data / "transactions_connect"), str(data / "mart" / "customer_totals_connect")
    record = _xcom(deployment, connect_run["run_id"], "customer_totals", "column_lineage")
    assert record["status"] == "ok" and record["problems"] == [], record.get("problems")
    names = [d["name"] for d in record["datasets"]]
    edges = {(names[o], oc, names[i], ic, t, s) for o, oc, i, ic, t, s, _m in record["edges"]}
    assert {(mart, "total_eur", src, "amount", "DIRECT", "AGGREGATION"),
            (mart, "total_eur", src, "fx_rate", "DIRECT", "AGGREGATION"),
            (mart, "channel", src, "channel", "DIRECT", "IDENTITY")} <= edges
    summary = _xcom(deployment, connect_run["run_id"], "channel_summary", "lineage_outputs")
    assert [o["name"] for o in summary] == [str(data / "mart" / "channel_summary_connect")]


def test_events_have_the_task_as_parent(connect_run: dict[str, Any]) -> None:
    for task in ("customer_totals", "channel_summary"):
        mine = [e for e in connect_run["events"] if e["job"]["name"] == f"{DAG_ID}.{task}"]
        assert [e["eventType"] for e in mine] == ["START", "COMPLETE"], (task, [e["eventType"] for e in mine])
        assert mine[-1]["run"]["facets"]["parent"]["job"]["name"] == DAG_ID
        out = mine[-1]["outputs"]
        assert out and out[0]["facets"]["columnLineage"], task


def test_the_runs_lineage_graph_shows_both_remote_tasks(deployment: Any, connect_run: dict[str, Any]) -> None:
    with deployment.client("viewer") as client:
        res = client.get(f"/column-lineage/api/dags/{DAG_ID}/runs/{quote(connect_run['run_id'], safe='')}/graph")
        res.raise_for_status()
        graph = res.json()
    labels = {t["label"] for t in graph["tasks"]}
    assert {"customer_totals", "channel_summary"} <= labels, labels


def test_the_server_left_no_record_behind(connect_run: dict[str, Any]) -> None:
    server: ConnectServer = connect_run["server"]
    # each task takes its records out of the shared capture folder
    assert not [p for p in server.capture_dir.glob("run-*") if any(p.iterdir())]
