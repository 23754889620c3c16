"""operators/_lineage/guard.py without Spark: the previous run's record through the task SDK seam (a task-instance
stand-in with ``get_previous_ti`` and ``xcom_pull``: no template context, so the baseline takes its
logical-date fallback; tests/operators/test_guard_baseline.py runs the real lookup), fail messages, bad
tag declarations."""
from __future__ import annotations

import copy
import json
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_lineage.operators._lineage import guard
from tests.lineage.test_guard_core import DECL, TAGREC, V1, V2


class FakeTI:
    """Carries only what the guard calls: the previous successful TI, xcom_pull by run id, xcom_push."""

    def __init__(self, previous: dict[str, Any] | None) -> None:
        self.previous, self.pushed, self.map_index = previous, {}, -1
        self.dag_id, self.task_id, self.run_id = "d", "t", "run2"
        self.pulled: list[dict[str, Any]] = []

    def get_previous_ti(self, state: str, map_index: int) -> Any:
        assert state == "success" and map_index == -1
        return None if self.previous is None else SimpleNamespace(dag_id="d", task_id="t", run_id="run1")

    def xcom_pull(self, **kw: Any) -> Any:
        self.pulled.append(kw)
        return copy.deepcopy(self.previous)

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = json.loads(json.dumps(value))  # JSON only


@pytest.fixture
def no_inputs_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard, "upstream_tags", lambda record: ({}, []))
    # an (empty) Variable in the environment: outside a task, an unset one is looked up the slow way
    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", '{"datasets": []}')


def _run(g: guard.Guard, ti: FakeTI, record: dict[str, Any]) -> None:
    log = logging.getLogger("test-guard")
    g.run(ti, record, log, log)


def test_fail_mode_puts_the_diff_in_the_message(no_inputs_lookup: None) -> None:
    ti, rec = FakeTI(V1), copy.deepcopy(V2)
    g = guard.Guard(on_lineage_change="fail", require_masked=None, on_policy_violation="fail")
    _run(g, ti, rec)
    assert ti.pulled == [{"task_ids": "t", "dag_id": "d", "key": "column_lineage", "run_id": "run1", "map_indexes": -1}]
    assert ti.pushed["lineage_diff"]["changed"] is True and rec["diff"]["previous_run_id"] == "run1"
    assert g.failure and "on_lineage_change='fail'" in g.failure and "columns added (1): mart.segment" in g.failure
    for mode in ("warn", "ignore"):
        g = guard.Guard(on_lineage_change=mode, require_masked=None, on_policy_violation="fail")
        _run(g, FakeTI(V1), copy.deepcopy(V2))
        assert g.failure is None


def test_first_run_and_unchanged_never_fail(no_inputs_lookup: None) -> None:
    g = guard.Guard(on_lineage_change="fail", require_masked=None, on_policy_violation="fail")
    ti = FakeTI(None)
    _run(g, ti, copy.deepcopy(V1))
    assert ti.pushed["lineage_diff"]["previous_run_id"] is None and g.failure is None
    _run(g, FakeTI(V1), copy.deepcopy(V1))
    assert g.failure is None and g.diff is not None and g.diff["changed"] is False


def test_policy_names_the_column_and_path(no_inputs_lookup: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", json.dumps(DECL))
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="fail")
    ti, rec = FakeTI(None), copy.deepcopy(TAGREC)
    _run(g, ti, rec)
    (v,) = ti.pushed["lineage_policy"]["violations"]
    assert v["column"]["column"] == "email_lower" and [p["column"] for p in v["path"]] == ["email", "email_lower"]
    assert (
        g.failure and "'email_lower' receives 'pii' unmasked via /w/customers.email -> /w/mart.email_lower" in g.failure
    )
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="warn")
    _run(g, FakeTI(None), copy.deepcopy(TAGREC))
    assert g.failure is None


