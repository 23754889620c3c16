"""SieveMaintenanceSensor and its trigger on a table and index in S3 (moto's server on 127.0.0.1).

Credentials come once from the environment and once as ``storage_options`` (what a templated
Airflow connection would fill in).
"""
from __future__ import annotations

import asyncio
import os

import pytest

from airflow_provider_lineage.sensors.sieve import SieveMaintenanceSensor
from airflow_provider_lineage.sieve.maintain import maintain
from airflow_provider_lineage.triggers.sieve import SieveMaintenanceTrigger
from tests.support import s3 as s3_support
from tests.support.s3 import new_bucket, put_parquet

pytest.importorskip("moto.server", reason="moto[server] is in the dev extra: ./dev.sh setup")
pytest.importorskip("boto3")

s3_endpoint = s3_support.s3_endpoint  # the module's moto S3 server (a module-scoped fixture)


@pytest.fixture()
def table(s3_endpoint: str) -> str:
    root = f"s3://{new_bucket()}/events"
    for i in range(4):
        put_parquet(f"{root}/part-{i}.parquet", list(range(i * 100, i * 100 + 100)))
    assert maintain(None, root, "k").action == "build"
    return root


def test_sensor_pokes_an_s3_table(table: str) -> None:
    sensor = SieveMaintenanceSensor(task_id="wait", table=table, columns="k")
    assert "storage_options" in sensor.template_fields
    assert sensor.poke({}).is_done is False  # the index is current
    put_parquet(f"{table}/part-9.parquet", [9000])
    got = sensor.poke({})
    assert got.is_done
    (need,) = got.xcom_value
    assert (need["table"], need["action"], need["files_added"]) == (table, "sync", 1)


def test_trigger_with_storage_options(table: str, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    opts = {"access_key": "testing", "secret_key": "testing", "region": "us-east-1",
            "endpoint_override": s3_endpoint.split("://")[1], "scheme": "http"}
    put_parquet(f"{table}/part-9.parquet", [9000])
    for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(k)
    assert "AWS_ENDPOINT_URL" not in os.environ
    trigger = SieveMaintenanceTrigger(indexes=[{"table": table, "column": "k"}], poke_interval=0.05,
                                      storage_options=opts)
    _, kwargs = trigger.serialize()
    assert kwargs["storage_options"] == opts
    event = asyncio.run(asyncio.wait_for(SieveMaintenanceTrigger(**kwargs).run().__anext__(), 60))
    assert event.payload["status"] == "success"
    assert event.payload["indexes"][0]["action"] == "sync"
