"""Process and port helpers of a deployment: free ports, process groups, ``/proc`` reads, the error type."""
from __future__ import annotations

import datetime as dt
import os
import socket
from pathlib import Path


class DeploymentError(RuntimeError):
    """A process did not start / stop as expected (the message names the log to read)."""


def free_port() -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _proc_ids(pid: int) -> tuple[int, int] | None:
    """(pgid, sid) of a live process from /proc (None when it is gone or a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] == "Z":
        return None
    return int(fields[2]), int(fields[3])


def _instant(text: str | None) -> dt.datetime:
    """An API timestamp (ISO 8601; naive = UTC); the earliest instant for none."""
    if not text:
        return dt.datetime.min.replace(tzinfo=dt.UTC)
    ts = dt.datetime.fromisoformat(text)  # Python 3.11+ reads a trailing Z
    return ts.replace(tzinfo=dt.UTC) if ts.tzinfo is None else ts


def _environ_has(pid: int, marker: bytes) -> bool:
    try:
        return marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
