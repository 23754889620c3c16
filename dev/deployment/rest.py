"""A deployment's REST API side: tokens, clients, waiting for parsed DAGs and runs (:class:`RestApi`)."""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dev.deployment.processes import DeploymentError, _instant
from dev.deployment.settings import FINAL_STATES, PARSE_TIMEOUT


class RestApi:
    """What a deployment answers through its api-server's REST API (a mixin of
    :class:`~dev.deployment.core.AirflowDeployment`): logins and tokens, parsed DAGs, runs and task instances."""

    env: dict[str, str]
    api_url: str
    home: Path
    log_dir: Path
    procs: dict[str, subprocess.Popen[bytes]]
    parser_started: dt.datetime | None
    _tokens: dict[str, str]

    if TYPE_CHECKING:  # provided by AirflowDeployment
        def _check_alive(self, name: str) -> None: ...

    @property
    def password_file(self) -> Path:
        return Path(self.env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"])

    def password(self, user: str) -> str:
        """The generated password of ``user`` (from the api-server's password file)."""
        passwords = json.loads(self.password_file.read_text())
        if user not in passwords:
            raise KeyError(f"no user {user!r}: the users are {sorted(passwords)}")
        return str(passwords[user])

    def token(self, user: str = "admin") -> str:
        """A JWT for ``user`` from ``POST /auth/token`` (cached)."""
        import httpx

        if user not in self._tokens:
            res = httpx.post(f"{self.api_url}/auth/token", timeout=30,
                             json={"username": user, "password": self.password(user)})
            res.raise_for_status()
            self._tokens[user] = res.json()["access_token"]
        return self._tokens[user]

    def client(self, user: str = "admin") -> Any:
        """An ``httpx.Client`` on the api-server, with ``user``'s bearer token."""
        import httpx

        return httpx.Client(base_url=self.api_url, timeout=60, headers={"Authorization": f"Bearer {self.token(user)}"})

    def wait_dag(self, dag_id: str, timeout: float = 180, user: str = "admin") -> dict[str, Any]:
        """The DAG's details once the dag-processor has parsed it."""
        deadline = time.monotonic() + timeout
        with self.client(user) as c:
            while time.monotonic() < deadline:
                res = c.get(f"/api/v2/dags/{dag_id}")
                if res.status_code == 200:
                    return res.json()
                time.sleep(1)
            errors = c.get("/api/v2/importErrors").text
        raise DeploymentError(f"DAG {dag_id} not parsed within {timeout:.0f} s; import errors: {errors[:2000]}")

    @property
    def dags_folder(self) -> Path:
        return Path(self.env["AIRFLOW__CORE__DAGS_FOLDER"])

    def dag_files(self) -> list[str]:
        """The files of the DAGs folder the dag-processor parses, relative to it: Airflow's own discovery
        (``.airflowignore``, safe mode's "airflow" + "dag" heuristic), run with the deployment's settings."""
        code = ("import json, sys; from airflow.utils.file import list_py_file_paths; "
                "print(json.dumps([str(p) for p in list_py_file_paths(sys.argv[1])]))")
        res = subprocess.run([sys.executable, "-c", code, str(self.dags_folder)], env=self.env, cwd=self.home,
                             capture_output=True, text=True, check=False, timeout=300)
        lines = res.stdout.strip().splitlines()
        if res.returncode or not lines:
            raise DeploymentError(f"could not list the DAG files of {self.dags_folder} with Airflow's discovery:\n"
                                  f"{(res.stderr or res.stdout)[-2000:]}")
        return sorted({self._relative(p) for p in json.loads(lines[-1])})

    def _relative(self, path: str) -> str:
        p = Path(path)
        if p.is_absolute():
            with contextlib.suppress(ValueError):
                return p.resolve().relative_to(self.dags_folder.resolve()).as_posix()
        return p.as_posix()

    def wait_parsed(self, since: dt.datetime, timeout: float = PARSE_TIMEOUT) -> list[str]:
        """Wait until the dag-processor has parsed every DAG file of the folder (:meth:`dag_files`) since
        ``since``: each has a DAG parsed since then or an import error of then; return the DAG ids.

        A file unchanged since the dag-processor this object started began is not parsed again before
        :data:`MIN_FILE_PROCESS_INTERVAL`: for it, a parse since that start and since the file's last change stands
        (it is the file as it is now).

        Raises :class:`DeploymentError` naming the files with import errors (and the end of each error), or the
        files that gave neither within ``timeout`` (a file without a DAG: list it in ``.airflowignore``).
        """
        files = set(self.dag_files())
        since = since - dt.timedelta(seconds=1)
        after = {f: self._parsed_after(f, since) for f in files}
        deadline = time.monotonic() + timeout
        with self.client() as c:
            while True:
                dags = self._every_dag(c)
                errors, parsed = {}, {}
                for e in self._every_import_error(c):
                    f = self._relative(e["filename"])
                    if _instant(e.get("timestamp")) >= after.get(f, since):
                        errors[f] = e
                for d in dags:
                    f = self._relative(d.get("fileloc") or "")
                    if _instant(d.get("last_parsed_time")) >= after.get(f, since):
                        parsed[f] = d
                pending = files - set(parsed) - set(errors)
                if not pending or time.monotonic() > deadline:
                    break
                if "dag-processor" in self.procs:
                    self._check_alive("dag-processor")
                time.sleep(1)
        failed = sorted(set(errors) & files)
        if failed or pending:
            lines = [f"the dag-processor did not load every DAG file of {self.dags_folder}:"]
            lines += [f"  {f}: import error\n    " + errors[f].get("stack_trace", "").strip()[-1500:].replace(
                "\n", "\n    ") for f in failed]
            lines += [f"  {f}: no DAG and no import error within {timeout:.0f} s (a file that defines no DAG: list "
                      f"it in {self.dags_folder / '.airflowignore'}; else see {self.log_dir / 'dag-processor.log'})"
                      for f in sorted(pending)]
            lines.append(
                "Fix the file(s) (`./dev.sh airflow dags list-import-errors` shows the same), then start again."
            )
            raise DeploymentError("\n".join(lines))
        return sorted(d["dag_id"] for d in dags if self._relative(d.get("fileloc") or "") in files)

    def _parsed_after(self, file: str, since: dt.datetime) -> dt.datetime:
        """The instant after which a parse of ``file`` (relative to the DAG folder) is the file as it is now:
        ``since``, or earlier for a file unchanged since the dag-processor started (see :meth:`wait_parsed`)."""
        if self.parser_started is None:
            return since
        try:
            changed = dt.datetime.fromtimestamp((self.dags_folder / file).stat().st_mtime, dt.UTC)
        except OSError:
            return since
        return min(since, max(self.parser_started, changed) - dt.timedelta(seconds=1))

    @staticmethod
    def _every(c: Any, path: str, key: str) -> list[dict[str, Any]]:
        """Every item of a paged API v2 list (``limit``/``offset``), ``key`` naming the list in each page."""
        out: list[dict[str, Any]] = []
        while True:
            res = c.get(path, params={"limit": 100, "offset": len(out)})
            res.raise_for_status()
            page = res.json()[key]
            out += page
            if len(page) < 100:
                return out

    @classmethod
    def _every_dag(cls, c: Any) -> list[dict[str, Any]]:
        return cls._every(c, "/api/v2/dags", "dags")

    @classmethod
    def _every_import_error(cls, c: Any) -> list[dict[str, Any]]:
        return cls._every(c, "/api/v2/importErrors", "import_errors")

    def unpause(self, dag_id: str, user: str = "admin") -> None:
        self.wait_dag(dag_id, user=user)
        with self.client(user) as c:
            c.patch(f"/api/v2/dags/{dag_id}", json={"is_paused": False}).raise_for_status()

    def trigger(self, dag_id: str, conf: dict[str, Any] | None = None, user: str = "admin") -> str:
        """Unpause ``dag_id`` and trigger a run (``conf``); its run id."""
        self.unpause(dag_id, user=user)
        with self.client(user) as c:
            res = c.post(f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None, "conf": conf or {}})
            res.raise_for_status()
            return str(res.json()["dag_run_id"])

    def run_state(self, dag_id: str, run_id: str, user: str = "admin") -> str:
        with self.client(user) as c:
            res = c.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")
            res.raise_for_status()
            return str(res.json()["state"])

    def wait_run(self, dag_id: str, run_id: str, timeout: float = 300) -> str:
        """The run's final state (``success`` / ``failed``); raises on the deadline."""
        deadline = time.monotonic() + timeout
        state = "?"
        while time.monotonic() < deadline:
            state = self.run_state(dag_id, run_id)
            if state in FINAL_STATES:
                return state
            time.sleep(2)
        raise DeploymentError(f"{dag_id} run {run_id} still {state} after {timeout:.0f} s")

    def wait_success(self, dag_id: str, run_id: str, timeout: float = 300) -> None:
        """Wait for the run to end; raise with :meth:`failure_report` unless it succeeded."""
        state = self.wait_run(dag_id, run_id, timeout=timeout)
        if state != "success":
            raise DeploymentError(f"{dag_id} run {run_id} ended {state}\n{self.failure_report(dag_id, run_id)}")

    def failure_report(self, dag_id: str, run_id: str, tail: int = 6000) -> str:
        """The run's task states and, for its tasks that did not succeed, the scheduler's "state mismatch"
        entries and the end of every attempt log (read from the task log folder), for a test's failure
        message."""
        tis = self.task_instances(dag_id, run_id)
        lines = [f"{dag_id} {run_id}: " + ", ".join(f"{t}={ti.get('state')}" for t, ti in sorted(tis.items()))]
        lines += [self.state_mismatches(dag_id, run_id, task_id) + self.attempt_logs(dag_id, run_id, task_id, tail=tail)
                  for task_id, ti in sorted(tis.items()) if ti.get("state") not in ("success", "skipped")]
        return "\n".join(lines)

    def attempt_logs(self, dag_id: str, run_id: str, task_id: str, attempts: Iterable[int] | None = None,
                     tail: int = 6000) -> str:
        """The end of each attempt log of a task (all attempts, or those numbered in ``attempts``)."""
        folder = Path("logs") / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
        wanted = None if attempts is None else {f"attempt={n}.log" for n in attempts}
        out = []
        homes = [self.home, *sorted(self.home.glob("workers/*"))]  # Celery workers keep their own logs
        for path in sorted(p for home in homes for p in (home / folder).glob("**/attempt=*.log")):
            if wanted is None or path.name in wanted:
                text = path.read_text(errors="replace")
                out.append(f"--- {task_id} {path.name} (last {tail} characters) ---\n{text[-tail:]}")
        return "\n".join(out) or f"--- {task_id}: no attempt log under {self.home / folder} ---"

    def state_mismatches(self, dag_id: str, run_id: str, task_id: str) -> str:
        """The scheduler's "state mismatch" audit entries for a task (how it failed an attempt it took
        for killed externally), one line each; empty when there are none."""
        with self.client() as c:
            res = c.get("/api/v2/eventLogs", params={"dag_id": dag_id, "run_id": run_id, "task_id": task_id,
                                                     "event": "state mismatch", "limit": 20})
            res.raise_for_status()
            return "".join(f"--- {task_id} {e.get('when')} state mismatch: {e.get('extra')}\n"
                           for e in res.json().get("event_logs", []))

    def task_instances(self, dag_id: str, run_id: str, user: str = "admin") -> dict[str, dict[str, Any]]:
        """The run's task instances by task id."""
        with self.client(user) as c:
            res = c.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances")
            res.raise_for_status()
            return {ti["task_id"]: ti for ti in res.json()["task_instances"]}

    def wait_task_state(self, dag_id: str, run_id: str, task_id: str, states: Iterable[str],
                        timeout: float = 300) -> str:
        wanted = set(states)
        deadline = time.monotonic() + timeout
        state = None
        while time.monotonic() < deadline:
            state = (self.task_instances(dag_id, run_id).get(task_id) or {}).get("state")
            if state in wanted:
                return str(state)
            time.sleep(1)
        raise DeploymentError(f"{dag_id}.{task_id} in {run_id} still {state} after {timeout:.0f} s (wanted {wanted})")
