"""The example DAG end to end on real local Spark (``dag.test()``), and the "never both" emission rule.

* in-process run, Airflow's OpenLineage provider NOT configured: the operator emits START/COMPLETE
  itself to ``$AIRFLOW_HOME/lineage/events.jsonl``; the mart's column lineage is checked edge by edge;
* subprocess run (``python dev/demo.py``) with the provider configured with a file
  transport: the datasets reach the provider's file through ``get_openlineage_facets_on_complete`` and
  the operator writes nothing to the default file.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest

from tests.operators.ol_schema import validate_or_skip
from tests.support.pipelines import migrate_db, read_events

# slow tier: the example pipelines (several spark-submits, shared with the modules of EXAMPLE_PIPELINE_MODULES)
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DAGS = ROOT / "dags"
DAG_ID = "lineage_c1_transactions_mart"
SPARK_CONN = json.dumps({"conn_type": "spark", "host": "local[2]"})

# (output column, input column, type, subtype, masking) — the hand-labelled reference graph of C1
EXPECTED_COLUMN_EDGES = {
    ("txn_id", "txn_id", "DIRECT", "IDENTITY", False),
    ("customer_id", "customer_id", "DIRECT", "IDENTITY", False),
    ("account_hash", "account_id", "DIRECT", "TRANSFORMATION", True),
    ("txn_date", "txn_date", "DIRECT", "IDENTITY", False),
    ("txn_month", "txn_date", "DIRECT", "TRANSFORMATION", False),
    ("channel", "channel", "DIRECT", "IDENTITY", False),
    ("amount_eur", "amount", "DIRECT", "TRANSFORMATION", False),
    ("amount_eur", "fx_rate", "DIRECT", "TRANSFORMATION", False),
    ("net_amount_eur", "amount", "DIRECT", "TRANSFORMATION", False),
    ("net_amount_eur", "fee", "DIRECT", "TRANSFORMATION", False),
    ("net_amount_eur", "fx_rate", "DIRECT", "TRANSFORMATION", False),
    ("is_cross_border", "country", "DIRECT", "TRANSFORMATION", False),
    ("size_band", "amount", "INDIRECT", "CONDITIONAL", False),
}
# the period/status filter influences every row of the mart
EXPECTED_DATASET_EDGES = {("txn_date", "INDIRECT", "FILTER"), ("status", "INDIRECT", "FILTER")}
MART_COLUMNS = [
    "txn_id", "customer_id", "account_hash", "txn_date", "txn_month", "channel", "amount_eur",
    "net_amount_eur", "is_cross_border", "size_band",
]
# default placement (indirect_lineage="dataset"): the dataset-wide edges are stated once, in the facet's
# ``dataset`` list, not repeated on every field




@pytest.fixture(scope="session")
def airflow_db() -> Path:
    return migrate_db()


@pytest.fixture(scope="module")
def provider_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[str]]:
    """Start the demo in a subprocess with Airflow's OpenLineage provider configured (runs alongside)."""
    base = tmp_path_factory.mktemp("provider-run")
    env = dict(os.environ)
    env.update(
        AIRFLOW_HOME=str(base / "home"),
        AIRFLOW__OPENLINEAGE__TRANSPORT=json.dumps(
            {"type": "file", "log_file_path": str(base / "provider-events.jsonl"), "append": True}
        ),
        AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD="False",
        LINEAGE_DEMO_DATA_DIR=str(base / "data"),
        PYTHONPATH=str(ROOT),
    )
    env.pop("AIRFLOW__CORE__DAGS_FOLDER", None)
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "dev" / "demo.py")], env=env, cwd=str(base),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    proc.base = base  # type: ignore[attr-defined]
    yield proc
    if proc.poll() is None:
        proc.kill()


@pytest.fixture(scope="module")
def self_emit_run(airflow_db: Path, provider_run: subprocess.Popen[str], example_c1: dict[str, Any]) -> dict[str, Any]:
    """The example DAG in this process, OpenLineage provider not configured (shared with other tests);
    ``provider_run`` is started first so that the two runs overlap."""
    return example_c1


def _mart_event(events: list[dict[str, Any]], event_type: str) -> dict[str, Any]:
    matching = [e for e in events if e["eventType"] == event_type and e["job"]["name"] == f"{DAG_ID}.build_mart"]
    assert len(matching) == 1, [(e["eventType"], e["job"]["name"]) for e in events]
    return matching[0]


def _edges(output: dict[str, Any]) -> tuple[set[tuple[str, str, str, str, bool]], set[tuple[str, str, str]], set[str]]:
    facet = output["facets"]["columnLineage"]
    columns, datasets = set(), set()
    sources = set()
    for col, spec in facet["fields"].items():
        for src in spec["inputFields"]:
            sources.add(src["name"])
            for tr in src["transformations"]:
                columns.add((col, src["field"], tr["type"], tr["subtype"], bool(tr.get("masking"))))
    for src in facet.get("dataset") or []:
        sources.add(src["name"])
        for tr in src["transformations"]:
            datasets.add((src["field"], tr["type"], tr["subtype"]))
    return columns, datasets, sources


