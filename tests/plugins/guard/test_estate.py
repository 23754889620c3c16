"""Column tags along the estate index (plugins/guard/estate.py), no Spark: lineage records of three DAGs
in Airflow's real metadata DB (XCom rows, as the operator leaves them), the index synced from them.

* "where does pii reach unmasked" from the index's edges (across DAGs, datasets stitched by identity, stopped
  by a hash, not carried by a filter; a failed run's edges not used; only the DAGs the user may read), and
  the records fallback;
* the tag map the scheduler publishes (Variable ``lineage_column_tags_estate``) and the operator's
  guard reading it: a task of a fourth DAG inherits ``pii`` with the whole path through three DAGs.
"""
from __future__ import annotations

import copy
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from tests.plugins.estate_support import add_run, record

DAGS = ("gx_src", "gx_mart", "gx_report")
DECL = {"datasets": [{"namespace": "file", "name": "/gx/landing", "columns": {"email": ["pii"]}}]}


def _wipe() -> None:
    from airflow.models.dagrun import DagRun
    from airflow.models.variable import Variable
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    from airflow_provider_lineage.plugins.estate import index
    from airflow_provider_lineage.plugins.guard import estate as guard_estate

    with create_session() as session:
        session.execute(delete(DagRun).where(DagRun.dag_id.in_(DAGS)))
    Variable.delete(guard_estate.PUBLISHED_VARIABLE)
    guard_estate.clear_cache()
    with create_session() as session:
        index.sync(session, force=True)
        index.prune(session, force=True)
        session.commit()


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    from tests.support.pipelines import migrate_db

    migrate_db()
    from airflow.utils.session import create_session

    from airflow_provider_lineage.plugins.estate import index

    mp = pytest.MonkeyPatch()
    mp.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", json.dumps(DECL))
    _wipe()
    add_run(
        "gx_src", "load", record({"/gx/customers": [("email", "/gx/landing:email"), ("id", "/gx/landing:id")]}), day=1
    )
    # the mart reads one partition folder of the customers: the index stitches it to /gx/customers (identity)
    cust = "/gx/customers/day=2026-01-02"
    add_run("gx_mart", "mart", record({"/gx/mart": [("email_h", f"{cust}:email"), ("email_l", f"{cust}:email"),
                                                    ("id", f"{cust}:id")]},
                                      masked={"email_h"}, dataset_edges=[("/gx/mart", cust, "email")]), day=2)
    add_run(
        "gx_report",
        "report",
        record({"/gx/report": [("contact", "/gx/mart:email_l"), ("key", "/gx/mart:email_h")]}),
        day=3,
    )
    # a later failed run of the report task: its edges are not the estate's
    add_run("gx_report", "report", record({"/gx/leak": [("raw", "/gx/mart:email_l")]}), day=4, state="failed")
    with create_session() as session:
        index.sync(session, force=True)
    yield None
    _wipe()
    mp.undo()


def _session() -> Any:
    from airflow.utils.session import create_session

    return create_session()


