"""Where tables and indexes live: local folders and object stores, and put-if-absent per store.

A location is either an absolute local path (``/data/sales``; a ``file:`` URI is turned into one)
or a URI ``scheme://bucket/key`` of a store :mod:`pyarrow.fs` reaches: ``s3://`` (``s3a://`` and
``s3n://`` are spelled ``s3://``), ``gs://`` (``gcs://``), ``abfs://`` / ``abfss://``, ``hdfs://``
/ ``viewfs://``. URIs are percent-decoded, as Hadoop writes them. :func:`normalize` gives the one
spelling every other function expects.

Credentials come from the store's usual environment (``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN`` / ``AWS_ENDPOINT_URL`` / ``AWS_DEFAULT_REGION``,
``GOOGLE_APPLICATION_CREDENTIALS``, ``AZURE_STORAGE_*``, ...) or, for the calls inside
``with storage_options({...}):``, from keyword arguments of the store's pyarrow file system class
(``pyarrow.fs.S3FileSystem(access_key=, secret_key=, session_token=, region=, endpoint_override=,
scheme=)``, ``GcsFileSystem``, ``AzureFileSystem``, ``HadoopFileSystem``).

**Put-if-absent** (:func:`put_if_absent`) is what makes a commit safe: of two writers creating
the same name exactly one succeeds, and a reader sees the whole object or nothing.

* local / mounted file systems: hard link of a complete temp file (exclusive create without links);
* S3 (and S3-compatible stores that honour it): ``PutObject`` with ``If-None-Match: *`` (boto3);
* GCS: an upload with ``if_generation_match=0`` (google-cloud-storage);
* other stores (Azure, HDFS through pyarrow): no conditional create here, so a commit is refused
  with :class:`UnsafeCommit`, unless ``SIEVE_ALLOW_UNSAFE_COMMITS=1`` opts in to check-then-write
  (safe only with a single writer per index), or :func:`register_put_if_absent` adds one.
"""
from __future__ import annotations

import contextlib
import contextvars
import json
import os
import posixpath
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from .errors import SieveError

if TYPE_CHECKING:  # pyarrow is imported where a store is reached: DAG files import this module
    import pyarrow.fs as pafs

SCHEMES = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gs", "gcs": "gs", "abfs": "abfs", "abfss": "abfss",
           "hdfs": "hdfs", "viewfs": "viewfs"}
UNSAFE_COMMITS_ENV = "SIEVE_ALLOW_UNSAFE_COMMITS"
# Object-store options for a whole process (JSON), e.g. the Spark job the Airflow operator submits:
# environment, not command line, so credentials stay out of process listings and submit logs.
STORAGE_OPTIONS_ENV = "SIEVE_STORAGE_OPTIONS"
_options: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("sieve_storage_options",
                                                                                 default=None)
_cache: dict[tuple[str, str, str], pafs.FileSystem] = {}
_ENV_KEYS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
             "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_REGION", "AWS_REGION")


class UnsafeCommit(SieveError):
    """The store has no conditional create this package can use, so a commit could be lost."""


class StoreError(SieveError, OSError):
    """A store could not be reached or refused a request (credentials, endpoint, bucket)."""


def scheme_of(path: str) -> str:
    """``""`` for a local path or ``file:`` URI, else the canonical scheme (``s3``, ``gs``, ...)."""
    if path.startswith("file:") or "://" not in path:
        return ""
    raw = path.split("://", 1)[0].lower()
    if raw not in SCHEMES:
        raise SieveError(f"{path!r}: the scheme {raw}:// is not supported: use a local path, a file: URI, "
                         f"or one of {', '.join(s + '://' for s in sorted(set(SCHEMES)))}")
    return SCHEMES[raw]


def is_catalog_name(table: str) -> bool:
    """A catalog table name (``db.sales``) rather than a path or URI (``/data/sales``, ``s3://b/sales``)."""
    return "/" not in table and not table.startswith("file:")


def is_local(path: str) -> bool:
    return scheme_of(path) == ""


def normalize(path: str) -> str:
    """The one spelling of a location: an absolute local path, or ``scheme://netloc/key`` (decoded)."""
    scheme = scheme_of(path)
    if not scheme:
        if path.startswith("file:"):
            return os.path.abspath(unquote(urlsplit(path).path))
        return os.path.abspath(path)
    parts = urlsplit(path)
    key = posixpath.normpath(unquote(parts.path)) if parts.path.strip("/") else ""
    key = key.lstrip("/")
    if not parts.netloc:
        raise SieveError(f"{path!r} names no bucket/container: use {scheme}://BUCKET/path")
    return f"{scheme}://{parts.netloc}" + (f"/{key}" if key else "")


