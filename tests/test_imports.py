"""DAG parsing stays light: the Airflow layer and the example DAGs import no Spark, pandas, pyarrow or numpy.

A DAG processor imports every DAG file often; these modules cost seconds and, for pyspark, may not be
installed on the Airflow side at all. The timing is measured by ``benchmarks/compat/import_time.py``;
this test checks the module set only (in a fresh interpreter, so other tests' imports do not count).
"""
from __future__ import annotations

import importlib.util
import json
import re
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


# -- every documented public name still imports (issue 50: refactors move code, never a documented name) -----------
_DOC_FILES = sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md", *(ROOT / "dags").glob("*.py")])
_FROM_IMPORT = re.compile(r"from\s+(airflow_provider_lineage[\w.]*)\s+import\s+(\([^)]*\)|[^\n]+)")
_DOTTED = re.compile(r"airflow_provider_lineage(?:\.[A-Za-z_]\w*)+")


def _documented_imports() -> set[tuple[str, str]]:
    """``(module, name)`` of every ``from airflow_provider_lineage... import name`` in the docs, README and DAGs."""
    found: set[tuple[str, str]] = set()
    for path in _DOC_FILES:
        for module, names in _FROM_IMPORT.findall(path.read_text(encoding="utf-8")):
            names = re.split(r"[;'\"`#]", names.strip().strip("()"), maxsplit=1)[0]  # a shell one-liner's tail
            for item in names.replace("\n", ",").split(","):
                name = item.split(" as ")[0].strip().strip("()\\")
                if name:
                    found.add((module, name))
    return found


def _documented_dotted() -> set[str]:
    """Every dotted ``airflow_provider_lineage.x.y`` the docs, README and DAGs name (a module or an attribute)."""
    return {m.rstrip(".") for path in _DOC_FILES for m in _DOTTED.findall(path.read_text(encoding="utf-8"))}


def _provider_info_names() -> set[str]:
    from airflow_provider_lineage.get_provider_info import get_provider_info

    info = get_provider_info()
    names: set[str] = set()
    for section in ("operators", "sensors", "triggers", "hooks"):
        for entry in info.get(section, []):
            names.update(entry.get("python-modules", []))
    for entry in info.get("task-decorators", []):
        names.add(entry["class-name"])
    for entry in info.get("plugins", []):
        names.add(entry["plugin-class"])
    return names


def _resolve(dotted: str) -> object:
    """``a.b.c.Name`` -> the object: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as exc:
            if exc.name is None or not ".".join(parts[:cut]).startswith(exc.name):
                raise  # a documented module that imports something missing: a real failure
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def test_the_scan_finds_the_documented_names() -> None:
    # the scan itself must see the operators the README and the docs show (else the tests below prove nothing)
    imports = _documented_imports()
    assert ("airflow_provider_lineage.operators.spark_lineage", "SparkLineageSubmitOperator") in imports
    assert ("airflow_provider_lineage.operators.pyspark", "PySparkLineageOperator") in imports
    assert ("airflow_provider_lineage.operators.spark_lineage", "launcher_path") in imports
    assert "airflow_provider_lineage.decorators.pyspark_lineage.pyspark_lineage_task" in _provider_info_names()
    assert len(imports) >= 10 and len(_documented_dotted()) >= 15


@pytest.mark.parametrize(("module", "name"), sorted(_documented_imports()))
def test_documented_import_works(module: str, name: str) -> None:
    mod = importlib.import_module(module)
    found = hasattr(mod, name) or importlib.util.find_spec(f"{module}.{name}") is not None
    assert found, f"from {module} import {name}"


@pytest.mark.parametrize("dotted", sorted(_documented_dotted() | _provider_info_names()))
def test_documented_dotted_name_resolves(dotted: str) -> None:
    assert _resolve(dotted) is not None


#: The lineage arguments every lineage operator and ``@task.pyspark_lineage`` take (docs/lineage.md): public API.
LINEAGE_ARGUMENTS = ("lineage_emission", "openlineage_config", "capture_dir", "capture_drain_timeout",
                     "capture_conn_id", "keep_capture_records", "capture_record_limit", "lineage_xcom_key",
                     "asset_alias", "indirect_lineage", "udf_analysis", "on_lineage_change", "require_masked",
                     "on_policy_violation", "sieve_pruning")
_PUBLIC_OPERATORS = (
    ("airflow_provider_lineage.operators.spark_lineage", "SparkLineageSubmitOperator"),
    ("airflow_provider_lineage.operators.pyspark", "PySparkLineageOperator"),
    ("airflow_provider_lineage.operators.spark_sql", "SparkSqlLineageOperator"),
    ("airflow_provider_lineage.operators.spark_pipelines", "SparkPipelinesLineageOperator"),
    ("airflow_provider_lineage.operators.sieve", "SieveIndexOperator"),
    ("airflow_provider_lineage.sensors.sieve", "SieveMaintenanceSensor"),
)


def _accepted_arguments(cls: type) -> set[str]:
    """The keyword arguments Airflow lets a task give ``cls``: what ``partial``/``expand`` and ``default_args`` see
    (the parameter names of each ``__init__`` in the MRO that Airflow's operator metaclass wrapped)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        names |= set(getattr(klass.__init__, "_BaseOperatorMeta__param_names", ()))
    return names


@pytest.mark.parametrize(("module", "name"), _PUBLIC_OPERATORS)
def test_every_documented_argument_is_accepted(module: str, name: str) -> None:
    cls = getattr(importlib.import_module(module), name)
    documented = set(re.findall(r":param (\w+):", cls.__doc__ or ""))
    assert documented, f"{name} documents no argument"
    assert documented <= _accepted_arguments(cls), documented - _accepted_arguments(cls)
    if name.endswith("LineageOperator") or name == "SparkLineageSubmitOperator":
        missing = set(LINEAGE_ARGUMENTS) - _accepted_arguments(cls)
        assert not missing, f"{name} lost lineage arguments {missing}"


def test_the_decorator_takes_the_lineage_arguments() -> None:
    from airflow_provider_lineage.decorators.pyspark_lineage import _PySparkLineageDecoratedOperator

    assert set(LINEAGE_ARGUMENTS) <= _accepted_arguments(_PySparkLineageDecoratedOperator)


def test_operators_lists_operators_only() -> None:
    import ast

    folder = ROOT / "airflow_provider_lineage" / "operators"
    for path in folder.glob("*.py"):
        if path.name == "__init__.py":
            continue
        classes = [n.name for n in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(n, ast.ClassDef)]
        assert any(c.endswith(("Operator", "Sensor")) for c in classes), f"{path.name} defines no operator"
