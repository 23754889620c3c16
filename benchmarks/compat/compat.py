"""The compatibility table: the wheel in stock Airflow venvs, and the example pipelines under each Spark.

Airflow rows, one clean venv each, built the way users build theirs::

    uv pip install "apache-airflow==X" apache-airflow-providers-apache-spark   # the user's venv
    uv pip install airflow_provider_lineage-*.whl                              # then ours

and checked: pip changed nothing the user had (Airflow, pyspark-client, pandas, numpy, pyarrow; the
added packages and the size are reported), ``airflow providers list`` shows the provider, every
example DAG imports (DagBag), and the Airflow-layer tests pass (with test tools and the [spark] extra
pinned to the venv's own pyspark-client release added after the checks).

Spark columns: each Spark release is its own venv (``pyspark==Y``: its spark-submit, jars and
``pyspark.zip``); the example pipelines run with ``dag.test()`` in the Airflow venv with that
spark-submit first on PATH and ``SPARK_HOME`` set to it, the driver being the Airflow venv's Python
(so the driver's pyspark is the Spark release's own ``pyspark.zip``, as with a Spark distribution),
and their lineage events are compared with the reference run (datasets, column edges, transformation
types, schema field types).

    python benchmarks/compat/compat.py                     # the full table (~25 min, downloads once)
    python benchmarks/compat/compat.py --airflow 3.0.6 --spark 3.5.9 --pipelines c1   # one cell
    python benchmarks/compat/compat.py --sieve-prune --spark 3.5.9,4.0.5 --report benchmarks/compat/SIEVE_PRUNE.md
    # (merged: releases an earlier run checked stay in out/sieve_prune.json and the report)

Writes ``benchmarks/compat/out/compat.json`` and ``REPORT.md`` (``--report``) and, with ``--readme``,
the table between the ``compat-table`` markers of README.md and docs/compatibility.md. Needs ``uv``
(the dev venv has it) and Java 17; downloads come from PyPI into uv's cache.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
AIRFLOW = ("3.0.6", "3.1.8", "3.2.2", "3.3.2")
SPARK = ("3.5.9", "4.0.5", "4.1.3", "4.2.1", "4.3.0")
REFERENCE = ("3.3.2", "4.1.3")
PIPELINES = {"c1": "lineage_c1_transactions_mart", "etl": "lineage_etl"}
#: Pins from an Airflow release's constraints file for the dependencies whose newest releases break that
#: Airflow itself (not reachable here, so the few that matter are spelled out): with a stock
#: ``pip install "apache-airflow==3.0.6"`` of today, every task of ``dag.test()`` fails with a 422 from
#: the in-process execution API (cadwyn 9 / fastapi 0.165 / pydantic 2.14), with or without this wheel.
USER_PINS = {"3.0.": ("cadwyn==5.3.3", "fastapi==0.115.12", "pydantic==2.11.5", "starlette<0.47")}
#: What a user had before our wheel that it must not change.
WATCHED = ("apache-airflow", "apache-airflow-core", "apache-airflow-task-sdk", "apache-airflow-providers-apache-spark",
           "pyspark-client", "pyspark", "pandas", "numpy", "pyarrow")
#: The Airflow-layer tests (operators, sensor, trigger, the _compat seam, import lightness).
#: (SparkLineageSubmitOperator runs in every Airflow venv through the example pipelines.)
LAYER_TESTS = ("tests/test_compat.py", "tests/test_imports.py", "tests/sensors/test_sieve.py", "tests/triggers",
               "tests/operators/test_sieve.py")
TEST_TOOLS = ("pytest>=8", "pytest-timeout>=2.3", "pytest-xdist>=3.6", "hypothesis>=6.100", "jsonschema>=4.20")
DAGBAG = """
import json, sys
try:
    from airflow.dag_processing.dagbag import DagBag
except ImportError:  # Airflow < 3.2
    from airflow.models.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])  # examples stay out: AIRFLOW__CORE__LOAD_EXAMPLES=False
