"""Lineage as a guard, end to end: real ``dag.test()`` runs of ``dags/lineage_guard.py`` on local Spark.

One module fixture runs, on one data folder (6 spark-submits in all):

1. ``lineage_guard`` version 1 (``on_change=warn``): first run, no previous run;
2. ``lineage_guard`` version 2 (``warn``): diff = a column added, a join key dropped, a hash removed;
   ``pii`` now reaches the mart unmasked (``on_policy_violation="warn"``: reported, task succeeds);
3. ``lineage_guard`` version 2 (``fail``): unchanged since run 2, ``changed: false``, succeeds;
4. ``lineage_guard_report``: ``report`` reads the mart (tags inherited from the other DAG through the
   mart's asset event), hashes the email (``pii`` stops) and passes ``require_masked``; ``contacts``
   lower-cases the email (``pii`` carries) and fails ``require_masked``; its filter on the email carries none;
5. ``lineage_guard`` version 1 (``fail``): changed against run 3 -> the task fails after the write,
   ``publish`` does not run.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.operators.ol_schema import validate_or_skip
from tests.support.pipelines import env_for_spark, load_dag, migrate_db, read_events

# six spark-submits in one module fixture: minutes on a loaded 2-core machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]


def _xcoms(dag_id: str, run_id: str, key: str) -> dict[str, Any]:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from airflow_provider_lineage.plugins.store import decode

    with create_session() as session:
        rows = session.execute(select(XComModel.task_id, XComModel.value).where(
            XComModel.dag_id == dag_id, XComModel.run_id == run_id, XComModel.key == key)).all()
    return {t: decode(v) for t, v in rows}


def _states(dr: Any) -> dict[str, str]:
    from airflow.utils.session import create_session

    with create_session() as session:
        return {ti.task_id: str(ti.state).rsplit(".", 1)[-1].lower() for ti in dr.get_task_instances(session=session)}


@pytest.fixture(scope="module")
def guard_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    migrate_db()
    env_for_spark()
    from airflow_provider_lineage.lineage import transport

    data = tmp_path_factory.mktemp("guard-data")
    customers = str(data / "warehouse" / "customers")
    decl = {
        "datasets": [
            {"namespace": "file", "name": customers, "columns": {"email": ["pii"], "id": ["customer-key"]}},
            {"namespace": "file", "name": str(data / "nowhere"), "columns": {"x": ["pii"]}},
        ]
    }
    os.environ["AIRFLOW_VAR_LINEAGE_COLUMN_TAGS"] = json.dumps(decl)
    events_path = transport.default_events_path()
    before = len(read_events(events_path))
    guard, report = load_dag("lineage_guard"), None
    from tests.support.pipelines import dagbag_class

    report = dagbag_class()(
        dag_folder=str(Path(load_dag.__code__.co_filename).parents[2] / "dags" / "lineage_guard.py")
    ).get_dag("lineage_guard_report")
    out: dict[str, Any] = {"data": data}
    try:
        for name, v, mode in (("v1", 1, "warn"), ("v2", 2, "warn"), ("v2_again", 2, "fail")):
            out[name] = guard.test(run_conf={"data_dir": str(data), "version": v, "on_change": mode})
        out["report"] = report.test(run_conf={"data_dir": str(data)})
        out["v1_fail"] = guard.test(run_conf={"data_dir": str(data), "version": 1, "on_change": "fail"})
    finally:
        os.environ.pop("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", None)
    out["events"] = read_events(events_path)[before:]
    return out


def col(data: Path, path: str, column: str | None) -> dict[str, Any]:
    return {"namespace": "file", "name": str(data / path), "column": column}


def test_first_run_reports_no_previous_run(guard_runs: dict[str, Any]) -> None:
    d = _xcoms("lineage_guard", guard_runs["v1"].run_id, "lineage_diff")["mart"]
    assert d["previous_run_id"] is None and d["changed"] is False
    assert _states(guard_runs["v1"]) == {"mart": "success", "publish": "success"}


def test_changed_application_gives_exactly_its_changes(guard_runs: dict[str, Any]) -> None:
    data = guard_runs["data"]
    run = guard_runs["v2"]
    d = _xcoms("lineage_guard", run.run_id, "lineage_diff")["mart"]
    assert d["previous_run_id"] == guard_runs["v1"].run_id and d["changed"] is True
    mart = "marts/orders_mart"
    assert d["columns_added"] == [col(data, mart, "segment")] and d["columns_removed"] == []
    assert d["edges_added"] == [{"from": col(data, "warehouse/customers", "segment"), "to": col(data, mart, "segment"),
                                 "type": "DIRECT", "subtype": "IDENTITY", "masking": False}]
    removed = {(e["from"]["name"].rsplit("/", 1)[-1], e["from"]["column"], e["to"]["column"], e["type"], e["subtype"])
               for e in d["edges_removed"]}
    assert removed == {
        ("customers", "region", None, "INDIRECT", "JOIN"),
        ("orders", "region", None, "INDIRECT", "JOIN"),
    }
    (changed,) = d["edges_changed"]
    assert changed["from"] == col(data, "warehouse/customers", "email") and changed["to"] == col(data, mart, "email")
    assert changed["masking"] is False and changed["previous"]["masking"] is True
    assert changed["subtype"] == "IDENTITY" and changed["previous"]["subtype"] == "TRANSFORMATION"
    assert d["datasets_added"] == d["datasets_removed"] == []
    assert _states(run) == {"mart": "success", "publish": "success"}  # warn
    # the record the page reads carries the diff; the policy (warn) names the unmasked path
    record = _xcoms("lineage_guard", run.run_id, "column_lineage")["mart"]
    assert record["diff"]["changed"] is True
    policy = _xcoms("lineage_guard", run.run_id, "lineage_policy")["mart"]
    assert policy["violations"] == [{"column": col(data, mart, "email"), "tag": "pii",
                                     "path": [col(data, "warehouse/customers", "email"), col(data, mart, "email")]}]
    # a declared dataset the task does not touch is never named in its record (no disk probe on the worker:
    # the estate answer reports declared datasets no lineage names, to who may read the declaration)
    assert not any("nowhere" in p for p in record["guard_problems"])


def test_unchanged_run_and_fail_mode(guard_runs: dict[str, Any]) -> None:
    same = guard_runs["v2_again"]
    d = _xcoms("lineage_guard", same.run_id, "lineage_diff")["mart"]
    assert d["changed"] is False and d["previous_run_id"] == guard_runs["v2"].run_id
    assert _states(same) == {"mart": "success", "publish": "success"}
    failed = guard_runs["v1_fail"]
    assert _states(failed) == {"mart": "failed", "publish": "upstream_failed"}
    d = _xcoms("lineage_guard", failed.run_id, "lineage_diff")["mart"]
    assert d["changed"] is True and d["previous_run_id"] == same.run_id  # the write happened, the diff was kept
    assert [c["column"] for c in d["columns_removed"]] == ["segment"]
    assert (guard_runs["data"] / "marts" / "orders_mart").is_dir()


def test_tags_stop_at_masking_carry_through_lower_and_two_dags(guard_runs: dict[str, Any]) -> None:
    data = guard_runs["data"]
    run = guard_runs["report"]
    assert _states(run) == {"report": "success", "contacts": "failed"}  # only the unmasked path fails
    records = _xcoms("lineage_guard_report", run.run_id, "column_lineage")
    policies = _xcoms("lineage_guard_report", run.run_id, "lineage_policy")
    assert policies["report"]["violations"] == []
    (v,) = policies["contacts"]["violations"]
    assert v["column"] == col(data, "marts/contacts", "email_lower") and v["tag"] == "pii"

    def tags_of(record: dict[str, Any]) -> dict[tuple[str, str], list[dict[str, Any]]]:
        names = [d["name"].rsplit("/", 1)[-1] for d in record["datasets"]]
        return {(names[i], c): entries for i, c, entries in record["tags"]["columns"]}

    contacts = tags_of(records["contacts"])
    assert [e["tag"] for e in contacts[("contacts", "email_lower")]] == ["pii"]
    assert ("contacts", "email_hash") not in contacts  # the hash stops pii
    assert [e["tag"] for e in contacts[("contacts", "id")]] == ["customer-key"]  # id itself, not the email filter
    assert [s["at"]["column"] for s in records["contacts"]["tags"]["stopped"]] == ["email_hash"]
    report = tags_of(records["report"])
    (key,) = report[("order_report", "customer_id")]  # through two DAGs: customers -> orders_mart -> order_report
    assert key["tag"] == "customer-key" and key["source"] == "inherited"
    # customers is a dataset of the other DAG only (the report task does not read it): a count, never its name
    hidden = {"namespace": "", "name": "(hidden)", "column": "1 hidden", "hidden": 1}
    assert key["path"] == [hidden, col(data, "marts/orders_mart", "customer_id"),
                           col(data, "marts/order_report", "customer_id")]
    (stop,) = records["report"]["tags"]["stopped"]
    assert [p["name"].rsplit("/", 1)[-1] for p in stop["path"]] == ["(hidden)", "orders_mart", "order_report"]
    assert "warehouse/customers" not in json.dumps([records["report"], policies["report"]])


def test_events_carry_the_standard_tags_facet(guard_runs: dict[str, Any]) -> None:
    complete = [e for e in guard_runs["events"] if e["eventType"] in ("COMPLETE", "FAIL")]
    tagged = [(e, o) for e in complete for o in e["outputs"] if "tags" in o.get("facets", {})]
    assert tagged
    contacts = next(o for _e, o in tagged if o["name"].endswith("/contacts"))
    assert {(t["field"], t["key"], t["source"]) for t in contacts["facets"]["tags"]["tags"]} == {
        ("email_lower", "pii", "LINEAGE"), ("id", "customer-key", "LINEAGE")}
    used = validate_or_skip([e for e, _o in tagged])
    assert "TagsDatasetFacet.json" in used
