"""HTTP transport faults never hurt the task: down, refused, 5xx, hanging endpoints.

A local HTTP server on 127.0.0.1 stands in for Marquez (which cannot run here). Waits are bounded with
the transport's timeout; the tests check that emission finished (no timed assertions).
"""
from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from airflow_provider_lineage.lineage import events, transport

TIMEOUT = 1.0  # the transport's configured timeout (seconds)
MARGIN = 20.0  # how long the test waits beyond it before calling the emission stuck (a loaded 2-core box)


class FakeMarquez:
    """``mode``: ``ok`` (201), ``5xx`` (503 every time), ``hang`` (reads the request, never answers)."""

    def __init__(self, mode: str) -> None:
        self.mode, self.requests, self.release = mode, 0, threading.Event()
        self.received: list[tuple[str, bytes]] = []  # (path, body) of every POST, in order
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                outer.requests += 1
                outer.received.append((self.path, self.rfile.read(int(self.headers.get("Content-Length") or 0))))
                if outer.mode == "hang":
                    outer.release.wait(60)
                    return
                self.send_response(201 if outer.mode == "ok" else 503)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def refused_url() -> str:
    with socket.socket() as s:  # a port nobody listens on: connection refused (the endpoint is down)
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture(params=["down", "5xx", "hang"])
def endpoint(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    if request.param == "down":
        yield "down", refused_url()
        return
    server = FakeMarquez(request.param)
    yield request.param, server.url
    server.close()


def http_config(url: str) -> dict[str, Any]:
    return {"transport": {"type": "http", "url": url, "endpoint": "api/v1/lineage", "timeout": TIMEOUT}}


def _events() -> list[Any]:
    run_id = events.new_run_id()
    return [events.build_event(t, job_namespace="ns", job_name="job", run_id=run_id) for t in ("START", "COMPLETE")]


def run_bounded(fn: Any) -> Any:
    """Run ``fn`` in a thread; fail if it is still running TIMEOUT + MARGIN seconds later."""
    box: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: box.setdefault("value", fn()), daemon=True)
    worker.start()
    worker.join(TIMEOUT + MARGIN)
    assert not worker.is_alive(), "emission blocked beyond the transport's timeout"
    return box.get("value")


CAUSES = {"down": "ConnectionError", "5xx": "503", "hang": "timeout"}


def test_failing_endpoint_is_reported_once_with_the_cause(
    endpoint: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    mode, url = endpoint
    client, _ = transport.client_for(http_config(url))
    caplog.set_level(logging.WARNING)
    problems = run_bounded(lambda: transport.emit_all(client, _events()))
    assert len(problems) == 1, problems
    assert url in problems[0] and CAUSES[mode] in problems[0] and "START" in problems[0]
    assert transport.failure(client) is not None
    # later events of the same run are skipped, not reported again
    assert run_bounded(lambda: transport.emit_all(client, _events())) == []
    # nothing else was logged (transport.emit_all logs nothing; urllib3's retry warnings are filtered)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_working_endpoint_gets_every_event() -> None:
    server = FakeMarquez("ok")
    try:
        client, where = transport.client_for(http_config(server.url))
        assert run_bounded(lambda: transport.emit_all(client, _events())) == []
        assert server.requests == 2 and transport.failure(client) is None
        assert where == f"http {server.url}/api/v1/lineage"
    finally:
        server.close()


def test_emit_timeout_comes_from_the_transport() -> None:
    client, _ = transport.client_for(http_config(refused_url()))
    assert transport.emit_timeout(client) == TIMEOUT
    file_client, _ = transport.client_for({"transport": {"type": "console"}})
    assert transport.emit_timeout(file_client) == transport.DEFAULT_EMIT_TIMEOUT_S
