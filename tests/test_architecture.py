"""The package's arrows point one way: from the Airflow layer into the cores, never back.

* the cores (``lineage``, ``sieve``, ``capture``) never import Airflow;
* ``lineage`` and ``sieve`` import nothing else from the package (so never each other);
* ``capture`` imports ``lineage`` only;
* besides, every core may import the core-neutral modules (``NEUTRAL``), which import nothing of the package;
* no module imports itself back through a cycle.

Read from the source with :mod:`ast` (every ``import``, also inside functions), and checked once more
at run time: importing a core in a fresh interpreter loads no Airflow module.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = "airflow_provider_lineage"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE
CORES = ("lineage", "sieve", "capture")
# core-neutral modules every core may use, each importing nothing of the package (checked below), with the reason:
# ``_jvm``: Janino compilation in the driver JVM, which ``capture`` (plan walker, listener forwarder) and ``sieve``
# (the pruning rule) both do; written once here rather than copied into each core
NEUTRAL = {"_jvm"}
# what each core may import from the package, besides itself
ALLOWED = {"lineage": set(NEUTRAL), "sieve": set(NEUTRAL), "capture": {"lineage", *NEUTRAL}}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> Iterator[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            yield target
            # `from pkg import submodule` imports the submodule
            yield from (f"{target}.{alias.name}" for alias in node.names)


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph[name] = {t for t in _imports(path) if t in modules and t != name}
    return graph


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


@pytest.mark.parametrize("core", CORES)
def test_cores_never_import_airflow(core: str) -> None:
    offenders = sorted(
        f"{_module_name(p)} imports {t}"
        for p in (ROOT / core).rglob("*.py")
        for t in _imports(p)
        if t == "airflow" or t.startswith("airflow.")
    )
    assert offenders == []


@pytest.mark.parametrize("core", CORES)
def test_cores_import_only_what_they_may(core: str) -> None:
    allowed = {core, *ALLOWED[core]}
    offenders = sorted(
        f"{name} -> {target}"
        for name, targets in _graph().items()
        if _room(name) == core
        for target in targets
        if target != PACKAGE and _room(target) not in allowed
    )
    assert offenders == []


@pytest.mark.parametrize("neutral", sorted(NEUTRAL))
def test_neutral_modules_import_nothing_of_the_package(neutral: str) -> None:
    path = ROOT / f"{neutral}.py"
    paths = [path] if path.exists() else sorted((ROOT / neutral).rglob("*.py"))
    assert paths
    offenders = sorted(f"{_module_name(p)} imports {t}" for p in paths for t in _imports(p)
                       if (t == PACKAGE or t.startswith(PACKAGE + ".")) and _room(t) != neutral
                       or t == "airflow" or t.startswith("airflow."))
    assert offenders == []


def test_no_import_cycle() -> None:
    graph = _graph()
    # a package's __init__ that re-exports its own modules is not a cycle of rooms
    edges = {
        m: {t for t in ts if not (t == m.rpartition(".")[0] and graph.get(t, set()) >= {m})} for m, ts in graph.items()
    }
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(edges.get(m, ())):
            if state.get(t) == 1:
                cycle = stack[stack.index(t):] + [t]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)


@pytest.mark.parametrize("core", CORES)
def test_importing_a_core_loads_no_airflow(core: str) -> None:
    code = (
        "import importlib, json, sys, pkgutil\n"
        f"pkg = importlib.import_module('{PACKAGE}.{core}')\n"
        "for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "    importlib.import_module(m.name)\n"
        "print(json.dumps(sorted(n for n in sys.modules if n == 'airflow' or n.startswith('airflow.'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []


def test_the_one_seam_from_capture_to_sieve_is_by_name_and_optional() -> None:
    """``spark.airflow_lineage.sievePruning`` lets the launcher turn on Sieve's planner rule in the driver it already
    runs (issue 49). The capture core names the Sieve core in exactly one place, loaded by name and only when that
    property is set (a failure there is a capture problem, never the job's): no other capture module mentions it."""
    def code(path: Path) -> str:  # comments say what the seam is for; they are not code
        return "\n".join(line for line in path.read_text(encoding="utf-8").splitlines()
                         if not line.strip().startswith("#"))

    mentions = {path.name: code(path).count(f"{PACKAGE}.sieve") for path in (ROOT / "capture").rglob("*.py")}
    assert {name: n for name, n in mentions.items() if n} == {"runtime.py": 1}
    source = (ROOT / "capture" / "runtime.py").read_text(encoding="utf-8")
    assert f'importlib.import_module("{PACKAGE}.sieve.spark.prune")' in source


def test_the_task_side_never_imports_the_ui() -> None:
    # operators, decorators, sensors and triggers run in a task; plugins/ is the api-server's UI, one floor up:
    # what both need (the path redaction rule, the settings) lives below them (lineage/, conf.py)
    task_side = ("operators", "decorators", "sensors", "triggers")
    offenders = sorted(f"{name} -> {target}" for name, targets in _graph().items() if _room(name) in task_side
                       for target in targets if _room(target) == "plugins")
    assert offenders == []
