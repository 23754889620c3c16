"""The lineage diff's baseline (operators/_lineage/guard_baseline.py): the last successful run of the same task and
map index before this one, ordered by ``run_after`` -- runs without a logical date included.

Real ``dag.test()`` runs of ``tests/operators/dags/guard_baseline.py`` (cheap Python tasks that keep a
lineage record and run the guard on it, as the operator does; no Spark), alternating runs with and
without a logical date, a logical date older than an earlier run's, and a failed map index.

``dag.test()`` is made for re-running one logical date: it clears the DAG's task instances of that date
and deletes an existing run with the same logical date -- with ``logical_date=None`` that is *every* task
instance and the earlier run without one. The fixture turns those two conveniences off (the runs
stay as a scheduler or the REST API leaves them); everything else is ``dag.test()``'s own run.
"""
from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_lineage.operators._lineage import guard_baseline
from tests.support.pipelines import dagbag_class, migrate_db

DAGS = Path(__file__).resolve().parent / "dags"
UTC = dt.UTC


def _t(day: int, hour: int = 0) -> dt.datetime:
    return dt.datetime(2026, 1, day, hour, tzinfo=UTC)


def test_choose_orders_by_run_after_and_excludes_the_current_run() -> None:
    runs = [
        ("a", _t(1), _t(1)),
        ("b", _t(3), _t(3)),
        ("c", _t(2), _t(5)),
        ("now", _t(4), _t(4)),
        ("later", _t(9), None),
    ]
    assert guard_baseline.choose("now", _t(4), runs) == "b"
    assert guard_baseline.choose("b", _t(3), runs) == "c"  # c ran after b started? no: ordered by run_after
    assert guard_baseline.choose("a", _t(1), runs) is None  # nothing before the first
    tie = [("x", _t(2), _t(2, 1)), ("y", _t(2), _t(2, 2))]
    assert guard_baseline.choose("now", _t(4), tie) == "y"  # same run_after: the later start
    naive = [("n", dt.datetime(2026, 1, 2), None)]
    assert guard_baseline.choose("now", _t(4), naive) == "n"


def test_run_ids_name_their_instant_for_the_candidate_bound() -> None:
    assert guard_baseline._hint("manual__2026-01-31T12:00:00+00:00") == dt.datetime(2026, 1, 31, 12, tzinfo=UTC)
    assert guard_baseline._hint("scheduled__2026-01-31T12:00:00.123456+00:00_a1B2c3") is not None
    assert guard_baseline._hint("my-own-run") is None
    ids = ["manual__2026-01-01T00:00:00+00:00", "custom", "manual__2026-03-01T00:00:00+00:00"]
    assert sorted(ids, key=guard_baseline._newest_first) == ["custom", ids[2], ids[0]]


def test_without_the_dag_run_call_it_falls_back_to_the_logical_date_and_says_so() -> None:
    prev = SimpleNamespace(run_id="r0")
    ti = SimpleNamespace(dag_id="d", task_id="t", run_id="r1", get_previous_ti=lambda state, map_index: prev,
                         get_template_context=lambda: {"dag_run": SimpleNamespace(run_after=None, logical_date=None)})
    base = guard_baseline.previous_success(ti, -1)
    assert base.run_id == "r0" and base.how == "logical_date" and "no logical date" in (base.note or "")
    old = SimpleNamespace(dag_id="d", task_id="t", run_id="r1", get_template_context=dict)
    assert guard_baseline.previous_success(old, -1).run_id is None  # Airflow 3.0: no previous-run call


def _keep_earlier_runs(mp: pytest.MonkeyPatch) -> None:
    from airflow.models import dagrun
    from airflow.serialization.definitions.dag import SerializedDAG

    def create_only(*, dag: Any, start_date: Any, logical_date: Any, **kw: Any) -> Any:
        from airflow.utils.state import DagRunState
        from airflow.utils.types import DagRunType

        return dag.create_dagrun(logical_date=logical_date, start_date=start_date or logical_date,
                                 run_type=DagRunType.MANUAL, state=DagRunState.RUNNING, **kw)

    mp.setattr(dagrun, "get_or_create_dagrun", create_only)
    mp.setattr(SerializedDAG, "clear_dags", classmethod(lambda cls, *a, **k: 0))


@pytest.fixture(scope="module")
def baseline_runs() -> Iterator[dict[str, Any]]:
    migrate_db()
    mp = pytest.MonkeyPatch()
    # dag.test() runs a DAG it syncs from a DAG bundle: this folder as a bundle of its own (the repo's
    # dags-folder bundle stays as it is for the other tests)
    # (listed first: dag.test() stops walking the bundles at the one that has the DAG)
    mp.setenv("AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST", json.dumps([
        {"name": "guard-tests", "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
         "kwargs": {"path": str(DAGS), "refresh_interval": 0}},
        {"name": "dags-folder", "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle", "kwargs": {}}]))
    _keep_earlier_runs(mp)
    try:
        bag = dagbag_class()(dag_folder=str(DAGS / "guard_baseline.py"))
        assert not bag.import_errors, bag.import_errors
        dag = bag.get_dag("guard_baseline")
        plan = [("r1", _t(10)), ("r2", None), ("r3", dt.datetime(2025, 1, 1, tzinfo=UTC)),
                ("r4", None), ("r5", None), ("r6", _t(20))]
        runs: dict[str, Any] = {}
        for name, logical in plan:
            runs[name] = dag.test(logical_date=logical, run_conf={"fail_shard": 1 if name == "r4" else -1})
        yield runs
    finally:
        mp.undo()
        _wipe()


def _wipe() -> None:
    """No DAG runs left behind (their lineage records would show in other tests' estate index)."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    with create_session() as session:
        session.execute(delete(DagRun).where(DagRun.dag_id == "guard_baseline"))


def _baselines(run_id: str) -> dict[tuple[str, int], Any]:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from airflow_provider_lineage.plugins.store import decode

    with create_session() as session:
        rows = session.execute(select(XComModel.task_id, XComModel.map_index, XComModel.value).where(
            XComModel.dag_id == "guard_baseline", XComModel.run_id == run_id, XComModel.key == "lineage_diff")).all()
    return {(t, m): decode(v)["previous_run_id"] for t, m, v in rows}


def test_runs_with_and_without_a_logical_date_find_the_run_before(baseline_runs: dict[str, Any]) -> None:
    r = {k: v.run_id for k, v in baseline_runs.items()}
    assert baseline_runs["r2"].logical_date is None and baseline_runs["r3"].logical_date is not None
    every = [("probe", -1), ("shard", 0), ("shard", 1)]
    assert _baselines(r["r1"]) == dict.fromkeys(every)  # the first run: no previous run
    assert _baselines(r["r2"]) == dict.fromkeys(every, r["r1"])  # no logical date, after one with
    # a logical date older than r1's, after a run without one: the run just before is still r2
    assert _baselines(r["r3"]) == dict.fromkeys(every, r["r2"])
    assert _baselines(r["r4"]) == dict.fromkeys(every, r["r3"])  # r4's shard 1 failed after keeping its record
    # after r4: its successful task instances are the baseline; shard 1 (failed in r4) goes back to r3
    assert _baselines(r["r5"]) == {("probe", -1): r["r4"], ("shard", 0): r["r4"], ("shard", 1): r["r3"]}
    assert _baselines(r["r6"]) == dict.fromkeys(every, r["r5"])  # a logical date after runs without one
