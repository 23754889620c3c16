"""The estate API you can trust (issue 37), over HTTP on Airflow's own app and metadata DB with real users of
the simple auth manager (:mod:`tests.plugins.auth`: ``outsider`` may not read ``lineage_etl``):

* what a user cannot read contributes counts only: a dataset or column only refused DAGs name answers exactly
  as one that does not exist, in graph, diff, impact (both ways) and search;
* bad lineage records are skipped and reported, never a 500, and the watermark moves;
* CSV cells that would start a formula are escaped; out-of-range instants are 400s;
* columns time-travel; every list pages; the first sync after an upgrade runs in the background;
* ``reindex`` killed half-way leaves the old index whole.
Real rows, no Spark.
"""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from tests.plugins.auth import DENIED_DAG, DENIED_USER, api_client
from tests.plugins.estate_support import NS, T0, add_run, kill_reindex_at, record

PREFIX = "/column-lineage"
RUN_PREFIX = "trust__"
SECRET = "secret_hr/salaries"
ADMIN = "admin"


def _wipe(*dag_ids: str) -> None:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    with create_session() as session:
        cond = DagRun.dag_id.in_(dag_ids) if dag_ids else DagRun.run_id.like(RUN_PREFIX + "%")
        session.execute(delete(DagRun).where(cond))


def _run(dag_id: str, task: str, rec: Any, day: float, n: str, **kw: Any) -> str:
    return add_run(dag_id, task, rec, day=day, run_id=f"{RUN_PREFIX}{n}", **kw)


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    from tests.support.pipelines import migrate_db

    migrate_db()
    _wipe()
    _run("trust_a", "load", record({"t1": [("email", "landing:email"), ("id", "landing:id")]}), 1, "a1")
    # the refused DAG: the only one that names secret_hr/salaries and hr_raw, and t1's columns hidden_col/hidden_in
    _run(DENIED_DAG, "hr", record({SECRET: [("salary", "hr_raw:salary"), ("x", "t1:hidden_col")],
                                   "t1": [("hidden_in", "hr_raw:salary")]}), 2, "d2")
    # columns change over time: tt has a, b on day 1; a, c from day 5
    _run("trust_tt", "load", record({"tt": [("a", "src:a"), ("b", "src:b")]}), 1, "tt1")
    _run("trust_tt", "load", record({"tt": [("a", "src:a"), ("c", "src:c")]}), 5, "tt5")
    _run("trust_csv", "w", record({'=HYPERLINK("http://evil.example/x","y")': [("-2+3", "@SUM(A1):+cmd")]}), 1, "csv")
    for i in range(5):  # a chain for paging: p0 -> p1 ... p5
        _run("trust_page", f"w{i}", record({f"page_{i + 1}": [("k", f"page_{i}:k")]}), 1 + i / 10, f"p{i}")
    with api_client() as c:
        yield c
    _wipe()


def _get(c: Any, path: str, user: str | None = "viewer", **params: Any) -> Any:
    headers = {"Authorization": f"Bearer {c.tokens[user]}"} if user else {}
    return c.get(PREFIX + path, headers=headers, params=params)


def _same(c: Any, path: str, user: str, hidden: dict[str, Any], unknown: dict[str, Any]) -> None:
    """The answer for ``hidden`` equals the answer for ``unknown``: status and body (names swapped)."""
    a, b = _get(c, path, user, **hidden), _get(c, path, user, **unknown)
    assert a.status_code == b.status_code == 200, (a.text, b.text)
    swap = {json.dumps(v)[1:-1]: json.dumps(unknown[k])[1:-1] for k, v in hidden.items() if v != unknown[k]}
    text = a.text
    for old, new in swap.items():
        text = text.replace(old, new)
    assert json.loads(text) == b.json(), (path, hidden, a.text, b.text)


