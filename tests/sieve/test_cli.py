"""The CLI as a user runs it (subprocess)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from .helpers import write_file

CLI = [sys.executable, "-m", "airflow_provider_lineage.sieve"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, check=False, timeout=300,
                          env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})


def test_cli_lifecycle(tmp_path) -> None:
    root = str(tmp_path / "t")
    write_file(f"{root}/a.parquet", list(range(100)))
    write_file(f"{root}/b.parquet", list(range(1000, 1100)) + [None])
    write_file(f"{root}/c0.parquet", list(range(3000, 3100)))
    write_file(f"{root}/c1.parquet", list(range(4000, 4100)))
    assert "build" in run("--help").stdout
    r = run("build", root, "k", "--no-spark", "--mode", "mor", "--error-bound", "4")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["segments"] >= 2
    r = run("query", root, "k", "--eq", "1050")
    assert [json.loads(x) for x in r.stdout.splitlines()] == [{"file": f"{root}/b.parquet"}]
    assert run("query", root, "k", "--range", "200:900").stdout == ""
    assert json.loads(run("query", root, "k", "--is-null").stdout)["file"].endswith("b.parquet")
    write_file(f"{root}/c.parquet", [500])
    status = json.loads(run("status", root, "k").stdout)
    assert status["recommendation"] == "sync" and status["files_added"] == 1
    assert json.loads(run("sync", root, "k", "--no-spark").stdout)["deltas_written"] == 1
    assert json.loads(run("compact", root, "k").stdout)["deltas_folded"] == 1
    stats = json.loads(run("stats", root, "k").stdout)
    assert stats["deltas"] == 0 and stats["files"] == 5 and stats["version"] == 3
    assert run("query", root, "k", "--in", "500,5").stdout.count("file") == 2


def test_cli_errors_exit_2_with_one_line(tmp_path) -> None:
    r = run("query", str(tmp_path), "k", "--eq", "1")
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "no Sieve index" in r.stderr and "build" in r.stderr
    root = str(tmp_path / "t")
    write_file(f"{root}/a.parquet", [1])
    assert run("build", root, "k", "--no-spark").returncode == 0
    r = run("query", root, "k", "--eq", "notanumber")
    assert r.returncode == 2 and "cannot parse" in r.stderr
