"""The column-lineage API against Airflow's own app (plugins mounted by Airflow) and a real metadata DB,
after real runs of ``lineage_etl`` (``example_etl``: SparkLineageSubmitOperator under ``dag.test()``).

The run graph must say what the emitted OpenLineage events say (same datasets, schema types and
column edges); every endpoint answers 401 without a token and 403 (with no lineage of the DAG in
any answer) to a user the auth manager refuses the DAG (:mod:`tests.plugins.auth`).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from airflow_provider_lineage.lineage import column_facet, run_record
from tests.plugins.auth import DENIED_DAG, DENIED_USER, api_client

# slow tier: the example pipelines (several spark-submits, shared with the modules of EXAMPLE_PIPELINE_MODULES)
pytestmark = pytest.mark.slow

PREFIX = "/column-lineage"


@pytest.fixture(scope="module")
def app_client(example_etl: dict[str, Any]) -> Iterator[Any]:
    """Airflow's API app (core) with the test auth manager; a TestClient and a token per user."""
    with api_client() as client:
        yield client


def _get(client: Any, path: str, user: str | None = "viewer", **params: Any) -> Any:
    headers = {"Authorization": f"Bearer {client.tokens[user]}"} if user else {}
    return client.get(PREFIX + path, headers=headers, params=params)


def _run_path(dag_run: Any) -> str:
    return f"/api/dags/{quote(dag_run.dag_id, safe='')}/runs/{quote(dag_run.run_id, safe='')}"


def _records(dag_run: Any) -> dict[str, dict[str, Any]]:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.query(XComModel.task_id, XComModel.value).filter_by(
            dag_id=dag_run.dag_id, run_id=dag_run.run_id, key=run_record.XCOM_KEY).all()
    return {t: json.loads(v) if isinstance(v, str) else v for t, v in rows}


def _event_view(events: list[dict[str, Any]]) -> tuple[set, dict, set, set]:
    """(datasets, {dataset: {field: type}}, column edges, dataset-wide edges) of COMPLETE events."""
    datasets, schemas, edges, ds_edges = set(), {}, set(), set()
    for ev in events:
        for ds in ev.get("inputs", []) + ev.get("outputs", []):
            did = f"{ds['namespace']}:{ds['name']}"
            datasets.add(did)
            for f in (ds.get("facets", {}).get("schema") or {}).get("fields", []):
                schemas.setdefault(did, {})[f["name"]] = f.get("type")
        for ds in ev.get("outputs", []):
            did = f"{ds['namespace']}:{ds['name']}"
            cl = ds.get("facets", {}).get("columnLineage") or {}
            # either form: an edge the facet states for all rows (``dataset`` list, also copied onto every
            # field in the ``both`` form) is a dataset-wide edge, the others are column edges
            for col, ns, name, field, typ, sub, masking, all_rows in column_facet.edges(cl, schemas.get(did, {})):
                if all_rows:
                    ds_edges.add((f"{ns}:{name}", field, did, typ, sub, masking))
                else:
                    edges.add((f"{ns}:{name}", field, did, col, typ, sub, masking))
    return datasets, schemas, edges, ds_edges


