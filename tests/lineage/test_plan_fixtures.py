"""The rule tests' recorded plans, analysed without Spark (the fast tier; sqlglot's ``check_file`` fixtures).

Each file of ``tests/lineage/fixtures/<module>/`` holds one capture record of a live-Spark rule test of
that module (the optimized and analyzed plans as the capture's DAG, relations, output) and the lineage
the engine gave when the live test passed. Here the engine runs over the record again and must give the
same lineage, edge for edge: a change of a rule shows up in seconds, without a JVM. The live-Spark tests
stay the integration tier (they also hold what the lineage must be); re-record with
``dev/record_plan_fixtures.py`` (docs/development.md) when the capture or Spark's plans change.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_lineage.lineage.record import CaptureRecord
from tests.lineage.helpers import lineage_summary

FIXTURES = Path(__file__).parent / "fixtures"
FILES = sorted(FIXTURES.rglob("*.json"))
ROOT = Path(__file__).resolve().parents[2]


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _lineage(data: dict[str, Any]) -> Any:
    try:
        return lineage_summary(CaptureRecord.from_dict(data))
    except Exception as exc:  # noqa: BLE001 - a recorded refusal is compared by its type
        return {"error": type(exc).__name__}


def test_fixtures_cover_the_rule_modules():
    """The fixtures are there (a lost folder would make this module pass vacuously)."""
    modules = {p.parent.name for p in FILES}
    assert {"test_rules", "test_writes", "test_cte", "test_set_ops_explode", "test_pivot_explode_checkpoint",
            "test_expressions"} <= modules, modules
    assert len(FILES) >= 80, len(FILES)
    assert sum(p.stat().st_size for p in FILES) < 8_000_000, "fixtures grew past a few MB: record fewer or smaller"


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_engine_gives_the_recorded_lineage(path: Path):
    fixture = _load(path)
    got = _lineage(fixture["record"])
    expected = fixture["lineage"]
    if got != expected:
        # name the first differing field so a failure reads as "what changed", not as two large dicts
        diff = sorted(k for k in set(got) | set(expected) if got.get(k) != expected.get(k))
        pytest.fail(f"{fixture['test']}: the engine's lineage differs from the recorded one in {diff}:\n"
                    f"got      {json.dumps({k: got.get(k) for k in diff}, sort_keys=True)[:2000]}\n"
                    f"recorded {json.dumps({k: expected.get(k) for k in diff}, sort_keys=True)[:2000]}\n"
                    "a deliberate rule change: re-record with dev/record_plan_fixtures.py (docs/development.md)")


def test_the_fixture_tier_needs_no_spark():
    """Analysing every fixture imports neither pyspark nor py4j (so it can start no JVM)."""
    probe = (
        "import json, sys, pathlib\n"
        "from airflow_provider_lineage.lineage.record import CaptureRecord\n"
        "from airflow_provider_lineage.lineage.engine import analyze_record\n"
        f"for p in sorted(pathlib.Path({str(FIXTURES)!r}).rglob('*.json')):\n"
        "    rec = CaptureRecord.from_dict(json.loads(p.read_text())['record'])\n"
        "    try:\n"
        "        analyze_record(rec)\n"
        "    except Exception:\n"
        "        pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
