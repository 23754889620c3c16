"""The estate index on PostgreSQL (issue 37): bad records (NUL bytes, names longer than the columns) are
skipped and reported, never an error, and the watermark moves; updaters at once (the scheduler's listener,
an api-server request, two schedulers) never error; a killed ``reindex`` leaves the old index whole.

A throw-away PostgreSQL (Debian's binaries, :class:`dev.deploy.PostgresServer`) on a free port, with
Airflow's tables created from its models, and real concurrent sessions (threads, one connection each).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.plugins.estate_support import NS, add_run, kill_reindex_at, record

pytestmark = [pytest.mark.postgres]


@pytest.fixture(scope="module")
def pg() -> Iterator[Any]:
    """``(engine, session factory)`` of a fresh PostgreSQL holding Airflow's tables."""
    if not Path(os.environ.get("APL_PG_BIN", "/usr/lib/postgresql/15/bin"), "initdb").exists():
        pytest.fail("PostgreSQL is not installed: run ./dev.sh setup as root (it installs Debian's postgresql)")
    import airflow.models
    from airflow.models.base import Base
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    from dev.deploy import PostgresServer

    base = Path(tempfile.mkdtemp(prefix="apl-estate-pg-"))
    server = PostgresServer(base, temporary=True)
    server.init()
    proc = subprocess.Popen(server.command(), user=server.user, cwd=server.base, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        server.wait_ready()
        engine = create_engine(server.url, pool_size=10)
        try:
            airflow.models.import_all_models()
        except AttributeError:
            pass
        Base.metadata.create_all(engine)
        factory = sessionmaker(bind=engine, expire_on_commit=False)

        @contextmanager
        def sessions() -> Iterator[Any]:
            session = factory()
            try:
                yield session
                session.commit()
            except Exception:
                session.rollback()
                raise
            finally:
                session.close()

        yield engine, sessions
        engine.dispose()
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=60)
        shutil.rmtree(base, ignore_errors=True)


def test_bad_records_nul_bytes_and_long_names_on_postgresql(pg: Any) -> None:
    from sqlalchemy import select

    from airflow_provider_lineage.plugins.estate import index, lists, query
    from airflow_provider_lineage.plugins.estate import schema as s

    _engine, sessions = pg
    long_names = record({"pg_out": [("v", "pg_in:v")]})
    long_names["datasets"] += [{"namespace": NS, "name": "x" * 1500, "fields": [["c", "t"]]},
                               {"namespace": NS, "name": "nul\x00name", "fields": [["c\x00", "t\x00"]]},
                               {"namespace": "n" * 600, "name": "y", "table": "z" * 600},
                               {"namespace": NS, "name": "ok_ds", "table": "t" * 700,
                                "fields": [["c" * 501, "t"], ["fine", "x" * 300]]}]
    long_names["edges"] += [[2, "c", 0, "v", "DIRECT", None, 0], [0, "w\x00", 1, "v", "DIRECT", None, 0],
                            [5, "fine", 0, "v", "DIRECT\x00" * 10, "S" * 80, 0]]
    malformed = dict(record({"pg_bad_out": [("v", "pg_bad_in:v")]}), edges=[[0, "c", 99, "d", "DIRECT", None, 0], "x"],
                     inputs=["a", -1])
    not_lists = dict(record({"pg_bad2_out": [("v", "v:v")]}), dataset_edges={"a": 1})
    add_run("pg_dag", "long", long_names, day=1, sessions=sessions)
    add_run("pg_dag", "malformed", malformed, day=1, sessions=sessions)
    add_run("pg_dag", "notlists", not_lists, day=1, sessions=sessions)
    add_run("pg_dag", "good", record({"pg_good": [("v", "pg_src:v")]}), day=2, sessions=sessions)
    newest = datetime.now(UTC)
    with sessions() as session:
        out = index.sync(session, force=True)
        assert out["indexed"] == 4, out
    with sessions() as session:
        mark = session.scalar(select(s.meta.c.value).where(s.meta.c.key == "xcom_watermark"))
        assert datetime.fromisoformat(mark) >= newest - timedelta(minutes=1)
        assert [h["name"] for h in query.search(session, "pg_good")] == ["pg_good"]
        assert {h["name"] for h in query.search(session, "pg_out")} == {"pg_out"}
        assert {(h["name"], h["column"]) for h in query.search(session, "fine")} == {("ok_ds", "fine")}
        # the access filter and the labels in SQL (issue 47): PostgreSQL's GROUP BY rules hold
        for readable in ({"pg_dag"}, {"pg_dag", "other"}):
            assert {(h["name"], h["column"]) for h in query.search(session, "fine", readable=readable)} == {
                ("ok_ds", "fine")}
            assert [h["name"] for h in query.search(session, "pg_good", readable=readable)] == ["pg_good"]
        assert query.search(session, "pg_good", readable={"other"}) == []
        found = {p["task_id"]: p for p in lists.problems(session)["problems"]}
        assert set(found) == {"long", "malformed", "notlists"}
        assert "over 1000 characters" in found["long"]["reason"] and "NUL" in found["long"]["reason"]
        assert (
            found["notlists"]["status"] == "invalid" and "'dataset_edges' is not a list" in found["notlists"]["reason"]
        )
        # request parameters with NUL bytes or over the column sizes: an unknown name, never a DataError
        assert query.impact(session, NS, "nul\x00name", "c") == {
            "rows": [],
            "hidden": 0,
            "total": 0,
            "truncated": False,
        }
        assert query.graph(session, [(NS, "x" * 1500, "")], readable={"pg_dag"})["missing"] == [f"{NS}:{'x' * 1500}"]
        assert query.search(session, "a\x00b", readable={"pg_dag"}) == []
        assert query.graph(session, [(NS, "pg_out", "v\x00")], readable={"pg_dag"})["datasets"]