class TestRunGraph:
    def test_plugin_is_listed_by_airflow(self, app_client: Any) -> None:
        r = app_client.get("/api/v2/plugins", headers={"Authorization": f"Bearer {app_client.tokens['admin']}"})
        assert r.status_code == 200, r.text
        plugin = next(p for p in r.json()["plugins"] if p["name"] == "column_lineage")
        assert [a["url_prefix"] for a in plugin["fastapi_apps"]] == [PREFIX]
        assert {v["destination"] for v in plugin["external_views"]} == {"dag_run", "task_instance", "nav"}

    def test_every_lineage_task_kept_a_json_record(self, example_etl: dict[str, Any]) -> None:
        records = _records(example_etl["dag_run"])
        assert set(records) == {"load", "build_marts"}
        for rec in records.values():
            assert run_record.is_record(rec) and rec["status"] == "ok" and rec["truncated"] is None
            assert rec["job"]["name"].startswith("lineage_etl.") and rec["run_id"]

    def test_run_graph_equals_the_emitted_events(self, app_client: Any, example_etl: dict[str, Any]) -> None:
        dag_run = example_etl["dag_run"]
        r = _get(app_client, _run_path(dag_run) + "/graph")
        assert r.status_code == 200, r.text
        graph = r.json()
        run_ids = {rec["run_id"] for rec in _records(dag_run).values()}
        complete = [e for e in example_etl["events"] if e["eventType"] == "COMPLETE" and e["run"]["runId"] in run_ids]
        assert len(complete) == 2
        datasets, schemas, edges, ds_edges = _event_view(complete)
        nodes = {d["id"]: d for d in graph["datasets"]}
        assert set(nodes) == datasets
        for did, fields in schemas.items():
            shown = {f["name"]: f["type"] for f in nodes[did]["fields"]}
            assert shown.items() >= fields.items(), did
        graph_ds_edges = {(e["source"], e["source_field"], e["target"], e["type"], e["subtype"], e["masking"])
                          for e in graph["dataset_edges"]}
        assert graph_ds_edges == ds_edges and ds_edges
        graph_edges = {(e["source"], e["source_field"], e["target"], e["target_field"], e["type"], e["subtype"],
                        e["masking"]) for e in graph["edges"]}
        assert graph_edges == edges
        assert len(graph["edges"]) == len(graph_edges)  # no duplicates

    def test_a_table_written_by_one_task_and_read_by_the_next_is_one_node(self, app_client: Any,
                                                                         example_etl: dict[str, Any]) -> None:
        graph = _get(app_client, _run_path(example_etl["dag_run"]) + "/graph").json()
        shared = [d for d in graph["datasets"] if "load" in d["written_by"] and "build_marts" in d["read_by"]]
        assert {d["label"] for d in shared} >= {"warehouse/transactions", "warehouse/customers"}
        assert len({d["id"] for d in graph["datasets"]}) == len(graph["datasets"])

    def test_task_graph_is_that_task_only(self, app_client: Any, example_etl: dict[str, Any]) -> None:
        base = _run_path(example_etl["dag_run"])
        g = _get(app_client, base + "/tasks/build_marts/graph").json()
        assert [t["task_id"] for t in g["tasks"]] == ["build_marts"]
        assert {e for d in g["datasets"] for e in d["written_by"]} == {"build_marts"}
        empty = _get(app_client, base + "/tasks/land/graph").json()
        assert empty["datasets"] == [] and "no lineage record" in empty["empty"]

    def test_column_path_up_and_down(self, app_client: Any, example_etl: dict[str, Any]) -> None:
        base = _run_path(example_etl["dag_run"])
        graph = _get(app_client, base + "/graph").json()
        txn = next(d for d in graph["datasets"] if d["label"] == "warehouse/transactions")
        r = _get(app_client, base + "/column", dataset=txn["id"], column="customer_id", depth=5)
        assert r.status_code == 200, r.text
        path = r.json()
        edges = [graph["edges"][i] for i in path["edges"]]
        assert any(e["target"] == txn["id"] and e["target_field"] == "customer_id" for e in edges)  # upstream
        assert any(e["source"] == txn["id"] and e["source_field"] == "customer_id" for e in edges)  # downstream
        assert [txn["id"], "customer_id"] == path["columns"][0]
        one = _get(app_client, base + "/column", dataset=txn["id"], column="customer_id", depth=1).json()
        assert set(one["edges"]) <= set(path["edges"]) and len(one["columns"]) <= len(path["columns"])
        missing = _get(app_client, base + "/column", dataset="file:/nowhere", column="x")
        assert missing.status_code == 404 and "not in the lineage" in missing.json()["detail"]

    def test_sieve_index_badges(self, app_client: Any, example_etl: dict[str, Any]) -> None:
        r = _get(app_client, _run_path(example_etl["dag_run"]) + "/indexes")
        assert r.status_code == 200, r.text
        badges = {(b["dataset"].rsplit("/", 1)[-1], b["column"]): b for b in r.json()["indexes"]}
        assert ("transactions", "txn_date") in badges and ("customer_monthly", "customer_id") in badges
        for b in badges.values():
            assert b["state"] == "fresh" and isinstance(b["version"], int), b
        # The page's one request (issue 31): the graph with the same badges, for the run and for one task.
        batched = _get(app_client, _run_path(example_etl["dag_run"]) + "/graph", include="indexes").json()
        assert batched["indexes"] == r.json()["indexes"] and batched["datasets"]
        task = _get(app_client, _run_path(example_etl["dag_run"]) + "/tasks/load/graph", include="indexes").json()
        assert task["indexes"] == r.json()["indexes"]
        assert "indexes" not in _get(app_client, _run_path(example_etl["dag_run"]) + "/graph").json()

    def test_search_finds_columns_of_recent_runs(self, app_client: Any) -> None:
        r = _get(app_client, "/api/search", q="customer_id")
        assert r.status_code == 200, r.text
        hits = r.json()["hits"]
        assert hits and all(h["column"] == "customer_id" for h in hits if h["column"])
        assert {h["dag_id"] for h in hits} == {"lineage_etl"}
        assert _get(app_client, "/api/search", q="100%_no_such").json()["hits"] == []

    def test_unknown_run_is_404(self, app_client: Any) -> None:
        r = _get(app_client, "/api/dags/lineage_etl/runs/no_such_run/graph")
        assert r.status_code == 404 and "no DAG run" in r.json()["detail"]


