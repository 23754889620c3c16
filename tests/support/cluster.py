"""A real Spark standalone cluster on 127.0.0.1 for tests: one master and one worker.

Both are started with pip pyspark's ``bin/spark-class`` (pip's pyspark has no ``sbin/start-*.sh``),
on free ports, each in its own process group, and are stopped when the context exits, whatever
happened inside it (SIGTERM, then SIGKILL after a grace period).
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT = 120.0


@dataclass(frozen=True)
class StandaloneCluster:
    """Where the running cluster listens."""

    master_url: str  # spark://127.0.0.1:PORT
    host: str
    port: int
    web_ui: str  # http://127.0.0.1:PORT (the master's status page; /json/ is machine-readable)
    logs: Path

    def connection(self) -> str:
        """``spark_default`` as an ``AIRFLOW_CONN_*`` JSON value: this master, client deploy mode."""
        return json.dumps({"conn_type": "spark", "host": f"spark://{self.host}", "port": self.port,
                           "extra": {"deploy-mode": "client"}})

    def status(self) -> dict:
        with urllib.request.urlopen(f"{self.web_ui}/json/", timeout=5) as resp:
            return json.load(resp)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_class() -> Path:
    import pyspark

    path = Path(pyspark.__file__).parent / "bin" / "spark-class"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the full pyspark distribution (with bin/ and jars/) is needed")
    return path


def _start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen([str(spark_class()), *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def _stop(proc: subprocess.Popen[bytes], grace: float = 20.0) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


@contextlib.contextmanager
def standalone_cluster(work_dir: Path, *, cores: int = 2, memory: str = "2g") -> Iterator[StandaloneCluster]:
    """Start a master and one worker (``cores``, ``memory``) on 127.0.0.1; yield once the worker is ALIVE."""
    work_dir.mkdir(parents=True, exist_ok=True)
    host, port, ui = "127.0.0.1", free_port(), free_port()
    env = dict(os.environ, SPARK_LOCAL_IP=host, SPARK_MASTER_HOST=host, SPARK_LOG_DIR=str(work_dir),
               PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable))
    cluster = StandaloneCluster(f"spark://{host}:{port}", host, port, f"http://{host}:{ui}", work_dir)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(_start(["org.apache.spark.deploy.master.Master", "--host", host, "--port", str(port),
                             "--webui-port", str(ui)], work_dir / "master.log", env))
        procs.append(_start(["org.apache.spark.deploy.worker.Worker", "--host", host, "--port", str(free_port()),
                             "--webui-port", str(free_port()), "--cores", str(cores), "--memory", memory,
                             "--work-dir", str(work_dir / "work"), cluster.master_url],
                            work_dir / "worker.log", env))
        _wait_for_worker(cluster, procs)
        yield cluster
    finally:
        for proc in reversed(procs):
            _stop(proc)


def _wait_for_worker(cluster: StandaloneCluster, procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    last: Exception | None = None
    while time.monotonic() < deadline:
        for proc in procs:
            if proc.poll() is not None:
                raise RuntimeError(f"a Spark daemon exited with {proc.returncode} while starting; "
                                   f"see {cluster.logs}/master.log and worker.log")
        try:
            if any(w.get("state") == "ALIVE" for w in cluster.status().get("workers", [])):
                return
        except OSError as exc:
            last = exc
        time.sleep(0.5)
    raise TimeoutError(f"no ALIVE worker at {cluster.master_url} after {START_TIMEOUT:.0f} s ({last}); "
                       f"see {cluster.logs}/master.log and worker.log")
