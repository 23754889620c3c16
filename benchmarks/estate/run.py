"""Estate index benchmark: ``./dev.sh bench estate [-- --sizes small,medium,large --db sqlite,postgres]``.

Synthetic estates at three sizes (up to 2,000 DAGs, 20,000 datasets, 200,000 distinct column edges and
100,000 task records over 90 days) are written through the index's own path
(:func:`airflow_provider_lineage.plugins.estate.ingest.ingest`, one call per finished task run), on SQLite
(a file) and PostgreSQL (a throw-away server from ``dev/deploy.py``). Each DAG has one Spark task that
writes ``datasets / dags`` tables of 10 columns, each column read from a column of a table an earlier DAG
writes (so lineage chains across DAGs); every 25th run of a task changes one edge (new lineage version).
Then it times, median of several runs, caches cleared:

* index update per finished task (a repeated lineage, and a new one), target < 50 ms;
* search (a column name substring), target < 200 ms;
* 5-hop downstream column impact, target < 300 ms;
* time-travel graph (a column, 2 hops each way, as of a random instant), target < 500 ms;
* page data (the page's first request: a column, 1 hop, now, JSON encoded), target < 1.5 s for the
  page drawn (the browser's own drawing time of such a graph is logged by the browser test).

With ``--page`` (on by default when Chromium and chromedriver are installed; ``--no-page`` skips it; a
missing browser is skipped with the reason printed), each SQLite size is then opened in headless Chromium:
the plugin's REAL FastAPI app (:func:`airflow_provider_lineage.plugins.api.create_app`: the estate page
``estate.html`` + ``estate.js`` + ``guard-estate.js`` + vendored dagre with their relative URLs, and the estate
API of ``plugins/estate/api.py``) mounted under the plugin prefix on the benchmark's DB, served by uvicorn
(a child process in its own process group) on a free loopback port. Airflow's user and session dependencies
are overridden (an admin; a session on the benchmark DB) and the auth manager is a stand-in whose admin may
read every DAG of the estate. The index's catch-up with XCom is switched off in that server (the estate was
loaded into the index directly); Airflow's own DB connection is the benchmark DB, with empty ``variable``
and ``xcom`` tables, so that the page's other request (``api/tags/unmasked``) answers as in a deployment. The page is
opened from a column at depth 1 and
depth 3 (``?namespace=&name=&column=&depth=``, a table of the first tenth of the DAGs) and its own timings are read:
``window.estate.timings``
``fetchMs`` (the graph request), ``drawMs`` (layout + SVG) and ``readyMs`` (navigation start until
``body[data-state=ready]``), medians of ``--page-repeats`` loads, target < 1.5 s for ``readyMs``.

Prints the figures and writes ``benchmarks/estate/REPORT.md`` (with ``uptime``: the machine is shared).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

SIZES = {
    "small": {"dags": 100, "datasets": 1_000, "edges": 10_000, "records": 5_000},
    "medium": {"dags": 500, "datasets": 5_000, "edges": 50_000, "records": 25_000},
    "large": {"dags": 2_000, "datasets": 20_000, "edges": 200_000, "records": 100_000},
}
TARGETS = {"update_ms": 50, "search_ms": 200, "impact5_ms": 300, "as_of_graph_ms": 500, "page_ms": 1500}
T0 = datetime(2026, 1, 1, tzinfo=UTC)
NS = "s3://lake"


class Estate:
    """The synthetic estate of one size: DAG j writes tables [j*k, (j+1)*k), 10 columns each."""

    def __init__(self, dags: int, datasets: int, edges: int, records: int, seed: int = 7) -> None:
        self.dags, self.datasets, self.records = dags, datasets, records
        self.per_dag = datasets // dags
        self.cols = max(1, edges // datasets)
        self.runs = max(1, records // dags)
        rnd = random.Random(seed)
        # each table's source table: one written by an earlier DAG (or a landing table for DAG 0)
        self.source = [rnd.randrange(0, (t // self.per_dag) * self.per_dag) if t >= self.per_dag else -1 - t
                       for t in range(datasets)]

    def name(self, t: int) -> str:
        return f"landing/raw_{-t - 1}" if t < 0 else f"warehouse/d{t // self.per_dag}/table_{t}"

    def record(self, dag: int, version: int) -> dict[str, Any]:
        from airflow_provider_lineage.lineage import run_record

        names: list[str] = []

        def at(t: int) -> int:
            n = self.name(t)
            if n not in names:
                names.append(n)
            return names.index(n)

        edges = []
        for t in range(dag * self.per_dag, (dag + 1) * self.per_dag):
            src = self.source[t]
            for c in range(self.cols):
                sc = (c + version) % self.cols if c == 0 else c  # a new version re-wires column 0
                edges.append([at(t), f"col_{c}", at(src), f"col_{sc}", "DIRECT",
                              "IDENTITY" if c % 3 else "TRANSFORMATION", int(c == 4)])
        outputs = sorted({e[0] for e in edges})
        inputs = sorted({e[2] for e in edges})
        datasets = [{"namespace": NS, "name": n, "table": None,
                     "fields": [[f"col_{c}", "string"] for c in range(self.cols)]} for n in names]
        return {"format": run_record.FORMAT, "version": 1, "status": "ok", "job": {"namespace": "b", "name": f"j{dag}"},
                "run_id": "x", "emission": "bench", "datasets": datasets, "inputs": inputs, "outputs": outputs,
                "edges": edges, "dataset_edges": [], "problems": [], "truncated": None}


def _time(fn: Any, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


def measure(url: str, size: str, quick: bool, bulk: bool = True) -> dict[str, Any]:
    from sqlalchemy import create_engine, func, select
    from sqlalchemy.orm import Session

    from airflow_provider_lineage.plugins.estate import index, ingest, query
    from airflow_provider_lineage.plugins.estate import schema as s

    spec = SIZES[size]
    est = Estate(**spec)
    engine = create_engine(url)
    s.metadata.drop_all(engine)
    index._ready.clear()
    span = timedelta(days=90)
    rnd = random.Random(1)
    load_t = time.perf_counter()
    with Session(engine) as session:
        index.ensure_schema(session)
        datasets = ingest.Datasets(session)
        runs = [(dag, r) for r in range(est.runs) for dag in range(est.dags)]
        cache: dict[tuple[int, int], dict[str, Any]] = {}
        refs: dict[tuple[int, int], int] = {}
        batch: list[dict[str, Any]] = []
        if bulk:  # every dataset row at once (the per-record path inserts the new ones one by one)
            names = [est.name(t) for t in range(-est.per_dag, est.datasets)]
            for i in range(0, len(names), 5000):
                session.execute(s.dataset.insert(), [{"namespace": NS, "name": n, "table_name": None}
                                                     for n in names[i:i + 5000]])
            session.commit()
            datasets.ids = {(r.namespace, r.name): r.id for r in session.execute(
                select(s.dataset.c.id, s.dataset.c.namespace, s.dataset.c.name))}
        for i, (dag, r) in enumerate(runs):
            version = r // 25
            rec = cache.get((dag, version))
            if rec is None:
                rec = cache[(dag, version)] = est.record(dag, version)
                cache.pop((dag, version - 1), None)
            end = T0 + span * (i + 1) / len(runs)
            state = "success" if rnd.random() > 0.05 else "failed"
            kw = {"dag_run_id": i, "dag_id": f"dag_{dag:04d}", "task_id": "spark", "run_id": f"r{r}",
                  "map_index": -1, "state": state, "start_date": end - timedelta(minutes=5), "end_date": end,
                  "xcom_ts": end}
            if not bulk:
                ingest.ingest(session, record=rec, datasets=datasets, **kw)
                if i % 500 == 499:
                    session.commit()
                continue
            # bulk: each lineage version stored once through the index's own code, the task runs in batches
            ref = refs.get((dag, version))
            if ref is None:
                ref = refs[(dag, version)] = ingest.edge_set(session, rec, datasets)
            batch.append({**kw, "set_ref": ref, "status": "ok", "job": f"b/j{dag}", "owner": None, "note": None})
            if len(batch) >= 5000:
                session.execute(s.task_run.insert(), batch)
                session.commit()
                batch = []
        if batch:
            session.execute(s.task_run.insert(), batch)
        session.commit()
    load_s = time.perf_counter() - load_t
    with Session(engine) as session:
        counts = {t.name.replace(s.PREFIX, ""): session.scalar(select(func.count()).select_from(t))
                  for t in (s.task_run, s.edge_set, s.edge, s.dataset, s.field, s.set_field)}
        rep = 5 if quick else 15
        # index update: a repeated lineage (the common case) and a new one, committed
        upd_same, upd_new = [], []
        for k in range(rep):
            dag = rnd.randrange(est.dags)
            for new, acc in ((False, upd_same), (True, upd_new)):
                rec = est.record(dag, 1000 + k if new else 0)
                t = time.perf_counter()
                ingest.ingest(session, dag_run_id=10_000_000 + 2 * k + new, dag_id=f"dag_{dag:04d}", task_id="spark",
                             run_id=f"bench{k}{new}", map_index=-1, record=rec, state="success",
                             end_date=T0 + span + timedelta(seconds=k), xcom_ts=T0 + span)
                session.commit()
                acc.append((time.perf_counter() - t) * 1000)
        late = est.dags // 2
        # as the API asks: with the DAG ids the user may read (an admin: all of them)
        everyone = {f"dag_{d:04d}" for d in range(est.dags)}

        # paging on, as the API asks (issue 37): search 50 hits a page (and the second page), impact the
        # first page of 1,000 rows (of at most IMPACT_MAX_NODES reached), graphs cut at 2,000 column edges
        from airflow_provider_lineage.plugins.estate import api as estate_api

        def search() -> None:
            assert query.search(session, f"table_{rnd.randrange(est.datasets)}", limit=50, readable=everyone)

        def search_page2() -> None:
            query.search(session, "col_", limit=50, offset=50, readable=everyone)

        def impact() -> None:
            t = rnd.randrange(est.per_dag * 2)  # an early table: long chains downstream
            query.impact(session, NS, est.name(t), "col_1", depth=5, readable=everyone, limit=estate_api.IMPACT_LIMIT)

        def as_of_graph() -> None:
            t = rnd.randrange(late * est.per_dag, est.datasets)
            query.graph(session, [(NS, est.name(t), "col_2")], depth=2, readable=everyone,
                        as_of=T0 + timedelta(days=rnd.uniform(30, 90)), limit=query.GRAPH_DEFAULT_EDGES)

        def page() -> None:
            t = rnd.randrange(late * est.per_dag, est.datasets)
            json.dumps(query.graph(session, [(NS, est.name(t), "col_2")], depth=1, readable=everyone,
                                   limit=query.GRAPH_DEFAULT_EDGES))

        def whole_dataset_impact() -> None:  # the biggest answer: every column of an early table, 10 hops
            t = rnd.randrange(est.per_dag * 2)
            query.impact(session, NS, est.name(t), "", depth=10, readable=everyone, limit=estate_api.IMPACT_LIMIT)

        # lineage as a guard: the tag map the scheduler publishes after each DAG run (docs/guard.md), with
        # `pii` declared on one column of every landing table: it follows every chain of the estate
        from airflow_provider_lineage.plugins.guard import estate as guard_estate

        declared = {(NS, est.name(-1 - k)): {"col_1": ["pii"]} for k in range(est.per_dag)}

        def tag_map() -> None:
            assert guard_estate.tag_map(session, declared, ["pii"]) is not None

        deep = query.impact(session, NS, est.name(0), "col_1", depth=5)
        wide = query.impact(session, NS, est.name(0), "", depth=10, limit=1000)
        figures = {
            "update_ms": statistics.median(upd_same), "update_new_ms": statistics.median(upd_new),
            "search_ms": _time(search, rep), "search_page2_ms": _time(search_page2, rep),
            "impact5_ms": _time(impact, rep), "impact_wide_ms": _time(whole_dataset_impact, min(rep, 5)),
            "as_of_graph_ms": _time(as_of_graph, rep), "page_ms": _time(page, rep),
            "tag_map_ms": _time(tag_map, min(rep, 3)),
        }
    engine.dispose()
    return {"size": size, **spec, "load_s": load_s, "rows": counts, "impact_rows_example": len(deep["rows"]),
            "impact_wide_total": wide["total"], "impact_wide_truncated": wide["truncated"],
            **figures}


def _page_server(url: str, dags: int, port: int) -> None:
    """Serve the plugin's app on ``url`` (a child process of :func:`measure_page`; runs until killed)."""
    import uvicorn
    from airflow.api_fastapi import app as api_app
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from airflow.api_fastapi.common.db.common import _get_session
    from airflow.api_fastapi.core_api.security import get_user
    from fastapi import FastAPI
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    from airflow_provider_lineage.plugins import api as plugin_api
    from airflow_provider_lineage.plugins.estate import index

    engine = create_engine(url)
    every = [f"dag_{d:04d}" for d in range(dags)]
    # the page's other request (guard-estate.js: api/tags/unmasked) reads the tag Variable through Airflow's own
    # DB (SQL_ALCHEMY_CONN = this DB, set by measure_page) and may fall back to XCom: both tables, empty
    from airflow.models.variable import Variable
    from airflow.models.xcom import XComModel

    for table in (Variable.__table__, XComModel.__table__):
        table.create(engine, checkfirst=True)

    class EveryDag:
        """Auth manager stand-in: the admin may read every DAG of the estate."""

        def get_authorized_dag_ids(self, **_: Any) -> set[str]:
            return set(every)

    api_app._AuthManagerState.instance = EveryDag()  # type: ignore[assignment]
    index.SYNC_INTERVAL = float("inf")  # no XCom in the benchmark DB: the index was loaded directly

    def session() -> Any:
        with Session(engine) as s:
            yield s

    plugin = plugin_api.create_app()
    plugin.dependency_overrides[get_user] = lambda: SimpleAuthManagerUser(username="admin", role="admin")
    plugin.dependency_overrides[_get_session] = session
    root = FastAPI()
    root.mount(plugin_api.URL_PREFIX, plugin)
    uvicorn.run(root, host="127.0.0.1", port=port, log_level="warning")