def join(base: str, *parts: str) -> str:
    if is_local(base):
        return os.path.join(base, *parts)
    return posixpath.join(base, *parts)


def relative(path: str, root: str) -> str:
    """``path`` below ``root`` as a ``/``-separated relative path."""
    if is_local(root):
        top = root.rstrip(os.sep) + os.sep
        if path.startswith(top) and os.path.normpath(path) == path:
            return path[len(top):].replace(os.sep, "/")  # below the root: relpath's answer, cheaper
        return os.path.relpath(path, root).replace(os.sep, "/")
    return posixpath.relpath(path.split("://", 1)[1], root.split("://", 1)[1])


@contextlib.contextmanager
def storage_options(options: Mapping[str, Any] | None) -> Iterator[None]:
    """Within the block, object stores are opened with these keyword arguments (None: no change).

    They are the keyword arguments of the store's pyarrow file system class (e.g. ``access_key``,
    ``secret_key``, ``endpoint_override``, ``scheme`` and ``region`` for S3); the S3 commit's boto3
    client gets the same credentials, region and endpoint.
    """
    if options is None:
        yield
        return
    token = _options.set(dict(options))
    try:
        yield
    finally:
        _options.reset(token)


def options_from_env() -> dict[str, Any] | None:
    """The storage options in ``$SIEVE_STORAGE_OPTIONS`` (a JSON object), None when unset."""
    text = os.environ.get(STORAGE_OPTIONS_ENV, "").strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SieveError(f"${STORAGE_OPTIONS_ENV} is not JSON ({exc.msg}): set it to a JSON object of "
                         "the store's options, e.g. {\"region\": \"eu-west-1\"}") from None
    if not isinstance(value, dict):
        raise SieveError(f"${STORAGE_OPTIONS_ENV} is a JSON {type(value).__name__}, not an object: set it to "
                         "a JSON object of the store's options")
    return value


def _s3_endpoint_from_env() -> dict[str, Any]:
    url = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if not url:
        return {}
    parts = urlsplit(url)
    return {"endpoint_override": parts.netloc or parts.path, "scheme": parts.scheme or "https"}


def resolve(path: str) -> tuple[pafs.FileSystem, str]:
    """(pyarrow file system, path inside it) of a location (normalized first)."""
    import pyarrow.fs as pafs

    path = normalize(path)
    scheme = scheme_of(path)
    if not scheme:
        return pafs.LocalFileSystem(), path
    opts = _options.get()
    netloc = urlsplit(path).netloc
    # One file system per store, options and credential environment (a bucket's region is looked up once).
    key = (scheme, netloc, json.dumps(opts, sort_keys=True, default=str) + "|" +
           "|".join(os.environ.get(v, "") for v in _ENV_KEYS))
    fs = _cache.get(key)
    try:
        if fs is None:
            fs = _make_filesystem(scheme, path, opts)
            _cache[key] = fs
        if scheme in ("hdfs", "viewfs"):
            inner = urlsplit(path).path or "/"
        elif scheme in ("abfs", "abfss"):
            inner = pafs.FileSystem.from_uri(path)[1] if opts is None else _azure_path(path)
        else:
            inner = path.split("://", 1)[1]
    except (OSError, ValueError, ImportError) as exc:
        raise StoreError(f"cannot open {path} ({exc}): {_fix(scheme)}") from exc
    return fs, inner


def _azure_path(path: str) -> str:
    parts = urlsplit(path)
    container = parts.netloc.split("@", 1)[0]
    return container + parts.path


def _make_filesystem(scheme: str, path: str, opts: dict[str, Any] | None) -> pafs.FileSystem:
    import pyarrow.fs as pafs

    if opts is None:
        return pafs.FileSystem.from_uri(path)[0]
    if scheme == "s3":
        return pafs.S3FileSystem(**{**_s3_endpoint_from_env(), **opts})
    if scheme == "gs":
        return pafs.GcsFileSystem(**opts)
    if scheme in ("abfs", "abfss"):
        return pafs.AzureFileSystem(**opts)
    parts = urlsplit(path)
    return pafs.HadoopFileSystem(parts.hostname or "default", parts.port or 8020, **opts)


