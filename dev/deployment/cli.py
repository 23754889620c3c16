"""``python dev/deploy.py up|down|status`` (``./dev.sh up`` / ``./dev.sh down``): the command line."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dev.deployment.connect import start_connect_server
from dev.deployment.core import AirflowDeployment
from dev.deployment.processes import DeploymentError, _group_alive, port_in_use
from dev.deployment.settings import CELERY_WORKERS, EXECUTORS, PROCESSES, ROOT


# -- the command line (./dev.sh up / down / status) -------------------------------------------------
def _load_state(home: Path) -> dict[str, Any] | None:
    path = home / "run" / "deployment.json"
    return json.loads(path.read_text()) if path.exists() else None


def _live_groups(state: Mapping[str, Any]) -> dict[str, list[int]]:
    return {n: [g for g in gs if _group_alive(g)] for n, gs in state.get("groups", {}).items()}


def up(args: argparse.Namespace) -> int:
    home = Path(args.home).resolve()
    state = _load_state(home)
    if state and any(_live_groups(state).values()):
        print(f"deploy: already running from {home} ({state['api_url']}): ./dev.sh down first", file=sys.stderr)
        return 1
    if port_in_use(args.port):
        print(f"deploy: port {args.port} is taken: pass --port N (or APL_API_PORT=N)", file=sys.stderr)
        return 1
    env = {}
    if args.marquez_url:
        env["OPENLINEAGE_URL"] = args.marquez_url
        env["OPENLINEAGE_NAMESPACE"] = os.environ.get("OPENLINEAGE_NAMESPACE", "airflow-provider-lineage")
        env["AIRFLOW__OPENLINEAGE__NAMESPACE"] = env["OPENLINEAGE_NAMESPACE"]
    for key, value in os.environ.items():  # the user's own Airflow settings win over the defaults
        if key.startswith("AIRFLOW__") and key not in ("AIRFLOW__CORE__DAGS_FOLDER",):
            env[key] = value
    if args.executor == "celery" and args.db != "postgres":
        args.db = "postgres"  # the Celery variant's metadata DB and result backend
    try:
        dep = AirflowDeployment(home, db=args.db, api_port=args.port, env=env, host=args.host,
                                pg_dir=home / "postgres", executor=args.executor)
    except DeploymentError as exc:
        print(f"deploy: {exc}", file=sys.stderr)
        return 1
    print(f"deploy: starting {', '.join(PROCESSES)} in {home} (logs: {dep.log_dir})", flush=True)
    try:
        connect_url = start_connect_server(dep)
        dep.start()
    except DeploymentError as exc:  # a message that names the problem and the fix: no traceback
        dep.stop()
        print(f"deploy: {exc}\ndeploy: stopped what had started (logs: {dep.log_dir})", file=sys.stderr)
        return 1
    except BaseException:
        dep.stop()
        raise
    if dep.postgres is not None and dep.postgres.notice:
        print(f"deploy: {dep.postgres.notice}", flush=True)
    where = args.marquez_url or dep.events_path
    executor_note = (
        " (redis broker, workers " + ", ".join(CELERY_WORKERS) + " in " + str(home / "workers") + ")"
        if args.executor == "celery"
        else ""
    )
    print(f"""
Airflow is up: {dep.api_url}   (log in as admin / {dep.password("admin")}, or viewer / {dep.password("viewer")})
  passwords: {dep.password_file}
  API token: curl -s -X POST {dep.api_url}/auth/token -H 'Content-Type: application/json' \\
               -d '{{"username": "admin", "password": "{dep.password("admin")}"}}'
  lineage events: {dep.received_events_path if args.executor == "celery" else where}
  executor: {args.executor}{executor_note}
  Spark Connect (lineage captured): {connect_url}, connection spark_connect_default
  tables and indexes: {dep.data_uri}{" (moto S3 at " + dep.s3_url + ")" if args.executor == "celery" else ""}
  logs and pids: {dep.log_dir}, {dep.run_dir}
  DAGs (every file parsed; paused until you unpause them): {", ".join(dep.dags) or "none"}
Stop it with ./dev.sh down""")
    return 0


def down(args: argparse.Namespace) -> int:
    home = Path(args.home).resolve()
    state = _load_state(home)
    if not state:
        print(f"deploy: nothing recorded in {home / 'run'}: nothing to stop")
        return 0
    dep = AirflowDeployment.__new__(AirflowDeployment)  # a handle on the recorded groups, no new environment
    dep.groups = {n: list(gs) for n, gs in state["groups"].items()}
    dep.procs, dep.id, dep.run_dir, dep.state_file = {}, state["id"], home / "run", home / "run" / "deployment.json"
    dep.home, dep.api_url, dep.db, dep.postgres = home, state["api_url"], state["db"], None
    dep.stop()
    pg = state.get("postgres") or {}
    if pg.get("temporary") and Path(pg["base"]).name.startswith("apl-postgres-"):  # never another folder
        shutil.rmtree(pg["base"], ignore_errors=True)
    left = dep.leftovers()
    for name in dep.groups:
        for suffix in (".pid", ".pgid"):
            (home / "run" / f"{name}{suffix}").unlink(missing_ok=True)
    if left:
        print(f"deploy: processes still alive after SIGKILL: {left}", file=sys.stderr)
        return 1
    print(
        f"deploy: stopped {', '.join(dep.groups)} "
        f"(process groups {sorted(g for gs in dep.groups.values() for g in gs)})"
    )
    return 0


def status(args: argparse.Namespace) -> int:
    state = _load_state(Path(args.home).resolve())
    if not state:
        print("deploy: not running")
        return 1
    for name, groups in _live_groups(state).items():
        print(f"{name:14} {'up (pgid ' + ', '.join(map(str, groups)) + ')' if groups else 'down'}")
    print(state["api_url"])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./dev.sh up|down|status", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("up", "down", "status"))
    parser.add_argument("--home", default=os.environ.get("AIRFLOW_HOME") or str(ROOT / ".airflow"),
                        help="AIRFLOW_HOME (default $AIRFLOW_HOME, else ./.airflow)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("APL_API_PORT", "8080")),
                        help="api-server port (default $APL_API_PORT or 8080)")
    parser.add_argument("--host", default=os.environ.get("APL_API_HOST", "127.0.0.1"),
                        help="api-server listen address (default 127.0.0.1)")
    parser.add_argument("--db", choices=("sqlite", "postgres"), default=os.environ.get("APL_DB", "sqlite"))
    parser.add_argument("--executor", choices=EXECUTORS, default=os.environ.get("APL_EXECUTOR", "local"),
                        help="local (LocalExecutor) or celery (redis broker, PostgreSQL, two workers)")
    parser.add_argument("--marquez-url", default=os.environ.get("MARQUEZ_URL") or os.environ.get("OPENLINEAGE_URL"),
                        help="send OpenLineage events there (default: $AIRFLOW_HOME/lineage/events.jsonl)")
    args = parser.parse_args(argv)
    return {"up": up, "down": down, "status": status}[args.command](args)
