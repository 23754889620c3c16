"""What ``./dev.sh up`` sets in each variant (issue 31), without starting anything."""
from __future__ import annotations

from pathlib import Path

import pytest

from dev.deploy import CELERY_WORKERS, AirflowDeployment


@pytest.mark.parametrize(("db", "executor"), [("sqlite", "local"), ("postgres", "local"), ("postgres", "celery")])
def test_every_variant_has_a_pool_that_holds_64_readers(tmp_path: Path, db: str, executor: str) -> None:
    dep = AirflowDeployment(tmp_path, db=db, executor=executor, pg_dir=tmp_path / "pg")
    assert int(dep.env["AIRFLOW__DATABASE__SQL_ALCHEMY_POOL_SIZE"]) >= 48  # apache/airflow#66493
    assert int(dep.env["AIRFLOW__DATABASE__SQL_ALCHEMY_MAX_OVERFLOW"]) >= 48
    if db == "postgres":
        cmd = dep.postgres.command()
        assert any(a == "max_connections=400" for a in cmd)


def test_celery_wiring_and_private_worker_folders(tmp_path: Path) -> None:
    dep = AirflowDeployment(tmp_path, db="postgres", executor="celery", pg_dir=tmp_path / "pg")
    env = dep.env
    assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert env["AIRFLOW__CELERY__BROKER_URL"] == f"redis://127.0.0.1:{dep.redis_port}/0"
    assert env["AIRFLOW__CELERY__RESULT_BACKEND"] == "db+" + dep.postgres.url
    assert env["OPENLINEAGE_URL"] == f"http://127.0.0.1:{dep.receiver_port}"
    envs = [dep._worker_env(w) for w in CELERY_WORKERS]
    for key in ("AIRFLOW_HOME", "HOME", "TMPDIR", "AIRFLOW__LOGGING__BASE_LOG_FOLDER"):
        a, b = (Path(e[key]) for e in envs)
        assert a != b and a not in b.parents and b not in a.parents, key
        assert str(tmp_path / "workers") in str(a)
    with pytest.raises(ValueError, match="needs db='postgres'"):
        AirflowDeployment(tmp_path / "x", db="sqlite", executor="celery")
