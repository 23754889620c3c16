"""The lineage Spark Connect server ``./dev.sh up`` starts beside Airflow (token-protected, loopback)."""
from __future__ import annotations

import json
import os
import secrets
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from dev.deployment.processes import DeploymentError, free_port
from dev.deployment.settings import CONNECT_CONN_ENV, CONNECT_PROCESS

if TYPE_CHECKING:
    from dev.deployment.core import AirflowDeployment


def connect_server_command(port: int, capture_dir: str, *, master: str = "local[2]",
                           token_file: str | None = None) -> list[str]:
    """``python -m airflow_provider_lineage.connect_server`` on 127.0.0.1:``port``, small for a shared machine
    (clients must present the token in ``token_file`` when given)."""
    return [sys.executable, "-m", "airflow_provider_lineage.connect_server", "--port", str(port), "--host", "127.0.0.1",
            "--capture-dir", capture_dir, "--master", master, "--conf", "spark.ui.enabled=false",
            "--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.default.parallelism=2",
            *(["--token-file", token_file] if token_file else [])]


def write_token_file(path: Path) -> str:
    """A new random token for a Connect server, in ``path`` (mode 0600); returns it."""
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    os.chmod(path, 0o600)
    return token


def start_connect_server(dep: AirflowDeployment, timeout: float = 240) -> str:
    """Start a lineage Spark Connect server beside ``dep`` (call before :meth:`AirflowDeployment.start`).

    The server requires a token, generated here (``<home>/connect-server.token``, mode 0600): the connection
    ``spark_connect_default`` (``sc://localhost:<port>``, the token as its password, extra ``capture_dir``) is added
    to every process's environment; the server runs in its own process group, stopped with the deployment.
    Returns its URL (without the token).
    """
    port = free_port()
    capture_dir = dep.home / "connect-capture"
    token_file = dep.home / "connect-server.token"
    token = write_token_file(token_file)
    # localhost, not 127.0.0.1: PySpark sends a token without TLS to the host named localhost only
    dep.env[CONNECT_CONN_ENV] = json.dumps({"conn_type": "spark_connect", "host": "sc://localhost", "port": port,
                                            "password": token, "extra": {"capture_dir": str(capture_dir)}})
    log = dep.log_dir / f"{CONNECT_PROCESS}.log"
    offset = log.stat().st_size if log.exists() else 0  # the log is appended to: only this start's lines count
    proc = dep._spawn(CONNECT_PROCESS, connect_server_command(port, str(capture_dir), token_file=str(token_file)))
    deadline = time.monotonic() + timeout
    while b"ready; capture records go to" not in log.read_bytes()[offset:]:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise DeploymentError(f"the lineage Spark Connect server did not start: see {log}")
        time.sleep(0.5)
    return f"sc://localhost:{port} (token in {token_file})"
