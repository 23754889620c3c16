"""Load the api-server holds: concurrent readers of the lineage API on a real api-server, on loopback only.

    python benchmarks/api_load/run.py [--readers 1,16,64] [--requests 320] [--pools default,48] [--out REPORT.md]
                                      [--set KEY=VALUE ...]

For each pool setting (``default``: Airflow's 5 + 10; ``48``: ``SQL_ALCHEMY_POOL_SIZE=48`` and
``MAX_OVERFLOW=48``, what ``./dev.sh up`` and ``docker/`` set, apache/airflow#66493 / PR #73422) it starts
the api-server of a fresh ``AIRFLOW_HOME`` (:class:`dev.deploy.AirflowDeployment`, SQLite, 127.0.0.1),
seeds one run of ``benchmarks/ui/dags/ui_bench.py`` (10 tasks, each a lineage record of 200 columns /
500 edges; no Spark), and for 1, 16 and 64 concurrent readers sends a bounded number of requests
(``--requests`` per wave, spread over the readers, each reader cycling through the lineage API's run
graph, the Sieve badges, one task's graph, Airflow's ``/api/v2/dags`` and ``/api/v2/monitor/health``),
each with a ``--timeout`` and the wave with a ``--wave-limit``; it reports requests/s, p50/p95 and
errors (HTTP status other than 200, timeouts), and each path's p95. Figures depend on the machine's load: the
report records ``uptime``. ``--set`` puts a setting over the deployment's (an A/B of one setting, e.g.
``--set AIRFLOW__API__WORKERS=4``), named in the report; the report's analysis (from :data:`KEPT_FROM` on) stays
when the figures are rewritten. ``work.py`` beside this counts each path's work per request (hops, SQL
statements, CPU), which a loaded machine does not blur.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from dev.deploy import MAX_OVERFLOW, POOL_SIZE, AirflowDeployment

HERE = Path(__file__).resolve().parent
DAGS = ROOT / "benchmarks" / "ui" / "dags"
#: The report's hand-written analysis starts at this heading; a re-run keeps it below the new figures.
KEPT_FROM = "## Why Airflow's own paths are the slowest"


def _seed(dep: AirflowDeployment) -> str:
    """One ``ui_bench`` run with its lineage records (``airflow dags test`` on the deployment's DB)."""
    env = {**dep.env, "PYTHONPATH": os.pathsep.join([str(ROOT), dep.env.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    res = subprocess.run([sys.executable, "-m", "airflow", "dags", "test", "ui_bench"], env=env, cwd=dep.home,
                         capture_output=True, text=True, timeout=900, check=False)
    if res.returncode:
        raise RuntimeError(f"seeding ui_bench failed:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
    with dep.client() as client:
        runs = client.get("/api/v2/dags/ui_bench/dagRuns").json()["dag_runs"]
    return runs[0]["dag_run_id"]


def _paths(run_id: str) -> list[str]:
    from urllib.parse import quote

    base = f"/column-lineage/api/dags/ui_bench/runs/{quote(run_id, safe='')}"
    return [f"{base}/graph?include=indexes", f"{base}/tasks/task_03/graph", f"{base}/indexes",
            # the estate queries (issue 28): search and a column's downstream impact
            "/column-lineage/api/estate/search?q=col_01",
            "/column-lineage/api/impact?namespace=file&name=/lake/bench/table_01&column=col_01_0000",
            "/api/v2/dags?limit=10", "/api/v2/monitor/health",
            # Airflow's own task-instance list of the run (issue 47: 2.4 s at p95 under 64 readers)
            f"/api/v2/dags/ui_bench/dagRuns/{quote(run_id, safe='')}/taskInstances"]


def _wave(dep: AirflowDeployment, token: str, paths: list[str], readers: int, total: int, timeout: float,
          limit: float) -> dict[str, Any]:
    import httpx

    per = max(1, total // readers)
    times: list[float] = []
    by_path: dict[str, list[float]] = {}
    errors: dict[str, int] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + limit
    start = threading.Barrier(readers + 1)

    def reader(i: int) -> None:
        with httpx.Client(base_url=dep.api_url, timeout=timeout, headers={"Authorization": f"Bearer {token}"}) as c:
            start.wait()
            for k in range(per):
                if time.monotonic() > deadline:
                    with lock:
                        errors["not sent (wave time limit)"] = errors.get("not sent (wave time limit)", 0) + per - k
                    return
                path = paths[(i + k) % len(paths)]
                t0 = time.perf_counter()
                try:
                    status = c.get(path).status_code
                    error = None if status == 200 else f"HTTP {status}"
                except httpx.TimeoutException:
                    error = f"timeout > {timeout:g} s"
                except httpx.HTTPError as exc:
                    error = type(exc).__name__
                with lock:
                    if error:
                        errors[error] = errors.get(error, 0) + 1
                    else:
                        times.append(time.perf_counter() - t0)
                        by_path.setdefault(path, []).append(times[-1])

    threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(readers)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join(limit + timeout + 30)
    wall = time.perf_counter() - t0
    ok = sorted(times)
    return {"readers": readers, "sent": per * readers, "ok": len(ok), "errors": errors, "wall_s": round(wall, 2),
            "rps": round(len(ok) / wall, 1) if wall else 0.0,
            "p50_ms": round(statistics.median(ok) * 1000, 1) if ok else None,
            "p95_ms": _p95_ms(ok), "path_p95_ms": {p: _p95_ms(sorted(v)) for p, v in by_path.items()}}


def _p95_ms(ok: list[float]) -> float | None:
    return round(ok[min(len(ok) - 1, int(len(ok) * 0.95))] * 1000, 1) if ok else None


def run_pool(pool: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    env = dict(args.set)
    if pool == "default":
        env.update({"AIRFLOW__DATABASE__SQL_ALCHEMY_POOL_SIZE": "5",
                    "AIRFLOW__DATABASE__SQL_ALCHEMY_MAX_OVERFLOW": "10"})
    home = Path(tempfile.mkdtemp(prefix="apl-api-load-"))
    dep = AirflowDeployment(home, processes=("api-server",), dags_folder=DAGS, env=env)
    rows = []
    try:
        dep.start()
        run_id = _seed(dep)
        token = dep.token()
        paths = []
        with dep.client() as c:  # warm up every path once; a path this checkout does not serve is left out
            for p in _paths(run_id):
                r = c.get(p)
                if r.status_code == 200:
                    paths.append(p)
                else:
                    print(f"left out: GET {p}: HTTP {r.status_code} {r.text[:200]}", flush=True)
        for readers in args.readers:
            row = _wave(dep, token, paths, readers, args.requests, args.timeout, args.wave_limit)
            row["pool"] = pool
            row["paths"] = paths
            print(json.dumps(row), flush=True)
            rows.append(row)
            time.sleep(2)
    finally:
        dep.stop()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readers", type=lambda s: [int(x) for x in s.split(",")], default=[1, 16, 64])
    parser.add_argument("--requests", type=int, default=320, help="requests per wave (bounded)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    parser.add_argument("--wave-limit", type=float, default=120.0, help="seconds a wave may send requests")
    parser.add_argument("--pools", default="default,48")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        type=lambda kv: tuple(kv.split("=", 1)) if "=" in kv else parser.error(
                            f"--set {kv}: give KEY=VALUE"),
                        help="an environment setting of the deployment over dev.deploy's (A/B of a setting)")
    parser.add_argument("--out", type=Path, default=HERE / "REPORT.md")
    parser.add_argument(
        "--render", type=Path, help="only write the report from these rows (JSON lines the run printed)"
    )
    parser.add_argument("--load", default="", help="with --render: the uptime line of that run")
    args = parser.parse_args(argv)
    if args.render:
        rows = [json.loads(line) for line in args.render.read_text().splitlines() if line.startswith("{")]
        load = args.load
    else:
        load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
        rows = [row for pool in args.pools.split(",") for row in run_pool(pool, args)]
    write_report(rows, args, load)
    return 0


def _slowest(row: dict[str, Any]) -> str:
    per = {p: v for p, v in (row.get("path_p95_ms") or {}).items() if v is not None}
    if not per:
        return "-"
    path = max(per, key=per.get)
    shown = re.sub(r"/(runs|dagRuns)/[^/?]+", r"/\1/<run>", path)
    return f"{per[path]} (`{shown}`)"


def write_report(rows: list[dict[str, Any]], args: argparse.Namespace, load: str) -> None:
    paths = next((r["paths"] for r in rows if r.get("paths")), [])
    lines = [
        "# Load the api-server holds (lineage API, loopback)",
        "",
        (f"`python benchmarks/api_load/run.py --readers {','.join(map(str, args.readers))} --requests {args.requests} "
        f"--pools {args.pools}`: one api-server (SQLite, 127.0.0.1), one `ui_bench` run seeded (10 lineage records, "
        "200 columns / 500 edges); each wave sends the bounded number of requests spread over the readers, cycling "
        "through the lineage API's run graph, Sieve badges and one task's graph, `/api/v2/dags` and "
        f"`/api/v2/monitor/health`; {args.timeout:g} s per request, {args.wave_limit:g} s per wave."),
        "",
        (f"Pools: `default` = Airflow's 5 + 10; `48` = `AIRFLOW__DATABASE__SQL_ALCHEMY_POOL_SIZE={POOL_SIZE}`, "
        f"`…MAX_OVERFLOW={MAX_OVERFLOW}` (what `./dev.sh up` and `docker/` set; apache/airflow#66493, PR #73422)."),
        "",
        f"Machine load at the start: `{load}` (2 shared cores).",
        "",
        "Paths (each reader cycles through them): " + ", ".join(
            "`" + re.sub(r"/runs/[^/?]+", "/runs/<run>", p) + "`" for p in paths) + ".",
        "",
        "| pool | readers | sent | ok | errors | wall s | requests/s | p50 ms | p95 ms | slowest path's p95 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        errs = ", ".join(f"{k}: {v}" for k, v in r["errors"].items()) or "0"
        lines.append(f"| {r['pool']} | {r['readers']} | {r['sent']} | {r['ok']} | {errs} | {r['wall_s']} | {r['rps']} "
                     f"| {r['p50_ms']} | {r['p95_ms']} | {_slowest(r)} |")
    kept = args.out.read_text().split(KEPT_FROM, 1) if args.out.exists() else []
    if args.set:
        lines += ["", "Settings over the deployment's: " + ", ".join(f"`{k}={v}`" for k, v in args.set) + "."]
    if len(kept) == 2:  # the analysis written under the table stays (a re-run replaces the figures only)
        lines += ["", KEPT_FROM + kept[1].rstrip("\n")]
    args.out.write_text("\n".join(lines) + "\n")
    (args.out.with_suffix(".json")).write_text(json.dumps(rows, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    sys.exit(main())