def measure_page(url: str, size: str, repeats: int) -> dict[str, Any]:
    """Open the estate page of the DB at ``url`` in headless Chromium from a column at depth 1 and 3."""
    import socket
    import urllib.request
    from urllib.parse import urlencode

    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    from tests.support.browser import chromium_paths, wait_state

    est = Estate(**SIZES[size])
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}/column-lineage"
    server = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve-page", url,
                               "--serve-dags", str(est.dags), "--serve-port", str(port)],
                              start_new_session=True, stdout=subprocess.DEVNULL,
                              env={**os.environ, "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": url})
    driver = None
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(base + "/static/icon.svg", timeout=5).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the page server did not start (exit code {server.poll()})") from None
                time.sleep(0.2)
        browser, chromedriver = chromium_paths()
        os.environ.setdefault("SE_OFFLINE", "true")
        opts = Options()
        opts.binary_location = browser
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                    "--window-size=1440,900", "--hide-scrollbars", "--force-device-scale-factor=1"):
            opts.add_argument(arg)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        service = Service(executable_path=chromedriver, popen_kw={"start_new_session": True})
        driver = webdriver.Chrome(options=opts, service=service)
        rnd = random.Random(3)
        early = est.per_dag * max(1, est.dags // 10)  # the first tenth of the DAGs: many readers downstream
        out: dict[str, Any] = {"size": size, **SIZES[size]}
        for depth in (1, 3):
            fetch, draw, ready, shown = [], [], [], []
            for k in range(repeats + 1):  # the first load warms the server and the browser's cache: not counted
                t = rnd.randrange(early)
                q = urlencode({"namespace": NS, "name": est.name(t), "column": "col_2", "depth": depth})
                driver.get(f"{base}/estate?{q}")
                state = wait_state(driver, timeout=120)
                if state != "ready":
                    raise RuntimeError(f"estate page state {state}: " + driver.execute_script(
                        "return document.getElementById('notices').textContent"))
                tm = driver.execute_script(
                    "var g = window.estate.state.graph; return {t: window.estate.timings, "
                    "datasets: g.datasets.length, edges: g.edges.length, depth: "
                    "document.getElementById('depth').value};"
                )
                if tm["depth"] != str(depth):
                    raise RuntimeError(f"the page opened at depth {tm['depth']}, not {depth}")
                if k == 0:
                    continue
                fetch.append(tm["t"]["fetchMs"])
                draw.append(tm["t"]["drawMs"])
                ready.append(tm["t"]["readyMs"])
                shown.append((tm["datasets"], tm["edges"]))
            out[f"d{depth}_fetch_ms"] = statistics.median(fetch)
            out[f"d{depth}_draw_ms"] = statistics.median(draw)
            out[f"d{depth}_ready_ms"] = statistics.median(ready)
            out[f"d{depth}_max_ready_ms"] = max(ready)
            out[f"d{depth}_datasets"] = int(statistics.median(d for d, _ in shown))
            out[f"d{depth}_edges"] = int(statistics.median(e for _, e in shown))
        out["console_errors"] = [e.get("message", "")[:200] for e in driver.get_log("browser")
                                 if e.get("level") == "SEVERE"]
        return out
    finally:
        if driver is not None:
            pid = driver.service.process.pid if driver.service.process else None
            try:
                driver.quit()
            finally:
                if pid is not None:
                    try:
                        os.killpg(pid, signal.SIGTERM)
                    except ProcessLookupError:
                        pass
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)


