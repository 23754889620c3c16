"""Two runs maintaining one index at once, on the metadata DBs deployments use (SQLite here and in
``./dev.sh up``; PostgreSQL in production and docker/): one commit wins, the other run fails with a
CommitConflict or finds the winner's version, and the index is never corrupt.

Each DB gets its own small deployment (api-server, scheduler, dag-processor; no triggerer) on the
test DAG ``tests/deployment/dags/sieve_race.py``; PostgreSQL is Debian's, started by the fixture in
a temp folder as an unprivileged user on a free port.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_lineage import sieve as S
from tests.support.deployment import AirflowDeployment

pytestmark = [pytest.mark.xdist_group("deployment"), pytest.mark.slow]

DAGS = Path(__file__).resolve().parent / "dags"


def _table(root: Path) -> None:
    for i in range(6):
        root.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"k": pa.array(range(i * 1000, i * 1000 + 1000), pa.int64())}), root / f"p{i}.parquet")


def _log_of(dep: Any, run_id: str) -> str:
    with dep.client() as c:
        res = c.get(f"/api/v2/dags/sieve_race/dagRuns/{run_id}/taskInstances/rebuild/logs/1",
                    headers={"Accept": "text/plain"})
        return res.text


@pytest.mark.parametrize("db", ["sqlite", "postgres"])
def test_two_maintainers_of_one_index(db: str, tmp_path: Path) -> None:
    if db == "postgres" and not Path(os.environ.get("APL_PG_BIN", "/usr/lib/postgresql/15/bin"), "initdb").exists():
        pytest.fail("PostgreSQL is not installed: run ./dev.sh setup as root (it installs Debian's postgresql)")
    table = tmp_path / "data" / "t"
    _table(table)
    index = tmp_path / "data" / "index"
    S.build(None, str(table), "k", index_path=str(index))
    before = S.open_index(str(table), "k", index_path=str(index)).stats().version
    with AirflowDeployment(tmp_path / "home", db=db, dags_folder=DAGS,
                           processes=("api-server", "scheduler", "dag-processor")) as dep:
        conf = {"table": str(table), "column": "k", "index_path": str(index)}
        dep.unpause("sieve_race")
        run_ids = [dep.trigger("sieve_race", conf) for _ in range(2)]
        states = [dep.wait_run("sieve_race", r, timeout=400) for r in run_ids]
        logs = {r: _log_of(dep, r) for r in run_ids}
    assert "success" in states, (states, logs)
    for run_id, state in zip(run_ids, states, strict=True):
        if state != "success":  # the loser: a clean conflict, nothing half-written
            assert "CommitConflict" in logs[run_id], logs[run_id][-3000:]
    idx = S.open_index(str(table), "k", index_path=str(index))
    assert not idx.is_stale()
    assert idx.stats().version in (before + 1, before + 2)
    for key in range(0, 6000, 97):
        assert str(table / f"p{key // 1000}.parquet") in set(idx.candidates(S.Eq(key))), key
