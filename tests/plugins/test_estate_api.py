"""The estate API (``/api/impact`` contract, graph, diff, search, runs) on Airflow's own app and metadata DB,
with three DAGs chained through tables (``estate_a`` -> ``lineage_etl`` -> ``estate_c``; the middle one is the
DAG :mod:`tests.plugins.auth` refuses user ``outsider``). Real rows, no Spark (the browser test runs Spark)."""
from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from tests.plugins.auth import DENIED_DAG, DENIED_USER, api_client
from tests.plugins.estate_support import NS, T0, add_run, record, wipe_runs

PREFIX = "/column-lineage"
RUN_PREFIX = "estate__"


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:

    from tests.support.pipelines import migrate_db

    migrate_db()
    wipe_runs(RUN_PREFIX)
    for dag_id, task, rec, day in (
        ("estate_a", "load", record({"t1": [("email", "landing:email")]}), 1),
        (DENIED_DAG, "mart", record({"t2": [("email_h", "t1:email")]}, masked={"email_h"}), 2),
        ("estate_c", "report", record({"t3": [("email_x", "t2:email_h")]}), 5),
    ):
        add_run(dag_id, task, rec, day=day, run_id=f"{RUN_PREFIX}{day}")
    with api_client() as c:
        yield c
    wipe_runs(RUN_PREFIX)


def _get(c: Any, path: str, user: str | None = "viewer", **params: Any) -> Any:
    headers = {"Authorization": f"Bearer {c.tokens[user]}"} if user else {}
    return c.get(PREFIX + path, headers=headers, params=params)


def test_impact_contract_json_and_csv(client: Any) -> None:
    r = _get(client, "/api/impact", namespace=NS, name="landing", column="email", direction="downstream", depth=5)
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"rows", "hidden", "total", "truncated", "next_cursor", "notice"} and body["hidden"] == 0
    assert body["total"] == 3 and body["next_cursor"] is None and body["truncated"] is False
    keys = ["namespace", "name", "column", "depth", "dag_id", "task_id", "run_id", "path", "types", "masked"]
    assert all(list(row) == keys for row in body["rows"])
    assert [(x["name"], x["column"], x["depth"], x["dag_id"]) for x in body["rows"]] == [
        ("t1", "email", 1, "estate_a"), ("t2", "email_h", 2, DENIED_DAG), ("t3", "email_x", 3, "estate_c")]
    c = _get(client, "/api/impact", namespace=NS, name="landing", column="email", depth=5, format="csv")
    assert c.status_code == 200 and c.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(c.text)))
    assert c.text.splitlines()[0] == ",".join(keys)
    as_json = [
        {k: ("true" if v is True else "false" if v is False else str(v)) for k, v in x.items()} for x in body["rows"]
    ]
    assert rows == as_json


def test_impact_as_of_upstream_and_errors(client: Any) -> None:
    before_c = _get(client, "/api/impact", namespace=NS, name="t1", column="email", depth=5,
                    as_of=(T0 + timedelta(days=3)).isoformat()).json()
    assert [x["name"] for x in before_c["rows"]] == ["t2"]
    up = _get(client, "/api/impact", namespace=NS, name="t3", column="email_x", direction="upstream", depth=5).json()
    assert [x["name"] for x in up["rows"]] == ["t2", "t1", "landing"]
    bad = _get(client, "/api/impact", namespace=NS, name="t1", as_of="last tuesday")
    assert bad.status_code == 400 and "ISO 8601" in bad.json()["detail"]
    assert _get(client, "/api/impact", namespace=NS, name="t1", direction="sideways").status_code == 422
    nowhere = _get(client, "/api/impact", namespace=NS, name="nowhere").json()
    assert nowhere["rows"] == [] and nowhere["hidden"] == 0 and nowhere["total"] == 0


def test_no_token_is_401(client: Any) -> None:
    for path, params in (("/api/impact", {"namespace": NS, "name": "t1"}), ("/api/estate/search", {"q": "t"}),
                         ("/api/estate/graph", {"namespace": NS, "name": "t1"}), ("/api/estate/runs", {}),
                         ("/api/estate/diff", {"namespace": NS, "name": "t1", "before": "2026-01-01"})):
        r = _get(client, path, user=None, **params)
        assert r.status_code == 401, (path, r.text)
        assert "email" not in r.text
    assert client.get(PREFIX + "/estate").status_code == 401


def test_a_user_refused_the_middle_dag_sees_counts_not_names(client: Any) -> None:
    r = _get(client, "/api/impact", user=DENIED_USER, namespace=NS, name="landing", column="email", depth=5).json()
    assert [(x["name"], x["column"]) for x in r["rows"]] == [("t1", "email")] and r["hidden"] == 1
    g = _get(client, "/api/estate/graph", user=DENIED_USER, namespace=NS, name="t1", column="email", depth=3).json()
    text = repr(g)
    assert DENIED_DAG not in text and "email_h" not in text and "file:t2" not in text and "t3" not in text
    t1 = next(d for d in g["datasets"] if d["name"] == "t1")
    assert t1["hidden_down"] == 1 and g["hidden"] == 1
    hits = _get(client, "/api/estate/search", user=DENIED_USER, q="email").json()["hits"]
    # t2 is read by estate_c, which the user may read: the dataset is findable, the edges into it are not
    assert {(h["name"], h["column"]) for h in hits} == {("landing", "email"), ("t1", "email"), ("t2", "email_h"),
                                                        ("t3", "email_x")}
    runs = _get(client, "/api/estate/runs", user=DENIED_USER).json()["runs"]
    assert DENIED_DAG not in {x["dag_id"] for x in runs}
    full = _get(client, "/api/estate/graph", namespace=NS, name="t1", column="email", depth=3).json()
    assert {d["name"] for d in full["datasets"]} == {"landing", "t1", "t2", "t3"} and full["hidden"] == 0


def test_graph_expand_and_diff(client: Any) -> None:
    one = _get(client, "/api/estate/graph", namespace=NS, name="t1", column="email").json()
    assert {d["name"] for d in one["datasets"]} == {"landing", "t1", "t2"}
    t2 = next(d for d in one["datasets"] if d["name"] == "t2")
    assert t2["more_down"] == 1
    edge = next(e for e in one["edges"] if e["target"] == "file:t2")
    assert edge["dag_id"] == DENIED_DAG and edge["url"].endswith("/plugin/column-lineage-run")
    assert edge["last_run"]["state"] == "success" and edge["masking"] is True
    grown = client.get(PREFIX + "/api/estate/graph", headers={"Authorization": f"Bearer {client.tokens['viewer']}"},
                       params=[("namespace", NS), ("name", "t1"), ("column", "email"), ("namespace", NS),
                               ("name", "t2"), ("column", "email_h")]).json()
    assert {d["name"] for d in grown["datasets"]} == {"landing", "t1", "t2", "t3"}
    d = _get(client, "/api/estate/diff", namespace=NS, name="t1", column="email", depth=3,
             before=(T0 + timedelta(days=3)).isoformat()).json()
    assert d["added"]["datasets"] == ["file:t3"] and d["removed"]["datasets"] == []
    assert [(e["target"], e["target_field"]) for e in d["added"]["edges"]] == [("file:t3", "email_x")]


def test_estate_page_is_served_to_a_signed_in_user(client: Any) -> None:
    r = client.get(PREFIX + "/estate", cookies={"_token": client.tokens["viewer"]})
    assert r.status_code == 200 and "static/estate.js" in r.text