class TestAccess:
    def test_no_token_is_401_everywhere(self, app_client: Any, example_etl: dict[str, Any]) -> None:
        base = _run_path(example_etl["dag_run"])
        for path in (base + "/graph", base + "/tasks/load/graph", base + "/indexes", "/api/search?q=customer",
                     base + "/column?dataset=x&column=y", "/"):
            r = _get(app_client, path, user=None)
            assert r.status_code == 401, (path, r.status_code, r.text)
            assert "customer" not in r.text.replace("q=customer", "")

    def test_a_user_refused_the_dag_gets_403_and_none_of_its_lineage(self, app_client: Any,
                                                                    example_etl: dict[str, Any]) -> None:
        dag_run = example_etl["dag_run"]
        assert dag_run.dag_id == DENIED_DAG
        base = _run_path(dag_run)
        for path in (base + "/graph", base + "/tasks/build_marts/graph", base + "/indexes",
                     base + "/column?dataset=x&column=customer_id"):
            r = _get(app_client, path, user=DENIED_USER)
            assert r.status_code == 403, (path, r.status_code, r.text)
            assert "customer" not in r.text
        search = _get(app_client, "/api/search", user=DENIED_USER, q="customer_id")
        assert search.status_code == 200 and search.json()["hits"] == []
        assert _get(app_client, "/api/search", user="viewer", q="customer_id").json()["hits"]

    def test_page_needs_a_signed_in_user(self, app_client: Any) -> None:
        r = app_client.get(PREFIX + "/", cookies={"_token": app_client.tokens["viewer"]})
        assert r.status_code == 200 and "static/app.js" in r.text
        signed_out = app_client.get(PREFIX + "/")
        assert signed_out.status_code == 401 and "sign in" in signed_out.text
        assert app_client.get(PREFIX + "/static/vendor/dagre/dagre.min.js").status_code == 200


class TestRecordBound:
    def test_a_record_over_the_limit_is_cut_with_a_marker_the_graph_shows(self, example_etl: dict[str, Any]) -> None:
        from airflow_provider_lineage.plugins.graph import TaskRecord, stitch

        rec = _records(example_etl["dag_run"])["build_marts"]
        limit = run_record.size(rec) // 2
        cut = run_record.cut(json.loads(json.dumps(rec)), limit)
        assert run_record.size(cut) <= limit
        marker = cut["truncated"]
        assert marker["edges_kept"] < marker["edges_total"] == len(rec["edges"]) and "limit" in marker["reason"]
        graph = stitch([TaskRecord("build_marts", record=cut, state="success")])
        assert graph["tasks"][0]["truncated"] == marker and graph["datasets"]