def test_malformed_variable_is_reported_and_a_policy_fails_closed(no_inputs_lookup: None,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A declaration that cannot be read: never fatal without a policy; with require_masked the tags cannot be
    known, so the policy fails (it used to pass: no tags, no violation)."""
    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", "{not json")
    g = guard.Guard(on_lineage_change="warn", require_masked=None, on_policy_violation="fail")
    rec = copy.deepcopy(TAGREC)
    _run(g, FakeTI(None), rec)
    assert g.failure is None
    assert any("lineage_column_tags" in p and "not valid JSON" in p for p in rec["guard_problems"])
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="fail")
    ti = FakeTI(None)
    _run(g, ti, copy.deepcopy(TAGREC))
    assert g.failure and "cannot be checked fully" in g.failure and "not valid JSON" in g.failure
    assert ti.pushed["lineage_policy"]["incomplete"] and ti.pushed["lineage_policy"]["violations"] == []
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="warn")
    _run(g, FakeTI(None), copy.deepcopy(TAGREC))
    assert g.failure is None  # warn: the same message, as a warning


def test_tags_file_setting_and_list_settings(
    no_inputs_lookup: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    path = tmp_path / "tags.json"
    path.write_text(json.dumps(DECL))
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__TAGS_FILE", str(path))
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__REQUIRE_MASKED", '["pii"]')
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__STOPPED_BY_MASKING", "secret")  # pii no longer stopped by a hash
    g = guard.Guard(on_lineage_change="warn", require_masked=None, on_policy_violation="fail")
    ti = FakeTI(None)
    _run(g, ti, copy.deepcopy(TAGREC))
    cols = sorted(v["column"]["column"] for v in ti.pushed["lineage_policy"]["violations"])
    assert cols == ["email_lower"]  # the hashed path is masked: still not a violation of require_masked
    assert g.tags is not None and ("file", "/w/mart", "email_hash") in g.tags["columns"]  # carried, marked masked


def test_a_big_guard_result_fits_the_record_bound(no_inputs_lookup: None) -> None:
    from airflow_provider_lineage.lineage import run_record

    ti, rec = FakeTI(V1), copy.deepcopy(V2)
    g = guard.Guard(on_lineage_change="warn", require_masked=None, on_policy_violation="fail")
    _run(g, ti, rec)
    rec["guard_problems"] = ["x" * 500] * 20
    limit = run_record.size(V2) + 1500
    fitted = guard.fit(rec, limit)
    assert run_record.size(fitted) <= limit and fitted["diff"]["changed"] is True and "cut" in fitted["diff"]
    assert ti.pushed["lineage_diff"]["columns_added"]  # the XCom keeps the whole diff


# -- issue 37, finding 3: the policy never silently stops enforcing ------------------------------------------

def test_modes_are_normalised_or_rejected_by_name() -> None:
    g = guard.Guard(on_lineage_change=" Warn", require_masked="pii", on_policy_violation="FAIL")
    assert (g.on_lineage_change, g.on_policy_violation, g.required) == ("warn", "fail", ["pii"])
    with pytest.raises(ValueError, match=r"on_policy_violation='Fial' is not one of 'warn', 'fail'"):
        guard.Guard(on_lineage_change="warn", require_masked=None, on_policy_violation="Fial")
    with pytest.raises(ValueError, match="on_lineage_change=None"):
        guard.Guard(on_lineage_change=None, require_masked=None, on_policy_violation="fail")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="require_masked=5"):
        guard.Guard(on_lineage_change="warn", require_masked=5, on_policy_violation="fail")


def test_operator_checks_its_guard_arguments_at_parse_time() -> None:
    from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator

    op = SparkLineageSubmitOperator(task_id="t", application="app.py", require_masked="pii",
                                    on_policy_violation="Fail", on_lineage_change="IGNORE")
    assert (op.require_masked, op.on_policy_violation, op.on_lineage_change) == (["pii"], "fail", "ignore")
    with pytest.raises(ValueError, match="on_policy_violation='nope'"):
        SparkLineageSubmitOperator(task_id="t2", application="app.py", on_policy_violation="nope")
    templated = SparkLineageSubmitOperator(task_id="t3", application="app.py", require_masked="{{ params.tags }}",
                                           on_policy_violation="{{ params.mode }}")
    assert templated.on_policy_violation == "{{ params.mode }}"  # checked after rendering, at task start


def test_a_single_tag_string_is_enforced(no_inputs_lookup: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """require_masked="pii" used to become ['p', 'i', 'i']: no violation, the task passed."""
    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", json.dumps(DECL))
    g = guard.Guard(on_lineage_change="warn", require_masked="pii", on_policy_violation="Fail")
    ti = FakeTI(None)
    _run(g, ti, copy.deepcopy(TAGREC))
    assert ti.pushed["lineage_policy"]["require_masked"] == ["pii"]
    assert [v["column"]["column"] for v in ti.pushed["lineage_policy"]["violations"]] == ["email_lower"]
    assert g.failure and "receives 'pii' unmasked" in g.failure


def _read_mart() -> dict[str, Any]:
    """A task that copies /w/mart.email_l (tagged upstream) to /w/out.c."""
    from tests.lineage.test_guard_core import MART

    return {"format": "airflow-provider-lineage/column-lineage", "version": 1, "status": "ok", "truncated": None,
            "datasets": [{"namespace": "file", "name": MART, "table": None, "fields": [["email_l", "string"]]},
                         {"namespace": "file", "name": "/w/out", "table": None, "fields": [["c", "string"]]}],
            "inputs": [0], "outputs": [1], "edges": [[1, "c", 0, "email_l", "DIRECT", "IDENTITY", 0]],
            "dataset_edges": [], "problems": []}


@pytest.fixture
def no_asset_events(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard, "asset_event_tags", lambda record, since=None: ({}, []))
    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", '{"datasets": []}')


def test_a_malformed_published_map_entry_fails_the_policy_closed(no_asset_events: None,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.lineage.test_guard_core import MART

    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS_ESTATE", json.dumps(
        {"datasets": [{"namespace": "file", "name": MART, "columns": {"email_l": 5}}]}))
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="fail")
    ti = FakeTI(None)
    _run(g, ti, _read_mart())
    assert g.failure and "cannot be checked fully" in g.failure and "email_l" in g.failure
    assert ti.pushed["lineage_policy"]["incomplete"]
    g = guard.Guard(on_lineage_change="warn", require_masked=None, on_policy_violation="fail")
    rec = _read_mart()
    _run(g, FakeTI(None), rec)
    assert g.failure is None and any("email_l" in p for p in rec["guard_problems"])  # no policy: a notice


def test_an_input_the_published_map_left_out_fails_the_policy_closed(no_asset_events: None,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The map used to be cut at 5,000 columns with "cut": true, which the operator ignored: a pii input beyond
    the cut passed. Now the map lists what it left out, and a task reading it cannot pass require_masked."""
    from airflow_provider_lineage.lineage import tags as tagging
    from airflow_provider_lineage.plugins.guard import estate as guard_estate
    from tests.lineage.test_guard_core import CUST, MART

    entry = {"tag": "pii", "source": "inherited", "masked": False,
             "path": [{"namespace": "file", "name": CUST, "column": "email"},
                      {"namespace": "file", "name": MART, "column": "email_l"}]}
    result = {"columns": {("file", f"/w/a{i:03d}", "x"): [entry] for i in range(40)}
              | {("file", MART, "email_l"): [entry]}}
    value = guard_estate.published_value(result, max_bytes=4000)  # a tiny bound: most datasets left out
    assert value["cut"] and tagging.identity_digest("file", MART) in value["omitted"]
    assert len(value["datasets"]) + len(value["omitted"]) == 41 and len(json.dumps(value)) < 4000 + 2000
    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS_ESTATE", json.dumps(value))
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="fail")
    _run(g, FakeTI(None), _read_mart())
    assert g.failure and f"leaves out file:{MART}" in g.failure
    # the same map, everything in: the input's tags are inherited and the violation named
    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS_ESTATE", json.dumps(guard_estate.published_value(result)))
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="fail")
    ti = FakeTI(None)
    _run(g, ti, _read_mart())
    assert "cannot be checked" not in (g.failure or "")
    assert [v["column"]["column"] for v in ti.pushed["lineage_policy"]["violations"]] == ["c"]


