"""Tags across DAGs without Spark: a task publishes an asset event with ``column_tags`` in its extra (as
SparkLineageSubmitOperator does through its asset alias); a task of another DAG reads them with
:func:`airflow_provider_lineage.operators.guard.upstream_tags` through the task SDK (real ``dag.test()``,
real metadata DB, no DB access from the task)."""
from __future__ import annotations

from typing import Any

import pendulum

from tests.support.pipelines import migrate_db

URI_NAME = "/tmp/apl-guard-probe/orders_mart"
TAGS = {"email": [{"tag": "pii", "source": "inherited", "masked": False,
                   "path": [{"namespace": "file", "name": "/tmp/apl-guard-probe/customers", "column": "email"},
                            {"namespace": "file", "name": URI_NAME, "column": "email"}]}]}


def test_tags_travel_in_asset_event_extras_to_another_dag() -> None:
    migrate_db()
    from airflow.sdk import DAG, Asset, AssetAlias, task

    from airflow_provider_lineage.lineage.naming import asset_uri
    from airflow_provider_lineage.operators import guard

    uri = asset_uri("file", URI_NAME)
    with DAG("guard_probe_producer", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC")) as producer:
        @task(outlets=[AssetAlias("spark_lineage_writes")])
        def write(*, outlet_events: Any = None) -> None:
            outlet_events[AssetAlias("spark_lineage_writes")].add(Asset(uri=uri), extra={"column_tags": TAGS})

        write()

    with DAG("guard_probe_consumer", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC")) as consumer:
        @task
        def read() -> dict[str, Any]:
            record = {"datasets": [{"namespace": "file", "name": URI_NAME, "fields": [["email", "string"]]},
                                   {"namespace": "file", "name": "/tmp/apl-guard-probe/never-written", "fields": []}],
                      "inputs": [0, 1], "outputs": []}
            known, problems = guard.upstream_tags(record)
            return {"known": [[list(k), v] for k, v in known.items()], "problems": problems}

        read()

    assert "success" in str(producer.test().state)
    run = consumer.test()
    assert "success" in str(run.state)
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from airflow_provider_lineage.plugins.store import decode

    with create_session() as session:
        value = decode(session.scalar(select(XComModel.value).where(
            XComModel.dag_id == "guard_probe_consumer", XComModel.run_id == run.run_id, XComModel.key == "return_value")))
    assert value["problems"] == []
    (entry,) = value["known"]
    assert entry[0] == ["file", URI_NAME, "email"] and entry[1][0]["tag"] == "pii" and len(entry[1][0]["path"]) == 2
