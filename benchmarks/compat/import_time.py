"""What importing the provider's Airflow layer adds to DAG parsing, measured with ``python -X importtime``.

Each run is a fresh interpreter that imports ``SparkSubmitOperator`` first (what any Spark DAG file
pays anyway), writes a marker, then imports the operator, sensor and trigger modules; the cost is the
cumulative time of the top-level imports after the marker (what those modules add), and the modules
they pulled in are checked for pyspark, py4j, pandas, pyarrow and numpy. Median over ``--runs``
(bytecode compiled once by a warm-up run).

    python benchmarks/compat/import_time.py [--runs 7] [--report benchmarks/compat/IMPORT_TIME.md]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASE = "airflow.providers.apache.spark.operators.spark_submit"
OURS = ("airflow_provider_lineage.operators.spark_lineage", "airflow_provider_lineage.operators.sieve",
        "airflow_provider_lineage.sensors.sieve", "airflow_provider_lineage.triggers.sieve")
HEAVY = ("pyspark", "py4j", "pandas", "pyarrow", "numpy")
MARKER = "--apl-import-marker--"
BUDGET_S = 0.1


def one_run() -> dict[str, object]:
    code = (f"import sys, time\nt0 = time.process_time()\nimport {BASE}\nt1 = time.process_time()\n"
            f"sys.stderr.write({MARKER!r} + '\\n')\nsys.stderr.flush()\n"
            + "".join(f"import {m}\n" for m in OURS)
            + "t2 = time.process_time()\nprint(t1 - t0, t2 - t1)\n"
            + f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    # Bytecode as a DAG processor has it (PYTHONDONTWRITEBYTECODE, set on CI machines, would make every run
    # compile the package from source again).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True, timeout=600, env=env)
    before, _, after = out.stderr.partition(MARKER)

    def top_level_us(text: str) -> int:
        total = 0
        for line in text.splitlines():
            if not line.startswith("import time:") or "|" not in line:
                continue
            parts = line.split("|")
            name = parts[2]
            if parts[1].strip().isdigit() and not name[1:].startswith(" "):  # depth 0: no extra indent
                total += int(parts[1])
        return total

    lines = out.stdout.strip().splitlines()
    base_cpu, added_cpu = map(float, lines[-2].split())
    return {"base_s": top_level_us(before) / 1e6, "added_s": top_level_us(after) / 1e6,
            "base_cpu_s": base_cpu, "added_cpu_s": added_cpu,
            "heavy": json.loads(lines[-1].replace("'", '"'))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--report", type=Path, default=Path(__file__).with_name("IMPORT_TIME.md"))
    args = ap.parse_args(argv)
    one_run()  # warm-up: bytecode compiled, file cache filled
    runs = [one_run() for _ in range(args.runs)]
    base = statistics.median(r["base_s"] for r in runs)
    added = statistics.median(r["added_s"] for r in runs)
    base_cpu = statistics.median(r["base_cpu_s"] for r in runs)
    added_cpu = statistics.median(r["added_cpu_s"] for r in runs)
    heavy = sorted({h for r in runs for h in r["heavy"]})
    import airflow

    def verdict(x: float) -> str:
        return "within" if x <= BUDGET_S else "OVER"

    text = (
        "# DAG-parsing import cost\n\n"
        f"Written by `benchmarks/compat/import_time.py` on {time.strftime('%Y-%m-%d')} (Airflow "
        f"{airflow.__version__}, Python {sys.version.split()[0]}, median of {args.runs} fresh interpreters "
        f"after a warm-up, `python -X importtime`; load average {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs).\n\n"
        "| what | wall s (`-X importtime`) | CPU s (`time.process_time`) |\n|---|---|---|\n"
        f"| `import {BASE}` (any Spark DAG pays it) | {base:.3f} | {base_cpu:.3f} |\n"
        f"| then the provider's operator, sensor and trigger modules add | {added:.3f} | {added_cpu:.3f} |\n\n"
        "On a busy machine the wall times stretch with the load; the CPU times (what the imports cost the "
        "parsing process) much less so.\n\n"
        f"Budget: at most {BUDGET_S} s added: CPU {verdict(added_cpu)}, wall {verdict(added)}. Heavy modules "
        f"imported: {', '.join(heavy) or 'none'} "
        f"(checked: {', '.join(HEAVY)}; `tests/test_imports.py` asserts the module set in CI).\n\n"
        "Runs (base s, added s): " + ", ".join(f"({r['base_s']:.3f}, {r['added_s']:.3f})" for r in runs) + "\n"
    )
    args.report.write_text(text)
    print(text)
    return 0 if added_cpu <= BUDGET_S and not heavy else 1


if __name__ == "__main__":
    sys.exit(main())
