"""The streaming queries of Connect sessions: one record per query run, in the run of the session that started it.

:class:`ConnectStreams` is a mixin of :class:`~.connect.ConnectCapture` (kept apart for size): its event handlers
are called by the capture's worker, in order with the sessions' batch writes and flushes.
"""
from __future__ import annotations

import collections
from typing import Any

from airflow_provider_lineage.capture.connect_tokens import (
    TASK_RUN_CONF,
    TOKEN_CONF,
    ConnectIdentity,
    _bounded,
    _conf,
    parse_job_tags,
)
from airflow_provider_lineage.lineage.record import CaptureRecord


class ConnectStreams:
    """Streaming queries (a mixin: the attributes and the run/claim/write methods are
    :class:`~.connect.ConnectCapture`'s)."""

    _capture: Any
    _streams: Any
    _stream_runs: collections.OrderedDict[str, tuple[str, str | None, ConnectIdentity]]
    _stream_starts: collections.OrderedDict[str, ConnectIdentity]
    _session_token: dict[str, str]

    def _claim(self, ident: ConnectIdentity, token: str) -> str | None:  # pragma: no cover - ConnectCapture's
        raise NotImplementedError

    def _run(self, key: str, task_run: str | None, ident: ConnectIdentity) -> Any:  # pragma: no cover
        raise NotImplementedError

    def _write(self, run: Any, record: CaptureRecord) -> None:  # pragma: no cover - ConnectCapture's
        raise NotImplementedError

    def _error(self, message: str) -> None:  # pragma: no cover - ConnectCapture's
        raise NotImplementedError

    def _streaming(self, spark: Any) -> Any:
        """A :class:`~.streaming.StreamingCapture` this capture feeds (not a listener of its own: the events come
        through this queue, in order with the client's flush); ``None`` when it cannot be made."""
        try:
            from airflow_provider_lineage.capture import streaming

            streaming.register_output_readers()
            return streaming.StreamingCapture(spark, self._on_stream_record, self._capture, other_sessions=False)
        except Exception as exc:  # noqa: BLE001 - batch writes are still captured
            self._error(f"connect capture: streaming queries are not captured: {exc!r}")
            return None

    def _on_query_started(self, event: Any) -> None:
        """A streaming query starts on the client's operation thread: its job tags name the Connect session."""
        try:
            tags = str(event.jobTags().mkString("\n")).split("\n")
        except Exception:  # noqa: BLE001 - a Spark without jobTags on the event
            tags = []
        run_id = str(event.runId().toString())
        self._stream_starts[run_id] = parse_job_tags(tags)
        _bounded(self._stream_starts)
        if self._streams is not None:
            self._streams.onOtherEvent(event)  # the query's name

    def _on_micro_batch(self, event: Any, qe: Any) -> None:
        """The first micro-batch of a query run says whose it is (the session conf its session cloned, else the
        start's tags); the streaming capture makes the query's record."""
        if self._streams is None:
            return
        run_id = str(qe.runId().toString())
        if run_id not in self._stream_runs:
            ident = self._stream_starts.get(run_id) or ConnectIdentity()
            session = qe.sparkSession()
            token = ident.token or (self._session_token.get(ident.session_id) if ident.session_id else None)
            if token is None and ident.session_id:
                token = _conf(session, TOKEN_CONF)
            key = self._claim(ident, token) if token and ident.session_id else None
            if key:
                self._stream_runs[run_id] = (key, _conf(session, TASK_RUN_CONF), ident)
            elif ident.session_id:
                self._stream_runs[run_id] = (ident.folder_key(), ident.task_run(), ident)
            else:  # no Connect session: the server's own query
                return
            _bounded(self._stream_runs)
        self._streams.onOtherEvent(event)

    def _on_query_terminated(self, event: Any) -> None:
        if self._streams is not None:
            self._streams.onOtherEvent(event)  # hands the query's record over (_on_stream_record)
        self._stream_starts.pop(str(event.runId().toString()), None)

    def _on_stream_record(self, record: CaptureRecord) -> None:
        """A streaming query's record (terminated, failed, or still running when its client ended its run)."""
        owner = self._stream_runs.pop(str(record.streaming.get("run_id")), None)
        if owner is None:
            return
        key, task_run, ident = owner
        record.environment = {**record.environment, **{
            k: v for k, v in (("connect_user", ident.user_id), ("connect_session", ident.session_id)) if v}}
        self._write(self._run(key, task_run, ident), record)

    def _finish_streams(self, key: str) -> None:
        """A run ends: its queries still running are handed over as such (their later batches are not recorded)."""
        if self._streams is None:
            return
        run_ids = {run_id for run_id, owner in self._stream_runs.items() if owner[0] == key}
        if run_ids:
            self._streams.finish(run_ids=run_ids)
