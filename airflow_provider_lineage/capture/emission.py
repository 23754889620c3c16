"""The OpenLineage events a driver sends itself (emit mode, cluster deploy mode): START, then COMPLETE or FAIL.

:class:`DriverEmission` is the part of :class:`~.runtime.CaptureRuntime` that builds the run's events from its
capture records (:mod:`airflow_provider_lineage.lineage.events`) and sends them with the run's one client
(:mod:`airflow_provider_lineage.lineage.transport`). A transport failure is reported, never raised.
"""
from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_lineage.capture.config import LauncherConfig
    from airflow_provider_lineage.lineage.record import CaptureRecord

log = logging.getLogger("airflow_provider_lineage.capture.launcher")


class DriverEmission:
    """START and final OpenLineage events of the application run (mixed into :class:`~.runtime.CaptureRuntime`)."""

    environ: dict[str, str]
    config: LauncherConfig | None
    records: list[CaptureRecord]
    problems: list[str]
    emission_problems: list[str]
    emitted: str | None
    run_id: str | None
    spark_version: str | None
    app_name: str | None
    started: dt.datetime
    _ol_client: Any

    def problem(self, message: str, exc: BaseException | None = None) -> None:
        """Log and keep a capture problem (:meth:`.runtime.CaptureRuntime.problem`)."""
        raise NotImplementedError

    def emission_problem(self, message: str) -> None:
        """A transport failure: logged once here, kept for the status file, not repeated in the lineage summary."""
        self.emission_problems.append(message)
        log.warning("%s (the application is not affected)", message)


    def _job(self) -> tuple[str, str]:
        from airflow_provider_lineage.capture.config import LauncherConfig

        cfg = self.config or LauncherConfig()
        namespace = cfg.job_namespace or self.environ.get("OPENLINEAGE_NAMESPACE") or "default"
        name = cfg.job_name or self.app_name or "spark_application"
        return namespace, name

    def _client(self) -> Any:
        """The run's one client (START and the final event share it: a dead endpoint is reported once)."""
        if self._ol_client is None:
            self._ol_client = self._new_client()
        return self._ol_client

    def _new_client(self) -> Any:
        from airflow_provider_lineage.capture.config import LauncherConfig, transport_from_spark_properties
        from airflow_provider_lineage.lineage import transport

        cfg = self.config or LauncherConfig()
        ol_config = cfg.openlineage_config
        if ol_config is None:
            transport = transport_from_spark_properties(cfg.spark_openlineage)
            if transport is not None:
                ol_config = {"transport": transport}
        return transport.client_for(ol_config)

    def emit_start(self) -> None:
        if self.config is None or not self.config.emit:
            return
        try:
            from airflow_provider_lineage.lineage import events, transport

            self.run_id = events.new_run_id()
            client, where = self._client()
            namespace, name = self._job()
            event = events.build_event(
                "START",
                job_namespace=namespace,
                job_name=name,
                run_id=self.run_id,
                run_facets=events.run_facets(None, parent=self.config.parent, spark_version=self.spark_version),
                job_facets=events.job_facets(integration="SPARK", job_type="APPLICATION"),
                event_time=self.started,
            )
            for msg in transport.emit_all(client, [event]):
                self.emission_problem(msg)
            self.emitted = where
            if transport.failure(client) is None:
                log.info("OpenLineage START event of %s.%s sent to %s", namespace, name, where)
            if self.config.indirect_reason:  # indirectLineage unset: say once which placement was chosen and why
                log.info("every-row edges placed %r: %s (spark.airflow_lineage.indirectLineage chooses)",
                         self.config.indirect, self.config.indirect_reason)
        except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
            self.problem("could not emit the OpenLineage START event", exc)

    def emit_final(self, error: BaseException | None) -> None:
        try:
            from airflow_provider_lineage.lineage import events, transport

            if self.run_id is None:  # no session was ever created: nothing ran on Spark
                return
            result = events.analyze(self.records, [events.Problem(p) for p in self.problems])
            from airflow_provider_lineage.lineage.model import DEFAULT_INDIRECT

            inputs, outputs = events.datasets(
                result, indirect=self.config.indirect if self.config else DEFAULT_INDIRECT
            )
            namespace, name = self._job()
            failed = error is not None and not (isinstance(error, SystemExit) and error.code in (0, None))
            event = events.build_event(
                "FAIL" if failed else "COMPLETE",
                job_namespace=namespace,
                job_name=name,
                run_id=self.run_id,
                inputs=inputs,
                outputs=outputs,
                run_facets=events.run_facets(
                    result, parent=self.config.parent if self.config else None, error=error if failed else None,
                    spark_version=self.spark_version,
                ),
                job_facets=events.job_facets(integration="SPARK", job_type="APPLICATION"),
            )
            client, where = self._client()
            for msg in transport.emit_all(client, [event]):
                self.emission_problem(msg)
            log.info("column lineage:\n%s", events.summaries(result))
            if transport.failure(client) is None:
                log.info("OpenLineage %s event of %s.%s sent to %s", event.eventType.value, namespace, name, where)
        except Exception as exc:  # noqa: BLE001 - never fail the user's Spark job for the capture
            self.problem("could not emit the final OpenLineage event", exc)
