"""Record the plan fixtures of the Spark-free rule tests (tests/lineage/test_plan_fixtures.py).

Runs the live-Spark rule tests (local Spark, in this process, no xdist) and, for every test that passes,
writes each capture record its ``env`` fixture produced, with the lineage the engine computes from it,
to ``tests/lineage/fixtures/<test module>/<test name>-<n>.json``. The record is the one the capture
writes for the Airflow worker (format 2: the optimized and analyzed plans as one DAG, the relations, the
output); pytest's temporary folder (the sources', the warehouse's) is replaced by ``/fixture`` and the
run-specific ids are fixed, so a re-recording only changes files whose plans or lineage changed.

    ./dev.sh setup && .venv/bin/python dev/record_plan_fixtures.py              # the default modules
    .venv/bin/python dev/record_plan_fixtures.py tests/lineage/test_rules.py -k join   # some tests only

Re-record after a change of the capture (what a record holds) or of Spark's plans (a new Spark
version); after a change of the engine, the fixture tests failing is the point: read the diff of the
expected lineage, and re-record only when the new lineage is the right one (the live tests pass).
A module's folder is rewritten when that module is recorded whole (no ``-k``), so fixtures of removed
tests go away.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "lineage" / "fixtures"
# the rule tests whose plans are recorded: one plan shape per test, every one through the ``env`` fixture
MODULES = [
    "tests/lineage/test_rules.py",
    "tests/lineage/test_cte.py",
    "tests/lineage/test_set_ops_explode.py",
    "tests/lineage/test_pivot_explode_checkpoint.py",
    "tests/lineage/test_writes.py",
    "tests/lineage/test_expressions.py",
    "tests/lineage/test_dataset_names.py",
]
PLACEHOLDER = "/fixture"


def fixture_name(nodeid: str, n: int) -> tuple[str, str]:
    """``(module folder, file name)`` of the n-th record of a test."""
    path, _, name = nodeid.partition("::")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name.replace("::", ".")).strip("_")
    if len(safe) > 80:  # a long parameter id (a SQL text): its start and a digest of the whole
        safe = f"{safe[:70]}-{hashlib.sha1(name.encode()).hexdigest()[:8]}"
    return Path(path).stem, f"{safe}-{n}.json"


def normalized(rec: Any, base: str) -> dict[str, Any]:
    """The record with pytest's temporary folder replaced and the per-run values fixed."""
    from airflow_provider_lineage.lineage.record import CaptureRecord

    text = rec.to_json().replace(base, PLACEHOLDER)
    data = json.loads(text)
    data.update(record_id="fixture", app_id="local-fixture", event_time="", duration_ms=None)
    return CaptureRecord.from_dict(data).to_dict()


class Recorder:
    """pytest plugin: collects the records of each test's ``env.capture`` and writes them if it passed."""

    def __init__(self) -> None:
        self.pending: dict[str, list[dict[str, Any]]] = {}
        self.current: str | None = None
        self.written: list[Path] = []

    def pytest_collection_finish(self, session: Any) -> None:
        conftest = sys.modules["tests.lineage.conftest"]
        original = conftest.LineageEnv.capture
        recorder = self

        def capture(env: Any, write: Any) -> Any:
            rec = original(env, write)
            if recorder.current is not None:
                recorder.pending.setdefault(recorder.current, []).append(normalized(rec, str(env.base.parent)))
            return rec

        conftest.LineageEnv.capture = capture

    def pytest_runtest_setup(self, item: Any) -> None:
        self.current = item.nodeid
        self.pending.pop(item.nodeid, None)

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when != "call":
            return
        records = self.pending.pop(report.nodeid, [])
        if not report.passed:
            return
        from airflow_provider_lineage.lineage.record import CaptureRecord
        from tests.lineage.helpers import lineage_summary

        for n, data in enumerate(records):
            folder, name = fixture_name(report.nodeid, n)
            try:
                expected: Any = lineage_summary(CaptureRecord.from_dict(data))
            except Exception as exc:  # noqa: BLE001 - the engine's refusal is the expected outcome, recorded
                expected = {"error": type(exc).__name__}
            out = FIXTURES / folder / name
            out.parent.mkdir(parents=True, exist_ok=True)
            body = {"test": report.nodeid, "record": data, "lineage": expected}
            out.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")
            self.written.append(out)


def main(argv: list[str]) -> int:
    import pytest

    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    args = argv or MODULES
    whole = [a for a in args if a.endswith(".py") and "-k" not in argv]
    for module in whole:
        shutil.rmtree(FIXTURES / Path(module).stem, ignore_errors=True)
    recorder = Recorder()
    code = pytest.main(["-p", "no:xdist", "-p", "no:randomly", "-q", "-p", "no:cacheprovider", *args],
                       plugins=[recorder])
    size = sum(p.stat().st_size for p in FIXTURES.rglob("*.json"))
    print(f"record_plan_fixtures: wrote {len(recorder.written)} fixtures; "
          f"tests/lineage/fixtures holds {size / 1e6:.2f} MB")
    return int(code)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