print(json.dumps({"dags": sorted(bag.dag_ids), "errors": {k: v[-500:] for k, v in bag.import_errors.items()}}))
"""


def log(msg: str) -> None:
    print(f"[compat {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def uv_bin() -> str:
    here = Path(sys.executable).parent / "uv"
    found = str(here) if here.exists() else shutil.which("uv")
    if not found:
        raise SystemExit("compat: no uv found: run it with the dev venv's python (./dev.sh setup installs uv)")
    return found


def run(cmd: list[str], *, env: dict[str, str] | None = None, timeout: float = 1800, cwd: Path = ROOT,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    if check and out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])} ... exited {out.returncode}:\n{(out.stdout + out.stderr)[-3000:]}")
    return out


def base_python() -> str:
    """The interpreter users would make venvs from (the one under the dev venv)."""
    for cand in (Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}",
                 Path(sys.base_prefix) / "bin" / "python3"):
        if cand.exists():
            return str(cand)
    return sys.executable


def make_venv(path: Path, *packages: str) -> Path:
    if path.exists():
        shutil.rmtree(path)
    run([uv_bin(), "venv", "-q", "--python", base_python(), str(path)])
    py = path / "bin" / "python"
    if packages:
        run([uv_bin(), "pip", "install", "-q", "--python", str(py), *packages])
    return py


def freeze(py: Path) -> dict[str, str]:
    out = run([uv_bin(), "pip", "freeze", "--python", str(py)]).stdout
    pkgs = {}
    for line in out.splitlines():
        if "==" in line:
            name, version = line.split("==", 1)
            pkgs[re.sub(r"[-_.]+", "-", name).lower()] = version.strip()
    return pkgs


def site_size(venv: Path) -> int:
    return sum(f.stat().st_size for f in venv.rglob("*") if f.is_file() and not f.is_symlink())


def build_wheel(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.whl"):
        old.unlink()
    run([uv_bin(), "build", "-q", "--wheel", "--out-dir", str(out), str(ROOT)])
    return next(out.glob("airflow_provider_lineage-*.whl"))


def airflow_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW", "OPENLINEAGE", "PYSPARK", "SPARK_HOME", "VIRTUAL_ENV", "PYTHONPATH"))}
    env.update({"AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"), "SPARK_LOCAL_IP": "127.0.0.1",
                "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"})})
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra or {})
    return env


# -- Airflow rows ----------------------------------------------------------------------------------
def airflow_row(version: str, wheel: Path, cache: Path) -> dict[str, Any]:
    row: dict[str, Any] = {"airflow": version, "ok": False}
    venv = cache / f"airflow-{version}"
    t0 = time.monotonic()
    log(f"Airflow {version}: the user's venv (apache-airflow=={version} + apache-airflow-providers-apache-spark)")
    pins = next((p for prefix, p in USER_PINS.items() if version.startswith(prefix)), ())
    row["user_pins"] = list(pins)
    py = make_venv(venv, f"apache-airflow=={version}", "apache-airflow-providers-apache-spark", *pins)
    before, size_before = freeze(py), site_size(venv)
    run([uv_bin(), "pip", "install", "-q", "--python", str(py), str(wheel)])
    after, size_after = freeze(py), site_size(venv)
    row["user_had"] = {k: before.get(k) for k in WATCHED if before.get(k)}
    row["changed"] = {k: [before[k], after.get(k)] for k in WATCHED if before.get(k) and before[k] != after.get(k)}
    row["removed"] = sorted(k for k in before if k not in after)
    row["upgraded_other"] = {k: [before[k], after[k]] for k in before
                             if k in after and before[k] != after[k] and k not in WATCHED}
    row["added"] = {k: after[k] for k in sorted(after) if k not in before}
    row["added_mb"] = round((size_after - size_before) / 1e6, 1)
    home = cache / f"home-{version}"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    env = airflow_env(home)
    providers = run([str(venv / "bin" / "airflow"), "providers", "list", "-o", "json"], env=env, check=False)
    row["provider_listed"] = "airflow-provider-lineage" in providers.stdout
    dags = run([str(py), "-c", DAGBAG, str(ROOT / "dags")], env=env, check=False)
    try:
        bag = json.loads(dags.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        bag = {"dags": [], "errors": {"<dagbag>": (dags.stdout + dags.stderr)[-1500:]}}
    row["dags"], row["dag_errors"] = bag["dags"], bag["errors"]
    row["install_ok"] = not row["changed"] and not row["removed"] and row["provider_listed"] and not bag["errors"]
    row["install_s"] = round(time.monotonic() - t0, 1)
    log(f"Airflow {version}: changed {row['changed'] or 'nothing'}, +{row['added_mb']} MB, provider listed "
        f"{row['provider_listed']}, DAGs {len(bag['dags'])} errors {list(bag['errors']) or 'none'}")
    run([str(venv / "bin" / "airflow"), "db", "migrate"], env=env, timeout=900)
    row["ok"], row["installed"] = row["install_ok"], after
    return row


def layer_test_run(version: str, py: Path, installed: dict[str, str], env: dict[str, str]) -> dict[str, Any]:
    """The Airflow-layer tests in the venv, after adding test tools and a full pyspark of the venv's
    own pyspark-client release (the documented ``[spark]`` install for local mode)."""
    t0 = time.monotonic()
    client = installed.get("pyspark-client")
    spark = [f"pyspark=={client}"] if client else ["pyspark"]
    pins = [f"apache-airflow=={version}"] + [f"{k}=={installed[k]}" for k in (
        "pyspark-client", "pandas", "cadwyn", "fastapi", "pydantic") if k in installed]
    run([uv_bin(), "pip", "install", "-q", "--python", str(py), *TEST_TOOLS, *spark,
         "apache-airflow-providers-openlineage", *pins])
    venv_bin = str(py.parent)
    test_env = {**env, "PATH": venv_bin + os.pathsep + env.get("PATH", ""), "PYSPARK_PYTHON": str(py),
                "PYSPARK_DRIVER_PYTHON": str(py)}
    test_env.pop("AIRFLOW_HOME")  # tests/conftest.py makes its own
    out = run([str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile",
               "--timeout", "600", *LAYER_TESTS], env=test_env, check=False, timeout=3600)
    tail = [ln for ln in out.stdout.splitlines() if ln.strip()][-1:] or ["(no output)"]
    failed = [ln for ln in out.stdout.splitlines() if ln.startswith(("FAILED", "ERROR"))]
    log(f"Airflow {version}: layer tests: {tail[0]}")
    return {"ok": out.returncode == 0, "summary": tail[0].strip("= "), "failed": failed[:20],
            "pyspark": spark[0], "seconds": round(time.monotonic() - t0, 1)}


# -- Spark columns ---------------------------------------------------------------------------------
def spark_venv(version: str, cache: Path) -> Path:
    venv = cache / f"spark-{version}"
    if not (venv / "bin" / "spark-submit").exists():
        log(f"Spark {version}: venv with pyspark=={version}")
        make_venv(venv, f"pyspark=={version}")
    return venv


def spark_home(venv: Path) -> Path:
    return next(venv.glob("lib/python*/site-packages/pyspark"))


def pipeline_cell(airflow: str, spark: str, cache: Path, pipelines: list[str]) -> dict[str, Any]:
    """Run the example pipelines in Airflow ``airflow``'s venv under Spark ``spark``'s spark-submit."""
    venv, sv = cache / f"airflow-{airflow}", spark_venv(spark, cache)
    home = cache / f"home-{airflow}"
    out_dir = cache / "runs" / f"af{airflow}-spark{spark}"
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    env = airflow_env(home, {
        "PATH": f"{sv / 'bin'}{os.pathsep}{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "SPARK_HOME": str(spark_home(sv)),
        "PYSPARK_PYTHON": str(venv / "bin" / "python"), "PYSPARK_DRIVER_PYTHON": str(venv / "bin" / "python")})
    t0 = time.monotonic()
    res = run([str(venv / "bin" / "python"), str(HERE / "run_pipelines.py"), str(out_dir), *pipelines],
              env=env, check=False, timeout=3600)
    cell: dict[str, Any] = {"airflow": airflow, "spark": spark, "seconds": round(time.monotonic() - t0, 1)}
    (out_dir / "run.log").write_text(res.stdout + res.stderr)
    try:
        cell.update(json.loads((out_dir / "result.json").read_text()))
    except (OSError, json.JSONDecodeError):
        cell.update({"states": {}, "signature": {}, "error": (res.stdout + res.stderr)[-2000:]})
    log(f"Airflow {airflow} x Spark {spark}: states {cell.get('states')} in {cell['seconds']} s")
    return cell


#: What ``sieve_prune.py`` needs in a Spark release's venv besides pyspark: the Sieve core's own dependencies.
SIEVE_PRUNE_PACKAGES = ("pyarrow>=15", "numpy>=1.26", "tenacity>=8.3")


def sieve_prune_cell(spark: str, cache: Path) -> dict[str, Any]:
    """``sieve.spark.enable`` under Spark ``spark`` (its own venv, the project's source on PYTHONPATH): the
    rule compiles against that release's classes (Scala 2.12 or 2.13) and every case reads the candidates only."""
    sv = spark_venv(spark, cache)
    py = sv / "bin" / "python"
    run([uv_bin(), "pip", "install", "-q", "--python", str(py), *SIEVE_PRUNE_PACKAGES])
    out = cache / "runs" / f"sieve-prune-{spark}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPARK_HOME": str(spark_home(sv)), "PYSPARK_PYTHON": str(py),
           "PYSPARK_DRIVER_PYTHON": str(py), "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
    t0 = time.monotonic()
    res = run([str(py), str(HERE / "sieve_prune.py"), str(out)], env=env, check=False, timeout=1800)
    try:
        cell: dict[str, Any] = json.loads(out.read_text())
    except (OSError, json.JSONDecodeError):
        cell = {"spark": spark, "ok": False, "cases": [], "error": (res.stdout + res.stderr)[-2000:]}
    cell["seconds"] = round(time.monotonic() - t0, 1)
    log(f"Sieve pruning under Spark {spark}: {'ok' if cell.get('ok') else 'FAILED'} in {cell['seconds']} s")
    return cell


def sieve_prune_report(cells: list[dict[str, Any]], commit: str) -> str:
    lines = ["# Transparent Sieve pruning under each Spark release", "",
             (f"Written by `benchmarks/compat/compat.py --sieve-prune` on {time.strftime('%Y-%m-%d')} at {commit}: "
             "`sieve.spark.enable(spark)` in a driver of `pyspark==Y` (its own venv), on a 12-file table "
             "(keys sorted across files), a partitioned table and a catalog table (`saveAsTable`), each indexed "
             "on `k`. A case passes when the rows equal the same query without `enable` and the files read "
             "(`inputFiles()`) are the index's candidates."), "",
             "| Spark | Scala | cases | result |", "|---|---|---|---|"]
    for c in cells:
        passed = sum(1 for x in c.get("cases", []) if x.get("same_rows") and x.get("same_files"))
        lines.append(f"| {c.get('spark')} | {c.get('scala', '?')} | {passed} of {len(c.get('cases', []))} | "
                     f"{'✅' if c.get('ok') else '❌'} ({c.get('seconds', 0):.0f} s"
                     + (f"; {c['date']} at {c['commit']}" if c.get("commit") else "") + ") |")
    lines += ["", "## Cases", ""]
    for c in cells:
        lines.append(f"* Spark {c.get('spark')}:")
        for x in c.get("cases", []):
            what = x.get("error") or (f"{x.get('files')} files read, {x.get('candidates')} candidates, "
                                      f"rows {'equal' if x.get('same_rows') else 'DIFFERENT'}; "
                                      f"{', '.join(x.get('narrowing') or []) or 'not narrowed'}")
            lines.append(f"  * {x.get('case')}: {what}")
        if c.get("error"):
            lines.append(f"  * error: {c['error'][-800:]}")
    return "\n".join(lines) + "\n"


def compare(sig: dict[str, Any], ref: dict[str, Any]) -> list[str]:
    """Differences between two lineage signatures (empty: the same datasets, edges and types)."""
    diffs = []
    for key in sorted(set(sig) | set(ref)):
        a, b = sig.get(key), ref.get(key)
        if a is None or b is None:
            diffs.append(f"{key}: {'missing' if a is None else 'not in the reference'}")
            continue
        for part in sorted(set(a) | set(b)):
            if a.get(part) != b.get(part):
                extra = sorted(
                    map(str, set(map(json.dumps, a.get(part) or [])) - set(map(json.dumps, b.get(part) or [])))
                )
                lack = sorted(
                    map(str, set(map(json.dumps, b.get(part) or [])) - set(map(json.dumps, a.get(part) or [])))
                )
                diffs.append(f"{key} {part}: +{extra[:3]} -{lack[:3]}")
    return diffs


# -- report ----------------------------------------------------------------------------------------
def table(result: dict[str, Any]) -> str:
    rows, cells = result["airflow_rows"], result["cells"]
    sparks = [s for s in SPARK if any(c["spark"] == s for c in cells)]
    head = "| Airflow | wheel install changed | example DAGs import | Airflow-layer tests |" + "".join(
        f" Spark {s} |" for s in sparks)
    lines = [head, "|" + "---|" * (4 + len(sparks))]
    for r in rows:
        changed = "nothing" if not r["changed"] and not r["removed"] else ", ".join(
            f"{k} {a} → {b}" for k, (a, b) in r["changed"].items()) + "".join(f", removed {k}" for k in r["removed"])
        changed += f" (+{len(r['added'])} packages, {r['added_mb']:.0f} MB)"
        dags = "✅ all " + str(len(r["dags"])) if not r["dag_errors"] else "❌ " + ", ".join(r["dag_errors"])
        tests = r.get("tests")
        tcell = "not run" if tests is None else ("✅ " if tests["ok"] else "❌ ") + tests["summary"]
        line = f"| {r['airflow']} | {changed} | {dags} | {tcell} |"
        for s in sparks:
            c = next((c for c in cells if c["airflow"] == r["airflow"] and c["spark"] == s), None)
            line += " — |" if c is None else f" {cell_text(c)} |"
        lines.append(line)
    return "\n".join(lines)


def cell_text(c: dict[str, Any]) -> str:
    if c.get("error") or not c.get("states"):
        return "❌ did not run"
    failed = [d for d, s in c["states"].items() if s != "success"]
    if failed:
        return "❌ " + ", ".join(f"{d} {c['states'][d]}" for d in failed)
    if c.get("reference"):
        return "✅ reference" if (c["airflow"], c["spark"]) == REFERENCE else "✅ ran (not compared: no reference run)"
    return "✅ same lineage" if not c.get("diffs") else f"⚠️ {len(c['diffs'])} lineage differences"


def report(result: dict[str, Any]) -> str:
    ref = f"Airflow {result['reference'][0]} × Spark {result['reference'][1]}"
    lines = [
        "# Compatibility report", "",
        (f"Written by `benchmarks/compat/compat.py` on {result['date']} at {result['commit']} "
         f"({result['seconds'] / 60:.0f} min; wheel {result['wheel']})."), "",
        ("Airflow rows: a clean venv per release, `uv pip install \"apache-airflow==X\" "
        "apache-airflow-providers-apache-spark`, then the wheel. *Changed* lists what installing the "
        f"wheel changed among {', '.join(WATCHED)} (nothing = the user's versions kept). Spark columns: "
        "the example pipelines (`dag.test()`) in that Airflow venv with that release's spark-submit "
        f"(`pyspark==Y` in its own venv, `SPARK_HOME` set); lineage compared with the reference run ({ref}): "
        "datasets, column edges, transformation types, schema field types."), "",
        table(result), "",
        "## Details", ""]
    for r in result["airflow_rows"]:
        lines.append(f"* Airflow {r['airflow']}: the user had {r['user_had']}"
                     + (f" (installed with {', '.join(r['user_pins'])} from the release's constraints)"
                        if r.get("user_pins") else "") + f"; added {r['added_mb']} MB: "
                     f"{', '.join(f'{k} {v}' for k, v in r['added'].items()) or 'nothing'}"
                     + (f"; also upgraded {r['upgraded_other']}" if r["upgraded_other"] else ""))
        if r.get("tests"):
            t = r["tests"]
            lines.append(f"  * layer tests with {t['pyspark']}: {t['summary']} ({t['seconds']} s)"
                         + "".join(f"\n    * {f}" for f in t["failed"]))
    for c in result["cells"]:
        lines.append(f"* Airflow {c['airflow']} × Spark {c['spark']}: {c.get('states')}, "
                     f"{c['seconds']} s" + (f", JVM {c['spark_versions']}" if c.get("spark_versions") else "")
                     + "".join(f"\n  * {d}" for d in c.get("diffs") or []))
    return "\n".join(lines) + "\n"


def write_table(path: Path, text: str) -> bool:
    if not path.exists():
        return False
    src = path.read_text()
    start, end = "<!-- compat-table:start -->", "<!-- compat-table:end -->"
    if start not in src or end not in src:
        return False
    head, rest = src.split(start, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{start}\n{text}\n{end}{tail}")
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--airflow", default=",".join(AIRFLOW), help="Airflow releases (comma-separated)")
    ap.add_argument("--spark", default=",".join(SPARK), help="Spark releases (comma-separated)")
    ap.add_argument("--pipelines", default="c1,etl", help=f"example pipelines: {', '.join(PIPELINES)}")
    ap.add_argument("--cells", choices=("reference-airflow", "all", "diagonal"), default="reference-airflow",
                    help="which Airflow x Spark pairs run the pipelines: every Spark under the reference Airflow "
                         "plus the c1 pipeline under every Airflow with Spark 3.5 (default), or all pairs")
    ap.add_argument("--no-layer-tests", action="store_true", help="skip the Airflow-layer tests")
    ap.add_argument("--cache", type=Path, default=HERE / "out" / "venvs", help="where the venvs go (rebuilt)")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "compat.json")
    ap.add_argument("--report", type=Path, default=None, help="also write the Markdown report here")
    ap.add_argument("--render", type=Path, default=None,
                    help="only write the report/tables from a compat.json of an earlier run")
    ap.add_argument("--commit", default="", help="the commit to name in the report (default: git's HEAD)")
    ap.add_argument("--readme", action="store_true", help="write the table into README.md and docs/compatibility.md")
    ap.add_argument("--sieve-prune", action="store_true",
                    help="only check sieve.spark.enable under each --spark release (merged into out/sieve_prune.json: "
                         "releases checked earlier and not now are kept; with --report, that Markdown report; with "
                         "--render, only the report from such a JSON)")
    args = ap.parse_args(argv)

    def write_outputs(result: dict[str, Any]) -> None:
        if args.report:
            args.report.write_text(report(result))
        if args.readme:
            for target in (ROOT / "README.md", ROOT / "docs" / "compatibility.md"):
                if write_table(target, table(result)):
                    log(f"table written into {target.relative_to(ROOT)}")

    airflows = [v for v in args.airflow.split(",") if v]
    sparks = [v for v in args.spark.split(",") if v]
    if args.sieve_prune:
        saved = HERE / "out" / "sieve_prune.json"
        commit = args.commit or run(["git", "rev-parse", "--short", "HEAD"], check=False).stdout.strip() or "?"
        if args.render:
            cells = json.loads(args.render.read_text())
        else:
            args.cache.mkdir(parents=True, exist_ok=True)
            cells = [sieve_prune_cell(s, args.cache) for s in sparks]
            for c in cells:
                c.setdefault("commit", commit)
                c.setdefault("date", time.strftime("%Y-%m-%d"))
            # Merged, not rewritten: the releases an earlier run checked and this one did not stay in the report.
            earlier = json.loads(saved.read_text()) if saved.exists() else []
            cells += [c for c in earlier if c.get("spark") not in sparks]
        order = {s: i for i, s in enumerate(SPARK)}
        cells.sort(key=lambda c: (order.get(c.get("spark"), len(order)), str(c.get("spark"))))
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(cells, indent=1))
        text = sieve_prune_report(cells, commit)
        if args.report:
            args.report.write_text(text)
        print(text)
        return 0 if all(c.get("ok") for c in cells) else 1
    if args.render:
        result = json.loads(args.render.read_text())
        write_outputs(result)
        print(report(result))
        return 0
    pipelines = [p for p in args.pipelines.split(",") if p]
    t0 = time.monotonic()
    args.cache.mkdir(parents=True, exist_ok=True)
    wheel = build_wheel(args.cache / "dist")
    log(f"wheel {wheel.name}")
    rows = [airflow_row(a, wheel, args.cache) for a in airflows]
    ref_af = REFERENCE[0] if REFERENCE[0] in airflows else airflows[-1]
    pairs: list[tuple[str, str, list[str]]] = []
    for s in sparks:
        pairs.append((ref_af, s, pipelines))
    for a in airflows:
        for s in sparks:
            if a == ref_af:
                continue
            if args.cells == "all" or (args.cells == "reference-airflow" and s == sparks[0]) or (
                    args.cells == "diagonal" and airflows.index(a) == sparks.index(s) % len(airflows)):
                pairs.append((a, s, pipelines[:1]))
    ref_key = (ref_af, REFERENCE[1] if REFERENCE[1] in sparks else sparks[-1])
    pairs.sort(key=lambda p: (p[:2] != ref_key,))
    cells = [pipeline_cell(a, s, args.cache, ps) for a, s, ps in pairs]
    ref = next(c for c in cells if (c["airflow"], c["spark"]) == ref_key)
    ref["reference"] = True
    for c in cells:
        if c is not ref:
            sub = {k: v for k, v in ref.get("signature", {}).items() if k.split(" ")[0] in c.get("states", {})}
            c["diffs"] = compare(c.get("signature", {}), sub)
    commit = args.commit or run(["git", "rev-parse", "--short", "HEAD"], check=False).stdout.strip() or "?"
    result = {"date": time.strftime("%Y-%m-%d"), "commit": commit, "wheel": wheel.name,
              "reference": list(ref_key), "seconds": 0.0, "airflow_rows": rows, "cells": cells}

    def save() -> None:
        result["seconds"] = round(time.monotonic() - t0, 1)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1, default=str))
        write_outputs(result)

    save()  # the install checks and the pipelines first: the layer tests take longest
    if not args.no_layer_tests:
        for r in rows:
            r["tests"] = layer_test_run(r["airflow"], args.cache / f"airflow-{r['airflow']}" / "bin" / "python",
                                        r["installed"], airflow_env(args.cache / f"home-{r['airflow']}"))
            r["ok"] = r["install_ok"] and r["tests"]["ok"]
            save()
    print(report(result))
    ok = all(r["ok"] for r in rows) and all(cell_text(c).startswith("✅") for c in cells)
    log(f"{'all passed' if ok else 'FAILURES (see the table)'} in {result['seconds']:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
