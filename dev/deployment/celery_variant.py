"""The Celery variant's parts of a deployment (``./dev.sh up --executor celery``): see :class:`CeleryVariant`."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dev.deployment import settings
from dev.deployment.processes import DeploymentError, port_in_use
from dev.deployment.settings import CELERY_BUCKET, ROOT, S3A_JARS, S3A_NUMERIC_DEFAULTS, WORKER_HOSTS


class CeleryVariant:
    """The Celery variant of :class:`~dev.deployment.core.AirflowDeployment` (a mixin): redis broker, moto S3,
    the OpenLineage receiver and two workers that share no local folder."""

    home: Path
    env: dict[str, str]
    s3_port: int
    redis_port: int
    receiver_port: int
    log_dir: Path
    procs: dict[str, subprocess.Popen[bytes]]

    if TYPE_CHECKING:  # provided by AirflowDeployment
        def _spawn(self, name: str, cmd: list[str], cwd: Path | None = None, env: Mapping[str, str] | None = None,
                   **kwargs: Any) -> subprocess.Popen[bytes]: ...
        def _check_alive(self, name: str) -> None: ...
        def _airflow(self, *args: str) -> list[str]: ...
        def log(self, process: str) -> str: ...

    def worker_dir(self, name: str) -> Path:
        """A Celery worker's own folder: its AIRFLOW_HOME, HOME, TMPDIR and working folder (nothing shared)."""
        return self.home / "workers" / name

    @property
    def s3_url(self) -> str:
        """The Celery variant's S3 endpoint (moto on 127.0.0.1)."""
        return f"http://127.0.0.1:{self.s3_port}"

    def _worker_env(self, name: str) -> dict[str, str]:
        wdir = self.worker_dir(name)
        (wdir / "tmp").mkdir(parents=True, exist_ok=True)
        python_path = [str(ROOT / "dev" / "hostname"), *filter(None, [self.env.get("PYTHONPATH")])]
        return {**self.env, "AIRFLOW_HOME": str(wdir), "HOME": str(wdir), "TMPDIR": str(wdir / "tmp"),
                "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(wdir / "logs"),
                # ti.hostname = the worker's own address, where its log server listens (see WORKER_HOSTS)
                "APL_WORKER_HOST": WORKER_HOSTS[name], "PYTHONPATH": os.pathsep.join(python_path),
                "AIRFLOW__CORE__HOSTNAME_CALLABLE": "apl_worker_hostname.hostname",
                "SPARK_CONF_DIR": str(self._spark_conf(wdir))}

    @staticmethod
    def check_s3a_jars() -> None:
        """The Celery variant's Spark jobs reach S3 through these jars: say how to get them when missing."""
        missing = [j for j in S3A_JARS if not (settings.S3A_JARS_DIR / j).is_file()]
        if missing:
            raise DeploymentError(
                f"{', '.join(missing)} not in {settings.S3A_JARS_DIR}: the Celery variant's Spark jobs read and "
                "write S3 through them; run ./dev.sh up --executor celery (or APL_CELERY_DEPLOYMENT=1 "
                "./dev.sh test ...), which fetches them from PyPI once"
            )

    def _spark_conf(self, wdir: Path) -> Path:
        """The worker's ``spark-defaults.conf``: Hadoop's S3A connector on the classpath, S3 at the moto endpoint."""
        classpath = ":".join(str(settings.S3A_JARS_DIR / j) for j in S3A_JARS)
        conf = {
            "spark.driver.extraClassPath": classpath, "spark.executor.extraClassPath": classpath,
            "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",  # s3:// as on EMR
            "spark.hadoop.fs.s3a.endpoint": self.s3_url,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
            # the AWS_* environment: no credential in a file or on a command line
            "spark.hadoop.fs.s3a.aws.credentials.provider": "com.amazonaws.auth.EnvironmentVariableCredentialsProvider",
            **{f"spark.hadoop.{k}": v for k, v in S3A_NUMERIC_DEFAULTS.items()},
        }
        folder = wdir / "spark-conf"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in conf.items()))
        return folder

    @property
    def received_events_path(self) -> Path:
        """Where the Celery variant's local OpenLineage receiver writes the events it got."""
        return self.home / "lineage" / "received.jsonl"

    def _start_celery_services(self, timeout: float) -> None:
        """redis-server (broker, no persistence), the OpenLineage receiver and the S3 server (moto, with the
        data bucket), each in its own group."""
        for name in ("redis", "receiver", "s3"):
            if name in self.procs and self.procs[name].poll() is None:
                continue
            if name == "redis":
                redis = shutil.which("redis-server")
                if not redis:
                    raise DeploymentError("redis-server not found: run ./dev.sh setup as root (installs Debian's "
                                          "redis-server), or put redis-server on PATH")
                rdir = self.home / "redis"
                rdir.mkdir(parents=True, exist_ok=True)
                self._spawn(name, [redis, "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no", "--dir", str(rdir)])
                port = self.redis_port
            elif name == "s3":
                self._spawn(name, [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1",
                                   "-p", str(self.s3_port)])
                port = self.s3_port
            else:
                self.received_events_path.parent.mkdir(parents=True, exist_ok=True)
                self._spawn(name, [sys.executable, str(ROOT / "dev" / "receiver.py"), "--port", str(self.receiver_port),
                                   "--out", str(self.received_events_path)])
                port = self.receiver_port
            deadline = time.monotonic() + timeout
            while not port_in_use(port):
                self._check_alive(name)
                if time.monotonic() > deadline:
                    raise DeploymentError(
                        f"{name} did not listen on 127.0.0.1:{port}: see {self.log_dir / (name + '.log')}"
                    )
                time.sleep(0.2)
            if name == "s3":
                import boto3

                s3 = boto3.client("s3", endpoint_url=self.s3_url, aws_access_key_id="testing",
                                  aws_secret_access_key="testing", region_name="us-east-1")
                with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
                    s3.create_bucket(Bucket=CELERY_BUCKET)

    def _start_worker(self, name: str, timeout: float) -> None:
        """``airflow celery worker`` in its own folder, and its log server on its own address (``WORKER_HOSTS``);
        waits for Celery's "ready" line in its log."""
        before = len(self.log(name))
        wdir = self.worker_dir(name)
        env = self._worker_env(name)
        logs = f"logs-{name}"
        if logs not in self.procs or self.procs[logs].poll() is not None:
            # Airflow's own worker log server (what `celery worker` starts unless --skip-serve-logs), bound to the
            # worker's address instead of all addresses: two workers on one host, one port, as on two hosts.
            self._spawn(logs, [sys.executable, "-m", "uvicorn", "airflow.utils.serve_logs.log_server:get_app",
                               "--factory", "--host", WORKER_HOSTS[name],
                               "--port", self.env["AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT"], "--no-access-log"],
                        cwd=wdir, env=env)
        self._spawn(name, self._airflow("celery", "worker", "--celery-hostname", f"{name}@%h", "--concurrency", "2",
                                        "--skip-serve-logs"), cwd=wdir, env=env)
        deadline = time.monotonic() + timeout
        while " ready." not in self.log(name)[before:]:
            self._check_alive(name)
            if time.monotonic() > deadline:
                raise DeploymentError(f"{name} not ready within {timeout:.0f} s: see {self.log_dir / (name + '.log')}")
            time.sleep(0.5)