def _page_skip_reason() -> str | None:
    try:
        import selenium  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is not installed (./dev.sh setup)"
    from tests.support.browser import BrowserMissing, chromium_paths

    try:
        chromium_paths()
    except BrowserMissing as exc:
        return str(exc)
    return None


def _postgres(base: Path) -> tuple[Any, subprocess.Popen[bytes]]:
    from dev.deploy import PostgresServer

    pg = PostgresServer(base, temporary=True)
    pg.init()
    proc = subprocess.Popen(pg.command(), user=pg.user, cwd=pg.base, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pg.wait_ready()
    return pg, proc


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="small,medium,large")
    p.add_argument("--db", default="sqlite,postgres")
    p.add_argument("--postgres-sizes", default=None, help="sizes on PostgreSQL (default: --sizes)")
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    p.add_argument("--one-by-one", action="store_true",
                   help="load every record through ingest.ingest (slow at the large size) instead of in bulk")
    p.add_argument("--report", default=str(HERE / "REPORT.md"))
    p.add_argument(
        "--page",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="open each SQLite size's estate page in headless Chromium (default: when Chromium is installed)",
    )
    p.add_argument("--page-repeats", type=int, default=5, help="page loads per start depth (default 5)")
    p.add_argument("--serve-page", help=argparse.SUPPRESS)
    p.add_argument("--serve-dags", type=int, help=argparse.SUPPRESS)
    p.add_argument("--serve-port", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve_page:
        _page_server(args.serve_page, args.serve_dags, args.serve_port)
        return 0
    skip = _page_skip_reason() if args.page is not False else "--no-page"
    if skip and args.page:
        p.error(f"--page: {skip}")
    if skip:
        print(f"page step skipped: {skip}", flush=True)
    pages: list[dict[str, Any]] = []
    results = []
    load = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="apl-bench-estate-"))
    tmp.chmod(0o755)
    os.environ.setdefault("AIRFLOW_HOME", str(tmp / "airflow"))  # removed with tmp at the end
    try:
        for db in args.db.split(","):
            proc = None
            if db == "postgres":
                pg, proc = _postgres(tmp / "pg")
                url = pg.url
            else:
                url = f"sqlite:///{tmp}/estate.db"
            try:
                sizes = args.postgres_sizes if db == "postgres" and args.postgres_sizes else args.sizes
                for size in sizes.split(","):
                    r = measure(url, size, args.quick, bulk=not args.one_by_one)
                    r["db"] = db
                    results.append(r)
                    print(json.dumps(r), flush=True)
                    if db == "sqlite" and not skip:
                        pg_r = measure_page(url, size, args.page_repeats)
                        pages.append(pg_r)
                        print(json.dumps(pg_r), flush=True)
            finally:
                if proc is not None:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=60)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    write_report(Path(args.report), results, load, os.getloadavg(), pages, skip)
    return 0