class TestExampleDagSelfEmission:
    def test_dag_run_succeeds(self, self_emit_run: dict[str, Any]) -> None:
        assert "success" in str(self_emit_run["dag_run"].state)
        assert (self_emit_run["data_dir"] / "mart" / "transactions_c1").is_dir()

    def test_start_and_complete_with_parent_and_engine(self, self_emit_run: dict[str, Any]) -> None:
        start = _mart_event(self_emit_run["events"], "START")
        complete = _mart_event(self_emit_run["events"], "COMPLETE")
        assert start["run"]["runId"] == complete["run"]["runId"]
        for e in (start, complete):
            assert e["run"]["facets"]["parent"]["job"]["name"] == DAG_ID
        assert complete["run"]["facets"]["processing_engine"]["version"] == pyspark.__version__
        assert "extractionError" not in complete["run"]["facets"]
        assert "errorMessage" not in complete["run"]["facets"]

    def test_mart_column_lineage_edge_by_edge(self, self_emit_run: dict[str, Any]) -> None:
        complete = _mart_event(self_emit_run["events"], "COMPLETE")
        data_dir = self_emit_run["data_dir"]
        assert [o["name"] for o in complete["outputs"]] == [str(data_dir / "mart" / "transactions_c1")]
        assert [(i["namespace"], i["name"]) for i in complete["inputs"]] == [("file", str(data_dir / "transactions"))]
        out = complete["outputs"][0]
        assert [f["name"] for f in out["facets"]["schema"]["fields"]] == MART_COLUMNS
        assert len(complete["inputs"][0]["facets"]["schema"]["fields"]) == 15
        columns, datasets, sources = _edges(out)
        assert columns == EXPECTED_COLUMN_EDGES
        assert datasets == EXPECTED_DATASET_EDGES
        assert sources == {str(data_dir / "transactions")}

    def test_events_validate_against_the_spec(self, self_emit_run: dict[str, Any]) -> None:
        used = validate_or_skip(self_emit_run["events"])
        assert {"ColumnLineageDatasetFacet.json", "SchemaDatasetFacet.json", "ParentRunFacet.json"} <= set(used)

    def test_written_datasets_pushed_to_xcom(self, self_emit_run: dict[str, Any]) -> None:
        from airflow.models.xcom import XComModel
        from airflow.utils.session import create_session

        dag_run = self_emit_run["dag_run"]
        with create_session() as session:
            row = (
                session.query(XComModel)
                .filter_by(dag_id=DAG_ID, run_id=dag_run.run_id, task_id="build_mart", key="lineage_outputs")
                .one()
            )
            value = row.value if not isinstance(row.value, str) else json.loads(row.value)
        mart = str(self_emit_run["data_dir"] / "mart" / "transactions_c1")
        assert value == [
            {"namespace": "file", "name": mart, "table": None, "location": f"file:{mart}", "format": "parquet",
             "columns": MART_COLUMNS, "mode": "Overwrite"}
        ]


    def test_written_table_published_as_an_asset_event(self, self_emit_run: dict[str, Any]) -> None:
        """The mart becomes an asset event through the alias, its URI equal to the OpenLineage dataset."""
        from airflow.models.asset import AssetAliasModel, AssetEvent, AssetModel
        from airflow.utils.session import create_session

        mart = str(self_emit_run["data_dir"] / "mart" / "transactions_c1")
        dag_run = self_emit_run["dag_run"]
        with create_session() as session:
            rows = (
                session.query(AssetModel.uri, AssetEvent.extra)
                .join(AssetEvent, AssetEvent.asset_id == AssetModel.id)
                .filter(AssetEvent.source_dag_id == DAG_ID, AssetEvent.source_run_id == dag_run.run_id,
                        AssetEvent.source_task_id == "build_mart")
                .all()
            )
            aliases = [a.name for a in session.query(AssetAliasModel).all()]
        assert [uri for uri, _ in rows] == [f"file://{mart}"]
        assert rows[0][1].get("format") == "parquet"
        assert "spark_lineage_writes" in aliases


class TestExampleDagThroughOpenLineageProvider:
    def test_provider_emits_and_operator_does_not(
        self, provider_run: subprocess.Popen[str], self_emit_run: dict[str, Any]
    ) -> None:
        output, _ = provider_run.communicate(timeout=900)
        assert provider_run.returncode == 0, output[-5000:]
        base: Path = provider_run.base  # type: ignore[attr-defined]
        assert "through it" in output
        assert not (base / "home" / "lineage" / "events.jsonl").exists()  # the operator did not self-emit
        events = read_events(base / "provider-events.jsonl")
        complete = _mart_event(events, "COMPLETE")
        columns, datasets, _ = _edges(complete["outputs"][0])
        assert columns == EXPECTED_COLUMN_EDGES and datasets == EXPECTED_DATASET_EDGES
        assert [e["eventType"] for e in events if e["job"]["name"] == f"{DAG_ID}.build_mart"].count("COMPLETE") == 1