def _fix(scheme: str) -> str:
    return {
        "s3": "check the bucket and the credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL "
              "for an S3-compatible store, or storage_options)",
        "gs": "check the bucket and the credentials (GOOGLE_APPLICATION_CREDENTIALS or storage_options)",
        "abfs": "check the container and the credentials (AZURE_STORAGE_* variables or storage_options)",
        "abfss": "check the container and the credentials (AZURE_STORAGE_* variables or storage_options)",
    }.get(scheme, "check the address, that the store is reachable, and its credentials (storage_options)")


def store_error(path: str, exc: BaseException) -> StoreError:
    """A pyarrow/boto error on ``path`` as a StoreError naming the fix."""
    if isinstance(exc, StoreError):
        return exc
    return StoreError(f"cannot access {path} ({str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}): "
                      f"{_fix(scheme_of(path))}")


def is_dir(path: str) -> bool:
    """True for a local directory; for an object store, a prefix with at least one object below it."""
    import pyarrow.fs as pafs

    if is_local(path):
        return os.path.isdir(normalize(path))
    fs, inner = resolve(path)
    try:
        if fs.get_file_info(inner).type == pafs.FileType.Directory:
            return True
        return bool(fs.get_file_info(pafs.FileSelector(inner, allow_not_found=True)))
    except OSError as exc:
        raise store_error(path, exc) from exc


def open_input(path: str) -> Any:
    """A seekable pyarrow input file (for Parquet footers and column reads)."""
    if is_local(path):
        return path
    fs, inner = resolve(path)
    return fs.open_input_file(inner)


# ---- put-if-absent ------------------------------------------------------------------------------
PutIfAbsent = Callable[[str, bytes], bool]
_put_if_absent: dict[str, PutIfAbsent] = {}


def register_put_if_absent(scheme: str, func: PutIfAbsent) -> None:
    """Use ``func(uri, data) -> created`` to publish manifests on ``scheme`` (False: the name existed).

    ``func`` must be atomic: of two calls for one name exactly one returns True, and a reader sees
    the whole object or nothing.
    """
    _put_if_absent[SCHEMES.get(scheme, scheme)] = func


def put_if_absent(path: str, data: bytes) -> bool:
    """Create ``path`` with ``data`` unless it exists (True: created; False: it existed). Atomic.

    Raises :class:`UnsafeCommit` for a store without a conditional create (see the module doc).
    """
    path = normalize(path)
    scheme = scheme_of(path)
    check_commit_supported(path)
    if scheme in _put_if_absent:
        created = _put_if_absent[scheme](path, data)
    elif scheme == "s3":
        created = _s3_put_if_absent(path, data)
    elif scheme == "gs":
        created = _gcs_put_if_absent(path, data)
    else:
        created = _check_then_write(path, data)  # opted in (check_commit_supported)
    # A client retry of a put that did land (a lost reply) finds its own object: that is a success,
    # not a lost race (the bytes name this writer's own random file table, so no other writer's match).
    return created or _holds(path, data)


def _holds(path: str, data: bytes) -> bool:
    fs, inner = resolve(path)
    try:
        with fs.open_input_stream(inner) as fh:
            return fh.read() == data
    except OSError:
        return False


def check_commit_supported(path: str) -> None:
    """Raise (UnsafeCommit, or SieveError for a missing library) unless commits on ``path`` are safe."""
    scheme = scheme_of(path)
    if not scheme:
        raise ValueError("local paths publish by hard link: IndexStore.commit does it")
    if scheme in _put_if_absent:
        return
    if scheme == "s3":
        _boto3()
        return
    if scheme == "gs":
        _gcs()
        return
    if os.environ.get(UNSAFE_COMMITS_ENV, "").strip().lower() in ("1", "true", "yes"):
        return
    raise UnsafeCommit(f"cannot commit a Sieve index on {scheme}:// ({path}): this store has no conditional "
                       "create here, so two writers could overwrite each other's version. Keep the index on "
                       "s3://, gs:// or a local/mounted folder (index_path=), or set "
                       f"{UNSAFE_COMMITS_ENV}=1 if only one writer ever maintains this index")


def _check_then_write(path: str, data: bytes) -> bool:
    import pyarrow.fs as pafs

    fs, inner = resolve(path)
    try:
        if fs.get_file_info(inner).type != pafs.FileType.NotFound:
            return False
        with fs.open_output_stream(inner) as out:
            out.write(data)
    except OSError as exc:
        raise store_error(path, exc) from exc
    return True


def _boto3() -> Any:
    try:
        import boto3
    except ImportError:
        raise SieveError("committing a Sieve index on s3:// needs boto3 (a conditional PutObject, If-None-Match: *):"
                         " pip install 'airflow-provider-lineage[s3]' (or boto3)") from None
    return boto3


