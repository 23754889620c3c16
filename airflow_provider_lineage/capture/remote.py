"""Capture records written by a driver that runs elsewhere, to a location the Airflow worker also reaches.

In cluster deploy mode the driver cannot hand a local folder back to the Airflow task. The operator
gives it a ``capture_dir`` both sides reach (``s3://``, ``gs://``, ``abfs://``, ``hdfs://`` or a shared
path) and a *run token* (``spark.airflow_lineage.captureToken``) that is unique to the task run's
attempt. The driver writes, below ``<capture_dir>/<token>/``:

* one *envelope* per write, ``NNNNNN-<record id>.json``:
  ``{"apl_capture": 1, "kind": "record", "token": ..., "task_run": ..., "written_at": ..., "record": {...}}``;
* the launcher's status at the end, ``_launcher.status.json`` (``"kind": "status"``).

Every envelope carries the token, so the operator takes only its own run's records, even from a folder
that other runs reuse; ``written_at`` (the driver's clock) is informative only, never used to select.

How the driver writes (standard library and pyspark only: nothing to install on the cluster):

1. through Hadoop's ``FileSystem`` in the driver's JVM (any scheme the cluster's Hadoop has a connector
   for: EMRFS ``s3://``, ``s3a://``, ``gs://``, ``abfs://``, ``hdfs://``), with the credentials Spark
   is already configured with (``spark.hadoop.*``, instance roles, ...); a file system that has no atomic
   create is written through a ``.tmp-`` name and renamed;
2. for ``s3://``/``s3a://`` when the JVM has no S3 connector, a signed ``PutObject`` (AWS Signature V4,
   standard library) with the S3A settings Spark has (``spark.hadoop.fs.s3a.access.key``,
   ``.secret.key``, ``.session.token``, ``.endpoint``, ``.endpoint.region``) or the ``AWS_*`` environment;
3. a shared local path (no scheme, ``file:``) with the standard library (temp file + rename; files and folders
   follow the process's umask, e.g. ``umask 0027`` for a worker of the same group).

No Airflow imports, no openlineage-python; pyspark only through the session handed in.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import posixpath
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from airflow_provider_lineage.capture.sink import temp_file
from airflow_provider_lineage.lineage.record import CaptureRecord

ENVELOPE_VERSION = 1
STATUS_NAME = "_launcher.status.json"
#: Default bound on one capture record (bytes of JSON); the operator's ``capture_record_limit``.
DEFAULT_RECORD_LIMIT = 32 * 1024 * 1024
OBJECT_STORES = ("s3", "s3a", "s3n", "gs", "gcs", "abfs", "abfss", "wasb", "wasbs", "oss", "cos")


class RecordTooLarge(ValueError):
    """A record over the size limit: not written (the message names the limit's settings)."""


def run_folder(capture_dir: str, token: str) -> str:
    """``<capture_dir>/<token>`` (URI or path)."""
    return capture_dir.rstrip("/") + "/" + token


def envelope(kind: str, token: str, task_run: str | None, payload_json: str, *, now: dt.datetime | None = None) -> str:
    """The JSON text of one envelope (``payload_json`` is embedded as is: a record or status object)."""
    head = {
        "apl_capture": ENVELOPE_VERSION,
        "kind": kind,
        "token": token,
        "task_run": task_run,
        "written_at": (now or dt.datetime.now(dt.UTC)).isoformat(),
    }
    return json.dumps(head)[:-1] + ', "payload": ' + payload_json + "}"


# -- stores -------------------------------------------------------------------------------------------
class LocalStore:
    """A shared local path (NFS, a mounted volume)."""

    description = "shared path"

    def __init__(self, folder: str) -> None:
        if folder.startswith("file:"):
            folder = urllib.parse.unquote(urllib.parse.urlsplit(folder).path)
        self.folder = folder
        os.makedirs(folder, exist_ok=True)

    def put(self, name: str, data: bytes) -> None:
        fd, tmp = temp_file(self.folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, os.path.join(self.folder, name))
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


class HadoopStore:
    """Hadoop's FileSystem in the driver's JVM (through py4j)."""

    def __init__(self, spark: Any, folder: str) -> None:
        jvm = spark.sparkContext._jvm
        self._jvm = jvm
        self.folder = folder
        self._path = jvm.org.apache.hadoop.fs.Path(folder)
        self._fs = self._path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())  # raises without a connector
        self._atomic_create = folder.split("://", 1)[0].lower() in OBJECT_STORES
        self.description = f"Hadoop FileSystem {self._fs.getClass().getName()}"

    def put(self, name: str, data: bytes) -> None:
        Path = self._jvm.org.apache.hadoop.fs.Path
        target = Path(self._path, name)
        if self._atomic_create:  # an object store's create is one PUT on close: whole or nothing
            self._write(target, data)
            return
        tmp = Path(self._path, ".tmp-" + name)
        self._write(tmp, data)
        if not self._fs.rename(tmp, target):
            self._fs.delete(target, False)
            if not self._fs.rename(tmp, target):
                raise OSError(f"could not rename {tmp} to {target}")

    def _write(self, path: Any, data: bytes) -> None:
        out = self._fs.create(path, True)
        try:
            out.write(bytearray(data))
        finally:
            out.close()


