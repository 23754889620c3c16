"""The guard's endpoints on Airflow's own app with real users of its simple auth manager (:mod:`tests.plugins.auth`:
``outsider`` may not read ``lineage_etl``; ``viewer`` may read every DAG but no Variable; ``admin`` everything),
real rows in the metadata DB, no Spark. Issue 37, findings 7 and 9:

* ``/api/tags/unmasked``: what the user cannot read is a count (``hidden``, ``hidden_hops``, ``problems_hidden``),
  never a name; the declaration's problems only for a user who may read the Variable; no disk looked at; the
  estate's tag map computed once per index state, not on every request;
* the run view: tag paths through datasets only ``lineage_etl`` names show as a count.

Lineage: ``gt_src`` copies /gt/landing.email (declared pii) to /gt/customers; ``lineage_etl`` (hidden from
``outsider``) copies it to /gt/secret_hr/stage.x, then to /gt/secret_hr/salaries.email_copy and
/gt/secret_hr/bonus.mail; ``gt_report`` copies salaries.email_copy to /gt/report.contact.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from tests.plugins.auth import DENIED_DAG, DENIED_USER, api_client
from tests.plugins.estate_support import add_run, record

PREFIX = "/column-lineage"
RUN_PREFIX = "guardapi__"
DECL = {"datasets": [{"namespace": "file", "name": "/gt/landing", "columns": {"email": ["pii"]}},
                     {"namespace": "file", "name": "/gt/secret_typo_dataset", "columns": {"x": ["pii"]}}]}


def _hop(name: str, column: str) -> dict[str, Any]:
    return {"namespace": "file", "name": name, "column": column}


PATH = [_hop("/gt/landing", "email"), _hop("/gt/customers", "email"), _hop("/gt/secret_hr/stage", "x"),
        _hop("/gt/secret_hr/salaries", "email_copy"), _hop("/gt/report", "contact")]


def _report_record() -> dict[str, Any]:
    """gt_report's record as the operator leaves it: the tags it inherited along the estate and its policy."""
    rec = record({"/gt/report": [("contact", "/gt/secret_hr/salaries:email_copy")]})
    out = rec["datasets"].index(next(d for d in rec["datasets"] if d["name"] == "/gt/report"))
    entry = {"tag": "pii", "source": "inherited", "masked": False, "path": PATH}
    rec["tags"] = {"columns": [[out, "contact", [entry]]], "stopped": []}
    rec["policy"] = {"require_masked": ["pii"], "violations": [{"column": PATH[-1], "tag": "pii", "path": PATH}]}
    return rec


def _wipe() -> None:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    from airflow_provider_lineage.plugins.estate import index
    from airflow_provider_lineage.plugins.guard import estate as guard_estate

    with create_session() as session:
        session.execute(delete(DagRun).where(DagRun.run_id.like(RUN_PREFIX + "%")))
    with create_session() as session:
        index.sync(session, force=True)
        index.prune(session, force=True)
        session.commit()
    guard_estate.clear_cache()


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    from tests.support.pipelines import migrate_db

    migrate_db()
    mp = pytest.MonkeyPatch()
    mp.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", json.dumps(DECL))
    _wipe()
    add_run("gt_src", "load", record({"/gt/customers": [("email", "/gt/landing:email")]}), day=1,
            run_id=RUN_PREFIX + "1")
    add_run(DENIED_DAG, "hr", record({"/gt/secret_hr/stage": [("x", "/gt/customers:email")],
                                      "/gt/secret_hr/salaries": [("email_copy", "/gt/secret_hr/stage:x")],
                                      "/gt/secret_hr/bonus": [("mail", "/gt/secret_hr/stage:x")]}),
            day=2, run_id=RUN_PREFIX + "2")
    add_run("gt_report", "report", _report_record(), day=3, run_id=RUN_PREFIX + "3")
    from airflow.utils.session import create_session

    from airflow_provider_lineage.plugins.estate import index

    with create_session() as session:
        index.sync(session, force=True)
    try:
        with api_client() as c:
            yield c
    finally:
        _wipe()
        mp.undo()


def _get(c: Any, path: str, user: str = "viewer", **params: Any) -> Any:
    return c.get(PREFIX + path, headers={"Authorization": f"Bearer {c.tokens[user]}"}, params=params)


def _mine(body: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(u["dataset"].split(":", 1)[1], u["column"]): u for u in body["unmasked"] if "/gt/" in u["dataset"]}


def _names(path: list[dict[str, Any]]) -> list[str]:
    return [f"{p['name']}.{p['column']}" if not p.get("hidden") else f"hidden:{p['hidden']}" for p in path]


