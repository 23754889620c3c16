"""A real S3 API for tests: moto's server on a free 127.0.0.1 port, and Parquet files written to it.

``s3_server()`` starts the server in this process, points the AWS_* environment at it (fake
credentials, ``AWS_ENDPOINT_URL``) and always stops it and restores the environment.
"""
from __future__ import annotations

import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
       "AWS_EC2_METADATA_DISABLED": "true"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def s3_server() -> Iterator[str]:
    """Yields the endpoint URL (``http://127.0.0.1:PORT``) while the server runs."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    saved = {k: os.environ.get(k) for k in [*ENV, "AWS_ENDPOINT_URL"]}
    os.environ.update(ENV, AWS_ENDPOINT_URL=endpoint)
    try:
        yield endpoint
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """A moto S3 server on 127.0.0.1 and the AWS_* environment pointing at it (restored after), one per
    test module: import it into the module (``from tests.support.s3 import s3_endpoint``)."""
    with s3_server() as endpoint:
        yield endpoint


def new_bucket() -> str:
    import boto3

    name = f"sieve-{uuid.uuid4().hex[:12]}"
    boto3.client("s3").create_bucket(Bucket=name)
    return name


def put_parquet(uri: str, keys: list[int | None]) -> None:
    """One Parquet file with columns ``k`` (int64 keys) and ``v`` at ``uri`` (s3://bucket/key)."""
    from airflow_provider_lineage.sieve import fs

    filesystem, inner = fs.resolve(uri)
    pq.write_table(pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(range(len(keys)), pa.int64())}),
                   inner, filesystem=filesystem)
