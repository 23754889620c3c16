"""What ``./dev.sh up`` sets in each variant (issue 31), without starting anything."""
from __future__ import annotations

from pathlib import Path

import pytest

import dev.deployment.settings
from dev.deploy import (
    API_ADMISSION_LIMIT,
    CELERY_BUCKET,
    CELERY_WORKERS,
    WORKER_HOSTS,
    AirflowDeployment,
    DeploymentError,
)


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


def test_celery_data_on_s3_and_logs_served_per_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dep = AirflowDeployment(tmp_path, db="postgres", executor="celery", pg_dir=tmp_path / "pg")
    assert dep.env["LINEAGE_DEMO_DATA_DIR"] == f"s3://{CELERY_BUCKET}/lineage_demo"
    assert dep.env["AWS_ENDPOINT_URL"] == dep.s3_url == f"http://127.0.0.1:{dep.s3_port}"
    envs = {w: dep._worker_env(w) for w in CELERY_WORKERS}
    # One log port for all (the api-server asks every worker on its own), a distinct address per worker.
    assert {e["APL_WORKER_HOST"] for e in envs.values()} == set(WORKER_HOSTS.values())
    port = "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT"
    assert {e[port] for e in envs.values()} == {dep.env[port]}
    assert all(e["AIRFLOW__CORE__HOSTNAME_CALLABLE"] == "apl_worker_hostname.hostname" for e in envs.values())
    confs = [Path(e["SPARK_CONF_DIR"]) / "spark-defaults.conf" for e in envs.values()]
    assert confs[0] != confs[1]
    conf = dict(line.split(" ", 1) for line in confs[0].read_text().splitlines())
    assert conf["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert conf["spark.hadoop.fs.s3a.endpoint"] == dep.s3_url
    assert conf["spark.hadoop.fs.s3a.threads.keepalivetime"] == "60"  # Hadoop 3.4 says "60s": 3.3.1 needs a number
    assert "testing" not in confs[0].read_text()  # credentials from the environment only
    monkeypatch.setattr(dev.deployment.settings, "S3A_JARS_DIR", tmp_path / "no-jars")
    with pytest.raises(DeploymentError, match="hadoop-aws-3.3.1.jar.*not in .*fetches them from PyPI once"):
        dep.start()
    assert not dep.procs  # refused before anything started


def test_unchanged_dag_files_are_not_reparsed_and_their_first_parse_counts(tmp_path: Path) -> None:
    """Issue 47: the example files are parsed again every 5 minutes, not every 30 s (CPU the api-server needs under
    load); ``wait_parsed`` then takes the dag-processor's parse since its start for a file unchanged since (it used to
    wait for a new parse of every file, which that interval holds back), and a new parse for an edited one."""
    import datetime as dt
    import os

    dags = tmp_path / "dags"
    dags.mkdir()
    dep = AirflowDeployment(tmp_path / "home", dags_folder=dags)
    assert int(dep.env["AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL"]) >= 300
    assert dep.env["AIRFLOW__DAG_PROCESSOR__FILE_PARSING_SORT_MODE"] == "modified_time"  # an edit is parsed at once
    t0 = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.UTC)
    for name, at in (("old.py", t0 - dt.timedelta(hours=1)), ("edited.py", t0 + dt.timedelta(minutes=10))):
        (dags / name).write_text("# airflow dag\n")
        os.utime(dags / name, (at.timestamp(), at.timestamp()))
    since = t0 + dt.timedelta(minutes=5)
    assert dep._parsed_after("old.py", since) == since  # no dag-processor started here: a parse since `since`
    dep.parser_started = t0
    assert dep._parsed_after("old.py", since) == t0 - dt.timedelta(seconds=1)  # its first parse stands
    assert dep._parsed_after("edited.py", since) == since  # edited since: a parse since `since`
    assert dep._parsed_after("gone.py", since) == since


@pytest.mark.parametrize(("db", "executor"), [("sqlite", "local"), ("postgres", "local"), ("postgres", "celery")])
def test_every_variant_limits_the_api_servers_readers(tmp_path: Path, db: str, executor: str) -> None:
    # issue 47 item 10: 8 reader requests per api-server worker at once, the others wait (plugins/admission.py)
    dep = AirflowDeployment(tmp_path, db=db, executor=executor, pg_dir=tmp_path / "pg")
    assert dep.env["AIRFLOW__COLUMN_LINEAGE__API_ADMISSION_LIMIT"] == str(API_ADMISSION_LIMIT) == "4"
    assert "APL_API_SWITCH_INTERVAL_S" not in dep.env  # tried and worse on a quiet machine (REPORT.md)


def test_docker_compose_sets_the_same_limit() -> None:
    compose = (Path(dev.deployment.settings.ROOT) / "docker" / "docker-compose.yml").read_text(encoding="utf-8")
    assert f'AIRFLOW__COLUMN_LINEAGE__API_ADMISSION_LIMIT: "{API_ADMISSION_LIMIT}"' in compose
