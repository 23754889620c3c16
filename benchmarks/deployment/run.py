"""Deployment benchmark: the example DAGs under the real scheduler, next to ``airflow dags test``, and the
triggerer's event-loop block per trigger start.

    python benchmarks/deployment/run.py [--out benchmarks/deployment/REPORT.md]

1. Starts the processes ``./dev.sh up`` starts (:class:`dev.deploy.AirflowDeployment`, temp
   ``AIRFLOW_HOME``, SQLite, LocalExecutor) and, through the REST API: triggers ``lineage_etl`` twice
   and measures trigger -> last lineage event (the last event line of the run in the events file)
   and trigger -> run end; then triggers ``sieve_maintenance`` with the demo's ``external_write``
   (so its sensor finds work at once) and measures trigger -> run end. Counts the triggerer's
   "async thread was blocked" warnings over the whole session.
2. Stops them and runs the same DAGs with ``airflow dags test`` on the same home (same data, one day
   more), timing each command.
3. Trigger start: in a fresh interpreter per sample, an asyncio loop with the triggerer's watchdog
   (sleep 0.1 s, report the overrun) imports the trigger's module and runs the trigger's first
   check, as the triggerer does when a sensor defers; the worst loop stall is the block time. The
   same with the index package imported on the loop (what the trigger module did before) for comparison.

Figures depend on the machine's load (2 shared cores here): the report records the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from dev.deploy import AirflowDeployment

BLOCK_PROBE = r'''
import asyncio, json, sys, time
sys.path.insert(0, sys.argv[1])
mode, table = sys.argv[2], sys.argv[3]
import airflow.triggers.base  # noqa: F401 - loaded in the triggerer before any trigger starts

async def watchdog(stalls):
    while True:
        t = time.monotonic()
        await asyncio.sleep(0.1)
        stalls.append(time.monotonic() - t - 0.1)

async def main():
    stalls = []
    dog = asyncio.create_task(watchdog(stalls))
    await asyncio.sleep(0.3)
    stalls.clear()
    t0 = time.monotonic()
    if mode == "floor":  # no trigger: a thread that sleeps (the loop's stalls from the machine's load alone)
        await asyncio.to_thread(time.sleep, 0.5)
        t1 = time.monotonic()
        await asyncio.sleep(0.25)
        dog.cancel()
        print(json.dumps({"max_stall": max(stalls or [0.0]), "seconds": t1 - t0, "event": "none"}))
        return
    if mode == "old":  # the trigger module imported the index package at module level (on the loop)
        import airflow_provider_lineage.sieve.maintain  # noqa: F401
    if mode == "thread":  # the index package imported in a worker thread (asyncio.to_thread)
        import importlib
        await asyncio.to_thread(importlib.import_module, "airflow_provider_lineage.sieve.maintain")
    from airflow_provider_lineage.triggers.sieve import SieveMaintenanceTrigger
    trig = SieveMaintenanceTrigger(indexes=[{"table": table, "column": "k"}], poke_interval=0.05,
                                   deadline=time.time() + 0.3)
    async for event in trig.run():
        break
    t1 = time.monotonic()
    await asyncio.sleep(0.25)
    dog.cancel()
    print(json.dumps({"max_stall": max(stalls or [0.0]), "seconds": t1 - t0, "event": event.payload["status"]}))

asyncio.run(main())
'''


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def _epoch(iso: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(iso).timestamp()


def real_deployment(home: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"lineage_etl": [], "sieve_maintenance": []}
    t0 = time.monotonic()
    with AirflowDeployment(home) as dep:
        out["start_seconds"] = round(time.monotonic() - t0, 1)
        for _ in range(2):
            mark = len(_events(dep.events_path))
            t_trigger = time.time()
            run_id = dep.trigger("lineage_etl")
            state = dep.wait_run("lineage_etl", run_id, timeout=900)
            with dep.client() as c:
                run = c.get(f"/api/v2/dags/lineage_etl/dagRuns/{run_id}").json()
            new = [e for e in _events(dep.events_path)[mark:] if e["job"]["name"].startswith("lineage_etl.")]
            last_event = max(_epoch(e["eventTime"]) for e in new) if new else None
            out["lineage_etl"].append({
                "state": state, "events": len(new),
                "trigger_to_last_event_s": round(last_event - t_trigger, 1) if last_event else None,
                "trigger_to_run_end_s": round(_epoch(run["end_date"]) - t_trigger, 1)})
            print("lineage_etl", out["lineage_etl"][-1], flush=True)
        t_trigger = time.time()
        run_id = dep.trigger("sieve_maintenance", {"external_write": True})
        state = dep.wait_run("sieve_maintenance", run_id, timeout=900)
        with dep.client() as c:
            run = c.get(f"/api/v2/dags/sieve_maintenance/dagRuns/{run_id}").json()
        out["sieve_maintenance"].append({"state": state,
                                         "trigger_to_run_end_s": round(_epoch(run["end_date"]) - t_trigger, 1)})
        print("sieve_maintenance", out["sieve_maintenance"][-1], flush=True)
        out["triggerer_block_warnings"] = sum(
            "async thread was blocked" in x for x in dep.log("triggerer").splitlines()
        )
        env = dict(dep.env)
    out["dags_test"] = {}
    for dag_id, conf in (("lineage_etl", None), ("sieve_maintenance", {"external_write": True})):
        cmd = [sys.executable, "-m", "airflow", "dags", "test", dag_id]
        if conf:
            cmd += ["-c", json.dumps(conf)]
        t = time.monotonic()
        res = subprocess.run(cmd, env=env, cwd=home, capture_output=True, text=True, check=False)
        out["dags_test"][dag_id] = {"seconds": round(time.monotonic() - t, 1), "exit": res.returncode}
        print("dags test", dag_id, out["dags_test"][dag_id], flush=True)
    return out


def trigger_blocks(samples: int) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = Path(tempfile.mkdtemp(prefix="apl-bench-trigger-")) / "t"
    table.mkdir()
    for i in range(20):
        pq.write_table(pa.table({"k": list(range(i * 10, i * 10 + 10))}), table / f"p{i}.parquet")
    res: dict[str, Any] = {}
    for mode in ("floor", "new", "thread", "old"):
        runs = []
        for _ in range(samples):
            p = subprocess.run([sys.executable, "-c", BLOCK_PROBE, str(ROOT), mode, str(table)],
                               capture_output=True, text=True, check=True)
            runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
        stalls = [r["max_stall"] for r in runs]
        res[mode] = {"median_block_s": round(statistics.median(stalls), 3), "max_block_s": round(max(stalls), 3),
                     "samples": samples, "events": sorted({r["event"] for r in runs})}
        print("trigger start", mode, res[mode], flush=True)
    return res


def report(result: dict[str, Any]) -> str:
    r = result["real"]
    lines = [
        "# Deployment benchmark (`benchmarks/deployment/run.py`)",
        "",
        (f"Run {result['when']} at {result['commit']}; load average before: {result['load_before']}, after: "
        f"{result['load_after']} (2 cores, shared with other work: absolute times move with the load)."),
        "",
        (f"## Real processes (api-server, scheduler + LocalExecutor, dag-processor, triggerer; SQLite); "
        f"started and healthy in {r['start_seconds']} s"),
        "",
        "| run | state | trigger -> last lineage event | trigger -> run end |",
        "|---|---|---|---|",
    ]
    for i, x in enumerate(r["lineage_etl"], 1):
        lines.append(f"| lineage_etl #{i} | {x['state']} | {x['trigger_to_last_event_s']} s ({x['events']} events) "
                     f"| {x['trigger_to_run_end_s']} s |")
    for x in r["sieve_maintenance"]:
        lines.append(f"| sieve_maintenance (external_write demo: work found at the first check) | {x['state']} | - "
                     f"| {x['trigger_to_run_end_s']} s |")
    lines += ["", "## The same DAGs with `airflow dags test` (one process, same home)", "",
              "| DAG | seconds | exit |", "|---|---|---|"]
    for dag_id, x in r["dags_test"].items():
        lines.append(f"| {dag_id} | {x['seconds']} | {x['exit']} |")
    b = result["blocks"]
    lines += ["", "## Triggerer event loop blocked per trigger start",
              "",
              ("Worst stall of an asyncio loop (the triggerer's 0.1 s watchdog) while the trigger module is imported "
              "and its first check runs, fresh interpreter per sample; Airflow warns above 0.2 s."),
              "",
              "| trigger module | median block | max block | samples |", "|---|---|---|---|",
              (f"| now (checks in a child process) | {b['new']['median_block_s']} s | "
               f"{b['new']['max_block_s']} s | {b['new']['samples']} |"),
              (f"| index package imported in a thread (asyncio.to_thread) | {b['thread']['median_block_s']} s | "
               f"{b['thread']['max_block_s']} s | {b['thread']['samples']} |"),
              (f"| before (index package imported on the loop) | {b['old']['median_block_s']} s | "
               f"{b['old']['max_block_s']} s | {b['old']['samples']} |"),
              (f"| no trigger: a thread that sleeps (the load's floor) | {b['floor']['median_block_s']} s | "
               f"{b['floor']['max_block_s']} s | {b['floor']['samples']} |"),
              "",
              (f"The real triggerer logged {r['triggerer_block_warnings']} \"async thread was blocked\" warnings "
              "over the session above."), ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(Path(__file__).with_name("REPORT.md")))
    parser.add_argument("--samples", type=int, default=5, help="trigger-start samples per variant")
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=False).stdout.strip()
    result: dict[str, Any] = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit,
                              "load_before": " ".join(f"{x:.1f}" for x in os.getloadavg())}
    result["blocks"] = trigger_blocks(args.samples)
    with tempfile.TemporaryDirectory(prefix="apl-bench-deploy-") as home:
        result["real"] = real_deployment(Path(home))
    result["load_after"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    text = report(result)
    print(text)
    Path(args.out).write_text(text)
    Path(args.out).with_suffix(".json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