def test_a_malformed_asset_event_extra_fails_the_policy_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The newest asset event of an input carries column_tags {"email_l": 5}. The task SDK's accessor is
    replaced by one returning that event (an asset event store needs a running execution API)."""
    from airflow.sdk.execution_time import context as sdk_context

    class Accessor:
        def __init__(self, **kw: Any) -> None:
            pass

        def ascending(self, flag: bool) -> Accessor:
            return self

        def limit(self, n: int) -> list[Any]:
            return [SimpleNamespace(extra={"column_tags": {"email_l": 5}})]

    monkeypatch.setattr(sdk_context, "InletEventsAccessor", Accessor)
    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", '{"datasets": []}')
    monkeypatch.setattr(guard, "estate_tags", lambda record, generated=None: ({}, []))
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="fail")
    _run(g, FakeTI(None), _read_mart())
    assert g.failure and "the asset event of file:/w/mart" in g.failure and "cannot be checked fully" in g.failure


@pytest.mark.parametrize(("change", "words"), [
    ({"status": "problems", "outputs": []}, "was not captured"),
    ({"truncated": {"reason": "limit", "edges_total": 9, "edges_kept": 1}}, "cut to its size bound")])
def test_lineage_not_captured_fully_fails_the_policy_closed(no_inputs_lookup: None, change: dict[str, Any],
                                                            words: str) -> None:
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="fail")
    _run(g, FakeTI(None), copy.deepcopy(TAGREC) | change)
    assert g.failure and words in g.failure


def test_a_guard_that_could_not_run_fails_its_policy() -> None:
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="fail")
    g.not_checked("cluster deploy mode", logging.getLogger("t"))
    assert g.failure and "was not checked" in g.failure and "cluster deploy mode" in g.failure
    g = guard.Guard(on_lineage_change="warn", require_masked=None, on_policy_violation="fail")
    g.not_checked("cluster deploy mode", logging.getLogger("t"))
    assert g.failure is None  # no policy: nothing to fail


def test_a_templated_mode_is_checked_after_rendering_at_task_start(capfd: pytest.CaptureFixture[str], tmp_path: Any,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A templated on_policy_violation that renders 'Fail' used to mean no guard at all (a ValueError swallowed
    after the write); a bad rendered value now fails the task at start, before Spark, naming it."""
    from pathlib import Path

    from airflow.utils.session import create_session

    from tests.support.pipelines import dagbag_class, migrate_db

    migrate_db()
    app = tmp_path / "app.py"
    app.write_text("raise SystemExit('the application must not run')\n")
    folder = Path(__file__).resolve().parent / "dags"
    # dag.test() runs a DAG it syncs from a DAG bundle: this folder as a bundle of its own, listed first (as
    # tests/operators/test_guard_baseline.py does)
    monkeypatch.setenv("AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST", json.dumps([
        {"name": "guard-tests", "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
         "kwargs": {"path": str(folder), "refresh_interval": 0}},
        {"name": "dags-folder", "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle", "kwargs": {}}]))
    bag = dagbag_class()(dag_folder=str(folder / "guard_templated_mode.py"))
    assert not bag.import_errors, bag.import_errors
    dag = bag.get_dag("guard_templated_mode")
    try:
        run = dag.test(run_conf={"mode": "Bogus", "app": str(app)})
        with create_session() as session:
            (ti,) = run.get_task_instances(session=session)
            assert str(ti.state).rsplit(".", 1)[-1].lower() == "failed"
    finally:
        from airflow.models.dagrun import DagRun
        from sqlalchemy import delete

        with create_session() as session:
            session.execute(delete(DagRun).where(DagRun.dag_id == "guard_templated_mode"))
    out = "".join(capfd.readouterr())  # the task's log (structlog, to the console under dag.test())
    assert "on_policy_violation='Bogus' is not one of 'warn', 'fail'" in out
    assert "spark-submit" not in out.lower() and "must not run" not in out