def _rows(items: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    return [(u["label"], u["column"], u["dag_id"], u["task_id"]) for u in items if "/gx/" in u["dataset"]]


def test_where_pii_reaches_unmasked_along_the_estate(estate: None) -> None:
    from airflow_provider_lineage.plugins.guard import estate as guard_estate

    with _session() as session:
        got = guard_estate.answer(session, None, "pii", 500)
    assert got["source"] == "estate"
    assert got["problems"] == [] and got["hidden"] == 0  # /gx/landing is in the index (read by gx_src)
    rows = _rows(got["unmasked"])
    assert sorted(rows) == sorted(
        [
            ("gx/customers", "email", "gx_src", "load"),
            ("gx/mart", "email_l", "gx_mart", "mart"),
            ("gx/report", "contact", "gx_report", "report"),
        ]
    )  # not email_h, key, the failed leak
    contact = next(u for u in got["unmasked"] if u["column"] == "contact")
    assert [(p["name"], p["column"]) for p in contact["path"]] == [
        ("/gx/landing", "email"), ("/gx/customers", "email"), ("/gx/mart", "email_l"), ("/gx/report", "contact")]
    assert contact["run_id"].startswith("manual__2026-01-04")  # the run whose edge brought it (day 3 ends on Jan 4)
    with _session() as session:  # a user who may read two of the three DAGs: the third's edges are not followed
        part = guard_estate.answer(session, {"gx_src", "gx_mart"}, "pii", 500)
    assert sorted(_rows(part["unmasked"])) == sorted([("gx/customers", "email", "gx_src", "load"),
                                                      ("gx/mart", "email_l", "gx_mart", "mart")])
    assert part["hidden"] >= 1  # the report's column: a count, not a name


def test_without_index_data_the_records_answer(estate: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_lineage.plugins.estate import query
    from airflow_provider_lineage.plugins.guard import estate as guard_estate

    monkeypatch.setattr(query, "edges_as_of", lambda session, as_of=None, dag_ids=None: [])
    guard_estate.clear_cache()
    with _session() as session:
        got = guard_estate.answer(session, set(DAGS), "pii", 500)
    assert got["source"] == "records" and "records_read" in got  # these records carry no tags: nothing listed

    def broken(session: Any, as_of: Any = None, dag_ids: Any = None) -> Any:
        raise RuntimeError("no such table: apl_estate_edge")

    monkeypatch.setattr(query, "edges_as_of", broken)
    guard_estate.clear_cache()
    with _session() as session:
        assert guard_estate.answer(session, set(DAGS), "pii", 500)["source"] == "records"
    guard_estate.clear_cache()


def test_a_malformed_declaration_is_reported_on_the_estate_answer(
    estate: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_provider_lineage.plugins.guard import estate as guard_estate

    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", "{not json")
    with _session() as session:
        got = guard_estate.answer(session, set(DAGS), "pii", 500)
    assert got["source"] == "estate" and _rows(got["unmasked"]) == []
    assert any("lineage_column_tags" in p and "not valid JSON" in p for p in got["problems"])


def test_nothing_declared_reads_no_edge(estate: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without declared tags the scheduler's publish after every DAG run costs no read of the estate's edges."""
    from airflow_provider_lineage.plugins.estate import query
    from airflow_provider_lineage.plugins.guard import estate as guard_estate

    def refused(session: Any, as_of: Any = None, dag_ids: Any = None) -> Any:
        raise AssertionError("edges read with nothing declared")

    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", json.dumps({"datasets": []}))
    monkeypatch.setattr(query, "edges_as_of", refused)
    with _session() as session:
        got = guard_estate.answer(session, set(DAGS), "pii", 500)
    assert got["source"] == "estate" and _rows(got["unmasked"]) == []


def test_published_map_reaches_a_task_of_another_dag(estate: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.models.variable import Variable

    from airflow_provider_lineage.operators._lineage import guard
    from airflow_provider_lineage.plugins import dagrun_listener
    from airflow_provider_lineage.plugins.guard import estate as guard_estate
    from tests.operators.test_guard_unit import FakeTI

    dagrun_listener._work()  # what the scheduler runs when a DAG run ends: sync the index, publish the tag map
    published = Variable.get(guard_estate.PUBLISHED_VARIABLE)
    with _session() as session:  # unchanged: not rewritten
        assert guard_estate.publish(session) >= 3
    assert Variable.get(guard_estate.PUBLISHED_VARIABLE) == published
    value = json.loads(published)
    by = {(d["name"], c) for d in value["datasets"] for c in d["columns"]}
    assert {("/gx/customers", "email"), ("/gx/mart", "email_l"), ("/gx/report", "contact")} <= by
    assert ("/gx/mart", "email_h") not in by and ("/gx/landing", "email") not in by  # declared ones: not republished
    # the worker side: a task of a fourth DAG reads /gx/report and copies the contact out
    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS_ESTATE", published)
    monkeypatch.setattr(guard, "asset_event_tags", lambda rec, since=None: ({}, []))
    rec = record({"/gx/out": [("c", "/gx/report/day=2026-01-09:contact")]})  # a partition of /gx/report
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="fail")
    ti = FakeTI(None)
    g.run(ti, copy.deepcopy(rec) | {"status": "ok"}, logging.getLogger("t"), logging.getLogger("t"))
    (v,) = ti.pushed["lineage_policy"]["violations"]
    # the hops through the other DAGs' datasets are a count (issue 47 item 8): the task names only its own datasets
    assert v["column"]["column"] == "c" and [p["name"] for p in v["path"]] == ["(hidden)", "/gx/report", "/gx/out"]
    assert v["path"][0]["hidden"] == 3 and ti.pushed["lineage_policy"]["hidden_hops"] == 3
    assert g.failure and "on_policy_violation='fail'" in g.failure and "(3 datasets of other DAGs)" in g.failure
    shown = json.dumps([ti.pushed, g.failure, g.dataset_tags("file", "/gx/out")])
    assert not any(other in shown for other in ("/gx/landing", "/gx/customers", "/gx/mart"))
    # a malformed published map: a notice without a policy; with require_masked it fails closed (the write is done)
    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS_ESTATE", "nope")
    g = guard.Guard(on_lineage_change="warn", require_masked=None, on_policy_violation="fail")
    r2 = copy.deepcopy(rec) | {"status": "ok"}
    g.run(FakeTI(None), r2, logging.getLogger("t"), logging.getLogger("t"))
    assert g.failure is None and any("lineage_column_tags_estate" in p for p in r2["guard_problems"])
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="fail")
    g.run(FakeTI(None), copy.deepcopy(rec) | {"status": "ok"}, logging.getLogger("t"), logging.getLogger("t"))
    assert g.failure and "cannot be checked fully" in g.failure and "lineage_column_tags_estate" in g.failure


def test_the_scheduler_and_api_server_read_the_setting_too(estate: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """[column_lineage] tags with tags_variable = none: the estate answer and the published map follow the
    setting; the Variable (which any task may overwrite) is not read."""
    from airflow_provider_lineage.plugins.guard import estate as guard_estate

    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__TAGS", json.dumps(DECL))
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__TAGS_VARIABLE", "none")
    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", json.dumps({"datasets": []}))  # a task emptied it
    with _session() as session:
        got = guard_estate.answer(session, None, "pii", 500)
        assert guard_estate.publish(session) >= 3
    assert got["problems"] == [] and ("gx/report", "contact", "gx_report", "report") in _rows(got["unmasked"])


def test_a_signed_published_map_cannot_be_forged_by_a_task(estate: None, monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Any) -> None:
    """Any task may overwrite lineage_column_tags_estate through the task execution API. With the scheduler's
    Ed25519 key ([column_lineage] tag_map_private_key) the map is signed, and workers holding the public key
    (tag_map_public_key) fail require_masked closed on a map the scheduler did not write, or on none."""
    from airflow.models.variable import Variable
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from airflow_provider_lineage.operators._lineage import guard
    from airflow_provider_lineage.plugins.guard import estate as guard_estate
    from tests.operators.test_guard_unit import FakeTI

    key = Ed25519PrivateKey.generate()
    (tmp_path / "map.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__TAG_MAP_PRIVATE_KEY", str(tmp_path / "map.key"))
    with _session() as session:
        assert guard_estate.publish(session) >= 3
    signed = Variable.get(guard_estate.PUBLISHED_VARIABLE)
    assert isinstance(json.loads(signed)["signature"], str)
    monkeypatch.delenv("AIRFLOW__COLUMN_LINEAGE__TAG_MAP_PRIVATE_KEY")  # the worker has the public key only
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__TAG_MAP_PUBLIC_KEY", public)
    monkeypatch.setattr(guard, "asset_event_tags", lambda rec, since=None: ({}, []))
    rec = record({"/gx/out": [("c", "/gx/report:contact")]}) | {"status": "ok"}

    def run(published: str | None) -> guard.Guard:
        if published is None:
            monkeypatch.delenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS_ESTATE", raising=False)
        else:
            monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS_ESTATE", published)
        g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="fail")
        g.run(FakeTI(None), copy.deepcopy(rec), logging.getLogger("t"), logging.getLogger("t"))
        return g

    ok = run(signed)
    assert ok.failure and "receives 'pii' unmasked" in ok.failure and "cannot be checked" not in ok.failure
    forged = json.loads(signed)
    forged["datasets"] = []  # what a task that wants the policy off would write, keeping the old signature
    for published, words in ((json.dumps({"datasets": []}), "carries no signature"),
                             (json.dumps(forged), "does not verify"), (None, "is missing")):
        g = run(published)
        assert g.failure and "cannot be checked fully" in g.failure and words in g.failure, g.failure
    # the scheduler rewrites a forged map on its next publish, even when the tags did not change
    Variable.set(guard_estate.PUBLISHED_VARIABLE, json.dumps(forged))
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__TAG_MAP_PRIVATE_KEY", str(tmp_path / "map.key"))
    with _session() as session:
        guard_estate.publish(session)
    assert guard.verify_published(Variable.get(guard_estate.PUBLISHED_VARIABLE), public)["datasets"]
    Variable.delete(guard_estate.PUBLISHED_VARIABLE)
