"""The estate index on Airflow's real metadata DB (no Spark): XCom rows in, sync, as-of, traversal,
impact, diff, search, access; ``db clean`` / DAG deletion / a cleared task leave nothing behind; the
re-index command rebuilds without duplicates."""
from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from tests.plugins.estate_support import NS, T0, add_run, record

CHAIN = ("estate_a", "estate_b", "estate_c")


@pytest.fixture(scope="module")
def chain() -> Iterator[dict[str, Any]]:
    """estate_a writes t1 (from landing); estate_b t1->t2 (email masked); estate_c t2->t3 from day 5."""
    from tests.support.pipelines import migrate_db

    migrate_db()
    from airflow.utils.session import create_session

    from airflow_provider_lineage.plugins.estate import index

    _wipe()
    add_run("estate_a", "load", record({"t1": [("email", "landing:email"), ("id", "landing:id")]}), day=1)
    add_run("estate_b", "mart", record({"t2": [("email_h", "t1:email"), ("id", "t1:id")]}, masked={"email_h"},
                                       dataset_edges=[("t2", "t1", "id")]), day=2)
    add_run("estate_c", "report", record({"t3": [("email_x", "t2:email_h")]}), day=5)
    add_run("estate_c", "report", record({"t3": [("email_x", "t2:email_h"), ("n", "t2:id")]}), day=6)
    add_run("estate_c", "report", record({"t9": [("zzz", "t2:id")]}), day=7, state="failed")
    with create_session() as session:
        index.sync(session, force=True)
    yield {}
    _wipe()


def _wipe(*dag_ids: str) -> None:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    with create_session() as session:
        session.execute(delete(DagRun).where(DagRun.dag_id.in_(dag_ids or CHAIN)))


def _q() -> Any:
    from airflow.utils.session import create_session

    return create_session()


def test_impact_downstream_through_three_dags(chain: Any) -> None:
    from airflow_provider_lineage.plugins.estate import query

    with _q() as session:
        out = query.impact(session, NS, "landing", "email", depth=5)
    rows = {(r["name"], r["column"]): r for r in out["rows"]}
    assert set(rows) == {("t1", "email"), ("t2", "email_h"), ("t3", "email_x")}
    assert rows[("t3", "email_x")]["depth"] == 3 and rows[("t3", "email_x")]["dag_id"] == "estate_c"
    assert rows[("t3", "email_x")]["path"] == "file:landing#email > file:t1#email > file:t2#email_h > file:t3#email_x"
    assert rows[("t3", "email_x")]["masked"] is True and rows[("t1", "email")]["masked"] is False
    assert rows[("t2", "email_h")]["types"] == "DIRECT/IDENTITY > DIRECT/TRANSFORMATION"
    assert list(out["rows"][0]) == list(query.IMPACT_COLUMNS) and out["hidden"] == 0


def test_depth_and_upstream_and_whole_dataset(chain: Any) -> None:
    from airflow_provider_lineage.plugins.estate import query

    with _q() as session:
        one = query.impact(session, NS, "landing", "email", depth=1)
        up = query.impact(session, NS, "t3", "n", direction="upstream", depth=5)
        whole = query.impact(session, NS, "t1", "", depth=1)
    assert [(r["name"], r["column"]) for r in one["rows"]] == [("t1", "email")]
    # t3.n <- t2.id <- t1.id (direct) and t1.id (dataset-wide filter into t2) <- landing.id
    assert {(r["name"], r["column"]) for r in up["rows"]} == {("t2", "id"), ("t1", "id"), ("landing", "id")}
    assert {(r["name"], r["column"]) for r in whole["rows"]} == {("t2", "email_h"), ("t2", "id"), ("t2", "")}


def test_as_of_uses_each_tasks_last_successful_run(chain: Any) -> None:
    from airflow_provider_lineage.plugins.estate import query

    with _q() as session:
        before_c = query.impact(session, NS, "t1", "email", depth=5, as_of=T0 + timedelta(days=3))
        day5 = query.impact(session, NS, "t2", "id", depth=5, as_of=T0 + timedelta(days=5, hours=1))
        now = query.impact(session, NS, "t2", "id", depth=5)
    assert {r["name"] for r in before_c["rows"]} == {"t2"}
    assert day5["rows"] == []  # day 5's run of estate_c did not read t2.id
    assert {(r["name"], r["column"]) for r in now["rows"]} == {("t3", "n")}  # day 7 failed: day 6 counts