def test_a_dataset_only_refused_dags_name_answers_as_one_that_does_not_exist(client: Any) -> None:
    for name in (SECRET, "hr_raw"):
        for col in ("", "salary"):
            for direction in ("downstream", "upstream"):
                _same(client, "/api/impact", DENIED_USER, {"namespace": NS, "name": name, "column": col,
                                                           "direction": direction, "depth": 5},
                      {"namespace": NS, "name": "no_such/table", "column": col, "direction": direction, "depth": 5})
            for depth in (0, 1, 3):
                _same(client, "/api/estate/graph", DENIED_USER, {"namespace": NS, "name": name, "column": col,
                                                                 "depth": depth},
                      {"namespace": NS, "name": "no_such/table", "column": col, "depth": depth})
        _same(client, "/api/estate/diff", DENIED_USER, {"namespace": NS, "name": name, "before": "2026-01-01"},
              {"namespace": NS, "name": "no_such/table", "before": "2026-01-01"})
    g = _get(client, "/api/estate/graph", DENIED_USER, namespace=NS, name=SECRET).json()
    assert g["datasets"] == [] and g["hidden"] == 0 and g["missing"] == [f"{NS}:{SECRET}"]
    assert _get(client, "/api/estate/search", DENIED_USER, q="salar").json()["hits"] == []
    # the admin may read the DAG: everything is there
    full = _get(client, "/api/estate/graph", ADMIN, namespace=NS, name=SECRET, depth=1).json()
    assert {f["name"] for d in full["datasets"] if d["name"] == SECRET for f in d["fields"]} == {"salary", "x"}
    assert {h["column"] for h in _get(client, "/api/estate/search", ADMIN, q="salar").json()["hits"]} >= {"", "salary"}


def test_a_column_only_refused_dags_name_is_not_listed_and_counts_as_unknown(client: Any) -> None:
    for col, direction in (("hidden_col", "downstream"), ("hidden_in", "upstream"), ("hidden_col", "upstream"),
                           ("hidden_in", "downstream")):
        _same(
            client,
            "/api/impact",
            DENIED_USER,
            {"namespace": NS, "name": "t1", "column": col, "direction": direction},
            {"namespace": NS, "name": "t1", "column": "no_such_col", "direction": direction},
        )
        _same(client, "/api/estate/graph", DENIED_USER, {"namespace": NS, "name": "t1", "column": col, "depth": 2},
              {"namespace": NS, "name": "t1", "column": "no_such_col", "depth": 2})
    g = _get(client, "/api/estate/graph", DENIED_USER, namespace=NS, name="t1").json()
    t1 = next(d for d in g["datasets"] if d["name"] == "t1")
    assert {f["name"] for f in t1["fields"]} == {"email", "id"}
    assert (
        "hidden_col" not in json.dumps(g)
        and "hidden_in" not in json.dumps(g)
        and "salar" not in json.dumps(g)
        and DENIED_DAG not in json.dumps(g)
    )
    assert t1["hidden_down"] == 1 and t1["hidden_up"] == 1  # counts stay: the documented "N hidden"
    assert _get(client, "/api/estate/search", DENIED_USER, q="hidden_").json()["hits"] == []
    admin = _get(client, "/api/estate/graph", ADMIN, namespace=NS, name="t1").json()
    t1 = next(d for d in admin["datasets"] if d["name"] == "t1")
    assert {f["name"] for f in t1["fields"]} == {"email", "id", "hidden_col", "hidden_in"}
    assert {h["column"] for h in _get(client, "/api/estate/search", ADMIN, q="hidden_").json()["hits"]} == {
        "hidden_col", "hidden_in"}
    # a hidden-only column's impact answers like an unknown column: hidden 0, no rows
    down = _get(client, "/api/impact", DENIED_USER, namespace=NS, name="t1", column="hidden_col").json()
    assert down["rows"] == [] and down["hidden"] == 0


def test_csv_cells_that_start_a_formula_are_escaped(client: Any) -> None:
    r = _get(client, "/api/impact", namespace=NS, name="@SUM(A1)", column="+cmd", format="csv")
    assert r.status_code == 200, r.text
    (row,) = list(csv.DictReader(io.StringIO(r.text)))
    assert row["name"] == "'=HYPERLINK(\"http://evil.example/x\",\"y\")" and row["column"] == "'-2+3"
    assert row["depth"] == "1" and row["path"].startswith("file:@SUM")
    for line in r.text.splitlines()[1:]:
        for cell in next(csv.reader([line])):
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
    j = _get(client, "/api/impact", namespace=NS, name="@SUM(A1)", column="+cmd").json()  # JSON: the names as they are
    assert j["rows"][0]["name"].startswith("=HYPERLINK") and j["rows"][0]["column"] == "-2+3"


