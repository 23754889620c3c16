"""Where the run events go: openlineage-python clients and the embedded default file (no Airflow).

:func:`client_for` picks the client: an explicit config, else the standard ``OPENLINEAGE_*``
settings / ``openlineage.yml``, else the embedded default file ``$AIRFLOW_HOME/lineage/events.jsonl``.
:func:`emit_all` sends events and reports transport failures instead of raising them.
"""
from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_lineage.lineage.logs import get_logger

if TYPE_CHECKING:
    from openlineage.client import OpenLineageClient
    from openlineage.client.event_v2 import RunEvent

log = get_logger(__name__)


def default_events_path(airflow_home: str | None = None) -> Path:
    """The embedded default destination: ``$AIRFLOW_HOME/lineage/events.jsonl`` (``~/airflow`` if unset)."""
    home = airflow_home or os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
    return Path(home) / "lineage" / "events.jsonl"


def default_file_config(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """openlineage-python config writing JSON lines to one file (appending)."""
    target = Path(path) if path is not None else default_events_path()
    return {"transport": {"type": "file", "log_file_path": str(target), "append": True}}


def environment_configured() -> bool:
    """Whether openlineage-python finds a transport in the standard places (``OPENLINEAGE_*``, openlineage.yml).

    Asks the client's public ``config`` (user config, then ``OPENLINEAGE_CONFIG`` / ``./openlineage.yml``
    / ``~/.openlineage/openlineage.yml``, then ``OPENLINEAGE__*`` variables) on a probe client whose
    transport is a no-op, so nothing is connected or warned about.
    """
    from openlineage.client import OpenLineageClient
    from openlineage.client.transport.noop import NoopConfig, NoopTransport

    if os.environ.get("OPENLINEAGE_URL") or os.environ.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return True
    probe = OpenLineageClient(transport=NoopTransport(NoopConfig()))
    return bool((probe.config.transport or {}).get("type"))


def client_for(config: dict[str, Any] | None = None) -> tuple[OpenLineageClient, str]:
    """The client to emit with, and a description of where the events go.

    ``config`` (an openlineage-python config dict) wins; else the standard environment/yaml
    configuration; else the embedded default file.
    """
    from openlineage.client import OpenLineageClient

    if config is None and not environment_configured():
        config = default_file_config()
    if config is not None:
        transport = config.get("transport") or {}
        if transport.get("type") == "file":
            Path(transport["log_file_path"]).parent.mkdir(parents=True, exist_ok=True)
        client = OpenLineageClient(config=config)
    else:
        client = OpenLineageClient()
    fit_retries(client)
    return client, describe_transport(client)


def fit_retries(client: OpenLineageClient) -> None:
    """Make an HTTP transport left at openlineage-python's default retries fit its own timeout.

    The default (5 retries, exponential back-off, read timeouts retried too) can block several times
    the configured ``timeout`` and hides the cause behind the deadline of :func:`emit_all`. Instead:
    at most 2 connection/5xx retries with a back-off of a tenth of the timeout (at most 0.3 s), no
    read retry (a read timeout has already used the time). An explicit ``retry`` setting is kept
    (the deadline still applies).
    """
    from openlineage.client.transport.http_common import DEFAULT_RETRY_CONFIG

    cfg = getattr(client.transport, "config", None)
    if getattr(client.transport, "kind", None) != "http" or cfg is None or getattr(cfg, "retry", None) != DEFAULT_RETRY_CONFIG:
        return
    cfg.retry = {
        **DEFAULT_RETRY_CONFIG,
        "total": 2,
        "connect": 2,
        "read": 0,
        "status": 2,
        "backoff_factor": min(0.3, emit_timeout(client) / 10),
    }


def describe_transport(client: OpenLineageClient) -> str:
    transport = client.transport
    kind = getattr(transport, "kind", type(transport).__name__)
    cfg = getattr(transport, "config", None)
    if kind == "file" and cfg is not None:
        return f"file {cfg.log_file_path}" + ("" if cfg.append else " (one file per event)")
    if kind == "http" and cfg is not None:
        return f"http {getattr(cfg, 'url', '')}{'/' + cfg.endpoint if getattr(cfg, 'endpoint', None) else ''}"
    return str(kind)


#: Bound on one :func:`emit_all` call when the transport has no timeout of its own (file, console ...).
DEFAULT_EMIT_TIMEOUT_S = 30.0
#: Name of the thread an emission runs in (urllib3's retry warnings from it are not logged: one line per failure).
EMIT_THREAD = "airflow-provider-lineage-emit"
#: clients whose endpoint already failed -> the failure (later events of that client are not sent)
_FAILED: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


class _QuietRetries(logging.Filter):
    """Drop urllib3's per-attempt ``Retrying (...)`` warnings raised inside an emission thread."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.threadName == EMIT_THREAD and record.getMessage().startswith("Retrying"))


_retry_filter = _QuietRetries()
logging.getLogger("urllib3.connectionpool").addFilter(_retry_filter)


def emit_timeout(client: OpenLineageClient) -> float:
    """The transport's own ``timeout`` (HTTP: seconds per request), else :data:`DEFAULT_EMIT_TIMEOUT_S`."""
    timeout = getattr(getattr(client.transport, "config", None), "timeout", None)
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
        return float(timeout)
    return DEFAULT_EMIT_TIMEOUT_S


def emit_all(client: OpenLineageClient, events: Iterable[RunEvent], timeout: float | None = None) -> list[str]:
    """Emit events; never raises, never blocks longer than ``timeout``, reports a failing endpoint once.

    :param timeout: bound on the whole call (sending every event, then closing the client); default
        :func:`emit_timeout` (the configured transport timeout). Each send runs in a daemon thread: an
        endpoint that hangs, or whose retries outlast the bound, is given up on at the deadline (the
        thread finishes in the background, bounded by the transport's own timeout).
    :returns: at most one message per client, for its first failure (down, refused, HTTP error,
        timeout), naming the destination and the cause. Later events of a client that failed are
        not sent (they would wait for the same dead endpoint) and add no message, so the caller logs
        the failure exactly once. This function logs nothing itself.
    """
    budget = emit_timeout(client) if timeout is None else timeout
    deadline = time.monotonic() + budget
    problems: list[str] = []
    for event in events:
        if client in _FAILED:
            continue
        finished, error = _bounded(lambda e=event: client.emit(e), deadline - time.monotonic())
        if finished and error is None:
            continue
        cause = f"{error!r}" if error is not None else f"no answer within {budget:g}s (timeout)"
        _FAILED[client] = cause
        problems.append(
            f"OpenLineage {event.eventType.value} event not delivered to {describe_transport(client)}: {cause}; "
            "later events of this run are not sent (the task is not affected)"
        )
    _bounded(lambda: client.close(timeout=max(deadline - time.monotonic(), 0.1)), max(deadline - time.monotonic(), 0.1))
    return problems


def failure(client: OpenLineageClient) -> str | None:
    """The cause of the first failed emission of ``client`` (``None``: every event so far was delivered)."""
    return _FAILED.get(client)


def _bounded(fn: Callable[[], object], seconds: float) -> tuple[bool, BaseException | None]:
    """Run ``fn`` in a daemon thread for at most ``seconds``: (finished?, its exception)."""
    box: dict[str, BaseException] = {}

    def target() -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller, which reports it
            box["error"] = exc

    if seconds <= 0:
        return False, None
    worker = threading.Thread(target=target, name=EMIT_THREAD, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        return False, None
    return True, box.get("error")
