"""Run a user's PySpark application unchanged, with write capture attached.

Usage (what :class:`~airflow_provider_lineage.operators.spark_lineage.SparkLineageSubmitOperator`
submits)::

    spark-submit [spark options] --conf spark.airflow_lineage.captureDir=/tmp/run \\
        .../airflow_provider_lineage/capture/launcher.py  user_app.py  [user args ...]

The launcher

* hooks SparkSession creation (``SparkSession.__init__``), so whatever builder/conf the application
  uses still applies; the capture listener is registered on each new session before it can run
  a query; configuration (see :mod:`.config`) is read from that session's Spark properties, or
  the ``AIRFLOW_LINEAGE_*`` environment;
* runs the application with ``runpy.run_path(app, run_name="__main__")``: same ``__main__``,
  ``sys.argv`` (``[app, *args]``), ``sys.path[0]`` (the app's folder), exceptions and exit code;
* wraps ``SparkSession.stop`` / ``SparkContext.stop`` and runs again after the application (and at
  interpreter exit) to drain Spark's listener bus, so no write is lost whether the application
  calls ``spark.stop()`` or just returns;
* hands each :class:`~airflow_provider_lineage.lineage.record.CaptureRecord` to a :class:`~.sink.RecordSink`
  (client deploy mode: the operator reads the folder) and/or, with ``spark.airflow_lineage.emit=true`` (cluster
  deploy mode), builds and emits the OpenLineage events itself at the end of the application.

A capture problem is logged (``airflow-provider-lineage: ...`` on stderr) and recorded; it never
changes what the application does or how it exits.
"""
from __future__ import annotations

import atexit
import logging
import os
import runpy
import sys
import time
from typing import TYPE_CHECKING

_STARTED = time.perf_counter()  # the launcher's own start-up (its imports) is on the job's critical path too

if __package__ in (None, ""):
    # Run as a script (spark-submit .../launcher.py): the capture folder is sys.path[0]; drop it so
    # our module names cannot shadow the user's, and import the package normally.
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

if TYPE_CHECKING:
    from airflow_provider_lineage.capture.runtime import CaptureRuntime

log = logging.getLogger("airflow_provider_lineage.capture.launcher")

USAGE = "usage: launcher.py APPLICATION.py [APPLICATION ARGS ...]"


def _setup_logging() -> None:
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s airflow-provider-lineage: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False


def run(argv: list[str]) -> None:
    """Run ``argv[0]`` (the application) with ``argv[1:]`` as its arguments, capture attached."""
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr)
        raise SystemExit(2)
    app = find_application(argv[0])
    if not os.path.isfile(app):
        print(
            f"launcher.py: application {app!r} not found (give the path of the PySpark .py file to run)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    t = time.perf_counter()
    import pyspark.sql  # noqa: F401 - the application imports it anyway: timed apart from the launcher's own start-up

    shared = time.perf_counter() - t
    _setup_logging()
    from airflow_provider_lineage.capture.runtime import CaptureRuntime

    runtime = CaptureRuntime()
    runtime.timings["pyspark_import_s"] = shared
    try:
        runtime.patch()
    except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
        runtime.problem("could not hook SparkSession; running without capture", exc)
    atexit.register(_finish_quietly, runtime)

    runtime.timings["setup_s"] = time.perf_counter() - _STARTED - shared
    sys.argv = [app, *argv[1:]]
    app_dir = os.path.dirname(os.path.abspath(app))
    if sys.path and os.path.abspath(sys.path[0] or ".") != app_dir:
        sys.path.insert(0, app_dir)
    error: BaseException | None = None
    exit_code: int | None = 0
    from airflow_provider_lineage.capture import driver as _driver

    _driver.APP_FILES.append(app)  # its constants stay "code" after run_path restores __main__ (docs/engine.md)
    try:
        runpy.run_path(app, run_name="__main__")
    except SystemExit as exc:
        error = exc
        exit_code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        raise
    except BaseException as exc:
        error, exit_code = exc, 1
        raise
    finally:
        _finish_quietly(runtime, error, exit_code)


def find_application(app: str) -> str:
    """``app`` itself, else a file of its name that Spark put on the driver (``--py-files``, ``--files``).

    In cluster deploy mode the operator ships the application with ``--py-files``: on the cluster it is in the
    driver's working folder (YARN) or a folder on ``sys.path`` (Kubernetes), not at the Airflow worker's path.
    """
    if os.path.isfile(app):
        return app
    name = os.path.basename(app.rstrip("/"))
    for entry in ["", *sys.path, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]:
        entry = entry or os.getcwd()
        if os.path.basename(entry) == name and os.path.isfile(entry):
            return entry
        candidate = os.path.join(entry, name)
        if os.path.isfile(candidate):
            return candidate
    return app


def _finish_quietly(runtime: CaptureRuntime, error: BaseException | None = None, exit_code: int | None = None) -> None:
    try:
        runtime.finish(error, exit_code)
    except Exception as exc:  # pragma: no cover - finish() already guards every step  # noqa: BLE001 - never fail the user's Spark job for the capture
        try:
            log.warning("finishing the capture failed: %r", exc)
        except Exception:  # noqa: BLE001, S110 - never fail the user's Spark job for the capture
            pass


def main() -> None:
    run(sys.argv[1:])


if __name__ == "__main__":
    main()
