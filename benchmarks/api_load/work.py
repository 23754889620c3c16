"""Work per request of each path run.py loads, counted rather than timed (robust on a shared machine).

    python benchmarks/api_load/work.py [--home SEEDED_AIRFLOW_HOME] [--repeat 30] [--out WORK.md]

For every path of :func:`run._paths` it reports, on Airflow's real app built in this process (the deployment's
settings, :class:`dev.deploy.AirflowDeployment`; a ``--home`` that ``run.py`` seeded, else a new one seeded here):

* **threadpool hops**: the synchronous callables FastAPI resolves for the route (its dependencies, sub-dependencies
  and the endpoint, counted on the route's dependency tree; FastAPI caches a repeated one per request, so this is an
  upper bound). Each runs in anyio's thread pool and resumes on the worker's event loop: under many concurrent
  requests every hop waits for the loop and the GIL again, so a path's latency grows with its hops;
* **SQL statements** per request (SQLAlchemy ``before_cursor_execute`` on Airflow's engine), after a warm-up;
* **CPU ms** per request in this process (``time.process_time``, the median of ``--repeat`` requests' mean).

Nothing here is a timed assertion: it prints figures and writes ``--out``.
"""
from __future__ import annotations

import argparse
import inspect
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as load  # the load benchmark's paths and seeding (beside this file)

from dev.deploy import AirflowDeployment

HERE = Path(__file__).resolve().parent


def _seeded(home: Path | None) -> Path:
    if home is not None:
        return home
    home = Path(tempfile.mkdtemp(prefix="apl-api-work-"))
    dep = AirflowDeployment(home, processes=("api-server",), dags_folder=load.DAGS)
    try:
        dep.start()
        load._seed(dep)
    finally:
        dep.stop()
    return home


def _hops(dependant: Any) -> int:
    own = 0
    call = dependant.call
    if call is not None:  # as FastAPI decides (a routine by itself, a class is sync, else its __call__)
        if inspect.isroutine(call):
            is_async = inspect.iscoroutinefunction(call) or inspect.isasyncgenfunction(call)
        else:
            is_async = not inspect.isclass(call) and inspect.iscoroutinefunction(type(call).__call__)
        own = 0 if is_async else 1
    return own + sum(_hops(d) for d in dependant.dependencies)


def _routes(app: Any, prefix: str = "") -> dict[str, Any]:
    from fastapi.routing import APIRoute
    from starlette.routing import Mount

    out: dict[str, Any] = {}
    for r in app.routes:
        if isinstance(r, APIRoute) and "GET" in r.methods:
            out[prefix + r.path] = r
        elif isinstance(r, Mount):
            sub = r.app
            while not hasattr(sub, "routes") and getattr(sub, "app", None) is not None:
                sub = sub.app
            if hasattr(sub, "routes"):
                out.update(_routes(sub, prefix + r.path))
    return out


def _route_of(routes: dict[str, Any], path: str) -> Any:
    bare = path.split("?", 1)[0]
    for template, route in routes.items():
        if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", template), bare):
            return route
    return None


def measure(home: Path, repeat: int) -> list[dict[str, Any]]:
    dep = AirflowDeployment(home, processes=("api-server",), dags_folder=load.DAGS)
    for key in [k for k in os.environ if k.startswith("AIRFLOW")]:
        del os.environ[key]
    os.environ.update(dep.env)
    from airflow import settings
    from airflow.api_fastapi.app import create_app
    from fastapi.testclient import TestClient
    from sqlalchemy import event

    app = create_app()
    client = TestClient(app)
    token = client.post("/auth/token", json={"username": "admin", "password": dep.password("admin")}).json()
    client.headers["Authorization"] = f"Bearer {token['access_token']}"
    run_id = client.get("/api/v2/dags/ui_bench/dagRuns").json()["dag_runs"][0]["dag_run_id"]
    client.get("/column-lineage/")  # the plugin's app is built on its first request
    routes = _routes(app)
    statements = [0]

    def count(*_: Any) -> None:
        statements[0] += 1

    event.listen(settings.engine, "before_cursor_execute", count)
    rows = []
    for path in load._paths(run_id):
        res = client.get(path)
        if res.status_code != 200:
            print(f"left out: GET {path}: HTTP {res.status_code}", flush=True)
            continue
        statements[0] = 0
        client.get(path)
        sql = statements[0]
        cpu = []
        for _ in range(3):
            t0 = time.process_time()
            for _ in range(max(1, repeat // 3)):
                client.get(path)
            cpu.append((time.process_time() - t0) / max(1, repeat // 3) * 1000)
        route = _route_of(routes, path)
        shown = re.sub(r"/(runs|dagRuns)/[^/?]+", r"/\1/<run>", path.replace(quote(run_id, safe=""), "<run>"))
        rows.append({"path": shown, "hops": _hops(route.dependant) if route is not None else None, "sql": sql,
                     "cpu_ms": round(sorted(cpu)[1], 1), "bytes": len(res.content)})
        print(rows[-1], flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, help="an AIRFLOW_HOME run.py seeded (default: seed a new one)")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--out", type=Path, default=HERE / "WORK.md")
    args = parser.parse_args(argv)
    rows = measure(_seeded(args.home), args.repeat)
    load_line = os.popen("uptime").read().strip()
    lines = ["# Work per request (benchmarks/api_load/work.py)", "",
             f"Machine load: `{load_line}` (CPU ms are inflated by load; hops and statements are not).", "",
             "| path | threadpool hops (sync dependencies + endpoint) | SQL statements | CPU ms | response bytes |",
             "|---|---|---|---|---|"]
    lines += [f"| `{r['path']}` | {r['hops']} | {r['sql']} | {r['cpu_ms']} | {r['bytes']} |" for r in rows]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