def _gcs() -> tuple[Any, Any]:
    try:
        from google.api_core.exceptions import PreconditionFailed
        from google.cloud import storage
    except ImportError:
        raise SieveError("committing a Sieve index on gs:// needs google-cloud-storage (an upload with "
                         "if_generation_match=0): pip install google-cloud-storage") from None
    return storage, PreconditionFailed


_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def _s3_client() -> Any:
    boto3 = _boto3()
    opts = {**_s3_endpoint_from_env(), **(_options.get() or {})}
    kwargs: dict[str, Any] = {}
    for ours, theirs in (("access_key", "aws_access_key_id"), ("secret_key", "aws_secret_access_key"),
                         ("session_token", "aws_session_token"), ("region", "region_name")):
        if opts.get(ours):
            kwargs[theirs] = opts[ours]
    if opts.get("endpoint_override"):
        endpoint = str(opts["endpoint_override"])
        kwargs["endpoint_url"] = endpoint if "://" in endpoint else f"{opts.get('scheme') or 'https'}://{endpoint}"
    key = json.dumps(kwargs, sort_keys=True) + "|" + "|".join(os.environ.get(v, "") for v in _ENV_KEYS)
    with _clients_lock:  # boto3's default session is not thread-safe: one session per client, made once
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = boto3.session.Session().client("s3", **kwargs)
    return client


_S3_READ_OPTIONS = {"access_key", "secret_key", "session_token", "region", "endpoint_override", "scheme"}


def _s3_get(path: str, offset: int | None, length: int | None) -> bytes | None:
    """One GET (ranged when ``offset`` is given) of an s3:// object with boto3, or None when boto3 is
    missing, the storage options hold settings only pyarrow understands, or the GET failed for a
    reason other than a missing object (the caller then reads through pyarrow, which reports it).
    pyarrow's S3 reader asks for the object's size (a HEAD) before every read: this is one request."""
    if scheme_of(path) != "s3" or not set(_options.get() or {}) <= _S3_READ_OPTIONS:
        return None
    try:
        client = _s3_client()
    except SieveError:  # no boto3
        return None
    bucket, _, key = normalize(path).split("://", 1)[1].partition("/")
    kwargs: dict[str, Any] = {}
    if offset is not None:
        if length is not None and length <= 0:
            return b""
        kwargs["Range"] = f"bytes={offset}-" if length is None else f"bytes={offset}-{offset + length - 1}"
    try:
        return client.get_object(Bucket=bucket, Key=key, **kwargs)["Body"].read()
    except Exception as exc:  # botocore's ClientError (kept generic: botocore stays an optional import)
        code = str((getattr(exc, "response", None) or {}).get("Error", {}).get("Code", ""))
        if code in ("NoSuchKey", "404", "NotFound"):
            raise FileNotFoundError(path) from exc
        return None


def read_bytes(path: str, offset: int | None = None, length: int | None = None) -> bytes:
    """The bytes of a file on a store (all of it, or ``length`` bytes from ``offset``): one GET on
    S3 (see :func:`_s3_get`), else through pyarrow. FileNotFoundError when it is missing."""
    got = _s3_get(path, offset, length)
    if got is not None:
        return got
    filesystem, inner = resolve(path)
    if offset is None:
        with filesystem.open_input_stream(inner) as fh:
            return fh.read()
    with filesystem.open_input_file(inner) as fh:
        return fh.read_at(length if length is not None else fh.size() - offset, offset)


def _s3_put_if_absent(path: str, data: bytes) -> bool:
    bucket, _, key = path.split("://", 1)[1].partition("/")
    client = _s3_client()
    try:
        client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
    except Exception as exc:  # botocore ClientError; kept generic so botocore stays an optional import
        response = getattr(exc, "response", None) or {}
        code = str(response.get("Error", {}).get("Code", ""))
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in ("PreconditionFailed", "ConditionalRequestConflict") or status in (409, 412):
            return False  # the name exists (412) or a concurrent conditional write to it is under way (409)
        raise store_error(path, exc) from exc
    return True


def _gcs_put_if_absent(path: str, data: bytes) -> bool:
    storage, PreconditionFailed = _gcs()
    bucket, _, key = path.split("://", 1)[1].partition("/")
    opts = _options.get() or {}
    client = storage.Client(project=opts.get("project_id")) if opts.get("project_id") else storage.Client()
    try:
        client.bucket(bucket).blob(key).upload_from_string(data, if_generation_match=0)
    except PreconditionFailed:
        return False
    except Exception as exc:  # auth / network: reported with the fix
        raise store_error(path, exc) from exc
    return True