def test_unmasked_shows_a_user_counts_only_for_what_the_user_cannot_read(client: Any) -> None:
    full = _get(client, "/api/tags/unmasked", "viewer", tag="pii")
    assert full.status_code == 200, full.text
    seen = _mine(full.json())
    assert set(seen) == {
        ("/gt/customers", "email"),
        ("/gt/secret_hr/stage", "x"),
        ("/gt/secret_hr/salaries", "email_copy"),
        ("/gt/secret_hr/bonus", "mail"),
        ("/gt/report", "contact"),
    }
    assert _names(seen[("/gt/report", "contact")]["path"]) == [f"{p['name']}.{p['column']}" for p in PATH]

    r = _get(client, "/api/tags/unmasked", DENIED_USER, tag="pii")
    assert r.status_code == 200, r.text
    body = r.json()
    assert "stage" not in r.text and "bonus" not in r.text  # names only lineage_etl's lineage has
    assert DENIED_DAG not in r.text
    got = _mine(body)
    # salaries.email_copy: gt_report reads it (a name the user may read), the edge into it is lineage_etl's
    assert set(got) == {("/gt/customers", "email"), ("/gt/secret_hr/salaries", "email_copy"), ("/gt/report", "contact")}
    assert got[("/gt/secret_hr/salaries", "email_copy")]["dag_id"] is None
    assert got[("/gt/report", "contact")]["dag_id"] == "gt_report"
    assert _names(got[("/gt/report", "contact")]["path"]) == [
        "/gt/landing.email",
        "/gt/customers.email",
        "hidden:1",
        "/gt/secret_hr/salaries.email_copy",
        "/gt/report.contact",
    ]
    assert body["hidden"] >= 2 and body["hidden_hops"] >= 2  # stage.x and bonus.mail; their paths' hops
    assert full.json()["hidden"] == 0


def test_the_declarations_problems_only_for_who_may_read_it_and_no_disk_probe(client: Any) -> None:
    admin = _get(client, "/api/tags/unmasked", "admin").json()
    (typo,) = [p for p in admin["problems"] if "secret_typo_dataset" in p]
    assert "no lineage record in the estate index names" in typo and admin["problems_hidden"] == 0
    assert not any("does not exist" in p for p in admin["problems"])  # /gt/landing is on no disk: never looked at
    for user in ("viewer", DENIED_USER):  # viewers may not read Variables (simple auth manager: OP and up)
        r = _get(client, "/api/tags/unmasked", user)
        assert "secret_typo_dataset" not in r.text
        assert r.json()["problems"] == [] and r.json()["problems_hidden"] >= 1


def test_the_estate_tag_map_is_computed_once_per_index_state(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.utils.session import create_session

    from airflow_provider_lineage.plugins.estate import index, query
    from airflow_provider_lineage.plugins.guard import estate as guard_estate

    calls = []
    real = query.edges_as_of

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(query, "edges_as_of", counted)
    guard_estate.clear_cache()
    first = _get(client, "/api/tags/unmasked", "viewer", tag="pii").json()
    for user in ("viewer", DENIED_USER, "admin", "viewer"):
        assert _get(client, "/api/tags/unmasked", user, tag="pii").status_code == 200
    assert len(calls) == 1  # one read of the estate's edges for five requests of three users
    # a new lineage run synced into the index: the next request computes again, and sees it
    add_run(
        "gt_src",
        "load",
        record({"/gt/customers": [("email", "/gt/landing:email"), ("email2", "/gt/landing:email")]}),
        day=4,
        run_id=RUN_PREFIX + "4",
    )
    with create_session() as session:
        index.sync(session, force=True)
    again = _get(client, "/api/tags/unmasked", "viewer", tag="pii").json()
    assert (
        len(calls) == 2
        and ("/gt/customers", "email2") in _mine(again)
        and ("/gt/customers", "email2") not in _mine(first)
    )


def test_the_run_view_hides_hops_through_datasets_of_unreadable_dags(client: Any) -> None:
    path = f"/api/dags/gt_report/runs/{quote(RUN_PREFIX + '3', safe='')}/graph"
    viewer = _get(client, path, "viewer")
    assert viewer.status_code == 200, viewer.text
    assert "/gt/secret_hr/stage" in viewer.text and viewer.json()["hidden_hops"] == 0
    r = _get(client, path, DENIED_USER)
    assert r.status_code == 200, r.text
    g = r.json()
    assert "stage" not in r.text and g["hidden_hops"] >= 1
    (u,) = [u for u in g["unmasked"] if u["column"] == "contact"]
    assert _names(u["path"]) == ["/gt/landing.email", "/gt/customers.email", "hidden:1",
                                 "/gt/secret_hr/salaries.email_copy", "/gt/report.contact"]
    (task,) = g["tasks"]
    assert _names(task["policy"]["violations"][0]["path"]) == _names(u["path"])
    field = next(f for d in g["datasets"] for f in d["fields"] if f["name"] == "contact")
    assert _names(field["tags"][0]["path"]) == _names(u["path"])
