"""operators/guard.py without Spark: the previous run's record through the task SDK seam (a task-instance
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

from airflow_provider_lineage.operators import guard
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
    assert g.failure and "'email_lower' receives 'pii' unmasked via /w/customers.email -> /w/mart.email_lower" in g.failure
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="warn")
    _run(g, FakeTI(None), copy.deepcopy(TAGREC))
    assert g.failure is None


def test_malformed_variable_is_reported_never_fatal(no_inputs_lookup: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_VAR_LINEAGE_COLUMN_TAGS", "{not json")
    g = guard.Guard(on_lineage_change="warn", require_masked=["pii"], on_policy_violation="fail")
    rec = copy.deepcopy(TAGREC)
    _run(g, FakeTI(None), rec)
    assert g.failure is None
    assert any("lineage_column_tags" in p and "not valid JSON" in p for p in rec["guard_problems"])


def test_tags_file_setting_and_list_settings(no_inputs_lookup: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
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
