"""Where a spark-submit driver leaves its capture records: one small class per mode, chosen once per run.

As the apache-spark provider's ``spark_submit`` picks one backend per deploy mode, :func:`choose` picks one of:

* :class:`LocalFolderCapture`: the driver runs on this worker (client deploy mode): the launcher writes its records
  into a local folder (``capture_dir``, else a fresh temporary one, removed afterwards);
* :class:`SharedDirCapture`: the driver runs elsewhere, or ``capture_dir`` is an object-store URI, and this worker
  reaches the location: the driver writes under this attempt's token, the worker reads the records back
  (:mod:`.remote_capture`) and goes on as in client mode;
* :class:`DriverEmitsCapture`: cluster deploy mode without a reachable shared location: the driver builds and
  emits the events itself, as a child run of this task; the task gets no records (the log says what that loses).

Each mode ``configure``-s the launcher's settings before the submission, ``collect``-s the run's lineage after it
(never raising for a lineage problem: it becomes one of the result's problems) and ``cleanup``-s what it made.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_lineage.lineage import events, transport
from airflow_provider_lineage.operators._lineage import remote_capture

if TYPE_CHECKING:
    from airflow_provider_lineage.capture.config import LauncherConfig
    from airflow_provider_lineage.lineage.model import ParentRun


class CaptureMode:
    """One run's capture records: where the driver leaves them and how the task gets their lineage."""

    #: the capture code (and, in cluster deploy mode, the application) go with the job (``--py-files``)
    ships_capture_code: bool = False

    def __init__(self, op: Any) -> None:
        self.op = op

    def configure(self, launcher_cfg: LauncherConfig) -> None:
        """Set the launcher's settings for this mode (before the submission)."""

    def collect(self, error: BaseException | None) -> events.LineageResult:
        """The run's lineage (sets the operator's datasets as :meth:`~.task.LineageTaskMixin.process_capture_dir`)."""
        raise NotImplementedError

    def cleanup(self) -> None:
        """Remove what this mode created on this worker."""


class LocalFolderCapture(CaptureMode):
    """Client deploy mode: the records in a local folder (``capture_dir``, else a temporary one, removed after)."""

    def __init__(self, op: Any) -> None:
        super().__init__(op)
        self.folder = ""
        self.created: str | None = None

    def configure(self, launcher_cfg: LauncherConfig) -> None:
        given = self.op.capture_dir
        if not given:
            given = self.created = tempfile.mkdtemp(prefix="apl-capture-")
        self.folder = launcher_cfg.capture_dir = str(Path(given).resolve())

    def collect(self, error: BaseException | None) -> events.LineageResult:
        return self.op.process_capture_dir(self.folder, error)

    def cleanup(self) -> None:
        if self.created:
            shutil.rmtree(self.created, ignore_errors=True)


class SharedDirCapture(CaptureMode):
    """The driver writes to a location both sides reach (``<capture_dir>/<token>/``); this worker reads it back."""

    ships_capture_code = True

    def __init__(self, op: Any, capture: remote_capture.RemoteCapture) -> None:
        super().__init__(op)
        self.capture = capture
        self.local: str | None = None

    def configure(self, launcher_cfg: LauncherConfig) -> None:
        cap = self.capture
        launcher_cfg.capture_dir = cap.capture_dir
        launcher_cfg.capture_token = cap.token
        launcher_cfg.task_run = cap.task_run
        launcher_cfg.max_record_bytes = cap.limit
        self.op.log.info("capture records of this run go to %s (token %s)", cap.capture_dir, cap.token)

    def collect(self, error: BaseException | None) -> events.LineageResult:
        fetched = remote_capture.fetch(self.op, self.capture)
        self.local = fetched.folder
        return self.op.process_capture_dir(fetched.folder, error, extra_problems=fetched.problems,
                                           status_expected=fetched.status_expected)

    def cleanup(self) -> None:
        if self.local:  # the local copy; the shared one is removed by fetch unless keep_capture_records
            shutil.rmtree(self.local, ignore_errors=True)


class DriverEmitsCapture(CaptureMode):
    """Cluster deploy mode without a shared location: the driver emits the events itself, as a child run."""

    ships_capture_code = True

    def __init__(self, op: Any, task_run: ParentRun, emission: str) -> None:
        super().__init__(op)
        self.task_run = task_run
        self.emission = emission

    def configure(self, launcher_cfg: LauncherConfig) -> None:
        launcher_cfg.emit = self.emission != "off"
        launcher_cfg.openlineage_config = self.driver_openlineage_config()
        launcher_cfg.job_namespace = self.task_run.namespace
        launcher_cfg.job_name = f"{self.task_run.name}.spark"
        launcher_cfg.parent = self.task_run

    def driver_openlineage_config(self) -> dict[str, Any] | None:
        """The openlineage-python config the driver uses (the same destination as the task's)."""
        if self.op.openlineage_config is not None:
            return self.op.openlineage_config
        if self.emission == "provider":
            try:
                from airflow.providers.openlineage import conf as ol_conf

                provider_transport = ol_conf.transport()
                if provider_transport:
                    return {"transport": provider_transport}
            except Exception:  # noqa: BLE001, S110 - lineage never fails the task
                pass
            return None
        if not transport.environment_configured():
            return transport.default_file_config()
        return None  # the driver resolves OPENLINEAGE_* / openlineage.yml in its own environment

    def collect(self, error: BaseException | None) -> events.LineageResult:
        self.op.log.info("cluster deploy mode: the Spark driver emitted the lineage events itself (job %s.spark, "
                         "parent run %s); no datasets are pushed to XCom", self.task_run.name, self.task_run.run_id)
        result = events.LineageResult()
        self.op.lineage_result = result
        self.op._ol_run_facets = events.run_facets(result)
        return result


def choose(op: Any, task_run: ParentRun, deploy_mode: str, emission: str) -> CaptureMode:
    """The capture mode of this run: a shared location when one is needed and reachable (checked now), else the
    driver emitting in cluster deploy mode, else a local folder (see the module docstring)."""
    capture = remote_capture.plan(op, task_run, deploy_mode)
    if capture is not None:
        return SharedDirCapture(op, capture)
    if deploy_mode == "cluster":
        return DriverEmitsCapture(op, task_run, emission)
    return LocalFolderCapture(op)