# -- issue 37, finding 12: a policy source no task can change ------------------------------------------------

def test_tags_from_the_setting_no_task_can_change(no_inputs_lookup: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """[column_lineage] tags (airflow.cfg / AIRFLOW__COLUMN_LINEAGE__TAGS) with tags_variable = none: what a task
    writes into the Variable lineage_column_tags (any task may, through the task execution API) changes nothing."""
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__TAGS", json.dumps(DECL))
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__TAGS_VARIABLE", "none")
    for written_by_a_task in ('{"datasets": []}', "{not json", None):
        if written_by_a_task is None:
            monkeypatch.delenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", raising=False)
        else:
            monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", written_by_a_task)
        found = guard.read_declaration()
        assert found.problems == [] and [s for s, _ in found.by_source] == ["setting"]
        g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="fail")
        ti = FakeTI(None)
        _run(g, ti, copy.deepcopy(TAGREC))
        assert [v["column"]["column"] for v in ti.pushed["lineage_policy"]["violations"]] == ["email_lower"]
        assert "cannot be checked" not in (g.failure or "")


def test_the_setting_and_the_variable_add_up_and_a_bad_setting_fails_closed(no_inputs_lookup: None,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.lineage.test_guard_core import ORD

    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__TAGS", json.dumps(DECL))
    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", json.dumps(
        {"datasets": [{"namespace": "file", "name": ORD, "columns": {"amount": "finance"}}]}))
    found = guard.read_declaration()
    assert found.declared[("file", ORD)] == {"amount": ["finance"]} and ("file", "/w/customers") in found.declared
    assert guard.variable_name() == "lineage_column_tags"
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__TAGS", "{oops")
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="fail")
    _run(g, FakeTI(None), copy.deepcopy(TAGREC))
    assert g.failure and "[column_lineage] tags" in g.failure and "cannot be checked fully" in g.failure


