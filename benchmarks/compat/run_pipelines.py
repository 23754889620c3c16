"""Run example DAGs with ``dag.test()`` and write their lineage signature (``compat.py`` runs this inside
an Airflow venv, with a Spark release's spark-submit first on PATH).

    python run_pipelines.py OUT_DIR c1 [etl]

Writes ``OUT_DIR/result.json``: ``{"states": {dag_id: state}, "signature": {...}, "spark_versions": [...]}``.
The signature keeps, per written dataset, what must not depend on the Spark or Airflow release: the
input datasets, the column edges with their transformation types, and the schema's field types
(paths under the run's data folder are written ``<data>/...``).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PIPELINES = {"c1": "lineage_c1_transactions_mart", "etl": "lineage_etl"}


def dagbag(path: Path) -> Any:
    try:
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow < 3.2
        from airflow.models.dagbag import DagBag
    return DagBag(dag_folder=str(path))  # examples stay out: AIRFLOW__CORE__LOAD_EXAMPLES=False


def read_events(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def signature(dag_id: str, events: list[dict[str, Any]], data: str) -> tuple[dict[str, Any], set[str]]:
    from airflow_provider_lineage.lineage import column_facet

    def norm(text: str) -> str:
        return text.replace(data, "<data>")

    sig: dict[str, Any] = {}
    engines: set[str] = set()
    for e in events:
        engine = (e.get("run", {}).get("facets", {}).get("processing_engine") or {}).get("version")
        if engine:
            engines.add(str(engine))
        if e.get("eventType") != "COMPLETE":
            continue
        inputs = sorted(norm(f"{i['namespace']}/{i['name']}") for i in e.get("inputs", []))
        for o in e.get("outputs", []):
            facets = o.get("facets", {})
            schema = [[f["name"], f.get("type")] for f in (facets.get("schema", {}).get("fields") or [])]
            # either facet form: a dataset-level entry counts on every output field
            edges = [[field, norm(f"{ns}/{name}"), col, typ, sub or None] for field, ns, name, col, typ, sub, _m, _r
                     in column_facet.edges(facets.get("columnLineage"), [f for f, _ in schema])]
            sig[f"{dag_id} {norm(o['namespace'] + '/' + o['name'])}"] = {
                "inputs": inputs, "edges": sorted(edges, key=json.dumps), "schema": sorted(schema, key=json.dumps)}
    return sig, engines


def main() -> int:
    out = Path(sys.argv[1])
    from airflow_provider_lineage.lineage import transport

    events_path = transport.default_events_path()
    states: dict[str, str] = {}
    sig: dict[str, Any] = {}
    engines: set[str] = set()
    for name in sys.argv[2:]:
        dag_id = PIPELINES[name]
        bag = dagbag(ROOT / "dags" / f"{dag_id}.py")
        if bag.import_errors:
            states[dag_id] = f"import error: {bag.import_errors}"
            continue
        data = out / "data" / name
        before = len(read_events(events_path))
        run = bag.get_dag(dag_id).test(run_conf={"data_dir": str(data)})
        state = getattr(run.state, "value", run.state)
        states[dag_id] = str(state)
        s, e = signature(dag_id, read_events(events_path)[before:], str(data))
        sig.update(s)
        engines |= e
    (out / "result.json").write_text(json.dumps({"states": states, "signature": sig,
                                                 "spark_versions": sorted(engines)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
