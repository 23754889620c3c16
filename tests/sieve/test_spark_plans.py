"""The plans of one relation under Spark 4.1's one planned read per relation (no Spark needed)."""
from __future__ import annotations

import os
import time

import pytest

from airflow_provider_lineage.sieve.spark import plans as P


@pytest.fixture(autouse=True)
def _own_temp(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(P.tempfile, "gettempdir", lambda: str(tmp_path))


def test_a_plan_reads_the_files_of_the_relations_recent_plans() -> None:
    relation, started = P.new_relation(), time.time()
    assert P.merge(relation, "a", started, ["/t/1", "/t/2"]) == set()
    assert P.merge(relation, "b", time.time(), ["/t/3"]) == {"/t/1", "/t/2"}
    assert P.merge(relation, "a", time.time(), ["/t/1"]) == {"/t/3"}  # a plan again: its new files replace its old
    assert P.merge(P.new_relation(), "c", time.time(), ["/t/9"]) == set()  # another relation: its own


def test_plans_that_ended_before_the_window_are_not_merged(monkeypatch) -> None:
    relation = P.new_relation()
    P.merge(relation, "a", time.time(), ["/t/1"])
    later = time.time() + P.WINDOW_SECONDS + 5
    monkeypatch.setattr(P.time, "time", lambda: later)
    assert P.merge(relation, "b", later, ["/t/2"]) == set()


def test_records_of_relations_idle_for_an_hour_are_removed_and_bad_lines_ignored(tmp_path) -> None:
    old = P.new_relation()
    P.merge(old, "a", time.time(), ["/t/1"])
    path = P._path(old)
    with open(path, "a") as fh:
        fh.write("not json\n{\"paths\": 3}\n")
    assert P.merge(old, "b", time.time(), []) == {"/t/1"}
    stale = time.time() - 7200
    os.utime(path, (stale, stale))
    P.merge(P.new_relation(), "a", time.time(), [])
    assert not os.path.exists(path)
    with pytest.raises(ValueError):
        P._path("../x")


def test_spark_versions() -> None:
    assert P.shares_read_info("4.1.3")
    P_fixed = P.FIXED_IN
    try:
        P.FIXED_IN = (4, 2)
        assert P.shares_read_info("4.1.3") and not P.shares_read_info("4.2.0")
    finally:
        P.FIXED_IN = P_fixed
