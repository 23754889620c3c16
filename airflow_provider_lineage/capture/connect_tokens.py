"""Who ran a Connect execution, and the capture tokens: the names a client sets, the shape the operators issue,
the run folders they map to (inside the capture location only), and the py4j readers of Connect events.

Kept apart from :mod:`.connect` (the server-side capture) for size; ``from airflow_provider_lineage.capture.connect
import TOKEN_CONF, ...`` keeps working.
"""
from __future__ import annotations

import collections
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: Session conf a client sets to its task attempt's token (records go to ``<capture_dir>/<token>/``).
TOKEN_CONF = "spark.airflow_lineage.captureToken"
#: Session conf naming the task run (``namespace/name/runId``), copied into each envelope.
TASK_RUN_CONF = "spark.airflow_lineage.taskRun"
#: ``SET spark.airflow_lineage.flush=<token>``: the client's end of run; the server writes the status.
FLUSH_CONF = "spark.airflow_lineage.flush"
#: A client tag (``spark.addTag``) that carries the token, for clients that cannot set a session conf.
TOKEN_TAG_PREFIX = "airflow_lineage_token:"
#: Spark conf the lineage Connect server sets (every session sees it): its capture location.
SERVER_CONF = "spark.airflow_lineage.connectServer"
#: The listener-bus queue of the capture listener (its own thread: never delays Spark's other listeners).
BUS_QUEUE = "airflowLineage"
#: The shape of the capture token the operators issue (:class:`~airflow_provider_lineage.operators._lineage.connect_run.
#: ConnectRun`, ``RemoteCapture``): anything else is not a run of theirs, and never becomes a path.
TOKEN_PATTERN = re.compile(r"run-[0-9a-f]{32}")


def valid_token(token: str | None) -> bool:
    """Whether ``token`` has the shape of a capture token the operators issue (``run-`` + 32 lowercase hex)."""
    return bool(token) and TOKEN_PATTERN.fullmatch(str(token)) is not None


def folder_inside(capture_dir: str, key: str) -> str:
    """``<capture_dir>/<key>``, checked to stay inside ``capture_dir``: one plain path component, and for a local
    path, no symlink that leads out of it. Raises ``ValueError`` naming the problem."""
    if not key or key in (".", "..") or "/" in key or "\\" in key or "\0" in key:
        raise ValueError(f"{key!r} is not a run folder name")
    folder = capture_dir.rstrip("/") + "/" + key
    if "://" in capture_dir and not capture_dir.startswith("file:"):
        return folder  # an object store or HDFS: no symlinks, the name is one component
    base = capture_dir
    if base.startswith("file:"):
        import urllib.parse

        base = urllib.parse.unquote(urllib.parse.urlsplit(base).path)
    real_base = os.path.realpath(base)
    real = os.path.realpath(os.path.join(base, key))
    if os.path.dirname(real) != real_base:
        raise ValueError(f"the run folder {folder} resolves to {real}, outside the capture location {real_base}")
    return folder

_OPERATION_TAG = re.compile(r"^SparkConnect_OperationTag_User_(?P<user>.*)_Session_(?P<session>[0-9a-fA-F-]{36})"
                            r"_Operation_(?P<operation>[0-9a-fA-F-]{36})$")
_SESSION_TAG = re.compile(r"^SparkConnect_SessionTag_User_(?P<user>.*)_Session_(?P<session>[0-9a-fA-F-]{36})"
                          r"_Tag_(?P<tag>.*)$")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class ConnectIdentity:
    """Who ran a SQL execution: the Connect user, session, operation and the client's tags."""

    user_id: str | None = None
    session_id: str | None = None
    operation_id: str | None = None
    tags: list[str] = field(default_factory=list)

    @property
    def token(self) -> str | None:
        for tag in self.tags:
            if tag.startswith(TOKEN_TAG_PREFIX) and len(tag) > len(TOKEN_TAG_PREFIX):
                return tag[len(TOKEN_TAG_PREFIX):]
        return None

    def folder_key(self) -> str:
        """The folder of an untagged session's records: ``connect-<user>-<session>``."""
        user = _SAFE.sub("_", self.user_id or "anonymous")[:64]
        return f"connect-{user}-{self.session_id or 'unknown'}"

    def task_run(self) -> str:
        """The job an untagged session's writes are named after: ``spark_connect/<user>/<session>``."""
        return f"spark_connect/{self.user_id or 'anonymous'}/{self.session_id or 'unknown'}"


def parse_job_tags(tags: Iterable[str]) -> ConnectIdentity:
    """The Connect identity in a SQL execution's job tags (anything else is ignored)."""
    ident = ConnectIdentity()
    for tag in tags:
        if m := _OPERATION_TAG.match(tag):
            ident.user_id, ident.session_id, ident.operation_id = m["user"], m["session"], m["operation"]
        elif m := _SESSION_TAG.match(tag):
            ident.user_id, ident.session_id = ident.user_id or m["user"], ident.session_id or m["session"]
            ident.tags.append(m["tag"])
    return ident



def _shown(token: str | None) -> str:
    """A client's token as a log shows it (bounded, printable)."""
    text = repr(str(token))
    return text if len(text) <= 80 else text[:77] + "...'"


def _str(event: Any, name: str) -> str | None:
    try:
        return str(getattr(event, name)())
    except Exception:  # noqa: BLE001 - a Spark without that field
        return None


def _bounded(mapping: collections.OrderedDict[str, Any], limit: int = 10_000) -> None:
    while len(mapping) > limit:
        mapping.popitem(last=False)


def _conf(session: Any, key: str) -> str | None:
    try:
        value = session.conf().get(key, "")
    except Exception:  # noqa: BLE001 - a session whose conf cannot be read: untagged
        return None
    return str(value) or None


def _set_command(qe: Any) -> Any:
    """The execution's ``SetCommand`` plan, else ``None``."""
    try:
        logical = qe.logical()
        return logical if str(logical.getClass().getSimpleName()) == "SetCommand" else None
    except Exception:  # noqa: BLE001 - not a command we know
        return None


def _set_key_value(plan: Any, key: str) -> str | None:
    """``SET key=value``'s value when the command sets ``key``."""
    try:
        kv = plan.kv()
        if kv.isEmpty():
            return None
        pair = kv.get()
        if str(pair._1()) != key or pair._2().isEmpty():
            return None
        return str(pair._2().get()).strip() or None
    except Exception:  # noqa: BLE001 - another SET shape
        return None


def _option(event: Any, name: str, *, plain: bool = False) -> Any:
    """A field of the end event: a Scala ``Option``'s value (``None`` when empty or absent), or a plain value."""
    try:
        value = getattr(event, name)()
        if plain:
            return value
        return None if value.isEmpty() else value.get()
    except Exception:  # noqa: BLE001 - a Spark without that field
        return None
