"""Two runs maintaining one index at once, on the metadata DBs deployments use (SQLite here and in
``./dev.sh up``; PostgreSQL in production and docker/): one commit wins, the other run fails with a
CommitConflict or finds the winner's version, and the index is never corrupt.

Each DB gets its own small deployment (api-server, scheduler, dag-processor; no triggerer) on the
test DAG ``tests/deployment/dags/sieve_race.py``; PostgreSQL is Debian's, started by the fixture in
a temp folder as an unprivileged user on a free port.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_lineage import sieve as S
from tests.support.deployment import AirflowDeployment

# The timeout covers the shared deployment's start and first lineage_etl run (setup of the first test).
pytestmark = [
    pytest.mark.xdist_group("deployment"),
    pytest.mark.deployment,
    pytest.mark.slow,
    pytest.mark.timeout(2400),
]

DAGS = Path(__file__).resolve().parent / "dags"
ROOT = Path(__file__).resolve().parents[2]


def _table(root: Path) -> None:
    for i in range(6):
        root.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"k": pa.array(range(i * 1000, i * 1000 + 1000), pa.int64())}), root / f"p{i}.parquet")


def _log_of(dep: Any, run_id: str) -> str:
    with dep.client() as c:
        res = c.get(f"/api/v2/dags/sieve_race/dagRuns/{run_id}/taskInstances/rebuild/logs/1",
                    headers={"Accept": "text/plain"})
        return res.text


def _result(dep: Any, run_id: str) -> dict[str, Any]:
    with dep.client() as c:
        res = c.get(f"/api/v2/dags/sieve_race/dagRuns/{run_id}/taskInstances/rebuild/xcomEntries/return_value",
                    params={"deserialize": True})
        res.raise_for_status()
        (result,) = res.json()["value"]
        return dict(result)


@pytest.mark.parametrize("db", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_two_maintainers_of_one_index(db: str, tmp_path: Path) -> None:
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
        results = {r: _result(dep, r) for r, st in zip(run_ids, states, strict=True) if st == "success"}
        # `./dev.sh down` stops it (from the recorded process groups, as after `./dev.sh up`), DB server included
        down = subprocess.run([sys.executable, str(ROOT / "dev" / "deploy.py"), "down", "--home", str(dep.home)],
                              capture_output=True, text=True, check=False)
        assert down.returncode == 0 and not dep.leftovers(), down.stdout + down.stderr
    assert "success" in states, (states, logs)
    for run_id, state in zip(run_ids, states, strict=True):
        if state != "success":  # the loser: a clean conflict, nothing half-written
            assert "CommitConflict" in logs[run_id], logs[run_id][-3000:]
    idx = S.open_index(str(table), "k", index_path=str(index))
    assert not idx.is_stale()
    # Each commit made its own version (never two writers on one version); the last one stands.
    versions = sorted(r["version"] for r in results.values())
    assert len(set(versions)) == len(versions) and idx.stats().version == max(versions) <= before + 2
    overlapped = [r["previous_version"] for r in results.values()].count(before) == 2
    print(f"{db}: states {states}, versions {versions}, both started from v{before}: {overlapped}")
    for key in range(0, 6000, 97):
        assert str(table / f"p{key // 1000}.parquet") in set(idx.candidates(S.Eq(key))), key
