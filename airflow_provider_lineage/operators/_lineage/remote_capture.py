"""The Airflow side of a driver that runs elsewhere: plan the submission, then read back its capture records.

:class:`RemoteCapture` is what :class:`~..spark_lineage.SparkLineageSubmitOperator` does when the driver
cannot hand it a local folder (cluster deploy mode, or a ``capture_dir`` on an object store):

* before the job: ships the capture archive (:mod:`airflow_provider_lineage.capture.ship`) and the
  application with ``--py-files``; the launcher is the primary resource; on Kubernetes, where local files
  need ``spark.kubernetes.file.upload.path``, it says so or uploads the archive to the capture location;
  checks that the capture location is reachable from this worker (else: the self-emitting driver, and the
  task log says why);
* after the job: reads ``<capture_dir>/<token>/`` (:mod:`airflow_provider_lineage.capture.remote`), keeps
  only envelopes with this attempt's token, skips what is half written, corrupt or over the size limit (each
  named in the task log and the ``extractionError`` facet), and turns the rest into the local run folder that
  client deploy mode reads -- so events, XCom record, asset events and summary are made exactly as there;
  then removes the run's folder unless ``keep_capture_records``.

Credentials: the operator's ``capture_conn_id`` (an AWS / Google / Azure style connection: login, password,
``endpoint_url``, ``region_name`` extras) or the worker's environment; they go to pyarrow in this
process only, never into the Spark configuration, the command line or a rendered template.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_lineage.capture import remote
from airflow_provider_lineage.capture.config import STATUS_FILE

if TYPE_CHECKING:
    from airflow_provider_lineage.lineage.model import ParentRun

#: Schemes a ``capture_dir`` on a store both the driver and the worker reach can have.
REMOTE_SCHEMES = ("s3", "s3a", "s3n", "gs", "gcs", "abfs", "abfss", "hdfs", "viewfs")
#: Seconds of difference between the driver's clock and this worker's before the log mentions it.
CLOCK_SKEW_NOTE_S = 300.0

FALLBACK_MESSAGE = (
    "cluster deploy mode without a shared capture_dir: the driver emits the OpenLineage events itself (it needs "
    "openlineage-python on the cluster), and this task gets nothing back: no lineage record (the Column lineage "
    "tab stays empty), no asset events for the tables written (asset-scheduled DAGs such as Sieve maintenance do "
    "not run), no column-lineage summary in this log. Fix: capture_dir='s3://bucket/prefix' (or gs://, abfs://, "
    "hdfs://, a shared path) that both the Spark driver and this worker reach"
)


def permission_denied(exc: BaseException) -> bool:
    """Whether a store error is a refused read (local ``EACCES``/``EPERM``, an object store's access denied)."""
    if isinstance(exc, PermissionError):
        return True
    text = str(exc).lower()
    return any(s in text for s in ("permission denied", "[errno 13]", "access denied", "accessdenied", "forbidden",
                                   "operation not permitted"))


def _worker_user() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except Exception:  # noqa: BLE001 - no passwd entry (containers): the id
        return f"uid {os.geteuid()}" if hasattr(os, "geteuid") else "this worker's user"


def permission_problem(what: str, where: str) -> str:
    """The message for a capture file or folder this worker may not read (the fix: who must be able to read it)."""
    return (f"{what} {where} cannot be read by this worker (permission denied for user {_worker_user()}): the Spark "
            "driver or lineage Connect server that wrote it runs as another user; give this worker read access (a "
            "group both users share and umask 0027 for the writer, or the store's access policy: docs/deploy.md, "
            "'Shared capture locations')")


def is_remote_uri(path: str | None) -> bool:
    return bool(path) and "://" in str(path) and str(path).split("://", 1)[0].lower() in REMOTE_SCHEMES


def storage_options_from_connection(conn_id: str | None) -> dict[str, Any] | None:
    """pyarrow file-system options from an Airflow connection (``None``: the worker's environment)."""
    if not conn_id:
        return None
    from airflow.sdk import BaseHook

    conn = BaseHook.get_connection(conn_id)
    extra = conn.extra_dejson or {}
    opts: dict[str, Any] = {}
    if conn.login:
        opts["access_key"] = conn.login
    if conn.password:
        opts["secret_key"] = conn.password
    if extra.get("aws_session_token"):
        opts["session_token"] = extra["aws_session_token"]
    region = extra.get("region_name") or extra.get("region")
    if region:
        opts["region"] = region
    endpoint = extra.get("endpoint_url") or (extra.get("service_config") or {}).get("s3", {}).get("endpoint_url")
    if endpoint:
        from urllib.parse import urlsplit

        parts = urlsplit(endpoint)
        opts["endpoint_override"] = parts.netloc or parts.path
        opts["scheme"] = parts.scheme or "https"
    return opts


@dataclass
class FetchResult:
    """What was read back: the local run folder and what to say about it."""

    folder: str
    records: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    status_found: bool = False
    #: the generic "no status file" problem of client mode does not apply: :meth:`RemoteCapture.fetch` says it
    status_expected: bool = False


class RemoteCapture:
    """One task attempt's capture records at ``<capture_dir>/<token>/``."""

    def __init__(self, capture_dir: str, *, task_run: str, storage_options: dict[str, Any] | None = None,
                 limit: int = remote.DEFAULT_RECORD_LIMIT, keep: bool = False, token: str | None = None) -> None:
        self.capture_dir = capture_dir.rstrip("/")
        self.token = token or f"run-{uuid.uuid4().hex}"
        self.task_run = task_run
        self.storage_options = storage_options
        self.limit = limit
        self.keep = keep
        self.folder = remote.run_folder(self.capture_dir, self.token)
        self.started = dt.datetime.now(dt.UTC)

    # -- store access (pyarrow, the Sieve core's resolution of schemes and credentials) ------------
    def _fs(self) -> tuple[Any, str]:
        from airflow_provider_lineage.sieve import fs as sfs

        with sfs.storage_options(self.storage_options):
            return sfs.resolve(self.folder)

    def where(self) -> str:
        return self.folder

    def check_reachable(self) -> None:
        """Write, read and delete a probe object in the run folder; raises ``OSError`` naming the fix."""
        try:
            fs, inner = self._fs()
            fs.create_dir(inner, recursive=True)
            probe = inner + "/_probe"
            with fs.open_output_stream(probe) as out:
                out.write(b"probe")
            with fs.open_input_stream(probe) as fh:
                fh.read()
            fs.delete_file(probe)
        except Exception as exc:  # noqa: BLE001 - any store error: one clear message
            first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else repr(exc)
            raise OSError(
                f"the capture location {self.capture_dir} is not reachable from this worker ({first}): check the "
                "address and the credentials (capture_conn_id, or the worker's AWS_*/GOOGLE_*/AZURE_* environment)"
            ) from None

    # -- after the job -------------------------------------------------------------------------------
    def fetch(self, into: str | None = None) -> FetchResult:
        """Read this attempt's envelopes into a local run folder (``into`` or a new temp folder)."""
        import pyarrow.fs as pafs

        local = Path(into or tempfile.mkdtemp(prefix="apl-remote-capture-"))
        local.mkdir(parents=True, exist_ok=True)
        result = FetchResult(str(local))
        finished = dt.datetime.now(dt.UTC)
        try:
            fs, inner = self._fs()
            infos = fs.get_file_info(pafs.FileSelector(inner, allow_not_found=True))
        except Exception as exc:  # noqa: BLE001 - the location went away after the job
            first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else repr(exc)
            if permission_denied(exc):
                result.problems.append(
                    permission_problem("the capture folder", self.folder) + "; no lineage for this run"
                )
                return result
            result.problems.append(
                f"cannot list the capture records at {self.folder} ({first}): no lineage for this run; "
                "check that the location is reachable from this worker"
            )
            return result
        skews: list[float] = []
        for info in sorted(infos, key=lambda i: i.path):
            name = info.base_name
            if info.type != pafs.FileType.File or name == "_probe":
                continue
            where = f"{self.folder}/{name}"
            if name.startswith(".tmp-"):
                result.problems.append(
                    f"half-written capture record {where} skipped (the driver stopped while writing it)"
                )
                continue
            if info.size is not None and info.size > self.limit:
                result.problems.append(
                    f"capture record {where} is {info.size} bytes, over capture_record_limit={self.limit}: skipped")
                continue
            try:
                with fs.open_input_stream(info.path) as fh:
                    data = fh.read(self.limit + 1)
                env = json.loads(data.decode("utf-8"))
                if not isinstance(env, dict) or env.get("apl_capture") != remote.ENVELOPE_VERSION:
                    raise ValueError(f"not a capture envelope of version {remote.ENVELOPE_VERSION}")
            except Exception as exc:  # noqa: BLE001 - one bad file never costs the others
                if permission_denied(exc):
                    result.problems.append(permission_problem("capture record", where) + ": skipped")
                    continue
                result.problems.append(f"unreadable capture record {where} skipped (half written or corrupt: "
                                       f"{type(exc).__name__}: {str(exc)[:200]})")
                continue
            if env.get("token") != self.token:
                result.problems.append(
                    f"capture record {where} belongs to another task run ({env.get('task_run')}, token "
                    f"{env.get('token')}): ignored, not mixed into this run")
                continue
            try:
                written = dt.datetime.fromisoformat(str(env.get("written_at")))
                if written < self.started - dt.timedelta(seconds=CLOCK_SKEW_NOTE_S):
                    skews.append((written - self.started).total_seconds())
                elif written > finished + dt.timedelta(seconds=CLOCK_SKEW_NOTE_S):
                    skews.append((written - finished).total_seconds())
            except (TypeError, ValueError):
                pass
            payload = json.dumps(env.get("payload"))
            if env.get("kind") == "status":
                (local / STATUS_FILE).write_text(payload, encoding="utf-8")
                result.status_found = True
            else:
                (local / name).write_text(payload, encoding="utf-8")
                result.records += 1
        if not result.status_found:
            result.problems.append(
                f"the driver left no status at {self.folder}: it did not finish normally (killed, or it could not "
                "write there: see the driver's log for 'airflow-provider-lineage:' lines); the records found are used"
            )
        if skews:
            worst = max(skews, key=abs)
            result.notes.append(
                f"the driver's clock is about {worst:+.0f} s off this worker's: records are matched by this run's "
                "token, never by time, so none is lost or mixed in"
            )
        return result

    def cleanup(self) -> str | None:
        """Remove the run folder unless kept; returns a problem text when that failed."""
        if self.keep:
            return None
        try:
            fs, inner = self._fs()
            fs.delete_dir(inner)
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - cleanup never fails the task
            return f"could not remove the capture records at {self.folder}: {exc!r}"
        return None


# -- the submission ------------------------------------------------------------------------------------
def submit_settings(*, master: str, deploy_mode: str, application: str, py_files: str | None,
                    conf: dict[str, Any], archive: str) -> tuple[str | None, dict[str, Any], list[str]]:
    """``(py_files, conf, warnings)`` for a driver that runs elsewhere.

    The capture archive and the user's application go to ``--py-files`` (the application is the launcher's
    first argument, found on the driver by name); on Kubernetes in cluster deploy mode local files are
    uploaded through ``spark.kubernetes.file.upload.path``: without it (and with local files) Spark refuses
    the job, so the warning says what to set.
    """
    warnings: list[str] = []
    shipped = [p for p in (py_files or "").split(",") if p]
    for item in (archive, application):
        if item not in shipped:
            shipped.append(item)
    new_conf = dict(conf)
    if (master or "").startswith("k8s://") and deploy_mode == "cluster":
        local = [p for p in shipped if "://" not in p or p.startswith("file:")]
        if local and not new_conf.get("spark.kubernetes.file.upload.path"):
            warnings.append(
                "Kubernetes cluster deploy mode uploads local files through spark.kubernetes.file.upload.path, which "
                "is not set: set it (e.g. s3a://bucket/spark-uploads) or give remote URIs; "
                f"local files: {', '.join(local)}"
            )
    return ",".join(shipped), new_conf, warnings


def application_name(application: str) -> str:
    """What the launcher is told the application is: its file name (found on the driver's path)."""
    return os.path.basename(str(application).rstrip("/"))


# -- the operator's hooks ---------------------------------------------------------------------------------
def plan(op: Any, task_run: ParentRun, deploy_mode: str) -> RemoteCapture | None:
    """A :class:`RemoteCapture` when the driver must write to a shared location, checked reachable from here
    (:class:`.capture_modes.SharedDirCapture` configures the launcher with it).

    ``None``: client mode with a local folder (nothing to do here), or cluster mode without a reachable shared
    location (the self-emitting fallback; the task log says why and what it loses).
    """
    capture_dir = str(op.capture_dir) if op.capture_dir else None
    if not (deploy_mode == "cluster" or is_remote_uri(capture_dir)):
        return None
    log = op.lineage_log
    if not capture_dir:
        log.warning("%s", FALLBACK_MESSAGE)
        return None
    if not is_remote_uri(capture_dir) and not capture_dir.startswith("file:"):
        capture_dir = os.path.abspath(capture_dir)
    try:
        cap = RemoteCapture(capture_dir, task_run=f"{task_run.namespace}/{task_run.name}/{task_run.run_id}",
                            storage_options=storage_options_from_connection(op.capture_conn_id),
                            limit=op.capture_record_limit, keep=op.keep_capture_records)
        cap.check_reachable()
    except Exception as exc:  # noqa: BLE001 - lineage never fails the task
        if deploy_mode == "cluster":
            log.warning("%s; falling back to the driver emitting the events itself. %s", exc,
                        FALLBACK_MESSAGE.split(": ", 1)[1])
        else:
            log.warning("%s; capturing into a local folder instead (client deploy mode)", exc)
            op.capture_dir = None
        return None
    return cap


def ship(op: Any, user_app: str, deploy_mode: str) -> None:
    """Add the capture archive (and, in cluster mode, the application) to the submission."""
    from airflow_provider_lineage.capture.ship import capture_archive

    try:
        archive = str(capture_archive())
        hook = op._get_hook()  # airflow internal: SparkSubmitOperator._get_hook
        master = str(hook._connection.get("master") or "")  # airflow internal: the resolved connection
        py_files, conf, warnings = submit_settings(
            master=master, deploy_mode=deploy_mode, application=str(user_app) if deploy_mode == "cluster" else archive,
            py_files=op.py_files, conf=dict(op.conf or {}), archive=archive)
        op.py_files, op.conf = py_files, conf
        for text in warnings:
            op.lineage_log.warning("%s", text)
        op.log.info("capture code shipped with the job: %s", archive)
    except Exception as exc:  # noqa: BLE001 - lineage never fails the task
        op.lineage_log.warning("could not ship the capture archive (%r): the driver needs the package installed", exc)


def fetch(op: Any, cap: RemoteCapture) -> FetchResult:
    """Read the run's records back, log what reading found, remove them unless kept."""
    fetched = cap.fetch()
    for note in fetched.notes:
        op.log.info("lineage: %s", note)
    for problem in fetched.problems:
        op.lineage_log.warning("%s", problem)
    op.log.info("lineage: %d capture record(s) read back from %s", fetched.records, cap.where())
    problem = cap.cleanup()
    if problem:
        op.lineage_log.warning("%s", problem)
    return fetched
