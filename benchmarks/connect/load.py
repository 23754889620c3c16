"""Load on one lineage Spark Connect server (issue 47): N concurrent client sessions, each writing 3 tables in its own
capture run (as ``PySparkLineageOperator`` does over Connect), against ``python -m airflow_provider_lineage.
connect_server`` on loopback (``local[2]``).

Figures:

* attribution: writes whose record is in their own run (must be all), in another run or an untagged folder
  (misattributed, must be 0), nowhere (lost, must be 0); statuses written (one per run);
* memory: the server's JVM heap in use after a full GC (``jcmd GC.run`` + ``GC.heap_info``) and the driver's Python
  RSS, at baseline (after one warm-up session) and after every session closed; the capture's own state
  (``kill -USR1``: open runs, live sessions, executions in flight), which must be back to 0;
* drops: a second, smaller phase on a server whose capture queue in Spark's listener bus holds 1 event
  (``spark.scheduler.listenerbus.eventqueue.airflowLineage.capacity=1``): Spark drops events, and every run that
  misses a write must say so in its status (``silent losses`` must be 0).

Usage: ``python benchmarks/connect/load.py [--sessions 100] [--tables 3] [--drop-sessions 10]``. Prints the figures,
writes ``benchmarks/connect/REPORT.md`` and ``REPORT.json`` (with ``uptime``: the machine may be shared). Exits 1
when a write is misattributed or lost, or a loss is silent.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))


def _jvm_pid(pgid: int) -> int | None:
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmd = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and b"java" in cmd.split(b"\0", 1)[0]:
            return int(proc.name)
    return None


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _heap_after_gc_mb(jvm: int) -> float:
    """The JVM heap in use after a full GC (G1: ``garbage-first heap total ..., used NK``)."""
    subprocess.run(["jcmd", str(jvm), "GC.run"], check=True, capture_output=True, timeout=120)
    out = subprocess.run(["jcmd", str(jvm), "GC.heap_info"], check=True, capture_output=True, text=True,
                         timeout=120).stdout
    m = re.search(r"used (\d+)K", out)
    return int(m.group(1)) / 1024 if m else float("nan")


def _histogram(jvm: int) -> dict[str, int]:
    """Bytes per class in the JVM heap (``jcmd GC.class_histogram``: live objects, after a full GC)."""
    out = subprocess.run(["jcmd", str(jvm), "GC.class_histogram"], check=True, capture_output=True, text=True,
                         timeout=300).stdout
    sizes: dict[str, int] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0].endswith(":") and parts[2].isdigit():
            sizes[parts[3]] = sizes.get(parts[3], 0) + int(parts[2])
    return sizes


def _growth(before: dict[str, int], after: dict[str, int], top: int = 8) -> list[tuple[str, float]]:
    grown = sorted(((after.get(k, 0) - before.get(k, 0), k) for k in set(before) | set(after)), reverse=True)
    return [(k, round(d / 1024 / 1024, 2)) for d, k in grown[:top]]


def _state(server: Any) -> dict[str, int]:
    from tests.support.connect_load import capture_state

    before = server.log_text().count("capture state: ")
    os.kill(server.proc.pid, signal.SIGUSR1)
    deadline = time.monotonic() + 30
    while server.log_text().count("capture state: ") == before and time.monotonic() < deadline:
        time.sleep(0.2)
    return capture_state(server.log_text())


def _memory(server: Any) -> dict[str, float]:
    jvm = _jvm_pid(server.proc.pid)
    return {"jvm_heap_used_after_gc_mb": round(_heap_after_gc_mb(jvm), 1) if jvm else float("nan"),
            "driver_python_rss_mb": round(_rss_mb(server.proc.pid), 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--tables", type=int, default=3)
    parser.add_argument("--drop-sessions", type=int, default=10, help="sessions of the drop phase (0: skip it)")
    args = parser.parse_args(argv)

    from tests.support.connect import connect_server
    from tests.support.connect_load import run_sessions

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    report: dict[str, Any] = {
        "sessions": args.sessions,
        "tables": args.tables,
        "uptime": subprocess.run(["uptime"], check=False, capture_output=True, text=True).stdout.strip(),
    }
    with tempfile.TemporaryDirectory(prefix="apl-connect-load-") as tmp:
        base = Path(tmp)
        with connect_server(base / "server") as server:
            warm = run_sessions(server.url, server.capture_dir, base / "warm", sessions=1, tables=1)
            assert warm.attributed == 1, warm
            baseline = {**_memory(server), "capture_state": _state(server)}
            jvm = _jvm_pid(server.proc.pid)
            hist0 = _histogram(jvm) if jvm else {}
            load = run_sessions(server.url, server.capture_dir, base / "data", sessions=args.sessions,
                                tables=args.tables)
            time.sleep(5)  # the last session-closed events
            after = {**_memory(server), "capture_state": _state(server)}
            hist1 = _histogram(jvm) if jvm else {}
            # the same load again: what Spark keeps per execution is bounded (spark.sql.ui.retainedExecutions...),
            # a leak would grow again by as much
            again = run_sessions(server.url, server.capture_dir, base / "data2", sessions=args.sessions,
                                 tables=args.tables)
            time.sleep(5)
            after2 = {**_memory(server), "capture_state": _state(server)}
            hist2 = _histogram(jvm) if jvm else {}
            report["load"] = {**load.as_dict(), "client_errors": load.client_errors[:10]}
            report["load_again"] = {**again.as_dict(), "client_errors": again.client_errors[:10]}
            report["memory"] = {"baseline": baseline, "after_sessions_closed": after, "after_second_round": after2,
                                "heap_growth_by_class_mb_round_1": _growth(hist0, hist1),
                                "heap_growth_by_class_mb_round_2": _growth(hist1, hist2)}
        if args.drop_sessions:
            queue = "spark.scheduler.listenerbus.eventqueue.airflowLineage.capacity"
            with connect_server(base / "drops", conf={queue: "1"}) as server:
                drops = run_sessions(server.url, server.capture_dir, base / "drops-data",
                                     sessions=args.drop_sessions, tables=args.tables, status_timeout=120)
                spark_log = server.log_text().count("Dropping event from queue airflowLineage")
            report["drops"] = {**drops.as_dict(), "client_errors": drops.client_errors[:10], "queue_capacity": 1,
                               "spark_logged_dropping": spark_log}

    load = report["load"]
    mem = report["memory"]
    print(f"{args.sessions} sessions x {args.tables} tables in {load['seconds']:.1f} s ({report['uptime']})")
    print(f"  writes in their own run {load['attributed']}/{args.sessions * args.tables}, misattributed "
          f"{load['misattributed']}, lost {load['lost']}; statuses {load['statuses']}/{args.sessions}; "
          f"untagged folders {load['untagged_folders']}; client errors {len(load['client_errors'])}")
    print(f"  JVM heap after GC {mem['baseline']['jvm_heap_used_after_gc_mb']} MB -> "
          f"{mem['after_sessions_closed']['jvm_heap_used_after_gc_mb']} MB; driver RSS "
          f"{mem['baseline']['driver_python_rss_mb']} -> {mem['after_sessions_closed']['driver_python_rss_mb']} MB; "
          f"capture state after {mem['after_sessions_closed']['capture_state']}")
    again = report["load_again"]
    print(f"  the same load again: own run {again['attributed']}, misattributed {again['misattributed']}, lost "
          f"{again['lost']}; JVM heap after GC {mem['after_second_round']['jvm_heap_used_after_gc_mb']} MB; "
          f"capture state {mem['after_second_round']['capture_state']}")
    print(f"  heap growth by class, round 1 (MB): {mem['heap_growth_by_class_mb_round_1'][:5]}")
    print(f"  heap growth by class, round 2 (MB): {mem['heap_growth_by_class_mb_round_2'][:5]}")
    if "drops" in report:
        d = report["drops"]
        print(f"  drop phase (Spark queue capacity 1, {d['sessions']} sessions): runs reporting drops "
              f"{d['runs_reporting_drops']}, events reported dropped {d['dropped_reported']}, writes lost "
              f"{d['lost']}, silent losses {d['silent_losses']}, misattributed {d['misattributed']}")
    (HERE / "REPORT.json").write_text(json.dumps(report, indent=2) + "\n")
    _write_markdown(report)
    bad = load["misattributed"] or load["lost"] or load["statuses"] != args.sessions
    bad = bad or again["misattributed"] or again["lost"] or again["statuses"] != args.sessions
    if "drops" in report:
        bad = bad or report["drops"]["silent_losses"] or report["drops"]["misattributed"]
    return 1 if bad else 0


def _write_markdown(report: dict[str, Any]) -> None:
    load, mem = report["load"], report["memory"]
    b, a = mem["baseline"], mem["after_sessions_closed"]
    lines = [
        "# Lineage Connect server under load (benchmarks/connect/load.py)",
        "",
        f"Machine: `{report['uptime']}` (shared); server `local[2]` on loopback.",
        "",
        f"## {report['sessions']} concurrent sessions x {report['tables']} tables, each in its own run",
        "",
        "| figure | value |",
        "|---|---|",
        f"| wall time | {load['seconds']:.1f} s |",
        f"| writes in their own run | {load['attributed']} / {report['sessions'] * report['tables']} |",
        f"| misattributed | {load['misattributed']} |",
        f"| lost | {load['lost']} |",
        f"| statuses written | {load['statuses']} / {report['sessions']} |",
        f"| untagged folders | {load['untagged_folders']} |",
        f"| client errors | {len(load['client_errors'])} |",
        (f"| JVM heap in use after full GC: baseline -> after the sessions closed | "
         f"{b['jvm_heap_used_after_gc_mb']} MB -> {a['jvm_heap_used_after_gc_mb']} MB |"),
        f"| driver Python RSS: baseline -> after | {b['driver_python_rss_mb']} MB -> {a['driver_python_rss_mb']} MB |",
        f"| capture state after (open runs, sessions, executions...) | `{a['capture_state']}` |",
        (f"| the same load again: own run / misattributed / lost | {report['load_again']['attributed']} / "
         f"{report['load_again']['misattributed']} / {report['load_again']['lost']} |"),
        (f"| JVM heap in use after full GC after the second round | "
         f"{mem['after_second_round']['jvm_heap_used_after_gc_mb']} MB |"),
        f"| capture state after the second round | `{mem['after_second_round']['capture_state']}` |",
        f"| heap growth by class, round 1 (MB) | {mem['heap_growth_by_class_mb_round_1'][:6]} |",
        f"| heap growth by class, round 2 (MB) | {mem['heap_growth_by_class_mb_round_2'][:6]} |",
        f"| events dropped reported in statuses | {load['dropped_reported']} |",
    ]
    if "drops" in report:
        d = report["drops"]
        lines += [
            "",
            f"## Drops counted: {d['sessions']} sessions on a server whose Spark listener queue holds 1 event",
            "",
            "| figure | value |",
            "|---|---|",
            f"| runs whose status reports dropped events | {d['runs_reporting_drops']} / {d['sessions']} |",
            (f"| events reported dropped (sum over runs: a drop counts in every run open at the time) | "
             f"{d['dropped_reported']} |"),
            f"| writes lost | {d['lost']} |",
            f"| runs that lost a write without reporting drops (silent losses) | {d['silent_losses']} |",
            f"| misattributed | {d['misattributed']} |",
        ]
    (HERE / "REPORT.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
