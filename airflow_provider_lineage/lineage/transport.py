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


#: The endpoint of Marquez's lineage API (also openlineage-python's default ``endpoint`` for the http transport).
MARQUEZ_ENDPOINT = "api/v1/lineage"
#: http transports (openlineage-python ``type``s) whose consumer may be Marquez.
_HTTP_TYPES = ("http", "async_http")


def environment_transport() -> dict[str, Any] | None:
    """The transport openlineage-python would build from the standard places (``OPENLINEAGE_URL`` /
    ``OPENLINEAGE_ENDPOINT``, ``OPENLINEAGE_CONFIG`` / openlineage.yml, ``OPENLINEAGE__TRANSPORT__*``), as a config
    dict, without building it (``None``: nothing configured)."""
    url = os.environ.get("OPENLINEAGE_URL", "").strip()
    if url:
        return {"type": "http", "url": url, "endpoint": os.environ.get("OPENLINEAGE_ENDPOINT") or MARQUEZ_ENDPOINT}
    from openlineage.client import OpenLineageClient
    from openlineage.client.transport.noop import NoopConfig, NoopTransport

    try:
        found = OpenLineageClient(transport=NoopTransport(NoopConfig())).config.transport
    except Exception:  # noqa: BLE001 - an unreadable configuration is the client's to report when it emits
        return None
    return dict(found) if isinstance(found, dict) and found.get("type") else None


def dataset_list_blind(transport_config: dict[str, Any] | None, _depth: int = 0) -> str | None:
    """Where a transport sends events when the consumer there ignores the ``columnLineage`` facet's dataset-level
    list (Marquez: an http transport to :data:`MARQUEZ_ENDPOINT`, alone or inside a ``composite`` or ``transform``
    transport), as ``"http://host:5000/api/v1/lineage"``; ``None`` for any other transport.

    :param transport_config: an openlineage-python ``transport`` config (the value of a config's ``transport`` key).
    """
    if not isinstance(transport_config, dict) or _depth > 8:
        return None
    kind = str(transport_config.get("type") or "").strip().lower()
    if kind in _HTTP_TYPES:
        endpoint = str(transport_config.get("endpoint") or MARQUEZ_ENDPOINT).strip().strip("/")
        if endpoint == MARQUEZ_ENDPOINT:
            return f"{str(transport_config.get('url') or '').rstrip('/')}/{endpoint}"
        return None
    if kind == "composite":
        inner = transport_config.get("transports") or []
        for child in inner.values() if isinstance(inner, dict) else inner:
            if found := dataset_list_blind(child, _depth + 1):
                return found
        return None
    if kind == "transform":
        return dataset_list_blind(transport_config.get("transport"), _depth + 1)
    return None


def auto_indirect(transport_config: dict[str, Any] | None) -> tuple[str, str]:
    """The ``indirect`` placement for events sent through ``transport_config`` when nobody chose one, and why.

    ``"both"`` when the events reach a consumer that ignores the facet's dataset-level list (see
    :func:`dataset_list_blind`: the every-row FILTER/JOIN/GROUP_BY/SORT edges then also go on every output field, where
    it shows them; the dataset-level list stays for consumers that read it); else ``"dataset"`` (compact, the spec's
    recommended form).
    """
    where = dataset_list_blind(transport_config)
    if where:
        return "both", (f"events go to {where}, Marquez's lineage endpoint, which ignores the columnLineage facet's "
                        "dataset-level list: the every-row edges are put on every output field too")
    return "dataset", "the events' destination reads the columnLineage facet's dataset-level list"


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
    if (
        getattr(client.transport, "kind", None) != "http"
        or cfg is None
        or getattr(cfg, "retry", None) != DEFAULT_RETRY_CONFIG
    ):
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


#: Bytes of one event's JSON that the ``kafka`` transport is held to: a Kafka broker's default
#: ``message.max.bytes`` is 1,048,588 and the producer's default ``max.request.size`` 1,048,576 (a
#: bigger message is refused, ``MessageSizeTooLargeException``); the margin covers the record overhead.
KAFKA_EVENT_LIMIT = 1_000_000
#: Bytes of one request body the ``http`` transport is held to (after its ``compression``, if any):
#: openlineage-python's http transport sets no limit, Marquez (Dropwizard/Jetty) none by default for
#: JSON bodies, but the proxies usually in front of it do (nginx ``client_max_body_size``: 1 MB default).
HTTP_EVENT_LIMIT = 1_000_000
#: Environment variable overriding the limit for every transport (bytes; ``0``: never split).
LIMIT_ENV = "AIRFLOW_LINEAGE_MAX_EVENT_BYTES"


