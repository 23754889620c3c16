"""A real lineage Spark Connect server on loopback for tests (``python -m airflow_provider_lineage.connect_server``).

:func:`connect_server` starts it in its own process group on a free port, waits until it says it is ready, and
stops it with SIGTERM to its process group (driver and JVM; SIGKILL after a bound) -- only the group it started.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dev.deploy import connect_server_command, free_port, write_token_file

READY = "ready; capture records go to"


@dataclass
class ConnectServer:
    port: int
    capture_dir: Path
    log: Path
    proc: subprocess.Popen[bytes]
    token: str | None = None

    @property
    def url(self) -> str:
        """What a client connects with (``localhost`` with the token: PySpark sends a token without TLS there only)."""
        if self.token:
            return f"sc://localhost:{self.port}/;token={self.token}"
        return f"sc://127.0.0.1:{self.port}"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self, timeout: float = 90) -> int:
        """SIGTERM to the server's group; its exit code (SIGKILL after ``timeout``)."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the JVM child, if it outlived the driver
            os.killpg(self.proc.pid, signal.SIGKILL)
        return int(self.proc.returncode)


@contextlib.contextmanager
def connect_server(base: Path, timeout: float = 300, *, token: bool = False,
                   conf: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> Iterator[ConnectServer]:
    """A started lineage Connect server writing to ``base/capture`` (its log: ``base/connect-server.log``); with
    ``token``, clients must present a generated one (``server.token``, in ``server.url``); ``args``: more
    command-line flags (e.g. ``--sieve-pruning``)."""
    base.mkdir(parents=True, exist_ok=True)
    capture = base / "capture"
    log = base / "connect-server.log"
    token_file = base / "connect-server.token" if token else None
    secret = write_token_file(token_file) if token_file else None
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("SPARK_CONNECT_AUTHENTICATE_TOKEN", None)
    for attempt in range(3):  # a free port can be taken by another process before the server binds it
        port = free_port()
        command = connect_server_command(port, str(capture), master="local[2]",
                                         token_file=str(token_file) if token_file else None)
        for key, value in (conf or {}).items():
            command += ["--conf", f"{key}={value}"]
        command += list(args)
        seen = len(log.read_text(errors="replace")) if log.exists() else 0
        with open(log, "ab") as out:
            proc = subprocess.Popen(command, env=env, cwd=base, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        server = ConnectServer(port, capture, log, proc, secret)
        deadline = time.monotonic() + timeout
        try:
            while READY not in server.log_text()[seen:]:
                if proc.poll() is not None:
                    text = server.log_text()[seen:]
                    if "Failed to bind" in text and attempt < 2:
                        break
                    raise RuntimeError(f"the Connect server exited ({proc.returncode}):\n{text[-4000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the Connect server was not ready within {timeout:.0f} s:\n{server.log_text()[-4000:]}"
                    )
                time.sleep(0.5)
            else:
                break
        except BaseException:
            server.stop()
            raise
        server.stop()
    try:
        yield server
    finally:
        server.stop()
