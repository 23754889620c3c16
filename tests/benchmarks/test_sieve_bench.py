"""Smoke test of the Sieve benchmark harness: ``run.py --quick`` on a tiny TPC-H scale factor.

It runs in-process on the session's Spark (no second JVM) over one layout, and checks that the run
finishes with no correctness violation and writes the report, the chart and the JSON. Timings are
not asserted (measured claims live in benchmarks/sieve/REPORT.md).
"""
from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "benchmarks" / "sieve" / "run.py"


def _load_run():
    spec = importlib.util.spec_from_file_location("sieve_bench_run", RUN)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(300)
def test_quick_run_writes_report_without_violations(spark, tmp_path: Path) -> None:
    if shutil.which("tpchgen-cli") is None and not (Path(sys.executable).parent / "tpchgen-cli").exists():
        pytest.skip("tpchgen-cli is not installed (it is in pyproject.toml's dev extra)")
    run = _load_run()
    report, chart, out = tmp_path / "REPORT.md", tmp_path / "chart.png", tmp_path / "results.json"
    rc = run.main(["--quick", "--scale", "0.01", "--layouts", "adversarial", "--points", "3", "--ranges", "1",
                   "--warmup", "0", "--data-dir", str(tmp_path / "data"), "--report", str(report),
                   "--chart", str(chart), "--json", str(out)], spark=spark)
    results = json.loads(out.read_text())
    assert results["violations"] == [], results["violations"]
    assert rc == 0
    (case,) = results["cases"]
    assert case["layout"] == "adversarial" and case["column"] == "l_shipdate"
    assert {"full", "minmax", "exact"} <= set(case["methods"])
    if not results["sieve_error"]:
        assert "sieve" in case["methods"]
        assert case["index"]["index_bytes"] > 0
        assert case["sync"]["sync_append_report"]["files_added"] == 1
        # gap keys (2003) are pruned to nothing by the index, never by min/max
        gap_points = [q for q in case["queries"] if q["kind"] == "point" and q["group"] == "gap"]
        assert gap_points and all(q["methods"]["sieve"]["files"] == 0 for q in gap_points)
        assert all(q["methods"]["minmax"]["files"] == case["files"] for q in gap_points)
    text = report.read_text()
    assert "## Targets" in text and "adversarial" in text
    assert chart.stat().st_size > 10_000