def _xcoms(sessions: Any, dag: str, n: int, day: float) -> None:
    for i in range(n):
        add_run(dag, f"t{i}", record({f"{dag}_out_{i % 7}": [("v", f"{dag}_in:v"), (f"c{i}", f"{dag}_in:c")]}),
                day=day, sessions=sessions)


def _at_once(*jobs: Any) -> list[BaseException]:
    """Run ``jobs`` in threads started together; the exceptions they raised."""
    errors: list[BaseException] = []
    go = threading.Barrier(len(jobs))

    def run(job: Any) -> None:
        try:
            go.wait()
            job()
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(j,)) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return errors


def test_concurrent_updaters_never_error_on_postgresql(pg: Any) -> None:
    """The scheduler's listener and an api-server request (both :func:`index.sync`), two schedulers
    (:func:`index.sync_all`) and writers of the same XCom row and meta key (:func:`ingest.ingest`,
    :func:`index._set_meta`, which run without the sync lock in the benchmarks and tools) at once."""
    from airflow.models.xcom import XComModel
    from sqlalchemy import func, select

    from airflow_provider_lineage.plugins.estate import index
    from airflow_provider_lineage.plugins.estate import ingest as estate_ingest
    from airflow_provider_lineage.plugins.estate import schema as s

    _engine, sessions = pg

    def sync() -> None:
        with sessions() as session:
            index.sync(session, force=True)

    for rnd in range(4):
        _xcoms(sessions, f"cc{rnd}", 12, 3 + rnd)
        assert _at_once(sync, sync, lambda: index.sync_all(sessions, batch=5),
                        lambda: index.sync_all(sessions, batch=3)) == []
    index.sync_all(sessions)
    rows = []
    with sessions() as session:
        rows = session.execute(select(XComModel.dag_run_id, XComModel.task_id, XComModel.map_index).where(
            XComModel.dag_id == "cc0")).all()
    rec = record({"same_out": [("v", "same_in:v")]})

    def ingest(k: Any, tag: str) -> None:
        with sessions() as session:
            estate_ingest.ingest(session, dag_run_id=k.dag_run_id, dag_id="cc0", task_id=k.task_id, run_id="r",
                         map_index=k.map_index, record=dict(rec, run_id=tag), state="success",
                         end_date=datetime.now(UTC), xcom_ts=datetime.now(UTC))

    def meta(key: str) -> None:
        with sessions() as session:
            index._set_meta(session, key, "x")

    for k in rows[:6]:
        assert _at_once(lambda k=k: ingest(k, "a"), lambda k=k: ingest(k, "b"), lambda k=k: ingest(k, "c")) == []
    for i in range(6):
        assert _at_once(lambda i=i: meta(f"k{i}"), lambda i=i: meta(f"k{i}"), lambda i=i: meta(f"k{i}")) == []
    with sessions() as session:
        per_xcom = session.execute(select(s.task_run.c.dag_run_id, s.task_run.c.task_id, s.task_run.c.map_index,
                                          func.count()).group_by(s.task_run.c.dag_run_id, s.task_run.c.task_id,
                                                                 s.task_run.c.map_index)).all()
        assert all(n == 1 for *_, n in per_xcom)
        n_xcom = session.scalar(select(func.count()).select_from(XComModel).where(XComModel.key == "column_lineage"))
        assert len(per_xcom) == n_xcom
        digests = session.execute(select(s.edge_set.c.digest, func.count()).group_by(s.edge_set.c.digest)).all()
        assert all(n == 1 for _, n in digests)


def test_a_killed_reindex_leaves_the_old_index_whole_on_postgresql(pg: Any) -> None:
    from sqlalchemy import select

    from airflow_provider_lineage.plugins.estate import index
    from airflow_provider_lineage.plugins.estate import schema as s

    engine, sessions = pg
    _xcoms(sessions, "rk", 20, 9)
    index.sync_all(sessions)

    def state() -> Any:
        with sessions() as session:
            return (sorted(tuple(r) for r in session.execute(select(s.task_run.c.dag_id, s.task_run.c.task_id,
                                                                    s.task_run.c.set_ref))),
                    sorted(session.execute(select(s.dataset.c.name)).scalars()))

    before = state()
    url = engine.url.render_as_string(hide_password=False)
    env = dict(os.environ, AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=url, AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC=url)

    def meanwhile() -> None:  # readers see the old index, and a sync finds it busy
        with sessions() as session:
            assert index.sync(session, force=True) == {"busy": 1}
        assert state() == before

    kill_reindex_at("indexed 3 of", env, before_kill=meanwhile)
    assert state() == before
    with sessions() as session:
        assert "indexed" in index.sync(session, force=True)