@pytest.mark.parametrize("instant", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_out_of_range_instants_are_a_400(client: Any, instant: str) -> None:
    for path, params in (("/api/impact", {"namespace": NS, "name": "t1", "as_of": instant}),
                         ("/api/estate/graph", {"namespace": NS, "name": "t1", "as_of": instant}),
                         ("/api/estate/diff", {"namespace": NS, "name": "t1", "before": instant}),
                         ("/api/estate/diff", {"namespace": NS, "name": "t1", "before": "2026-01-01",
                                               "after": instant})):
        r = _get(client, path, **params)
        assert r.status_code == 400, (path, r.text)
        assert "out of range" in r.json()["detail"] and instant in r.json()["detail"]


def test_nul_bytes_and_overlong_parameters_are_clear_400s(client: Any) -> None:
    for path, params in (("/api/impact", {"namespace": NS, "name": "t1\x00"}),
                         ("/api/estate/graph", {"namespace": NS, "name": "t\x001"}),
                         ("/api/estate/graph", {"namespace": NS, "name": "t1", "column": "a\x00"}),
                         ("/api/estate/search", {"q": "\x00"}),
                         ("/api/estate/diff", {"namespace": NS, "name": "\x00", "before": "2026-01-01"}),
                         ("/api/estate/runs", {"dag_id": "x\x00"})):
        r = _get(client, path, **params)
        assert r.status_code == 400 and "NUL" in r.json()["detail"], (path, r.text)
    r = _get(client, "/api/estate/graph", namespace=NS, name="x" * 1001)
    assert r.status_code == 400 and "over 1000 characters" in r.json()["detail"]


def test_columns_time_travel(client: Any) -> None:
    def fields(as_of: str | None) -> set[str]:
        g = _get(client, "/api/estate/graph", namespace=NS, name="tt", **({"as_of": as_of} if as_of else {})).json()
        return {f["name"] for d in g["datasets"] if d["name"] == "tt" for f in d["fields"]}

    day2, day6 = (T0 + timedelta(days=2)).isoformat(), (T0 + timedelta(days=6)).isoformat()
    assert fields(day2) == {"a", "b"}
    assert fields(day6) == fields(None) == {"a", "c"}
    d = _get(client, "/api/estate/diff", namespace=NS, name="tt", before=day2, after=day6).json()
    assert {(c["dataset"], c["column"]) for c in d["added"]["columns"]} == {("file:tt", "c"), ("file:src", "c")}
    assert {(c["dataset"], c["column"]) for c in d["removed"]["columns"]} == {("file:tt", "b"), ("file:src", "b")}


def test_every_list_pages_with_a_cursor(client: Any) -> None:
    full = _get(client, "/api/impact", namespace=NS, name="page_0", column="k", depth=10).json()
    assert [r["name"] for r in full["rows"]] == [f"page_{i}" for i in range(1, 6)] and full["next_cursor"] is None
    assert full["total"] == 5 and full["truncated"] is False
    rows, cursor = [], None
    while True:
        page = _get(client, "/api/impact", namespace=NS, name="page_0", column="k", depth=10, limit=2,
                    **({"cursor": cursor} if cursor else {})).json()
        assert len(page["rows"]) <= 2
        rows += page["rows"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert rows == full["rows"]
    c = _get(client, "/api/impact", namespace=NS, name="page_0", column="k", depth=10, limit=2, format="csv")
    assert c.headers.get("x-next-cursor") and len(c.text.splitlines()) == 3
    hits, cursor = [], None
    while True:
        page = _get(client, "/api/estate/search", q="page_", limit=4, **({"cursor": cursor} if cursor else {})).json()
        hits += page["hits"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert hits == _get(client, "/api/estate/search", q="page_", limit=500).json()["hits"] and len(hits) == 6
    runs = _get(client, "/api/estate/runs", dag_id="trust_page", limit=2).json()
    assert len(runs["runs"]) == 2 and runs["next_cursor"]
    more = _get(client, "/api/estate/runs", dag_id="trust_page", limit=2, cursor=runs["next_cursor"]).json()
    assert not {r["run_id"] for r in more["runs"]} & {r["run_id"] for r in runs["runs"]}
    g = _get(client, "/api/estate/graph", namespace=NS, name="page_2", depth=5, limit=2).json()
    assert g["truncated"] is True and len(g["edges"]) <= 2 and g["limit"] == 2
    assert _get(client, "/api/estate/graph", namespace=NS, name="page_2", depth=5).json()["truncated"] is False
    for path, params in (("/api/impact", {"namespace": NS, "name": "t1"}), ("/api/estate/search", {"q": "t"}),
                         ("/api/estate/runs", {})):
        bad = _get(client, path, cursor="not-a-cursor", **params)
        assert bad.status_code == 400 and "next_cursor" in bad.json()["detail"], bad.text
        assert _get(client, path, limit=100_000, **params).status_code == 422
    other = _get(client, "/api/estate/runs", cursor=runs["next_cursor"]).status_code  # a runs cursor: fine
    assert other == 200
    assert _get(client, "/api/estate/search", q="t", cursor=runs["next_cursor"]).status_code == 400


def test_bad_records_are_skipped_reported_and_never_stop_the_api(client: Any) -> None:
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from airflow_provider_lineage.plugins.estate import index
    from airflow_provider_lineage.plugins.estate import schema as s

    good = record({"good_out": [("v", "good_in:v")]})
    bad_edges = dict(record({"bad1_out": [("v", "bad1_in:v")]}),
                     edges=[["x"], [0, "c", 99, "d", "DIRECT", None, 0], 5, [0, {"a": 1}, 1, "v", "DIRECT", None, 0]],
                     inputs=["a", 1.5, 99, True])
    not_lists = dict(record({"bad2_out": [("v", "bad2_in:v")]}), edges="nope")
    long_names = record({"bad3_out": [("v", "bad3_in:v")]})
    long_names["datasets"] += [{"namespace": NS, "name": "x" * 1500, "fields": []},
                               {"namespace": NS, "name": "nul\x00name", "fields": [["c\x00", "t"]]},
                               {"namespace": "n" * 600, "name": "y", "table": "z" * 600}]
    long_names["edges"].append([3, "c", 0, "v", "DIRECT", None, 0])
    weird = {"format": good["format"], "datasets": [5, {"namespace": {}, "name": []}], "edges": [[0, 1]],
             "dataset_edges": [[1]], "job": "not an object", "status": {"x": 1}}
    for i, rec in enumerate((bad_edges, not_lists, long_names, weird)):
        _run("trust_bad", f"b{i}", rec, 3 + i / 100, f"bad{i}")
    _run(DENIED_DAG, "bad", not_lists, 3, "badhidden")
    _run("trust_good", "g", good, 3, "good")
    index._last_sync.clear()  # no 2-second throttle since the previous request
    # a request syncs: it answers, with the good record and the parts of the bad ones that could be kept
    r = _get(client, "/api/estate/search", q="good_out")
    assert r.status_code == 200, r.text
    assert [h["name"] for h in r.json()["hits"]] == ["good_out"]
    assert "could not be indexed" in r.json()["notice"]
    assert [h["name"] for h in _get(client, "/api/estate/search", q="bad1_out").json()["hits"]] == ["bad1_out"]
    assert [h["name"] for h in _get(client, "/api/estate/search", q="bad3_out").json()["hits"]] == ["bad3_out"]
    g = _get(client, "/api/estate/graph", namespace=NS, name="bad3_out", depth=2)
    assert g.status_code == 200 and "x" * 1500 not in g.text
    p = _get(client, "/api/estate/problems", ADMIN).json()
    mine = {x["task_id"]: x for x in p["problems"] if x["dag_id"] == "trust_bad"}
    assert set(mine) == {"b0", "b1", "b2", "b3"}, p
    assert "malformed edges" in mine["b0"]["reason"] and "malformed inputs" in mine["b0"]["reason"]
    assert mine["b1"]["status"] == "invalid" and "'edges' is not a list" in mine["b1"]["reason"]
    assert "over 1000 characters" in mine["b2"]["reason"] and "NUL" in mine["b2"]["reason"]
    assert "over 500 characters" in mine["b2"]["reason"]
    assert p["hidden"] == 0 and any(x["dag_id"] == DENIED_DAG for x in p["problems"])
    out = _get(client, "/api/estate/problems", DENIED_USER).json()
    assert out["hidden"] >= 1 and DENIED_DAG not in json.dumps(out)
    assert "of DAGs you cannot read" in out["notice"]
    with create_session() as session:  # the watermark moved past them
        mark = session.scalar(select(s.meta.c.value).where(s.meta.c.key == "xcom_watermark"))
        newest = session.scalar(select(s.task_run.c.xcom_ts).where(s.task_run.c.dag_id == "trust_good"))
    assert mark is not None and newest is not None and mark >= newest.isoformat()[:19]


def test_the_first_sync_after_an_upgrade_runs_in_batches_in_the_background(client: Any,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.utils.session import create_session

    from airflow_provider_lineage.plugins.estate import index
    from airflow_provider_lineage.plugins.estate import schema as s

    with create_session() as session:
        index.sync(session, force=True)
    with create_session() as session:  # an upgrade: another schema version found -> the index starts empty
        session.execute(s.meta.update().where(s.meta.c.key == "schema").values(value="0"))
    index._ready.clear()
    index._last_sync.clear()
    monkeypatch.setattr(index, "REQUEST_BATCH", 2)
    monkeypatch.setattr(index, "BATCH", 3)
    r = _get(client, "/api/estate/search", q="page_")
    assert r.status_code == 200, r.text
    assert "being built in the background" in r.json()["notice"]
    deadline = time.monotonic() + 300
    with create_session() as session:
        while index.catching_up(session) and time.monotonic() < deadline:
            time.sleep(0.2)
    assert index._progress[index._progress_key]["batches"] >= 2
    index._last_sync.clear()
    done = _get(client, "/api/estate/search", q="page_").json()
    assert len(done["hits"]) == 6 and "being built" not in (done["notice"] or "")


@pytest.mark.slow  # two reindex processes: about a minute on a loaded machine
def test_a_killed_reindex_leaves_the_old_index_whole(client: Any) -> None:
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from airflow_provider_lineage.plugins.estate import index
    from airflow_provider_lineage.plugins.estate import schema as s

    for i in range(30):
        _run("trust_many", f"w{i}", record({f"many_{i}": [("k", "many_src:k")]}), 2 + i / 100, f"m{i}")
    with create_session() as session:
        index.sync(session, force=True)

    def state() -> tuple[set[tuple[str, str, str]], set[str]]:
        with create_session() as session:
            runs = {tuple(r) for r in session.execute(select(s.task_run.c.dag_id, s.task_run.c.task_id,
                                                             s.task_run.c.run_id))}
            names = set(session.execute(select(s.dataset.c.name)).scalars())
        return runs, names

    before = state()
    assert len(before[0]) >= 40 and "many_29" in before[1]
    kill_reindex_at("indexed 2 of", dict(os.environ))
    after = state()
    assert after[0] == before[0] and after[1] == before[1], (before[0] ^ after[0], before[1] ^ after[1])
    assert _get(client, "/api/estate/search", q="many_29").json()["hits"]
    done = subprocess.run([sys.executable, "-m", "airflow_provider_lineage.plugins.estate", "reindex"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    rebuilt = state()
    assert rebuilt[0] == before[0], before[0] ^ rebuilt[0]


def test_the_run_view_draws_a_run_with_a_malformed_record(client: Any) -> None:
    bad = dict(record({"rv_bad_out": [("v", "rv_in:v")]}), edges=[[0, "c", 99, "d", "DIRECT", None, 0], "x"],
               datasets=[{"namespace": NS, "name": "rv_bad_out", "fields": 5}, 7])
    run_id = _run("trust_rv", "bad", bad, 4, "rv")
    _run("trust_rv", "good", record({"rv_good_out": [("v", "rv_in:v")]}), 4, "rv")
    g = _get(client, f"/api/dags/trust_rv/runs/{run_id}/graph")
    assert g.status_code == 200, g.text
    assert "rv_good_out" in {d["name"] for d in g.json()["datasets"]}
    s = _get(client, "/api/search", q="rv_")
    assert s.status_code == 200, s.text
    assert "file:rv_good_out" in {h["dataset"] for h in s.json()["hits"]}
    assert _get(client, "/api/search", q="a\x00").status_code == 400


# ---- issue 47: labels, search and the XCom permission; the API description behind a login ----------------

def _labelled(writes: dict[str, list[tuple[str, str]]], labels: dict[str, str]) -> dict[str, Any]:
    rec = record(writes)
    for ds in rec["datasets"]:
        ds["table"] = labels.get(ds["name"])
    return rec


def test_labels_come_only_from_records_the_user_may_read(client: Any) -> None:
    # the refused DAG names lbl_shared first, with a label; a readable DAG names it later without one
    _run(DENIED_DAG, "lbl", _labelled({"lbl_shared": [("c", "lbl_src:c")], "lbl_two": [("c", "lbl_src:c")]},
                                      {"lbl_shared": "secret_tbl_hr", "lbl_two": "secret_tbl_two"}), 3.1, "lbl1")
    _run("trust_lbl", "w", _labelled({"lbl_shared": [("c", "lbl_src:c")], "lbl_two": [("c", "lbl_src:c")]},
                                     {"lbl_two": "open_two"}), 2, "lbl2")
    for user in (DENIED_USER, "noxcom"):
        assert _get(client, "/api/estate/search", user, q="secret_tbl").json()["hits"] == []
        hits = _get(client, "/api/estate/search", user, q="lbl_").json()["hits"]
        assert {h["label"] for h in hits if h["column"] == ""} == {"lbl_shared", "lbl_src", "open_two"}, hits
        g = _get(client, "/api/estate/graph", user, namespace=NS, name="lbl_src", depth=1)
        assert {d["name"]: d["table"] for d in g.json()["datasets"]} == {
            "lbl_src": None, "lbl_shared": None, "lbl_two": "open_two"}
        start = _get(client, "/api/estate/start", user)
        assert start.status_code == 200 and "secret_tbl" not in start.text
    # the admin reads both DAGs: the labels of both
    assert {h["name"] for h in _get(client, "/api/estate/search", ADMIN, q="secret_tbl").json()["hits"]} == {
        "lbl_shared", "lbl_two"}
    g = _get(client, "/api/estate/graph", ADMIN, namespace=NS, name="lbl_shared").json()
    assert next(d for d in g["datasets"] if d["name"] == "lbl_shared")["table"] == "secret_tbl_hr"


def test_the_run_view_search_gives_hits_only_never_a_count_of_records_read(client: Any) -> None:
    rec = record({"oracle_out": [("v", "oracle_in:v")]})
    rec["problems"] = [{"kind": "note", "message": "only in the raw record: zz_raw_only_zz"}]
    _run("trust_oracle", "w", rec, 3, "oracle")
    seen = _get(client, "/api/search", q="zz_raw_only")
    unknown = _get(client, "/api/search", q="qq_nowhere_qq")
    assert seen.status_code == unknown.status_code == 200
    assert seen.json() == {**unknown.json(), "query": "zz_raw_only"} == {"query": "zz_raw_only", "hits": []}
    assert [h["dataset"] for h in _get(client, "/api/search", q="oracle_out").json()["hits"] if not h["column"]] == [
        "file:oracle_out"]


def test_lineage_needs_the_xcom_permission_too(client: Any) -> None:
    run = f"{RUN_PREFIX}d2"
    for path in (f"/api/dags/{DENIED_DAG}/runs/{run}/graph", f"/api/dags/{DENIED_DAG}/runs/{run}/tasks/hr/graph",
                 f"/api/dags/{DENIED_DAG}/runs/{run}/indexes", f"/api/dags/{DENIED_DAG}/runs/{run}/column"):
        params = {"dataset": f"file:{SECRET}", "column": "salary"} if path.endswith("/column") else {}
        refused = _get(client, path, "noxcom", **params)
        assert refused.status_code == 403 and "salar" not in refused.text, (path, refused.text)
        assert _get(client, path, "viewer", **params).status_code == 200, path
    assert _get(client, f"/api/dags/trust_a/runs/{RUN_PREFIX}a1/graph", "noxcom").status_code == 200
    for path in ("/api/search", "/api/estate/search"):
        assert _get(client, path, "noxcom", q="salar").json()["hits"] == [], path
        assert _get(client, path, "viewer", q="salar").json()["hits"], path
    g = _get(client, "/api/estate/graph", "noxcom", namespace=NS, name=SECRET).json()
    assert g["datasets"] == [] and g["missing"] == [f"{NS}:{SECRET}"]


def test_the_api_description_needs_a_login_and_no_docs_page_loads_from_a_cdn(client: Any, monkeypatch: Any) -> None:
    assert client.get(PREFIX + "/openapi.json").status_code == 401
    described = _get(client, "/openapi.json")
    assert described.status_code == 200 and "/api/estate/search" in described.json()["paths"]
    for page in ("/docs", "/redoc", "/docs/oauth2-redirect"):
        assert client.get(PREFIX + page).status_code in (401, 404), page
        assert _get(client, page).status_code == 404, page
    monkeypatch.setenv("AIRFLOW__API__ENABLE_SWAGGER_UI", "False")
    assert _get(client, "/openapi.json").status_code == 404
    # the pages the plugin serves load nothing from another site
    from airflow_provider_lineage.plugins.api import STATIC

    for page in STATIC.glob("*.html"):
        text = page.read_text()
        assert "://" not in text.replace("http://www.w3.org/2000/svg", ""), page


def test_estate_search_runs_a_constant_number_of_statements_whatever_the_user_may_read(client: Any) -> None:
    from airflow.utils.session import create_session
    from sqlalchemy import event

    from airflow_provider_lineage.plugins.estate import index, query

    # 450 datasets only the refused DAG names, then one a readable DAG names: a user who reads few DAGs
    # used to page through all of them (3 statements per 200)
    _run(DENIED_DAG, "bulk", record({f"bulk_hid_{i:03}": [("k", "bulk_src:k")] for i in range(450)}), 3.2, "bulk1")
    _run("trust_bulk", "w", record({"bulk_zz_visible": [("bulk_col", "bulk_src2:k")]}), 2, "bulk2")
    with create_session() as session:
        index.sync(session, force=True)
        session.commit()
        statements: list[str] = []

        def count(conn: Any, cursor: Any, stmt: str, *args: Any) -> None:
            statements.append(stmt)

        engine = session.get_bind()
        event.listen(engine, "before_cursor_execute", count)
        try:
            answers = {}
            for who, readable in (("admin", None), ("one dag", {"trust_bulk"}),
                                  # bound once (a CTE): 4 uses of 12,000 ids would pass SQLite's 32,766 variables
                                  ("many dags", {"trust_bulk"} | {f"other_{i}" for i in range(12_000)}),
                                  ("the refused dag only", {DENIED_DAG})):
                for q, limit, offset in (("bulk_", 50, 0), ("bulk_", 500, 400), ("_", 20, 0), ("zz_none", 50, 0)):
                    statements.clear()
                    answers[(who, q, offset)] = query.search(session, q, limit=limit, readable=readable,
                                                             offset=offset)
                    assert len(statements) <= 2, (who, q, len(statements), statements[:5])
        finally:
            event.remove(engine, "before_cursor_execute", count)
    one = answers[("one dag", "bulk_", 0)]
    assert sorted((h["name"], h["column"]) for h in one) == [("bulk_src2", ""), ("bulk_zz_visible", ""),
                                                              ("bulk_zz_visible", "bulk_col")]
    assert one[-1]["column"] == "bulk_col"  # datasets first, then columns
    assert answers[("many dags", "bulk_", 0)] == one
    admin = answers[("admin", "bulk_", 0)]
    assert len(admin) == 50 and all(h["column"] == "" for h in admin)
    tail = answers[("the refused dag only", "bulk_", 400)]  # its 451 datasets (bulk_hid_*, bulk_src) from the 401st
    assert len(tail) == 51 and {h["name"] for h in tail} >= {"bulk_src", "bulk_hid_449"}
    assert not {h["name"] for h in tail} & {"bulk_zz_visible", "bulk_src2"}
