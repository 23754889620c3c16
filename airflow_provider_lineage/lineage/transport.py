"""Where the run events go: openlineage-python clients and the embedded default file (no Airflow).

:func:`client_for` picks the client: an explicit config, else the standard ``OPENLINEAGE_*``
settings / ``openlineage.yml``, else the embedded default file ``$AIRFLOW_HOME/lineage/events.jsonl``.
:func:`emit_all` sends events and reports transport failures instead of raising them.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
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
    return client, describe_transport(client)


def describe_transport(client: OpenLineageClient) -> str:
    transport = client.transport
    kind = getattr(transport, "kind", type(transport).__name__)
    cfg = getattr(transport, "config", None)
    if kind == "file" and cfg is not None:
        return f"file {cfg.log_file_path}" + ("" if cfg.append else " (one file per event)")
    if kind == "http" and cfg is not None:
        return f"http {getattr(cfg, 'url', '')}{'/' + cfg.endpoint if getattr(cfg, 'endpoint', None) else ''}"
    return str(kind)


def emit_all(client: OpenLineageClient, events: Iterable[RunEvent]) -> list[str]:
    """Emit events; a transport error is returned (and logged), never raised."""
    problems: list[str] = []
    for event in events:
        try:
            client.emit(event)
        except Exception as exc:  # noqa: BLE001 - a transport failure never fails the job: reported instead
            msg = f"emitting the {event.eventType.value} event failed: {exc!r}"
            log.warning("%s", msg)
            problems.append(msg)
    try:
        client.close(timeout=30)
    except Exception:  # noqa: BLE001, S110 - closing a failed transport has nothing left to report
        pass
    return problems