def event_limit(client: OpenLineageClient) -> int | None:
    """Bytes one event may take on this client's transport (``None``: no limit, e.g. ``file``).

    ``$AIRFLOW_LINEAGE_MAX_EVENT_BYTES`` wins (``0``: no limit); else :data:`KAFKA_EVENT_LIMIT` for
    ``kafka`` (or a smaller ``max.request.size`` / ``message.max.bytes`` in its ``config``),
    :data:`HTTP_EVENT_LIMIT` for ``http``, none for the others.
    """
    raw = os.environ.get(LIMIT_ENV, "").strip()
    if raw:
        try:
            value = int(raw)
        except ValueError:
            log.warning("%s=%r is not a number of bytes: ignored", LIMIT_ENV, raw)
        else:
            return value if value > 0 else None
    kind = getattr(client.transport, "kind", None)
    if kind == "kafka":
        conf = getattr(getattr(client.transport, "config", None), "config", None) or {}
        sizes = [int(v) for k, v in conf.items() if k in ("max.request.size", "message.max.bytes") and str(v).isdigit()]
        return min([KAFKA_EVENT_LIMIT, *sizes])
    if kind == "http":
        return HTTP_EVENT_LIMIT
    return None


def wire_bytes(client: OpenLineageClient, event: RunEvent) -> int:
    """Bytes ``event`` takes on the client's transport: its JSON, gzip-compressed when the http transport
    is configured with ``compression: gzip`` (as openlineage-python sends it)."""
    from openlineage.client.serde import Serde

    body = Serde.to_json(event).encode()
    compression = getattr(getattr(client.transport, "config", None), "compression", None)
    if compression is not None and "gzip" in str(getattr(compression, "value", compression)).lower():
        import gzip

        return len(gzip.compress(body))
    return len(body)


def fit_events(client: OpenLineageClient, events: Iterable[RunEvent], notes: list[str] | None = None) -> list[RunEvent]:
    """``events`` with each one over the transport's :func:`event_limit` split (per output dataset, an output
    too big alone per share of its columns, see :func:`.events.split_event`) so that no edge is dropped; what
    was done is appended to ``notes``."""
    from airflow_provider_lineage.lineage.events import split_event

    limit = event_limit(client)
    out: list[RunEvent] = []
    for event in events:
        if limit is None:
            out.append(event)
            continue
        size = wire_bytes(client, event)
        if size <= limit:
            out.append(event)
            continue
        parts = split_event(event, lambda e: wire_bytes(client, e), limit)
        out.extend(parts)
        if notes is not None and len(parts) == 1:
            notes.append(f"OpenLineage {event.eventType.value} event of {size} bytes is over the {limit}-byte limit "
                         f"of {describe_transport(client)} and cannot be split (one output, one column): sent as is "
                         "(raise the transport's limit, or set compression: gzip on an http transport)")
        elif notes is not None:
            biggest = max(wire_bytes(client, e) for e in parts)
            over = "" if biggest <= limit else (
                f"; one part is still {biggest} bytes, over the limit (its inputs, or one column's lineage): sent as"
                " is (raise the transport's limit, or set compression: gzip on an http transport)")
            notes.append(
                f"OpenLineage {event.eventType.value} event of {size} bytes is over the {limit}-byte limit of "
                f"{describe_transport(client)}: sent as {len(parts)} events of the same run (no edge dropped; "
                f"the last one is the {event.eventType.value}){over}")
    return out


def emit_all(client: OpenLineageClient, events: Iterable[RunEvent], timeout: float | None = None,
             notes: list[str] | None = None) -> list[str]:
    """Emit events; never raises, never blocks longer than ``timeout``, reports a failing endpoint once.

    :param timeout: bound on the whole call (sending every event, then closing the client); default
        :func:`emit_timeout` (the configured transport timeout). Each send runs in a daemon thread: an
        endpoint that hangs, or whose retries outlast the bound, is given up on at the deadline (the
        thread finishes in the background, bounded by the transport's own timeout).
    :returns: at most one message per client, for its first failure (down, refused, HTTP error,
        timeout), naming the destination and the cause. Later events of a client that failed are
        not sent (they would wait for the same dead endpoint) and add no message, so the caller logs
        the failure exactly once. This function logs nothing itself.
    :param notes: receives what was done to an event over the transport's size limit
        (:func:`fit_events`: split per output dataset), for the caller to log.
    """
    budget = emit_timeout(client) if timeout is None else timeout
    deadline = time.monotonic() + budget
    problems: list[str] = []
    events = list(events)
    try:
        events = fit_events(client, events, notes)
    except Exception as exc:  # noqa: BLE001 - sizing never stops an emission: the events go as they are
        if notes is not None:
            notes.append(f"could not size the OpenLineage events ({exc!r}): sent as they are")
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