def page_section(pages: list[dict[str, Any]], skip: str | None, load: tuple[float, ...]) -> list[str]:
    """The "Page drawn in Chromium" section of the report."""
    lines = ["## Page drawn in Chromium", ""]
    if skip:
        return lines + [f"Not measured: {skip}.", ""]
    version = subprocess.run(["chromium", "--version"], check=False, capture_output=True, text=True).stdout.strip()
    lines += [
        (
            f"SQLite; {version} headless; the plugin's real app (`plugins/api.py` `create_app()`: the estate page, its "
            "scripts and vendored dagre under `/column-lineage/`, the estate API of `plugins/estate/api.py`) served by "
            "uvicorn on loopback, Airflow's user/session dependencies overridden (an admin who may read every DAG), "
            f"the index's XCom catch-up off. Load average (1/5/15 min) at the end: {load[0]:.1f} / {load[1]:.1f} / "
            f"{load[2]:.1f}. Opened from a column of a random table of the first tenth of the DAGs (many readers "
            f"downstream) "
            "(`?namespace=&name=&column=col_2&depth=`), medians of the loads after a first, uncounted one; "
            "`fetch`: the graph request; `draw`: layout (dagre) + SVG; `ready`: navigation start until "
            "`body[data-state=ready]` (page, scripts, request, drawing): the target is < 1.5 s."
        ),
        "",
        (
            "| size | dags | datasets | edges | records | depth | datasets shown | column edges shown | fetch ms | "
            "draw ms "
            "| ready ms (median) | ready ms (max) |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in pages:
        for d in (1, 3):
            lines.append(
                f"| {r['size']} | {r['dags']:,} | {r['datasets']:,} | {r['edges']:,} | {r['records']:,} | {d} | "
                f"{r[f'd{d}_datasets']} | {r[f'd{d}_edges']} | {r[f'd{d}_fetch_ms']:.0f} | "
                f"{r[f'd{d}_draw_ms']:.0f} | {r[f'd{d}_ready_ms']:.0f} | {r[f'd{d}_max_ready_ms']:.0f} |"
            )
    over = [f"- {r['size']} depth {d}: ready {r[f'd{d}_ready_ms']:.0f} ms > {TARGETS['page_ms']} ms"
            for r in pages for d in (1, 3) if r[f"d{d}_ready_ms"] > TARGETS["page_ms"]]
    errors = sorted({e for r in pages for e in r["console_errors"]})
    lines += ["", "Over target:"] + (over or ["- none"])
    lines += ["", "Browser console errors: " + ("; ".join(errors) if errors else "none"), ""]
    return lines


def _kept_notes(path: Path) -> list[str]:
    """The hand-written ``## Notes`` section of the report being replaced (kept across runs: it says what
    the figures mean and what earlier runs under load measured)."""
    if not path.exists():
        return []
    text = path.read_text()
    start = text.find("\n## Notes")
    if start < 0:
        return []
    end = text.find("\n## ", start + 1)
    return text[start + 1:end if end > 0 else len(text)].rstrip("\n").split("\n") + [""]


def write_report(path: Path, results: list[dict[str, Any]], before: tuple[float, ...], after: tuple[float, ...],
                 pages: list[dict[str, Any]] | None = None, skip: str | None = None) -> None:
    cols = ["db", "size", "dags", "datasets", "edges", "records", "load_s", "update_ms", "update_new_ms",
            "search_ms", "search_page2_ms", "impact5_ms", "impact_wide_ms", "impact_wide_total", "as_of_graph_ms",
            "page_ms", "tag_map_ms"]
    lines = ["# Estate index benchmark", "",
             (f"`benchmarks/estate/run.py`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. "
             f"Load average (1/5/15 min) before: {before[0]:.1f} / {before[1]:.1f} / {before[2]:.1f}, after: "
             f"{after[0]:.1f} / {after[1]:.1f} / {after[2]:.1f} on a shared 2-core machine (other engineers' "
             "tests and Spark jobs run on it too: the higher the load, the slower every figure)."), "",
             ("Targets: index update per finished task < 50 ms, search < 200 ms, 5-hop impact < 300 ms, "
              "time-travel graph < 500 ms, page < 1.5 s. Medians, milliseconds. `load_s`: seconds to load the "
              "estate (bulk: each lineage version stored once through the index's own edge-set code, the task "
              "runs inserted 5,000 at a time; `--one-by-one` loads every record through `ingest.ingest`). "
              "`update_ms` / `update_new_ms`: one finished task through `ingest.ingest` and committed, with a "
              "lineage already stored / a new one. Reads ask as the API does, with the DAG ids the user may "
              "read (here all of them). `tag_map_ms` (no target in the issue): the whole estate's column-tag "
              "map with `pii` declared on a column of every landing table, which the scheduler computes in a "
              "background thread after each DAG run and publishes for the workers (docs/guard.md)."), "",
             "| " + " | ".join(cols) + " | stored rows (task_run / edge_set / edge / dataset / field / set_field) |",
             "|" + "---|" * (len(cols) + 1)]
    for r in results:
        cells = [f"{r[c]:.1f}" if isinstance(r[c], float) else f"{r[c]:,}" if isinstance(r[c], int) else str(r[c])
                 for c in cols]
        rows = r["rows"]
        cells.append(
            " / ".join(f"{rows[k]:,}" for k in ("task_run", "edge_set", "edge", "dataset", "field", "set_field"))
        )
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Over target:"]
    over = [f"- {r['db']} {r['size']}: {k} {r[k]:.0f} ms > {v} ms" for r in results for k, v in TARGETS.items()
            if r[k] > v]
    lines += over or ["- none"]
    lines += ["", "Growth with size (ratio of the medians between two sizes):"]
    keys = ("update_ms", "search_ms", "impact5_ms", "as_of_graph_ms", "page_ms", "tag_map_ms")
    for db in sorted({r["db"] for r in results}):
        rs = [r for r in results if r["db"] == db]
        pairs = list(itertools.pairwise(rs)) + ([(rs[0], rs[-1])] if len(rs) > 2 else [])
        for a, b in pairs:
            lines.append(f"- {db} {a['size']} -> {b['size']} ({b['records'] / a['records']:.0f}x the records): "
                         + ", ".join(f"{k} x{b[k] / a[k]:.1f}" for k in keys))
    lines += [""] + _kept_notes(path) + page_section(pages or [], skip, after)
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
