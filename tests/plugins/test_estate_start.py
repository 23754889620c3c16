"""``GET /column-lineage/api/estate/start`` (the estate page's first view) on Airflow's own app and metadata DB:
the datasets written most recently and the DAGs with lineage, names from readable DAGs only (user ``outsider``
may not read ``lineage_etl``: :mod:`tests.plugins.auth`). Real rows, no Spark."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.plugins.auth import DENIED_DAG, DENIED_USER, api_client
from tests.plugins.estate_support import NS, add_run, record, wipe_runs

PREFIX = "/column-lineage"
RUN_PREFIX = "estate_start__"
# Far after the other estate tests' runs (T0 + a few days) and their real runs (now): these are the newest.
DAYS = {"start_a": 400, "start_c": 401, DENIED_DAG: 402}
SECRET = "start_secret_mart"


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    from tests.support.pipelines import migrate_db

    migrate_db()
    wipe_runs(RUN_PREFIX)
    add_run("start_a", "load", record({"start_orders": [("id", "start_landing:id")]}), day=DAYS["start_a"],
            run_id=f"{RUN_PREFIX}a")
    add_run("start_c", "report", record({"start_report": [("id", "start_orders:id")],
                                         "start_report_2": [("id", "start_orders:id")]}),
            day=DAYS["start_c"], run_id=f"{RUN_PREFIX}c")
    add_run(DENIED_DAG, "mart", record({SECRET: [("id", "start_orders:id")]}), day=DAYS[DENIED_DAG],
            run_id=f"{RUN_PREFIX}denied")
    add_run("start_a", "load", record({"start_never": [("id", "start_landing:id")]}), day=DAYS["start_a"] + 10,
            state="failed", run_id=f"{RUN_PREFIX}a_failed")  # a failed run wrote nothing that counts
    with api_client() as c:
        yield c
    wipe_runs(RUN_PREFIX)


def _start(c: Any, user: str | None = "viewer", **params: Any) -> Any:
    headers = {"Authorization": f"Bearer {c.tokens[user]}"} if user else {}
    return c.get(PREFIX + "/api/estate/start", headers=headers, params=params)


def test_recent_datasets_newest_first_with_their_writer(client: Any) -> None:
    body = _start(client, limit=50).json()
    mine = [(r["name"], r["dag_id"]) for r in body["recent"] if r["name"].startswith("start_")]
    assert mine[:4] == [(SECRET, DENIED_DAG), ("start_report", "start_c"), ("start_report_2", "start_c"),
                        ("start_orders", "start_a")]
    assert "start_never" not in {r["name"] for r in body["recent"]}
    first = body["recent"][0]
    assert first["namespace"] == NS and first["label"] == SECRET and first["written"].startswith("2027-02-07")
    assert first["url"] == f"/dags/{DENIED_DAG}/runs/{RUN_PREFIX}denied/plugin/column-lineage-run"
    # the limit bounds the list
    assert len(_start(client, limit=2).json()["recent"]) == 2
    assert _start(client, limit=0).status_code == 422 and _start(client, limit=51).status_code == 422


def test_dags_with_lineage_and_what_they_write(client: Any) -> None:
    body = _start(client).json()
    dags = {d["dag_id"]: d for d in body["dags"]}
    assert [d["dag_id"] for d in body["dags"]][:3] == [DENIED_DAG, "start_c", "start_a"]  # newest lineage first
    assert [w["name"] for w in dags["start_c"]["writes"]] == ["start_report", "start_report_2"]
    assert dags["start_c"]["writes_total"] == 2 and dags["start_c"]["tasks"] == 1
    # the last *successful* run: its writes and its run link, not the failed later one
    assert [w["name"] for w in dags["start_a"]["writes"]] == ["start_orders"]
    assert dags["start_a"]["last_run"]["run_id"] == f"{RUN_PREFIX}a"
    assert body["dags_total"] >= 3 and body["hidden_dags"] == 0


def test_unreadable_dags_are_counted_never_named(client: Any) -> None:
    viewer = _start(client, limit=50).json()
    outsider = _start(client, DENIED_USER, limit=50)
    assert outsider.status_code == 200
    body = outsider.json()
    assert SECRET not in outsider.text and DENIED_DAG not in outsider.text
    assert body["hidden_dags"] == 1 and body["dags_total"] == viewer["dags_total"] - 1
    mine = [r["name"] for r in body["recent"] if r["name"].startswith("start_")]
    assert mine[:3] == ["start_report", "start_report_2", "start_orders"]


def test_needs_a_signed_in_user(client: Any) -> None:
    assert _start(client, None).status_code == 401