def test_access_hides_a_refused_dag_as_a_count(chain: Any) -> None:
    from airflow_provider_lineage.plugins.estate import query

    with _q() as session:
        out = query.impact(session, NS, "landing", "email", depth=5, readable={"estate_a", "estate_c"})
        g = query.graph(session, [(NS, "t1", "email")], depth=1, readable={"estate_a", "estate_c"})
    assert [(r["name"], r["column"]) for r in out["rows"]] == [("t1", "email")]
    assert out["hidden"] == 1
    assert "estate_b" not in repr(out) and "t2" not in repr(g) and "email_h" not in repr(g)
    t1 = next(d for d in g["datasets"] if d["name"] == "t1")
    assert t1["hidden_down"] == 1 and g["hidden"] == 1


def test_graph_edges_say_dag_task_and_last_run(chain: Any) -> None:
    from airflow_provider_lineage.plugins.estate import query

    with _q() as session:
        g = query.graph(session, [(NS, "t2", "")], depth=1)
    e = next(e for e in g["edges"] if e["target"] == "file:t3")
    assert (e["dag_id"], e["task_id"]) == ("estate_c", "report")
    assert e["last_run"]["state"] == "failed" and e["run_end"].startswith("2026-01-07")
    names = {d["name"]: d for d in g["datasets"]}
    assert set(names) == {"t1", "t2", "t3"} and names["t2"]["start"]
    assert names["t1"]["more_up"] >= 1  # landing is one hop beyond
    assert {(d["source"], d["target"]) for d in g["dataset_edges"]} >= {("file:t1", "file:t2"), ("file:t2", "file:t3")}


def test_diff_between_two_instants(chain: Any) -> None:
    from airflow_provider_lineage.plugins.estate import query

    with _q() as session:
        a = query.graph(session, [(NS, "t2", "")], depth=2, as_of=T0 + timedelta(days=3))
        b = query.graph(session, [(NS, "t2", "")], depth=2)
    d = query.diff(a, b)
    assert d["added"]["datasets"] == ["file:t3"] and not d["removed"]["datasets"]
    assert {(e["target"], e["target_field"]) for e in d["added"]["edges"]} == {("file:t3", "email_x"), ("file:t3", "n")}


def test_search_and_edges_as_of(chain: Any) -> None:
    from airflow_provider_lineage.plugins.estate import query

    with _q() as session:
        hits = query.search(session, "email")
        hidden = query.search(session, "email_h", readable={"estate_a"})
        edges = query.edges_as_of(session)
        old = query.edges_as_of(session, T0 + timedelta(days=3), dag_ids={"estate_b"})
    assert {(h["name"], h["column"]) for h in hits} >= {("t1", "email"), ("t2", "email_h"), ("t3", "email_x")}
    assert hidden == []
    assert {(e.target[1], e.target_col, e.run.dag_id) for e in edges} >= {("t3", "n", "estate_c")}
    assert all(e.run.dag_id == "estate_b" for e in old) and any(e.masking for e in old)


def test_deleted_runs_and_cleared_tasks_leave_the_index() -> None:
    from airflow.api.common.delete_dag import delete_dag
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import delete, select

    from airflow_provider_lineage.plugins.estate import index, query
    from airflow_provider_lineage.plugins.estate import schema as s
    from tests.support.pipelines import migrate_db

    migrate_db()
    add_run("estate_del", "w", record({"estate_del_out": [("x", "d0:x")]}), day=1)
    add_run("estate_del", "w", record({"estate_del_out": [("x", "d0:x")]}), day=2)
    add_run("estate_old", "w", record({"estate_old_out": [("y", "o0:y")]}), day=1)
    with create_session() as session:
        index.sync(session, force=True)
        assert {h["name"] for h in query.search(session, "estate_del_out")} == {"estate_del_out"}
    delete_dag("estate_del")
    with create_session() as session:  # a cleared task (or `airflow db clean` of xcom) deletes its XCom
        session.execute(delete(XComModel).where(XComModel.dag_id == "estate_old"))
    with create_session() as session:
        assert index.sync(session, force=True)["pruned"] == 3
        assert query.search(session, "estate_del_out") == [] and query.search(session, "estate_old_out") == []
        left = session.scalar(select(s.task_run.c.id).where(s.task_run.c.dag_id.in_(["estate_del", "estate_old"])))
        assert left is None
    _wipe("estate_del", "estate_old")


