"""Property tests (hypothesis) of the estate API (issue 37): whatever the parameters, and whatever a lineage
record with the right format marker holds, an estate endpoint never answers 500; it answers 200 or a 4xx
naming the problem. On Airflow's own app and metadata DB, with real users of the simple auth manager."""
from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_lineage.lineage import run_record
from tests.plugins.auth import DENIED_DAG, DENIED_USER, api_client
from tests.plugins.estate_support import NS, add_run, record, wipe_runs

PREFIX = "/column-lineage"
RUN_PREFIX = "fuzz__"
_n = itertools.count()


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    from tests.support.pipelines import migrate_db

    migrate_db()
    wipe_runs(RUN_PREFIX)
    add_run("fuzz_a", "w", record({"f1": [("a", "f0:a"), ("b", "f0:b")]}), day=1, run_id=RUN_PREFIX + "a")
    add_run(DENIED_DAG, "w", record({"f2": [("a", "f1:a")], "f1": [("h", "f0:a")]}), day=2, run_id=RUN_PREFIX + "d")
    with api_client() as c:
        yield c
    wipe_runs(RUN_PREFIX)


names = st.one_of(st.sampled_from(["f0", "f1", "f2", "", "no/such", "x" * 1001, "a\x00b", "%", "_", "\\"]),
                  st.text(max_size=12))
instants = st.one_of(
    st.none(), st.text(max_size=30),
    st.sampled_from(["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "0001-01-01", "9999-12-31",
                     "2026-01-02T00:00:00Z", "2026-13-01", "  "]),
    st.builds(lambda d, off: d.replace(tzinfo=timezone(off)).isoformat(),
              st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)),
              st.timedeltas(min_value=timedelta(hours=-23), max_value=timedelta(hours=23))))


def _cursor(kind: str, offset: Any) -> str:
    import base64

    return base64.urlsafe_b64encode(json.dumps({"k": kind, "o": offset}).encode()).decode().rstrip("=")


cursors = st.one_of(st.none(), st.text(max_size=20),
                    st.builds(_cursor, st.sampled_from(["impact", "search", "runs", "problems", "x"]),
                              st.one_of(st.integers(-5, 10**9), st.text(max_size=3), st.none())))
ints = st.one_of(st.integers(-3, 30), st.integers(-10**6, 10**6), st.sampled_from(["x", "1.5", ""]))


def _params(draw: Any, path: str) -> dict[str, Any]:
    p: dict[str, Any] = {}
    if path in ("/api/impact", "/api/estate/graph", "/api/estate/diff"):
        p.update(namespace=draw(st.sampled_from([NS, "", "x" * 501, "f\x00"])), name=draw(names),
                 column=draw(st.one_of(st.sampled_from(["", "a", "h", "b", "zz"]), st.text(max_size=8))),
                 depth=draw(ints))
    if path in ("/api/impact", "/api/estate/graph"):
        p["as_of"] = draw(instants)
    if path == "/api/impact":
        p.update(direction=draw(st.sampled_from(["downstream", "upstream", "sideways"])),
                 format=draw(st.sampled_from(["json", "csv", "xml"])))
    if path == "/api/estate/diff":
        p.update(before=draw(instants), after=draw(instants))
    if path == "/api/estate/search":
        p["q"] = draw(names)
    if path == "/api/estate/runs":
        p["dag_id"] = draw(st.one_of(st.none(), names))
    p["limit"] = draw(ints)
    if path != "/api/estate/graph" and path != "/api/estate/diff":
        p["cursor"] = draw(cursors)
    return {k: v for k, v in p.items() if v is not None}


@st.composite
def requests(draw: Any) -> tuple[str, str, dict[str, Any]]:
    path = draw(st.sampled_from(["/api/impact", "/api/estate/graph", "/api/estate/diff", "/api/estate/search",
                                 "/api/estate/runs", "/api/estate/problems"]))
    return path, draw(st.sampled_from(["admin", "viewer", DENIED_USER])), _params(draw, path)


def _get(c: Any, path: str, user: str, params: dict[str, Any]) -> Any:
    return c.get(PREFIX + path, headers={"Authorization": f"Bearer {c.tokens[user]}"}, params=params)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(req=requests())
def test_no_parameters_make_a_500(client: Any, req: tuple[str, str, dict[str, Any]]) -> None:
    path, user, params = req
    r = _get(client, path, user, params)
    assert r.status_code < 500, (path, params, r.text)
    if r.status_code == 200 and path == "/api/impact" and params.get("format") != "csv":
        assert "rows" in r.json()
    if r.status_code == 400:
        assert r.json()["detail"]


json_values = st.recursive(st.none() | st.booleans() | st.integers(-3, 6) | st.floats(allow_nan=False)
                           | st.text(max_size=6), lambda c: st.lists(c, max_size=3)
                           | st.dictionaries(st.text(max_size=4), c, max_size=3), max_leaves=8)
idx = st.one_of(st.integers(-2, 4), json_values)
col = st.one_of(st.text(max_size=6), st.sampled_from(["a\x00", "c" * 600, ""]), json_values)
datasets = st.lists(
    st.one_of(
        json_values,
        st.fixed_dictionaries(
            {
                "namespace": st.one_of(st.just(NS), st.sampled_from(["n" * 600, "\x00"]), json_values),
                "name": st.one_of(st.text(max_size=8), st.sampled_from(["m" * 1200, "a\x00b"]), json_values),
            },
            optional={
                "table": st.one_of(st.text(max_size=5), json_values),
                "fields": st.one_of(
                    json_values, st.lists(st.lists(st.one_of(col, json_values), max_size=3), max_size=3)
                ),
            },
        ),
    ),
    max_size=4,
)
records = st.fixed_dictionaries(
    {"format": st.just(run_record.FORMAT), "datasets": datasets},
    optional={"inputs": st.one_of(json_values, st.lists(idx, max_size=4)),
              "outputs": st.one_of(json_values, st.lists(idx, max_size=4)),
              "edges": st.one_of(json_values, st.lists(st.one_of(
                  st.tuples(idx, col, idx, col, json_values, json_values, json_values).map(list), json_values),
                  max_size=4)),
              "dataset_edges": st.one_of(json_values, st.lists(st.one_of(
                  st.tuples(idx, idx, col, json_values, json_values, json_values).map(list), json_values), max_size=3)),
              "job": json_values, "status": json_values})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(rec=records, q=st.sampled_from(["a", "m", "f", "\\", "%"]))
def test_no_record_makes_a_500(client: Any, rec: dict[str, Any], q: str) -> None:
    from airflow_provider_lineage.plugins.estate import index

    n = next(_n)
    add_run("fuzz_rec", f"t{n}", rec, day=10 + n / 1000, run_id=f"{RUN_PREFIX}r{n}", pushed=datetime.now(UTC))
    index._last_sync.clear()
    r = _get(client, "/api/estate/search", "admin", {"q": q})
    assert r.status_code == 200, r.text
    name = next((d.get("name") for d in rec["datasets"] if isinstance(d, dict) and isinstance(d.get("name"), str)
                 and "\x00" not in d["name"] and len(d["name"]) <= 1000), "f1")
    for path, params in (("/api/estate/graph", {"namespace": NS, "name": name, "depth": 2}),
                         ("/api/impact", {"namespace": NS, "name": name, "direction": "upstream"}),
                         ("/api/estate/problems", {})):
        r = _get(client, path, "viewer", params)
        assert r.status_code == 200, (path, r.text)
