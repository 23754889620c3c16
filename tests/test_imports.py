"""DAG parsing stays light: the Airflow layer and the example DAGs import no Spark, pandas, pyarrow or numpy.

A DAG processor imports every DAG file often; these modules cost seconds and, for pyspark, may not be
installed on the Airflow side at all. The timing is measured by ``benchmarks/compat/import_time.py``;
this test checks the module set only (in a fresh interpreter, so other tests' imports do not count).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pyspark", "py4j", "pandas", "pyarrow", "numpy")
AIRFLOW_LAYER = (
    "airflow_provider_lineage.get_provider_info",
    "airflow_provider_lineage.operators.spark_lineage",
    "airflow_provider_lineage.operators.pyspark",
    "airflow_provider_lineage.decorators.pyspark_lineage",
    "airflow_provider_lineage.operators.sieve",
    "airflow_provider_lineage.sensors.sieve",
    "airflow_provider_lineage.triggers.sieve",
)


def _heavy_after(code: str) -> list[str]:
    probe = (
        f"{code}\nimport json, sys\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=False, cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_airflow_layer_imports_no_heavy_module() -> None:
    imports = "\n".join(f"import {m}" for m in AIRFLOW_LAYER)
    assert _heavy_after(imports) == []


@pytest.mark.parametrize("dag_file", sorted(p.name for p in (ROOT / "dags").glob("*.py")))
def test_example_dag_file_imports_no_heavy_module(dag_file: str) -> None:
    assert _heavy_after(f"import runpy\nrunpy.run_path({str(ROOT / 'dags' / dag_file)!r})") == []


def test_the_sieve_package_names_load_on_first_use() -> None:
    # ``from airflow_provider_lineage.sieve import build`` is the function, also after the submodule loaded.
    code = ("import airflow_provider_lineage.sieve.maintain\n"
            "import airflow_provider_lineage.sieve.build, airflow_provider_lineage.sieve.sync\n"
            "from airflow_provider_lineage.sieve import build, sync, open_index, SieveError\n"
            "assert callable(build) and callable(sync) and callable(open_index), (build, sync)\n"
            "import airflow_provider_lineage.sieve as s\n"
            "assert set(s.__all__) == set(s._MODULE_OF), set(s.__all__) ^ set(s._MODULE_OF)\n"
            "assert all(getattr(s, n) is not None for n in s.__all__)")
    assert set(_heavy_after(code)) >= {"numpy", "pyarrow"}