def test_db_clean_removes_the_lineage_of_cleaned_runs() -> None:
    from airflow.utils.db_cleanup import run_cleanup
    from airflow.utils.session import create_session

    from airflow_provider_lineage.plugins.estate import index, query
    from tests.support.pipelines import migrate_db

    migrate_db()
    add_run("estate_clean", "w", record({"estate_clean_out": [("x", "c0:x")]}), day=1, pushed=T0)
    with create_session() as session:
        assert index.reindex(session, dag_id="estate_clean")["indexed"] == 1
        assert query.search(session, "estate_clean_out")
    run_cleanup(clean_before_timestamp=T0 + timedelta(days=30), table_names=["xcom"], dry_run=False,
                confirm=False, skip_archive=True)
    with create_session() as session:
        index.sync(session, force=True)
        assert query.search(session, "estate_clean_out") == []
    _wipe("estate_clean")


def test_reindex_command_rebuilds_without_duplicates(chain: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.utils.session import create_session
    from sqlalchemy import func, select

    from airflow_provider_lineage.lineage import canonical
    from airflow_provider_lineage.plugins.estate import index, query
    from airflow_provider_lineage.plugins.estate import schema as s

    monkeypatch.setattr(canonical, "canonical_identity", lambda ns, nm: (ns, "t2b" if nm == "t2" else nm))
    with create_session() as session:
        counts = index.reindex(session)
        assert counts["indexed"] >= 5 and counts["datasets_dropped"] == 1
        names = session.execute(select(s.dataset.c.name)).scalars().all()
        assert "t2" not in names and names.count("t2b") == 1
        assert {r["name"] for r in query.impact(session, NS, "t1", "email", depth=5)["rows"]} == {"t2b", "t3"}
        n = session.scalar(select(func.count()).select_from(s.task_run))
    monkeypatch.undo()
    out = subprocess.run([sys.executable, "-m", "airflow_provider_lineage.plugins.estate", "reindex"],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert "indexed" in out.stdout
    with create_session() as session:
        assert session.scalar(select(func.count()).select_from(s.task_run)) == n
        assert "t2" in session.execute(select(s.dataset.c.name)).scalars().all()


def test_reindex_puts_a_record_written_under_an_old_name_under_the_current_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An old run wrote ``postgres://DB.example.com`` (no default port, host case kept: the naming before
    issue 27); a new run reads the same table as ``postgres://db.example.com:5432``. Indexed as they were
    written (the old rules), they are two datasets; ``reindex`` with the current rules leaves one, and the
    impact of the old writer's source reaches the new reader's output through it."""
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from airflow_provider_lineage.lineage import canonical
    from airflow_provider_lineage.plugins.estate import index, query
    from airflow_provider_lineage.plugins.estate import schema as s
    from tests.support.pipelines import migrate_db

    migrate_db()
    old_ns, new_ns, table = "postgres://DB.example.com", "postgres://db.example.com:5432", "shop.public.orders"

    def renamed(rec: dict[str, Any], names: dict[str, tuple[str, str]]) -> dict[str, Any]:
        for ds in rec["datasets"]:
            ds["namespace"], ds["name"] = names.get(ds["name"], (ds["namespace"], ds["name"]))
        return rec

    add_run("estate_rn_old", "load", renamed(record({"orders": [("total", "raw:amount")]}),
                                             {"orders": (old_ns, table)}), day=1)
    add_run("estate_rn_new", "mart", renamed(record({"mart": [("revenue", "orders:total")]}),
                                             {"orders": (new_ns, table)}), day=2)

    def orders_rows(session: Any) -> list[tuple[str, str]]:
        return [tuple(r) for r in session.execute(select(s.dataset.c.namespace, s.dataset.c.name).where(
            s.dataset.c.name == table))]

    with monkeypatch.context() as m:  # the index as the old rules built it: no rewriting
        m.setattr(canonical, "index_key", lambda ns, nm: (ns, nm))
        with create_session() as session:
            index.reindex(session, dag_id="estate_rn_old")
            index.reindex(session, dag_id="estate_rn_new")
            assert sorted(orders_rows(session)) == [(old_ns, table), (new_ns, table)]
            assert {r["name"] for r in query.impact(session, NS, "raw", "amount", depth=5)["rows"]} == {table}
    with create_session() as session:
        counts = index.reindex(session)
        assert counts["datasets_dropped"] >= 1
        assert orders_rows(session) == [(new_ns, table)]
        rows = query.impact(session, NS, "raw", "amount", depth=5)["rows"]
        assert {(r["namespace"], r["name"], r["column"]) for r in rows} == {(new_ns, table, "total"),
                                                                           (NS, "mart", "revenue")}
    _wipe("estate_rn_old", "estate_rn_new")
    with create_session() as session:
        index.sync(session, force=True)


def test_host_case_is_one_dataset_as_the_guard_matches_declarations() -> None:
    """Issue 46 item 8: ``s3a://Lake-Bucket`` and ``s3://lake-bucket``, ``hdfs://NameNode:8020`` and
    ``hdfs://namenode:8020`` are one dataset in the index (host case folded as the guard's
    :func:`~airflow_provider_lineage.lineage.canonical.match_key` folds a declaration's), the impact goes through
    it, a request spelled another way finds it, and a declaration spelled ``s3a://LAKE-BUCKET/`` +
    ``/data/orders/`` tags it along the estate's edges."""
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from airflow_provider_lineage.plugins.estate import index, query
    from airflow_provider_lineage.plugins.estate import schema as s
    from airflow_provider_lineage.plugins.guard import estate as guard_estate
    from tests.support.pipelines import migrate_db

    migrate_db()
    dags = ("estate_hc_w", "estate_hc_r", "estate_hdfs_w", "estate_hdfs_r")
    _wipe(*dags)

    def named(rec: dict[str, Any], names: dict[str, tuple[str, str]]) -> dict[str, Any]:
        for ds in rec["datasets"]:
            ds["namespace"], ds["name"] = names.get(ds["name"], (ds["namespace"], ds["name"]))
        return rec

    add_run("estate_hc_w", "load", named(record({"orders": [("total", "hc_raw:amount")]}),
                                         {"orders": ("s3a://Lake-Bucket", "data/orders")}), day=1)
    add_run("estate_hc_r", "mart", named(record({"hc_mart": [("revenue", "orders:total")]}),
                                         {"orders": ("s3://lake-bucket", "data/orders")}), day=2)
    add_run("estate_hdfs_w", "load", named(record({"wh": [("k", "hc_raw2:k")]}),
                                           {"wh": ("hdfs://NameNode:8020", "/warehouse/Orders")}), day=1)
    add_run("estate_hdfs_r", "mart", named(record({"hc_mart2": [("k2", "wh:k")]}),
                                           {"wh": ("hdfs://namenode:8020", "/warehouse/Orders")}), day=2)
    try:
        with create_session() as session:
            index.sync(session, force=True)
            rows = sorted(tuple(r) for r in session.execute(select(s.dataset.c.namespace, s.dataset.c.name).where(
                s.dataset.c.name.in_(["data/orders", "/warehouse/Orders"]))))
            # one dataset per identity; the path keeps its case
            assert rows == [("hdfs://namenode:8020", "/warehouse/Orders"), ("s3://lake-bucket", "data/orders")]
            reached = {(r["namespace"], r["name"], r["column"]) for r in
                       query.impact(session, NS, "hc_raw", "amount", depth=5)["rows"]}
            assert reached == {("s3://lake-bucket", "data/orders", "total"), (NS, "hc_mart", "revenue")}
            assert (NS, "hc_mart2", "k2") in {(r["namespace"], r["name"], r["column"]) for r in
                                              query.impact(session, NS, "hc_raw2", "k", depth=5)["rows"]}
            # a request spelled as a user writes it finds the dataset
            for ns, nm in (("s3a://Lake-Bucket/", "/data/orders/"), ("S3://LAKE-BUCKET", "data/orders"),
                           ("hdfs://NAMENODE:8020", "/warehouse/Orders")):
                assert query.dataset_id(session, ns, nm) is not None, (ns, nm)
            assert query.dataset_id(session, "hdfs://namenode:8020", "/warehouse/orders") is None  # path case kept
            got = query.impact(session, "s3a://LAKE-BUCKET/", "/data/orders/", "total", depth=5)["rows"]
            assert {(r["name"], r["column"]) for r in got} == {("hc_mart", "revenue")}
            # the guard's declaration, spelled otherwise again, tags the stitched dataset's readers
            declared = {("s3a://LAKE-BUCKET/", "/data/orders/"): {"total": ["pii"]}}
            tagged = guard_estate.tag_map(session, declared, ["pii"])
            assert tagged is not None
            assert any(col[1] == "hc_mart" and col[2] == "revenue" and any(e.get("tag") == "pii" for e in entries)
                       for col, entries in tagged["columns"].items()), tagged["columns"]
    finally:
        _wipe(*dags)
        with create_session() as session:
            index.sync(session, force=True)
