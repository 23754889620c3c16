"""The example pipelines, run once per test session and shared (they are the slowest thing we run).

``example_c1``: ``lineage_c1_transactions_mart`` once; ``example_etl``: ``lineage_etl`` twice on one
data folder (the second run appends a day). Both run under ``dag.test()`` with local Spark, with
Airflow's OpenLineage provider not configured, so the operators self-emit to
``$AIRFLOW_HOME/lineage/events.jsonl``; each result keeps the slice of that file its runs wrote.
The fixtures themselves are registered in ``tests/conftest.py``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DAGS = ROOT / "dags"
SPARK_CONN = json.dumps({"conn_type": "spark", "host": "local[2]"})


def env_for_spark() -> None:
    """spark_default = local[2], Spark's Python = this interpreter, the venv's spark-submit first on PATH."""
    os.environ.setdefault("AIRFLOW_CONN_SPARK_DEFAULT", SPARK_CONN)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ["PATH"].split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ["PATH"]


def migrate_db() -> Path:
    """Migrate the metadata DB of this test run's AIRFLOW_HOME (tests/conftest.py made it) once."""
    home = Path(os.environ["AIRFLOW_HOME"])
    marker = home / ".apl-db-migrated"
    if not marker.exists():
        subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, stdout=subprocess.DEVNULL)
        marker.touch()
    return home


def read_events(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def dagbag_class() -> Any:
    """Airflow's ``DagBag``: ``airflow.dag_processing.dagbag`` from 3.2, ``airflow.models.dagbag`` before."""
    try:
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow 3.0 / 3.1
        from airflow.models.dagbag import DagBag
    return DagBag


def load_dag(dag_id: str) -> Any:
    bag = dagbag_class()(dag_folder=str(DAGS / f"{dag_id}.py"))
    assert not bag.import_errors, bag.import_errors
    return bag.get_dag(dag_id)


def run_self_emitting(dag_id: str, data_dir: Path, times: int = 1, spark_conn: str | None = None,
                      index_options: dict[str, Any] | None = None,
                      task_overrides: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Run ``dag_id`` ``times`` times on ``data_dir``; the runs and the events they self-emitted.

    ``spark_conn``: ``spark_default`` for these runs only (an ``AIRFLOW_CONN_*`` JSON value; default local[2]).
    ``index_options``: build settings for every ``SieveIndexOperator`` of the DAG (e.g. the engine).
    ``task_overrides``: ``{task_id: {attribute: value}}`` set on the loaded DAG's tasks (e.g. a ``capture_dir``).
    """
    migrate_db()
    env_for_spark()
    for key in ("AIRFLOW__OPENLINEAGE__TRANSPORT", "OPENLINEAGE_URL", "OPENLINEAGE_CONFIG"):
        assert not os.environ.get(key), f"{key} is set: unset it so that the operators self-emit to the default file"
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(DAGS)
    from airflow_provider_lineage.lineage import transport

    path = transport.default_events_path()
    before = len(read_events(path))
    dag = load_dag(dag_id)
    for task in dag.tasks:
        if index_options and hasattr(task, "index_options"):
            task.index_options.update(index_options)
        for name, value in (task_overrides or {}).get(task.task_id, {}).items():
            setattr(task, name, value)
    saved = os.environ["AIRFLOW_CONN_SPARK_DEFAULT"]
    os.environ["AIRFLOW_CONN_SPARK_DEFAULT"] = spark_conn or saved
    try:
        runs = [dag.test(run_conf={"data_dir": str(data_dir)}) for _ in range(times)]
    finally:
        os.environ["AIRFLOW_CONN_SPARK_DEFAULT"] = saved
    return {"runs": runs, "dag_run": runs[-1], "data_dir": data_dir, "events": read_events(path)[before:],
            "events_path": path}
