"""Column-lineage view benchmark: API answer time and page layout/draw time in headless Chromium.

Two runs of the benchmark DAG (``dags/ui_bench.py``: 10 tasks, each keeps a synthetic lineage record
in XCom, as SparkLineageSubmitOperator does) in a fresh metadata DB (SQLite) under ``dag.test()``:

* 10 tasks, 200 columns, 500 edges: run graph answered by the API (median of ``--repeats``;
  target < 200 ms), then laid out (dagre) and drawn (SVG) by the page in headless Chromium
  (median; target < 1 s);
* 10 tasks, 2,000 columns, 5,000 edges: the page with collapsed boxes (target < 3 s), and a click
  on a column until its path is highlighted.

The API runs in Airflow's own app (``create_app("core")``, plugins mounted by Airflow) served by
uvicorn on a free loopback port; the browser signs in with the ``_token`` cookie.
Prints the figures and writes ``benchmarks/ui/REPORT.md``. Run: ``./dev.sh bench ui``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SIZES = {"200 columns / 500 edges": (200, 500), "2,000 columns / 5,000 edges": (2000, 5000)}


def _setup_airflow(home: Path) -> None:
    os.environ.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(HERE / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    })
    sys.path.insert(0, str(ROOT))
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def _runs() -> dict[str, Any]:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(HERE / "dags" / "ui_bench.py"))
    assert not bag.import_errors, bag.import_errors
    dag = bag.get_dag("ui_bench")
    out = {}
    for label, (columns, edges) in SIZES.items():
        run = dag.test(run_conf={"columns": columns, "edges": edges})
        assert str(run.state).endswith("success"), f"ui_bench run ended {run.state}"
        out[label] = run
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(app: Any) -> tuple[str, Any]:
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", server


def _api_times(client: Any, token: str, path: str, repeats: int) -> tuple[list[float], dict[str, Any], int]:
    headers = {"Authorization": f"Bearer {token}"}
    for _ in range(3):
        client.get(path, headers=headers)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = client.get(path, headers=headers)
        times.append((time.perf_counter() - t0) * 1000)
        assert r.status_code == 200, r.text
    return times, r.json(), len(r.content)


def _page_times(driver: Any, url: str, repeats: int) -> tuple[list[dict[str, float]], dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    from tests.support.browser import console_errors, wait_state

    out = []
    counts: dict[str, Any] = {}
    for _ in range(repeats):
        driver.get(url)
        state = wait_state(driver, timeout=60)
        assert state == "ready", f"page state {state}"
        t = driver.execute_script(
            "var c = window.columnLineage; return {layout: c.timings.layoutMs, draw: c.timings.drawMs, "
            "fetch: c.timings.fetchMs, total: c.timings.readyAt, nodes: c.counts.nodes, edges: c.counts.edges, "
            "datasetEdges: c.counts.datasetEdges, collapsed: document.querySelectorAll('.box .more').length, "
            "svgNodes: document.querySelectorAll('#graph *').length};")
        out.append(t)
        counts = t
    errors = console_errors(driver)
    assert not errors, errors
    return out, counts


def _click_time(driver: Any) -> float:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.support.browser import wait_state

    row = driver.find_elements(By.CSS_SELECTOR, ".box .row")[-1]
    driver.execute_script("window.columnLineage.path = null; "
                          "arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", row)
    wait_state(driver, ("ready",), timeout=30)
    WebDriverWait(driver, 30, poll_frequency=0.05).until(
        lambda d: d.execute_script("return !!window.columnLineage.path")
    )
    return driver.execute_script("return window.columnLineage.timings.pathMs")


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ms (min {min(values):.1f}, max {max(values):.1f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="API requests per size (default 30)")
    parser.add_argument("--page-repeats", type=int, default=5, help="page loads per size (default 5)")
    parser.add_argument("--report", type=Path, default=HERE / "REPORT.md")
    args = parser.parse_args(argv)
    home = Path(tempfile.mkdtemp(prefix="apl-ui-bench-"))
    try:
        _setup_airflow(home)
        print("metadata DB ready; running ui_bench twice under dag.test() ...", flush=True)
        runs = _runs()
        from airflow.api_fastapi import app as api_app
        from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
        from fastapi.testclient import TestClient

        app = api_app.create_app(apps="core")
        token = api_app.get_auth_manager().generate_jwt(SimpleAuthManagerUser(username="admin", role="admin"))
        from tests.support.browser import chromium

        base, server = _serve(app)
        driver = chromium()
        rows = []
        try:
            driver.get(base + "/column-lineage/static/icon.svg")
            driver.add_cookie({"name": "_token", "value": token, "path": "/"})
            with TestClient(app) as client:
                for label, run in runs.items():
                    path = f"/column-lineage/api/dags/ui_bench/runs/{quote(run.run_id, safe='')}/graph"
                    api, graph, size = _api_times(client, token, path, args.repeats)
                    n_cols = sum(len(d["fields"]) for d in graph["datasets"])
                    page, counts = _page_times(driver, f"{base}/column-lineage/?dag_id=ui_bench&run_id="
                                               f"{quote(run.run_id, safe='')}", args.page_repeats)
                    assert counts["nodes"] == len(graph["datasets"])
                    assert counts["edges"] == len(graph["edges"])
                    assert counts["datasetEdges"] == len(graph["dataset_edges"])
                    click = [_click_time(driver) for _ in range(3)]
                    rows.append({
                        "label": label, "tasks": len(graph["tasks"]), "datasets": len(graph["datasets"]),
                        "columns": n_cols, "edges": len(graph["edges"]), "dataset_edges": len(graph["dataset_edges"]),
                        "bytes": size, "api": api, "layout": [p["layout"] for p in page],
                        "draw": [p["draw"] for p in page], "layout_draw": [p["layout"] + p["draw"] for p in page],
                        "to_ready": [p["total"] for p in page], "collapsed": counts["collapsed"],
                        "svg_nodes": counts["svgNodes"], "click": click,
                    })
        finally:
            driver.quit()
            server.should_exit = True
        _report(rows, args)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


def _report(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    import airflow

    chromium_version = subprocess.run(
        ["chromium", "--version"], check=False, capture_output=True, text=True
    ).stdout.strip()
    lines = [
        "# Column-lineage view benchmark",
        "",
        (f"`benchmarks/ui/run.py` at {_git_head()}, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; "
        f"{platform.node() or 'host'}: {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"Airflow {airflow.__version__}, {chromium_version} headless; SQLite metadata DB; "
        "other engineers' jobs may have been running on the same 2 cores."),
        "",
        (f"API: median of {args.repeats} `GET .../graph` through Airflow's app (auth, DB read, JSON decode, "
        "stitch, response) after 3 warm-ups. Page: median of "
        f"{args.page_repeats} loads; *layout* = dagre, *draw* = SVG build (the page's own timers), "
        "*to ready* = from navigation start to the drawn graph (page load, API fetch, layout, draw). Click = "
        "a column click until its path is highlighted (API round trip + highlight, the page's timer), median of 3."),
        "",
        ("| graph | datasets | columns | column edges | dataset edges | JSON | API run graph | page layout + draw "
        "| layout | draw | to ready | collapsed boxes | click -> path |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['label']} ({r['tasks']} tasks) | {r['datasets']} | {r['columns']} | {r['edges']} | "
            f"{r['dataset_edges']} | {r['bytes'] / 1024:.0f} KiB | {statistics.median(r['api']):.1f} ms | "
            f"{statistics.median(r['layout_draw']):.0f} ms | {statistics.median(r['layout']):.0f} ms | "
            f"{statistics.median(r['draw']):.0f} ms | {statistics.median(r['to_ready']):.0f} ms | "
            f"{r['collapsed']} of {r['datasets']} | {statistics.median(r['click']):.0f} ms |")
    small, big = rows[0], rows[-1]
    lines += [
        "",
        "Targets (issue 23):",
        "",
        (
            f"* run graph of a 10-task run with 200 columns and 500 edges answered < 200 ms (median): "
            f"**{statistics.median(small['api']):.1f} ms** "
            f"({'met' if statistics.median(small['api']) < 200 else 'MISSED'});"
        ),
        (
            f"* that graph laid out + drawn < 1 s in headless Chromium: "
            f"**{statistics.median(small['layout_draw']):.0f} ms** "
            f"({statistics.median(small['to_ready']):.0f} ms from navigation start) "
            f"({'met' if statistics.median(small['layout_draw']) < 1000 else 'MISSED'});"
        ),
        (
            f"* 2,000 columns usable with collapsed boxes < 3 s: **{statistics.median(big['to_ready']):.0f} ms** to a "
            f"drawn "
            f"graph, {big['collapsed']} boxes collapsed, a click highlights a path in "
            f"{statistics.median(big['click']):.0f} ms "
            f"({'met' if statistics.median(big['to_ready']) < 3000 else 'MISSED'})."
        ),
        "",
    ]
    text = "\n".join(lines)
    args.report.write_text(text)
    print(text)


def _git_head() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


if __name__ == "__main__":
    raise SystemExit(main())
