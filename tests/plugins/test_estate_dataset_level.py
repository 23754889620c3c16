"""The estate index reads a record whose every-row edges are dataset-level (the run record always keeps them
apart as ``dataset_edges``, whatever the events' form): a column's upstream includes them, a filter column's
downstream reaches the whole output (issue 36, item 4). Real metadata DB, no Spark."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from airflow_provider_lineage.lineage import run_record
from airflow_provider_lineage.lineage.events import LineageResult
from benchmarks.lineage.event_size import wide_lineage
from tests.plugins.estate_support import add_run

DAG = "estate_wide_dataset_level"


@pytest.fixture(scope="module")
def indexed() -> Iterator[None]:
    from tests.support.pipelines import migrate_db

    migrate_db()
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    from airflow_provider_lineage.plugins.estate import index

    rec = run_record.build(LineageResult(lineages=[wide_lineage(columns=40, keys=6)]), job_namespace="airflow",
                           job_name=f"{DAG}.build", run_id="r1", emission="self")
    assert len(rec["dataset_edges"]) == 6 and all(e[4] == "DIRECT" for e in rec["edges"])
    add_run(DAG, "build", rec, day=3)
    with create_session() as session:
        index.sync(session, force=True)
    yield
    with create_session() as session:
        session.execute(delete(DagRun).where(DagRun.dag_id == DAG))


def test_upstream_of_a_column_includes_the_dataset_level_edges(indexed: Any) -> None:
    from airflow.utils.session import create_session

    from airflow_provider_lineage.plugins.estate import query

    with create_session() as session:
        up = query.impact(session, "file", "/data/lake/features", "feature_0003", direction="upstream", depth=1)
    got = {(r["name"].rsplit("/", 1)[-1], r["column"], r["types"]) for r in up["rows"]}
    assert {("events", "feature_source_0003", "DIRECT/TRANSFORMATION"), ("events", "customer_id", "INDIRECT/JOIN"),
            ("customers", "customer_id", "INDIRECT/JOIN"), ("events", "status", "INDIRECT/FILTER")} <= got


def test_downstream_of_a_filter_column_reaches_the_whole_output(indexed: Any) -> None:
    from airflow.utils.session import create_session

    from airflow_provider_lineage.plugins.estate import query

    with create_session() as session:
        down = query.impact(session, "file", "/data/lake/events", "status", depth=2)
    assert [(r["name"], r["column"], r["types"]) for r in down["rows"]] == [
        ("/data/lake/features", "", "INDIRECT/FILTER")]