def test_a_task_never_names_another_dataset_of_a_malformed_declaration(no_inputs_lookup: None,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The task log and record are read by whoever may read the DAG: a malformed entry of the declaration on a
    dataset the task does not touch is reported without its name (the estate answer names it to who may read
    the declaration); one on the task's own dataset keeps it."""
    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", json.dumps(
        {"datasets": [{"namespace": "file", "name": "/secret_hr/salaries", "columns": {"pay": [1]}}]}))
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="fail")
    rec = copy.deepcopy(TAGREC)
    _run(g, FakeTI(None), rec)
    assert g.failure and "salaries" not in g.failure and "pay" not in g.failure
    assert any("datasets[0]: a column's tags must be a list" in p for p in rec["guard_problems"])
    assert not any("salaries" in p for p in rec["guard_problems"])
    found = guard.read_declaration()
    assert "/secret_hr/salaries" in found.messages[0]  # full, for the estate answer's authorised readers
    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", json.dumps(
        {"datasets": [{"namespace": "file", "name": "/w/customers", "columns": {"email": [1]}}]}))
    rec = copy.deepcopy(TAGREC)
    _run(guard.Guard(on_lineage_change="warn", require_masked=None, on_policy_violation="fail"), FakeTI(None), rec)
    assert any("/w/customers" in p and "'email'" in p for p in rec["guard_problems"])


# -- issue 46 item 10: an input's tags are all its writers' tags ------------------------------------------------------

def _event(i: int, dag: str | None, task: str | None, tags: dict | None) -> Any:
    """An asset event as the task SDK returns it (the fields the guard reads)."""
    from airflow.sdk.execution_time.comms import AssetEventResult

    return AssetEventResult.model_validate({
        "id": i, "timestamp": f"2026-01-0{i}T00:00:00Z", "extra": {"column_tags": tags} if tags is not None else {},
        "asset": {"name": "file:///w/shared", "uri": "file:///w/shared", "group": "asset", "extra": {}},
        "created_dagruns": [],
        "source_dag_id": dag, "source_task_id": task, "source_run_id": None if task is None else "r",
        "source_map_index": -1})


def test_every_writer_and_every_posted_event_adds_its_tags() -> None:
    pii = {"email": [{"tag": "PII", "path": [{"namespace": "file", "name": "/w/customers", "column": "email"},
                                            {"namespace": "file", "name": "/w/shared", "column": "email"}],
                      "masked": False}]}
    secret = {"note": [{"tag": "secret", "path": [{"namespace": "file", "name": "/w/shared", "column": "note"}],
                        "masked": False}]}
    newest_first = [
        _event(6, "b", "writer_b", None),      # the newest event: a second writer, no tags
        _event(5, None, None, {}),             # posted through the API, nothing carried
        _event(4, None, None, secret),         # posted through the API earlier, with a tag
        _event(3, "a", "writer_a", pii),       # writer_a's newest run
        _event(2, "a", "writer_a", secret),    # writer_a's older run: superseded by its newest
    ]
    known, problems = guard.tags_of_events("file", "/w/shared", newest_first)
    assert problems == []
    assert {c[2]: sorted(e["tag"] for e in entries) for c, entries in known.items()} == {
        "email": ["pii"], "note": ["secret"]}  # writer_a's newest + the posted one; normalised tag names
    bad = _event(7, "c", "writer_c", None)
    bad.extra = {"column_tags": {"email": 5}}
    known, problems = guard.tags_of_events("file", "/w/shared", [bad, *newest_first])
    assert "email" in problems[0] and ("file", "/w/shared", "email") in known


def test_a_published_map_entry_reaches_an_input_spelled_with_another_host_case(no_asset_events: None,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 46 item 8: the estate keys ``s3a://Lake-Bucket`` as ``s3://lake-bucket`` (host case folded); a task
    reading the table as ``s3a://Lake-Bucket/data/mart`` inherits the published map's tags of that identity."""
    from airflow_provider_lineage.plugins.guard import estate as guard_estate

    entry = {"tag": "pii", "source": "inherited", "masked": False,
             "path": [{"namespace": "s3://lake-bucket", "name": "data/mart", "column": "email_l"}]}
    published = guard_estate.published_value({"columns": {("s3://lake-bucket", "data/mart", "email_l"): [entry]}})
    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS_ESTATE", json.dumps(published))
    rec = _read_mart()
    rec["datasets"][0].update(namespace="s3a://Lake-Bucket", name="data/mart")
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="fail")
    ti = FakeTI(None)
    _run(g, ti, rec)
    assert [v["column"]["column"] for v in ti.pushed["lineage_policy"]["violations"]] == ["c"]
    assert g.failure and "on_policy_violation='fail'" in g.failure
