"""What the launcher attaches to the Spark driver for one application run: :class:`CaptureRuntime`.

It hooks SparkSession creation and stop (:meth:`CaptureRuntime.patch`), attaches the capture listener to each new
session, hands each :class:`~airflow_provider_lineage.lineage.record.CaptureRecord` to a
:class:`~.sink.RecordSink`, drains Spark's listener bus before a stop and at exit, and writes the status file;
in emit mode it also sends the run's OpenLineage events (:mod:`.emission`). :mod:`.launcher` is the script that
runs the application with it. A capture problem is logged and recorded; it never changes the application.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from airflow_provider_lineage.capture.emission import DriverEmission

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from airflow_provider_lineage.capture.config import LauncherConfig
    from airflow_provider_lineage.capture.sink import RecordSink
    from airflow_provider_lineage.lineage.record import CaptureRecord

#: The capture's modules: imported on the thread :meth:`CaptureRuntime.prepare_callbacks` starts with the JVM
#: gateway (while the JVM makes its SparkContext), not before the application starts (the critical path).
CAPTURE_MODULES = ("airflow_provider_lineage.capture.config", "airflow_provider_lineage.capture.sink",
                   "airflow_provider_lineage.lineage.record", "airflow_provider_lineage.capture.listener",
                   "airflow_provider_lineage.capture.session", "airflow_provider_lineage.capture.streaming")

#: the launcher's logger (its handler writes ``airflow-provider-lineage: ...`` lines to the driver's stderr)
log = logging.getLogger("airflow_provider_lineage.capture.launcher")

#: How long attaching waits for the callbacks prepared with the gateway (then it starts them itself).
CALLBACKS_WAIT_S = 30.0


class CaptureRuntime(DriverEmission):
    """Everything the launcher attaches to the driver for one application run."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        self.environ = dict(os.environ if environ is None else environ)
        self.config: LauncherConfig | None = None
        self.sink: RecordSink | None = None
        self.records: list[CaptureRecord] = []
        self.problems: list[str] = []
        self.listeners: list[Any] = []
        self._sessions: list[Any] = []  # JVM sessions with a listener
        self._listener_ids: set[int] = set()  # identity hash codes of our listeners' JVM proxies (clones share them)
        self._lock = threading.RLock()
        self._patched: list[tuple[Any, str, Any]] = []
        self.spark_version: str | None = None
        self.app_name: str | None = None
        self.run_id: str | None = None
        self.started = dt.datetime.now(dt.UTC)
        self._finished = False
        self.emitted: str | None = None
        self._ol_client: Any = None
        self.emission_problems: list[str] = []
        #: known-broken Spark combinations seen on this driver (:mod:`.versions`), also in the task log.
        self.version_warnings: list[str] | None = None
        #: seconds spent by capture: attaching listeners, the listener callbacks (on Spark's listener thread:
        #: only handing the write to the capture worker), the worker's analyses (plan walk, relations, UDFs,
        #: record writing; overlapping the job), and waiting at stop/exit for the bus and the worker.
        self.timings: dict[str, float] = {"attach_s": 0.0, "callbacks_s": 0.0, "drain_s": 0.0, "udf_s": 0.0,
                                          "analysis_s": 0.0}
        #: end of the drain at exit: the driver exits at most drainTimeoutSeconds after the application's end
        self._deadline: float | None = None
        from airflow_provider_lineage.capture.udfs import UdfRegistry

        #: every Python UDF function the application creates (UDF body analysis, issue 24)
        self.udfs = UdfRegistry()
        #: the SparkContext's streaming-query capture (:mod:`.streaming`); ``False`` when it failed to attach
        self.streaming: Any = None
        #: the thread preparing py4j's callbacks as soon as the gateway exists (:meth:`prepare_callbacks`)
        self._callbacks: threading.Thread | None = None
        #: that thread outlived :data:`CALLBACKS_WAIT_S` once: later sessions do not wait for it again
        self._callbacks_late = False

    # -- problems -------------------------------------------------------------------------------
    def problem(self, message: str, exc: BaseException | None = None) -> None:
        """Log and keep a capture problem; never raises."""
        try:
            text = f"{message}: {exc!r}" if exc is not None else message
            self.problems.append(text)
            log.warning(
                "%s (the application is not affected)",
                text,
                exc_info=exc is not None and log.isEnabledFor(logging.DEBUG),
            )
        except Exception:  # noqa: BLE001, S110 - never fail the user's Spark job for the capture
            pass

    # -- patches --------------------------------------------------------------------------------
    def patch(self) -> None:
        """Hook SparkSession creation and SparkSession/SparkContext stop."""
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        runtime = self
        orig_init = SparkSession.__init__
        orig_session_stop = SparkSession.stop
        orig_context_stop = SparkContext.stop

        def __init__(self: SparkSession, *args: Any, **kwargs: Any) -> None:
            orig_init(self, *args, **kwargs)
            runtime.on_session(self)

        def session_stop(self: SparkSession) -> None:
            runtime.drain_context(getattr(self, "_sc", None))
            runtime.finish_streaming()  # queries the stop ends are still running: reported as such
            orig_session_stop(self)

        def context_stop(self: SparkContext) -> None:
            runtime.drain_context(self)
            runtime.finish_streaming()
            orig_context_stop(self)

        orig_ensure = SparkContext.__dict__["_ensure_initialized"]

        def _ensure_initialized(cls: type[SparkContext], *args: Any, **kwargs: Any) -> None:
            orig_ensure.__func__(cls, *args, **kwargs)
            runtime.prepare_callbacks(cls._gateway)

        SparkContext._ensure_initialized = classmethod(_ensure_initialized)  # type: ignore[assignment,method-assign]
        self._patched.append((SparkContext, "_ensure_initialized", orig_ensure))
        for owner, name, new in (
            (SparkSession, "__init__", __init__),
            (SparkSession, "stop", session_stop),
            (SparkContext, "stop", context_stop),
        ):
            self._patched.append((owner, name, getattr(owner, name)))
            new.__wrapped__ = getattr(owner, name)  # type: ignore[attr-defined]
            new.__doc__ = getattr(owner, name).__doc__
            setattr(owner, name, new)
        try:
            self.udfs.install()
        except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
            self.problem("could not hook Python UDF creation; UDFs stay black boxes", exc)

    def prepare_callbacks(self, gateway: Any) -> None:
        """As soon as pyspark has its JVM gateway (before the JVM's SparkContext is made): start py4j's callback
        server and have the JVM make its proxy class for the listener, on a thread of their own, so that
        attaching the listener when the session appears (on the job's critical path) finds them ready."""
        if gateway is None or self._callbacks is not None:
            return

        def run() -> None:
            try:
                import importlib

                from pyspark.java_gateway import ensure_callback_server_started

                for module in CAPTURE_MODULES:
                    importlib.import_module(module)
                from airflow_provider_lineage.capture.py4j_helpers import warm_listener_proxy

                ensure_callback_server_started(gateway)
                warm_listener_proxy(gateway)
            except Exception:
                log.debug("preparing py4j callbacks early failed", exc_info=True)

        self._callbacks = threading.Thread(target=run, name="apl-capture-callbacks", daemon=True)
        self._callbacks.start()

    def unpatch(self) -> None:
        for owner, name, orig in reversed(self._patched):
            setattr(owner, name, orig)
        self._patched.clear()
        self.udfs.uninstall()

    # -- session hook ---------------------------------------------------------------------------
    def on_session(self, spark: SparkSession) -> None:
        """Attach the listener to a newly constructed session (once per JVM session).

        All of it runs on the application's thread (on the job's critical path): ``timings["attach_s"]`` is its
        whole time, split into ``attach_<step>_s`` (settings, versions, listener, streaming, start_event), except
        ``session_state_s``: the session's lazy state, which the job's first query would create anyway."""
        t_all = time.perf_counter()
        shared = 0.0

        def step(name: str, since: float) -> float:
            now = time.perf_counter()
            key = f"attach_{name}"
            self.timings[key] = self.timings.get(key, 0.0) + now - since
            return now

        try:
            with self._lock:
                jsession = spark._jsparkSession
                if any(jsession.equals(s) for s in self._sessions):
                    return
                # the session's state (analyzer, catalog, listener manager) is created lazily by the first thing
                # that needs it: the job's first query, or the listener's registration below. Created here, it
                # is not the capture's cost (the job would create it a moment later), so it is timed apart.
                t = time.perf_counter()
                jsession.sessionState()
                shared = time.perf_counter() - t
                self.timings["session_state_s"] = self.timings.get("session_state_s", 0.0) + shared
                t += shared
                if self.config is None:
                    self.configure(spark)
                t = step("settings_s", t)
                if self.version_warnings is None:
                    self.check_versions(spark)
                t = step("versions_s", t)
                assert self.config is not None
                if not self.config.active:
                    self.enable_sieve(spark)
                    return
                from airflow_provider_lineage.capture.py4j_helpers import py4j_listener_ids
                from airflow_provider_lineage.capture.session import install

                if self._callbacks is not None:  # started with the gateway: never two callback servers
                    self._callbacks.join(CALLBACKS_WAIT_S if not self._callbacks_late else 0)
                    if self._callbacks.is_alive():
                        # still starting py4j's callback server: installing now would start a second one beside
                        # it. The job goes on without a listener on this session, and the run says so.
                        if not self._callbacks_late:
                            self._callbacks_late = True
                            self.problem(f"py4j's callback server was not ready within {CALLBACKS_WAIT_S:g}s of the "
                                         "SparkSession's creation: this session's writes are not captured")
                        return
                jvm = spark.sparkContext._jvm
                present = py4j_listener_ids(jvm, jsession)
                if present & self._listener_ids:
                    # a clone of a captured session (a streaming query's, handed to a foreachBatch function as a
                    # new Python SparkSession): it has our listener already; a second one would record twice
                    self._sessions.append(jsession)
                    return

                listener = install(spark, self.on_record, budget=self.config.budget)
                self._listener_ids |= py4j_listener_ids(jvm, jsession) - present
                self._time_callbacks(listener)
                self.listeners.append(listener)
                self._sessions.append(jsession)
                t = step("listener_s", t)
                self.enable_sieve(spark)
                if self.streaming is None:
                    self.attach_streaming(spark, listener)
                t = step("streaming_s", t)
                if self.spark_version is None:
                    self.spark_version = spark.version
                    self.app_name = spark.sparkContext.appName
                    self.emit_start()
                step("start_event_s", t)
        except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
            self.problem("could not attach the capture listener to the SparkSession", exc)
        finally:
            self.timings["attach_s"] += time.perf_counter() - t_all - shared

    def enable_sieve(self, spark: SparkSession) -> None:
        """Sieve's pruning of Parquet scans in this session (``spark.airflow_lineage.sievePruning=true``)."""
        if self.config is None or not self.config.sieve_pruning:
            return
        if self._callbacks is not None:  # one py4j callback server: the one started with the gateway
            self._callbacks.join(CALLBACKS_WAIT_S)
            if self._callbacks.is_alive():
                self.problem("py4j's callback server was not ready: Sieve pruning is not enabled")
                return
        try:
            import importlib

            # by name: the capture core does not import the Sieve core; the optimizer rule lives there
            importlib.import_module("airflow_provider_lineage.sieve.spark.prune").enable(spark)
            log.info("Sieve pruning enabled: Parquet scans of indexed tables read only the index's candidate files")
        except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job: the scans read every file
            self.problem("could not enable Sieve pruning (spark.airflow_lineage.sievePruning); scans read every file",
                         exc)

    def attach_streaming(self, spark: SparkSession, listener: Any) -> None:
        """Structured Streaming queries of every session: one record per query (:mod:`.streaming`)."""
        try:
            from airflow_provider_lineage.capture import streaming

            self.streaming = streaming.install(spark, self.on_record, listener)
        except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
            self.streaming = False
            self.problem("could not attach the streaming capture; streaming writes are not captured", exc)

    def finish_streaming(self) -> None:
        """Hand over the streaming queries still running at the end of the run (after the bus drained)."""
        if not self.streaming:
            return
        try:
            for record in self.streaming.finish(list(self._sessions)):
                if record.streaming.get("state") == "running":
                    log.info("streaming query %s still running at the end of the application",
                             record.streaming.get("name") or record.streaming.get("query_id"))
            self.problems.extend(self.streaming.errors)
            self.streaming.errors.clear()
        except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
            self.problem("could not hand over the running streaming queries", exc)

    def check_versions(self, spark: SparkSession) -> None:
        """Name a driver pyspark that is not the JVM's Spark, and pyspark 4.2.0's Arrow-UDF hang (once)."""
        self.version_warnings = []
        try:
            import pyspark

            from airflow_provider_lineage.capture.versions import check_session

            for text in check_session(spark, pyspark.__version__):
                self.version_warnings.append(text)
                log.warning("%s", text)
        except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
            self.problem("could not compare the driver's pyspark with the JVM's Spark", exc)

    def _time_callbacks(self, listener: Any) -> None:
        handle = listener._handle

        def timed(*args: Any) -> None:
            t0 = time.perf_counter()
            try:
                handle(*args)
            finally:
                with self._lock:
                    self.timings["callbacks_s"] += time.perf_counter() - t0

        listener._handle = timed

    def configure(self, spark: SparkSession) -> None:
        # only the settings the capture reads, from the context's own SparkConf (getConf() copies every setting
        # and getAll() reads each back with two py4j round trips: on the critical path, as this is)
        jconf = spark.sparkContext._jsc.sc().conf()
        settings = {}
        from airflow_provider_lineage.capture.config import PREFIX, LauncherConfig
        from airflow_provider_lineage.capture.sink import RecordSink

        for prefix in (PREFIX, "spark.openlineage.", "spark.hadoop.fs.s3a."):
            settings.update((prefix + t._1(), t._2()) for t in jconf.getAllWithPrefix(prefix))
        spark_ol = {k: v for k, v in settings.items() if k.startswith("spark.openlineage.")}
        try:
            self.config = LauncherConfig.resolve(settings.get, self.environ, spark_ol)
        except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
            self.config = LauncherConfig()
            self.problem("invalid lineage configuration; capture is off for this run", exc)
            return
        self.udfs.enabled = self.config.udf_analysis
        if self.config.capture_dir and self.config.capture_token:  # a driver that runs elsewhere
            try:
                from airflow_provider_lineage.capture.remote import DEFAULT_RECORD_LIMIT, RemoteSink

                self.sink = RemoteSink(
                    self.config.capture_dir, self.config.capture_token, task_run=self.config.task_run, spark=spark,
                    get_conf=settings.get, limit=self.config.max_record_bytes or DEFAULT_RECORD_LIMIT,
                )
                log.info("capture records go to %s (%s)", self.sink.directory, self.sink.store.description)
            except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
                self.problem(f"cannot write capture records to {self.config.capture_dir}", exc)
        elif self.config.capture_dir:
            try:
                self.sink = RecordSink(self.config.capture_dir)
            except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
                self.problem(f"cannot write capture records to {self.config.capture_dir}", exc)
        if not self.config.active:
            log.info(
                "no capture destination configured (spark.airflow_lineage.captureDir / "
                "spark.airflow_lineage.emit): running the application without capture"
            )

    # -- records --------------------------------------------------------------------------------
    def on_record(self, record: CaptureRecord) -> None:
        """Listener callback (Spark's listener thread)."""
        t0 = time.perf_counter()
        self.udfs.enrich(record)
        self.timings["udf_s"] += time.perf_counter() - t0
        with self._lock:
            self.records.append(record)
        if self.sink is not None:
            try:
                self.sink.write(record)
            except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
                self.problem(f"could not write the capture record of {record.command}", exc)
            else:
                if self.config is None or not self.config.emit:
                    # written, and the driver emits nothing itself: its plans (a wide, deep write's are tens of
                    # MB as Python objects) need not stay in the driver's memory for the rest of the job
                    record.plans = record.optimized_plan = record.analyzed_plan = None

    def detach(self) -> None:
        """Unregister every listener this runtime registered (tests, notebooks)."""
        for listener in self.listeners:
            try:
                listener._spark._jsparkSession.listenerManager().unregister(listener)
            except Exception:  # noqa: BLE001, S110 - never fail the user's Spark job for the capture
                pass
        self.listeners.clear()
        self._sessions.clear()
        self._listener_ids.clear()
        if self.streaming:
            self.streaming.unregister()
            self.streaming = None

    def drain_context(self, sc: Any) -> None:
        """Wait for Spark's listener bus to deliver queued events and for the capture worker to analyse them
        (before a stop / at exit), within ``drainTimeoutSeconds`` (after the application: what is left of it)."""
        try:
            if not self.listeners:
                return
            from airflow_provider_lineage.capture.session import drain_bus

            timeout = self.config.drain_timeout_s if self.config else 60.0
            if self._deadline is not None:
                timeout = max(0.0, self._deadline - time.monotonic())
            t0 = time.perf_counter()
            try:
                if sc is not None and getattr(sc, "_jsc", None) is not None:
                    drained = drain_bus(sc, timeout)
                else:  # the context is stopped: only the workers may still be busy
                    drained = True
                    for lst in self.listeners:  # every one waited for (no short-circuit)
                        drained = lst.wait(max(0.0, timeout - (time.perf_counter() - t0))) and drained
                if not drained:
                    self.problem(f"the capture did not finish within drainTimeoutSeconds={timeout:g}s; some writes "
                                 "may be missing or incomplete (the driver exits on time)")
            finally:
                self.timings["drain_s"] += time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001 - never fail the user's job for the capture
            self.problem("draining Spark's listener bus failed", exc)

    def drain_active(self) -> None:
        try:
            from pyspark import SparkContext

            self.drain_context(SparkContext._active_spark_context)  # None after stop(): the workers only
        except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
            self.problem("draining Spark's listener bus failed", exc)

    # -- end of run -----------------------------------------------------------------------------
    def finish(self, error: BaseException | None = None, exit_code: int | None = None) -> None:
        """Drain, collect listener errors, write the status file and (emit mode) the final event. Idempotent."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
        t0 = time.perf_counter()
        timeout = self.config.drain_timeout_s if self.config else 60.0
        self._deadline = time.monotonic() + timeout
        drained_before = self.timings["drain_s"]
        self.drain_active()
        self.finish_streaming()
        for listener in self.listeners:
            for err in getattr(listener, "errors", []):
                self.problems.append(err)
            self.timings["analysis_s"] += getattr(listener, "spent_s", 0.0)
            for stage, spent in getattr(listener, "stages", {}).items():  # where the analysis went
                self.timings[f"analysis_{stage}"] = self.timings.get(f"analysis_{stage}", 0.0) + spent
            try:
                listener.close()
            except Exception:  # noqa: BLE001, S110 - never fail the user's Spark job for the capture
                pass
        if self.config is not None and self.config.emit:
            self.emit_final(error)
        # the rest of the exit's capture work (streaming hand-over, closing, the final event): the wait for the
        # bus and the worker is drain_s
        self.timings["finish_s"] = time.perf_counter() - t0 - (self.timings["drain_s"] - drained_before)
        self.write_status(error, exit_code)

    def write_status(self, error: BaseException | None, exit_code: int | None) -> None:
        from airflow_provider_lineage.capture.config import STATUS_FILE, STATUS_FORMAT_VERSION
        from airflow_provider_lineage.capture.sink import atomic_write_text

        if self.sink is None:
            return
        status = {
            "format_version": STATUS_FORMAT_VERSION,
            "spark_version": self.spark_version,
            "app_name": self.app_name,
            "sessions": len(self._sessions),
            "captured": len(self.records),
            "problems": self.problems,
            "application_error": f"{type(error).__name__}: {error}" if error is not None else None,
            "exit_code": exit_code,
            "emitted": self.emitted,
            "emission_problems": self.emission_problems,
            "version_warnings": self.version_warnings or [],
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            # which capture code ran, in which interpreter (a driver elsewhere runs the shipped archive)
            "driver": {"python": sys.version.split()[0], "no_site": bool(sys.flags.no_site),
                       "capture_code": getattr(sys.modules.get("airflow_provider_lineage"), "__file__", None)},
        }
        try:
            if hasattr(self.sink, "write_status"):
                self.sink.write_status(json.dumps(status))
            else:
                atomic_write_text(self.sink.directory / STATUS_FILE, json.dumps(status))
        except Exception as exc:  # noqa: BLE001 - never fail the user's job for the status file
            self.problem("could not write the launcher status file", exc)
