"""Run the project's benchmarks: ``./dev.sh bench [capture|lineage|sieve ...] [-- extra args]``.

Each benchmark is a script that prints its figures and writes ``benchmarks/<name>/REPORT.md``;
this runner only dispatches to them, one after the other, and stops at the first failure.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

SCRIPTS: dict[str, list[str]] = {
    "capture": ["capture/overhead.py"],
    "connect": ["connect/load.py"],
    "lineage": ["lineage/run.py"],
    "udf": ["lineage/udf_cost.py"],
    "event-size": ["lineage/event_size.py"],
    "sieve": ["sieve/run.py"],
    "sieve-keys": ["sieve/random_keys.py"],
    "sieve-spark": ["sieve/spark_source.py"],
    "deployment": ["deployment/run.py"],
    "ui": ["ui/run.py"],
    "estate": ["estate/run.py"],
    "guard": ["guard/unmasked_cache.py"],
    "compat": ["compat/import_time.py"],
}


def main(argv: list[str]) -> int:
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    names = argv or list(SCRIPTS)
    unknown = [n for n in names if n not in SCRIPTS]
    if unknown:
        print(f"unknown benchmark(s) {unknown}: choose from {sorted(SCRIPTS)}", file=sys.stderr)
        return 2
    for name in names:
        for script in SCRIPTS[name]:
            print(f"== {name}: {script} {' '.join(extra)}", flush=True)
            rc = subprocess.call([sys.executable, str(HERE / script), *extra], cwd=HERE.parent)
            if rc != 0:
                print(f"benchmark {script} failed with exit code {rc}", file=sys.stderr)
                return rc
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
