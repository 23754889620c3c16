"""The Airflow processes of one ``AIRFLOW_HOME`` (:class:`AirflowDeployment`): environment, start, stop."""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Self

from dev.deployment.celery_variant import CeleryVariant
from dev.deployment.postgres import PostgresServer
from dev.deployment.processes import DeploymentError, _environ_has, _group_alive, _proc_ids, free_port
from dev.deployment.rest import RestApi
from dev.deployment.settings import (
    API_ADMISSION_LIMIT,
    API_WORKERS,
    CELERY_BUCKET,
    CELERY_WORKERS,
    CONNECT_PROCESS,
    DAGS,
    DEFAULT_USERS,
    EXECUTORS,
    HEARTBEATS,
    MARKER,
    MAX_OVERFLOW,
    MIN_FILE_PROCESS_INTERVAL,
    PARSE_TIMEOUT,
    POOL_SIZE,
    PROCESSES,
    SPARK_CONN,
    SQLITE_LOCK_WAIT_S,
)


class AirflowDeployment(CeleryVariant, RestApi):
    """The Airflow processes of one ``AIRFLOW_HOME``, each in its own process group.

    :param home: ``AIRFLOW_HOME`` (created); logs, pid files, the SQLite DB and the lineage files go there.
    :param processes: which Airflow processes :meth:`start` starts.
    :param db: ``"sqlite"`` (a file in ``home``) or ``"postgres"`` (a server started in ``home/postgres``).
    :param users: simple auth manager users, ``{name: role}`` (default admin/admin, viewer/viewer).
    :param env: extra environment for every process (wins over the defaults).
    :param dags_folder: the DAGs (default: the checkout's ``dags/``).
    :param api_port: the api-server port (default: a free one).
    :param host: the api-server's listen address.
    :param pg_dir: with ``db="postgres"``: the server's folder (default: a new temp folder, removed by
        :meth:`stop`). Run as root, the server runs as the ``postgres`` user: when that user cannot enter
        ``pg_dir`` (e.g. a clone under ``/root``, mode 0700) a new temp folder is used instead, removed by
        :meth:`stop` and ``./dev.sh down`` (see :class:`PostgresServer`).
    :param executor: ``"local"`` (LocalExecutor) or ``"celery"``: CeleryExecutor with Debian's ``redis-server``
        as broker, PostgreSQL as metadata DB and result backend (``db`` must be ``"postgres"``), two Celery
        workers that share no local folder with each other (each its own ``AIRFLOW_HOME``, ``HOME``,
        ``TMPDIR`` and working folder under ``home/workers/``), and the OpenLineage events sent over HTTP
        to a local receiver (``dev/receiver.py``, into ``home/lineage/received.jsonl``).
    """

    def __init__(self, home: Path, *, processes: Iterable[str] = PROCESSES, db: str = "sqlite",
                 users: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None,
                 dags_folder: Path | None = None, api_port: int | None = None, host: str = "127.0.0.1",
                 pg_dir: Path | None = None, executor: str = "local") -> None:
        unknown = sorted(set(processes) - set(PROCESSES))
        if unknown:
            raise ValueError(f"unknown process(es) {unknown}: use some of {PROCESSES}")
        if db not in ("sqlite", "postgres"):
            raise ValueError(f"db={db!r}: use 'sqlite' or 'postgres'")
        if executor not in EXECUTORS:
            raise ValueError(f"executor={executor!r}: use one of {EXECUTORS}")
        if executor == "celery" and db != "postgres":
            raise ValueError("the Celery variant needs db='postgres' (metadata DB and Celery result backend)")
        self.executor = executor
        self.home = Path(home).resolve()
        self.home.mkdir(parents=True, exist_ok=True)
        self.processes = tuple(processes)
        self.db = db
        self.users = dict(users or DEFAULT_USERS)
        self.port = api_port or free_port()
        self.host = host
        self.api_url = f"http://127.0.0.1:{self.port}"
        self.run_dir = self.home / "run"
        self.log_dir = self.home / "logs"
        self.state_file = self.run_dir / "deployment.json"
        self.id = secrets.token_hex(8)
        self.postgres: PostgresServer | None = None
        if db == "postgres":
            self.postgres = PostgresServer(pg_dir) if pg_dir else PostgresServer(
                Path(tempfile.mkdtemp(prefix="apl-postgres-")), temporary=True)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.dags: list[str] = []  # the DAG ids once every DAG file is parsed (see :meth:`wait_parsed`)
        self.parser_started: dt.datetime | None = None  # when this object last started the dag-processor
        self.groups: dict[str, list[int]] = {}  # every process group ever started per process name
        self._tokens: dict[str, str] = {}
        self.redis_port = free_port()
        self.receiver_port = free_port()
        self.s3_port = free_port()
        self.env = self._environment(dict(env or {}), dags_folder or DAGS)

    # -- environment ------------------------------------------------------------------------------
    def _environment(self, extra: dict[str, str], dags: Path) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("AIRFLOW__", "PYTEST_", "OPENLINEAGE")) and k != "AIRFLOW_HOME"}
        bin_dir = str(Path(sys.executable).parent)
        secret = secrets.token_urlsafe(32)
        env = {
            **base,
            "PATH": bin_dir + os.pathsep + base.get("PATH", ""),
            MARKER: self.id,
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(Path(dags).resolve()),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.api_url}/execution/",
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__BASE_URL": self.api_url,
            "AIRFLOW__API__SECRET_KEY": secret,
            "AIRFLOW__API_AUTH__JWT_SECRET": secret,
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(f"{u}:{r}" for u, r in self.users.items()),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE":
                str(self.home / "simple_auth_manager_passwords.json.generated"),
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",
            "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
            # apache/airflow#66493: with the default pool (5 + 10) 64 concurrent API readers stall the api-server's
            # event loop in RevokedToken.is_revoked waiting for a pool connection; this pool holds them
            # (benchmarks/api_load/REPORT.md).
            "AIRFLOW__DATABASE__SQL_ALCHEMY_POOL_SIZE": str(POOL_SIZE),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_MAX_OVERFLOW": str(MAX_OVERFLOW),
            "AIRFLOW__API__WORKERS": str(API_WORKERS),
            "AIRFLOW__COLUMN_LINEAGE__API_ADMISSION_LIMIT": str(API_ADMISSION_LIMIT),
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": str(MIN_FILE_PROCESS_INTERVAL),
            "AIRFLOW__DAG_PROCESSOR__FILE_PARSING_SORT_MODE": "modified_time",
            "AIRFLOW_CONN_SPARK_DEFAULT": SPARK_CONN,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "LINEAGE_DEMO_DATA_DIR": str(self.home / "lineage_demo"),
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if self.postgres is not None:
            env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = self.postgres.url
            env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC"] = self.postgres.url
        else:
            # sqlite3 waits 5 s for a lock by default; on a loaded 2-CPU machine one process's write (a task's
            # rendered fields) can hold it longer and the API then answers 500 ("database is locked")
            env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = (
                f"sqlite:///{self.home / 'airflow.db'}?timeout={SQLITE_LOCK_WAIT_S}"
            )
        if self.executor == "celery" and self.postgres is not None:
            env.update({
                "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
                "AIRFLOW__CELERY__BROKER_URL": f"redis://127.0.0.1:{self.redis_port}/0",
                "AIRFLOW__CELERY__RESULT_BACKEND": "db+" + self.postgres.url,
                "AIRFLOW__CELERY__WORKER_CONCURRENCY": "2",
                "AIRFLOW__CELERY__WORKER_ENABLE_REMOTE_CONTROL": "True",
                "OPENLINEAGE_URL": f"http://127.0.0.1:{self.receiver_port}",
                "OPENLINEAGE_NAMESPACE": "airflow-provider-lineage",
                "AIRFLOW__OPENLINEAGE__NAMESPACE": "airflow-provider-lineage",
                # Tables and Sieve indexes on S3 (moto): nothing the workers share on local disk.
                "LINEAGE_DEMO_DATA_DIR": f"s3://{CELERY_BUCKET}/lineage_demo",
                "AWS_ENDPOINT_URL": self.s3_url, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": "us-east-1",
            })
            for key in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL_S3"):
                env.pop(key, None)
        env.update(extra)
        return env


    @property
    def events_path(self) -> Path:
        """Where the operators' OpenLineage events land without an OpenLineage URL."""
        return self.home / "lineage" / "events.jsonl"

    @property
    def data_dir(self) -> Path:
        """The example DAGs' ``data_dir`` default (tables and indexes; the Celery variant's is on S3: ``data_uri``)."""
        return Path(self.env["LINEAGE_DEMO_DATA_DIR"])

    @property
    def data_uri(self) -> str:
        """The example DAGs' ``data_dir`` default as given (a path, or ``s3://…`` in the Celery variant)."""
        return self.env["LINEAGE_DEMO_DATA_DIR"]

    # -- processes --------------------------------------------------------------------------------
    def _spawn(self, name: str, cmd: list[str], cwd: Path | None = None, env: Mapping[str, str] | None = None,
               **kwargs: Any) -> subprocess.Popen[bytes]:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_dir / f"{name}.log", "ab") as out:
            proc = subprocess.Popen(
                cmd,
                env=dict(env or self.env),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=cwd or self.home,
                **kwargs,
            )
        self.procs[name] = proc
        self.groups.setdefault(name, []).append(proc.pid)
        (self.run_dir / f"{name}.pid").write_text(f"{proc.pid}\n")
        (self.run_dir / f"{name}.pgid").write_text(f"{proc.pid}\n")  # start_new_session: its own group
        self._save_state()
        return proc

    def _save_state(self) -> None:
        state = {"id": self.id, "home": str(self.home), "api_url": self.api_url, "db": self.db,
                 "groups": self.groups, "pids": {n: p.pid for n, p in self.procs.items()}}
        if self.postgres is not None:  # a temporary folder (e.g. moved out of a 0700 clone) is removed by `down`
            state["postgres"] = {"base": str(self.postgres.base), "temporary": self.postgres.temporary}
        tmp = self.state_file.with_suffix(".tmp")
        tmp.parent.mkdir(parents=True, exist_ok=True)  # a stop before anything started (a failed initdb)
        tmp.write_text(json.dumps(state, indent=1))
        tmp.replace(self.state_file)

    def _airflow(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "airflow", *args]

    def start_db(self) -> None:
        """Start the DB server (``db="postgres"``; nothing for SQLite): ``initdb`` once, then the server."""
        if self.postgres is not None and "postgres" not in self.procs:
            self.postgres.init()
            self._spawn("postgres", self.postgres.command(), cwd=self.postgres.base, user=self.postgres.user)
            self.postgres.wait_ready(alive=lambda: self._check_alive("postgres"))

    def migrate(self) -> None:
        """Start the DB server (postgres) and migrate the metadata DB (once per home and Airflow version)."""
        self.start_db()
        from importlib.metadata import version

        marker = self.home / f".apl-db-migrated-{self.db}-{version('apache-airflow')}"
        if marker.exists() and self.db == "sqlite":
            return
        res = subprocess.run(self._airflow("db", "migrate"), check=False, env=self.env, cwd=self.home,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if res.returncode:
            raise DeploymentError(f"airflow db migrate failed:\n{res.stdout.decode(errors='replace')[-3000:]}")
        marker.touch()

    def start(self, process: str | None = None, timeout: float = 180) -> None:
        """Start every process (``None``) or one; wait until each is healthy."""
        extra = ("redis", "receiver", "s3", *CELERY_WORKERS) if self.executor == "celery" else ()
        names = (*self.processes, *CELERY_WORKERS) if process is None and extra else (
            self.processes if process is None else (process,))
        if process is not None and process not in (*PROCESSES, *extra):
            raise ValueError(f"unknown process {process!r}: use one of {(*PROCESSES, *extra)}")
        if self.executor == "celery":
            self.check_s3a_jars()
        self.migrate()
        if extra and process is None:
            self._start_celery_services(timeout)
        started = {}
        for name in names:
            if name in CELERY_WORKERS:
                if name not in self.procs or self.procs[name].poll() is not None:
                    self._start_worker(name, timeout)
                continue
            if name in self.procs and self.procs[name].poll() is None:
                continue
            started[name] = dt.datetime.now(dt.UTC)
            if name == "dag-processor":
                self.parser_started = started[name]
            args = ["api-server", "--port", str(self.port), "--host", self.host] if name == "api-server" else [name]
            self._spawn(name, self._airflow(*args))
            if name == "api-server":
                self._wait_api(timeout)
        for name, since in started.items():
            if name != "api-server":
                self._wait_heartbeat(name, since, timeout)
        if process is None and "dag-processor" in started and "api-server" in self.processes:
            self.dags = self.wait_parsed(started["dag-processor"], timeout=max(timeout, PARSE_TIMEOUT))


    def _check_alive(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is not None:
            raise DeploymentError(
                f"{name} exited with {proc.returncode}; the end of {self.log_dir / (name + '.log')}:\n"
                f"{self.log(name)[-3000:]}"
            )

    def _wait_api(self, timeout: float) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive("api-server")
            with contextlib.suppress(httpx.HTTPError):
                healthy = httpx.get(f"{self.api_url}/api/v2/monitor/health", timeout=5).status_code == 200
                if healthy and self.password_file.exists():
                    return
            time.sleep(0.5)
        raise DeploymentError(f"api-server not healthy on {self.api_url} within {timeout:.0f} s: see {self.log_dir}")

    def health(self) -> dict[str, Any]:
        import httpx

        return httpx.get(f"{self.api_url}/api/v2/monitor/health", timeout=10).json()

    def _wait_heartbeat(self, name: str, since: dt.datetime, timeout: float) -> None:
        import httpx

        key, field = HEARTBEATS[name]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive(name)
            if "api-server" not in self.procs:  # nobody to ask: alive for a few seconds is all we know
                time.sleep(5)
                self._check_alive(name)
                return
            with contextlib.suppress(httpx.HTTPError, ValueError, TypeError):
                beat = (self.health().get(key) or {}).get(field)
                if beat and dt.datetime.fromisoformat(beat) >= since - dt.timedelta(seconds=1):
                    return
            time.sleep(1)
        raise DeploymentError(f"{name} sent no heartbeat within {timeout:.0f} s: see {self.log_dir / (name + '.log')}")

    def stop(self, process: str | None = None, sig: int = signal.SIGTERM, timeout: float = 30) -> None:
        """Stop every process (``None``) or one, by process group (``sig`` first, SIGKILL after ``timeout``).

        Stopping everything also stops the DB server and every group an earlier, killed incarnation
        of a process left behind (e.g. LocalExecutor workers of a SIGKILLed scheduler).
        """
        order = (*CELERY_WORKERS, *(f"logs-{w}" for w in CELERY_WORKERS), *reversed(PROCESSES), CONNECT_PROCESS,
                 "receiver", "s3", "redis", "postgres")
        names = [process] if process else [n for n in order if n in self.groups]
        for name in names:
            groups = self.groups.get(name, []) if process is None else self.groups.get(name, [])[-1:]
            for pgid in groups:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGINT if name == "postgres" and sig == signal.SIGTERM else sig)
            deadline = time.monotonic() + timeout
            while any(_group_alive(g) for g in groups) and time.monotonic() < deadline:
                if name in self.procs:
                    self.procs[name].poll()  # reap the leader
                time.sleep(0.2)
            for pgid in groups:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
            if name in self.procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.procs[name].wait(timeout=10)
        if process is None:
            if self.postgres is not None and self.postgres.temporary:
                shutil.rmtree(self.postgres.base, ignore_errors=True)
            for extra in self.leftovers():  # a process that left its group: found by the marker
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(extra, signal.SIGKILL)
        self._save_state()

    def kill(self, process: str, sig: int = signal.SIGKILL) -> None:
        """Signal the main process of ``process`` only (its workers / children stay, as after an OOM kill)."""
        proc = self.procs[process]
        os.kill(proc.pid, sig)
        proc.wait(timeout=30)

    @contextlib.contextmanager
    def paused(self, process: str, attempts: int = 20) -> Iterator[None]:
        """SIGSTOP the main process of ``process`` (its children, e.g. LocalExecutor workers, run on) for the
        ``with`` block, then SIGCONT it. With SQLite it is stopped only at a moment it holds no lock that
        blocks a writer (checked by taking the database exclusively for an instant; in WAL mode that is the
        write lock), so the others' writes never wait behind a frozen process; after ``attempts`` tries it
        raises :class:`DeploymentError`."""
        pid = self.procs[process].pid
        for _ in range(attempts):
            os.kill(pid, signal.SIGSTOP)
            if self.postgres is not None or self._sqlite_unlocked():
                break
            os.kill(pid, signal.SIGCONT)
            time.sleep(0.1)
        else:
            raise DeploymentError(f"{process} held an SQLite lock at each of {attempts} tries: not paused")
        try:
            yield
        finally:
            os.kill(pid, signal.SIGCONT)

    def _sqlite_unlocked(self) -> bool:
        import sqlite3

        con = sqlite3.connect(self.home / "airflow.db", timeout=1.0, isolation_level=None)
        try:
            con.execute("BEGIN EXCLUSIVE")
            con.execute("ROLLBACK")
            return True
        except sqlite3.OperationalError:
            return False
        finally:
            con.close()

    def restart(self, process: str) -> None:
        self.stop(process)
        self.start(process)

    def leftovers(self) -> list[int]:
        """Live processes of this deployment: in one of its process groups, or carrying its marker."""
        groups = {g for gs in self.groups.values() for g in gs}
        marker = f"{MARKER}={self.id}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            ids = _proc_ids(int(entry.name))
            if ids and (ids[0] in groups or _environ_has(int(entry.name), marker)):
                found.append(int(entry.name))
        return found

    def log(self, process: str) -> str:
        path = self.log_dir / f"{process}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        left = self.leftovers()
        assert not left, f"processes left after stop: {left}"
