"""``python dev/demo.py`` (``./dev.sh demo``): the example pipeline, end to end (checkout only, not in the wheel).

Runs the example DAG ``lineage_c1_transactions_mart`` (``dags/`` of the checkout) with ``dag.test()``
on local Spark: generates the transactions table, runs the C1 mart job through
``SparkLineageSubmitOperator``, then prints the mart's column lineage as read back from the emitted
OpenLineage events, and where the events went.

Embedded defaults (each only when not already set): ``AIRFLOW_HOME`` = ``./.airflow``, Spark
connection ``spark_default`` = ``local[2]`` via ``AIRFLOW_CONN_SPARK_DEFAULT``, ``PYSPARK_PYTHON`` =
this interpreter, metadata DB migrated once. With no OpenLineage configuration, events go to
``$AIRFLOW_HOME/lineage/events.jsonl``.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DAG_FILE = ROOT / "dags" / "lineage_c1_transactions_mart.py"
DAG_ID = "lineage_c1_transactions_mart"
SPARK_CONN = json.dumps({"conn_type": "spark", "host": "local[2]"})


def prepare_environment(airflow_home: str | None = None) -> Path:
    """Set the embedded defaults (never overriding what the user set) and return AIRFLOW_HOME."""
    home = Path(airflow_home or os.environ.get("AIRFLOW_HOME") or (Path.cwd() / ".airflow")).resolve()
    os.environ["AIRFLOW_HOME"] = str(home)
    home.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    # dag.test() serialises the DAG from the dags-folder bundle: point it at the example DAGs
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(DAG_FILE.parent)
    os.environ.setdefault("AIRFLOW_CONN_SPARK_DEFAULT", SPARK_CONN)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    return home


def migrate_db(home: Path) -> None:
    """``airflow db migrate`` once per AIRFLOW_HOME and Airflow version."""
    from importlib.metadata import version

    marker = home / f".apl-db-migrated-{version('apache-airflow')}"
    if marker.exists():
        return
    print(f"demo: initialising the Airflow metadata DB in {home} (once)", flush=True)
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, stdout=subprocess.DEVNULL)
    marker.touch()


def load_dag(path: Path = DAG_FILE) -> Any:
    """Import the example DAG file and return its ``dag``."""
    if not path.is_file():
        raise SystemExit(
            f"demo: example DAG {path} not found: run the demo from a checkout of airflow-provider-lineage (dags/ "
            f"folder)"
        )
    spec = importlib.util.spec_from_file_location("lineage_c1_transactions_mart", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag


def read_events(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def format_column_lineage(event: dict[str, Any]) -> str:
    """Human-readable ``output.column <- input.column [TYPE/SUBTYPE]`` lines of one run event."""
    lines: list[str] = []
    for out in event.get("outputs", []):
        facet = (out.get("facets") or {}).get("columnLineage") or {}
        lines.append(f"{out['name']}  (namespace {out['namespace']})")
        for col, spec in (facet.get("fields") or {}).items():
            parts = []
            for src in spec.get("inputFields", []):
                for tr in src.get("transformations") or [{}]:
                    tag = f"{tr.get('type', '?')}/{tr.get('subtype', '?')}" + (" masked" if tr.get("masking") else "")
                    parts.append(f"{Path(src['name']).name}.{src['field']} [{tag}]")
            lines.append(f"  {col:<16} <- " + (", ".join(parts) if parts else "(no input column)"))
        for src in facet.get("dataset") or []:
            for tr in src.get("transformations") or [{}]:
                lines.append(
                    f"  (all rows)       <- {Path(src['name']).name}.{src['field']} "
                    f"[{tr.get('type')}/{tr.get('subtype')}]"
                )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dev/demo.py", description=__doc__.splitlines()[0])
    parser.add_argument("--airflow-home", help="AIRFLOW_HOME to use (default: $AIRFLOW_HOME or ./.airflow)")
    parser.add_argument("--data-dir", help="where the demo tables go (default: $AIRFLOW_HOME/lineage_demo)")
    args = parser.parse_args(argv)
    home = prepare_environment(args.airflow_home)
    data_dir = args.data_dir or os.environ.get("LINEAGE_DEMO_DATA_DIR") or str(home / "lineage_demo")
    os.environ["LINEAGE_DEMO_DATA_DIR"] = data_dir
    migrate_db(home)

    from airflow_provider_lineage.lineage import transport
    from airflow_provider_lineage.operators.spark_lineage import openlineage_provider_active

    provider = openlineage_provider_active()
    events_path = transport.default_events_path()
    before = len(read_events(events_path))
    dag = load_dag()
    print(f"demo: running DAG {DAG_ID} with dag.test() (local Spark; data in {data_dir})", flush=True)
    dag_run = dag.test(run_conf={"data_dir": data_dir})
    state = str(getattr(dag_run, "state", "unknown"))
    print(f"\ndemo: DAG run state: {state}")
    if provider:
        print("demo: Airflow's OpenLineage provider is configured: the events went through it (its transport).")
        return 0 if "success" in state else 1
    if transport.environment_configured():
        print("demo: events went to the destination in your OPENLINEAGE_* settings / openlineage.yml")
        return 0 if "success" in state else 1
    events = read_events(events_path)[before:]
    complete = [e for e in events if e.get("eventType") == "COMPLETE" and e["job"]["name"].endswith(".build_mart")]
    if complete:
        print("\ncolumn lineage of the mart (from the COMPLETE event):")
        print(format_column_lineage(complete[-1]))
    print(f"\ndemo: {len(events)} OpenLineage events appended to {events_path}")
    return 0 if "success" in state else 1


if __name__ == "__main__":
    sys.exit(main())