class S3Store:
    """``PutObject`` signed with AWS Signature V4 (standard library): S3 without a JVM connector."""

    description = "S3 PutObject (standard library)"

    def __init__(self, uri: str, get_conf: Callable[[str], str | None], environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        parts = urllib.parse.urlsplit(uri)
        self.bucket, self.prefix = parts.netloc, parts.path.strip("/")

        def setting(key: str, *env_keys: str) -> str | None:
            value = get_conf(f"spark.hadoop.fs.s3a.{key}")
            for k in env_keys:
                value = value or env.get(k)
            return value or None

        self.access_key = setting("access.key", "AWS_ACCESS_KEY_ID")
        self.secret_key = setting("secret.key", "AWS_SECRET_ACCESS_KEY")
        self.session_token = setting("session.token", "AWS_SESSION_TOKEN")
        self.region = setting("endpoint.region", "AWS_REGION", "AWS_DEFAULT_REGION") or "us-east-1"
        endpoint = setting("endpoint", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL") or f"s3.{self.region}.amazonaws.com"
        if "://" not in endpoint:
            ssl = (get_conf("spark.hadoop.fs.s3a.connection.ssl.enabled") or "true").lower() != "false"
            endpoint = ("https://" if ssl else "http://") + endpoint
        self.endpoint = endpoint.rstrip("/")
        if not (self.access_key and self.secret_key):
            raise OSError(
                "no S3 credentials for the driver: the JVM has no S3 connector (hadoop-aws) and neither "
                "spark.hadoop.fs.s3a.access.key/secret.key nor AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY is set"
            )

    def put(self, name: str, data: bytes) -> None:
        key = posixpath.join(self.prefix, name) if self.prefix else name
        path = "/" + self.bucket + "/" + urllib.parse.quote(key, safe="/-_.~")
        url = self.endpoint + path
        host = urllib.parse.urlsplit(self.endpoint).netloc
        now = dt.datetime.now(dt.UTC)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        payload_hash = hashlib.sha256(data).hexdigest()
        headers = {"host": host, "x-amz-content-sha256": payload_hash, "x-amz-date": amz_date}
        if self.session_token:
            headers["x-amz-security-token"] = self.session_token
        signed = ";".join(sorted(headers))
        canonical = "\n".join(
            ["PUT", path, "", *(f"{k}:{headers[k]}" for k in sorted(headers)), "", signed, payload_hash]
        )
        scope = f"{day}/{self.region}/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        k = hmac.new(("AWS4" + str(self.secret_key)).encode(), day.encode(), hashlib.sha256).digest()
        for part in (self.region, "s3", "aws4_request"):
            k = hmac.new(k, part.encode(), hashlib.sha256).digest()
        signature = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={self.access_key}/{scope}, "
                                    f"SignedHeaders={signed}, Signature={signature}")
        headers.pop("host")
        headers["Content-Type"] = "application/json"  # not urllib's form encoding, which some servers parse away
        req = urllib.request.Request(url, data=data, method="PUT", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                resp.read()
        except urllib.error.HTTPError as exc:
            body = exc.read()[:300].decode("utf-8", "replace")
            raise OSError(f"S3 PutObject s3://{self.bucket}/{key} failed: HTTP {exc.code} {body}") from None


def open_store(folder: str, spark: Any | None, get_conf: Callable[[str], str | None]) -> Any:
    """The store to write ``folder`` with: Hadoop's FileSystem, else signed S3 PUTs, else a shared path."""
    scheme = folder.split("://", 1)[0].lower() if "://" in folder else ""
    if scheme in ("", "file"):
        return LocalStore(folder)
    errors: list[str] = []
    if spark is not None:
        candidates = [folder]
        if scheme == "s3":  # EMRFS has s3://; elsewhere Hadoop's S3 connector is s3a://
            candidates.append("s3a://" + folder.split("://", 1)[1])
        for candidate in candidates:
            try:
                return HadoopStore(spark, candidate)
            except Exception as exc:  # noqa: BLE001 - py4j errors: try the next way
                errors.append(f"{candidate}: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else exc!r}")
    if scheme in ("s3", "s3a", "s3n"):
        return S3Store(folder, get_conf)
    raise OSError(f"the driver cannot write to {folder}: no Hadoop FileSystem for {scheme}:// "
                  f"({'; '.join(errors) or 'no Spark session'}); add the store's Hadoop connector to the job")


class RemoteSink:
    """What the launcher writes records and its status with when the driver runs elsewhere."""

    def __init__(self, capture_dir: str, token: str, *, task_run: str | None = None, spark: Any = None,
                 get_conf: Callable[[str], str | None] | None = None, limit: int = DEFAULT_RECORD_LIMIT) -> None:
        self.directory = run_folder(capture_dir, token)
        self.token = token
        self.task_run = task_run
        self.limit = limit
        self.store = open_store(self.directory, spark, get_conf or (lambda _k: None))

    def write(self, record: CaptureRecord) -> str:
        name = f"{record.sequence:06d}-{record.record_id}.json"
        data = envelope("record", self.token, self.task_run, record.to_json()).encode("utf-8")
        if len(data) > self.limit:
            raise RecordTooLarge(
                f"the capture record of {record.command} is {len(data)} bytes, over the limit of {self.limit} bytes: "
                "not written, its lineage is missing; raise the operator's capture_record_limit "
                "(spark.airflow_lineage.maxRecordBytes) if the Airflow worker can hold it"
            )
        self.store.put(name, data)
        return name

    def write_status(self, status_json: str) -> None:
        self.store.put(STATUS_NAME, envelope("status", self.token, self.task_run, status_json).encode("utf-8"))
