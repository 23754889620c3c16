"""Lineage records kept by common-io's ``XComObjectStorageBackend`` (the value in object storage, a reference
in ``xcom.value``): the run tab and the estate index read them as plain JSON through the backend's own
path resolution, on a local path (gzip) and on S3 (moto's server; the ``s3`` protocol is attached to
pyarrow's S3 client through fsspec's ``ArrowFSWrapper``, as no s3fs is installed here)."""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.plugins.estate_support import NS, add_run, record

BACKEND = "airflow.providers.common.io.xcom.backend.XComObjectStorageBackend"


@contextmanager
def _backend(path: str, compression: str = "") -> Iterator[None]:
    env = {"AIRFLOW__CORE__XCOM_BACKEND": BACKEND, "AIRFLOW__COMMON_IO__XCOM_OBJECTSTORAGE_PATH": path,
           "AIRFLOW__COMMON_IO__XCOM_OBJECTSTORAGE_THRESHOLD": "10",
           "AIRFLOW__COMMON_IO__XCOM_OBJECTSTORAGE_COMPRESSION": compression}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _check(dag_id: str, table: str) -> None:
    from airflow.models.xcom import XComModel
    from airflow.providers.common.io.xcom.backend import XComObjectStorageBackend
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from airflow_provider_lineage.plugins import store
    from airflow_provider_lineage.plugins.estate import index, query

    rec = record({table: [("email", f"{table}_src:email")]})
    run_id = f"estate__{dag_id}"
    raw = XComObjectStorageBackend.serialize_value(rec, key="column_lineage", dag_id=dag_id, run_id=run_id,
                                                   task_id="w")
    assert "://" in str(raw) and "email" not in str(raw)  # a reference, the record is in object storage
    add_run(dag_id, "w", None, day=1, run_id=run_id, raw=raw)
    with create_session() as session:
        stored = session.scalar(select(XComModel.value).where(XComModel.dag_id == dag_id))
        assert "email" not in json.dumps(stored)
        tasks = store.run_tasks(session, dag_id, run_id)  # the run tab
        assert [t.record for t in tasks] == [rec]
        index.reindex(session, dag_id=dag_id)  # the estate index
        rows = query.impact(session, NS, f"{table}_src", "email")["rows"]
        assert [(r["name"], r["column"], r["dag_id"]) for r in rows] == [(table, "email", dag_id)]


@pytest.fixture(scope="module")
def db() -> Iterator[None]:
    from tests.support.pipelines import migrate_db

    migrate_db()
    yield
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    with create_session() as session:
        session.execute(delete(DagRun).where(DagRun.dag_id.like("estate_os_%")))


def test_local_path_with_gzip(db: Any, tmp_path: Any) -> None:
    with _backend(f"file://{tmp_path}/xcom", compression="gzip"):
        _check("estate_os_local", "os_local")
    assert list((tmp_path / "xcom").rglob("*.gz"))


def test_moto_s3(db: Any) -> None:
    import pyarrow.fs as pafs
    from airflow.sdk.io import attach
    from airflow.sdk.io.store import _STORE_CACHE
    from fsspec.implementations.arrow import ArrowFSWrapper

    from tests.support.s3 import new_bucket, s3_server

    with s3_server() as endpoint:
        bucket = new_bucket()
        fs = ArrowFSWrapper(pafs.S3FileSystem(endpoint_override=endpoint, access_key="testing", secret_key="testing",
                                              region="us-east-1", scheme="http"))
        attach("s3", fs=fs)
        try:
            with _backend(f"s3://{bucket}/xcom"):
                _check("estate_os_s3", "os_s3")
        finally:
            _STORE_CACHE.pop("s3", None)


def test_a_reference_outside_the_backend_path_is_refused(tmp_path: Any) -> None:
    from airflow_provider_lineage.plugins.estate import values

    (tmp_path / "x.json").write_text("{}")
    with _backend(f"file://{tmp_path}/xcom"), pytest.raises(values.UnreadableValue, match="not an object storage"):
        values.read(json.dumps(f"file://{tmp_path}/x.json"))
    assert values.read(json.dumps("file:///etc/passwd"), backend=None) == "file:///etc/passwd"  # no backend: no read
