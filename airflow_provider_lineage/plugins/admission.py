"""An admission limit for the api-server's readers (opt-in: ``[column_lineage] api_admission_limit``).

Why: Airflow 3's list routes (``GET /api/v2/dags``, ``.../taskInstances`` ...) resolve 27-39 *sync* FastAPI
dependencies per request, and each is a hop to the worker's thread pool whose result resumes on the worker's one
event loop. With 64 readers in flight every hop queues behind the hops of all the other requests, so each request
takes as long as the whole crowd: under 64 concurrent readers on 2 cores Airflow's own task-instance list answered
in 2.5-3.5 s at p95 (``benchmarks/api_load/REPORT.md``, issue 47). Letting at most ``limit`` requests of a worker
run at once, the others waiting their turn in arrival order, keeps each running request's hops short: the same load
then answers every path in <= 1.4 s at p95 with a higher throughput.

:class:`AdmissionLimit` is a pure ASGI middleware (no Starlette ``BaseHTTPMiddleware``: a streamed answer is passed
through untouched). It gates only the HTTP requests of readers: ``/api/v2/``, ``/ui/`` and ``/column-lineage/``.
It never gates the task execution API (``/execution/``: a task's heartbeat must not wait behind readers),
``/auth/``, log streaming (any path with ``/logs/``: a streamed answer would hold its slot as long as it streams),
the probes (``/api/v2/monitor/health``, ``/api/v2/version``: a probe must not take a busy server for a dead one),
websockets or lifespan events. Every gated request is bounded: one that could not start within ``wait_timeout``
seconds gets ``503`` with ``Retry-After`` and a JSON body naming the setting.
"""
from __future__ import annotations

import asyncio
import collections
import json
import math
import weakref
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The path prefixes whose HTTP requests are admitted one slot at a time (readers: Airflow's REST and UI APIs, the
#: plugin's own API and page).
GATED_PREFIXES = ("/api/v2/", "/ui/", "/column-lineage/")
#: A path containing this is never gated (log streaming holds its answer open).
UNGATED_PART = "/logs/"
#: Paths never gated although under a gated prefix: the probes (health: one hop and a heartbeat read; version:
#: no DB) must answer a load balancer's or an orchestrator's check while readers queue, or a busy api-server would
#: be taken for a dead one and restarted (``docker/`` probes ``/api/v2/version``).
UNGATED_PATHS = frozenset({"/api/v2/monitor/health", "/api/v2/version"})
#: Seconds given in ``Retry-After`` of a ``503`` (a request waited ``wait_timeout`` already).
RETRY_AFTER_S = 5
#: The default of ``wait_timeout``: seconds a request may wait for its turn before it is answered ``503``.
DEFAULT_WAIT_TIMEOUT_S = 30.0


def gated(scope: Scope) -> bool:
    """Whether the request of ``scope`` waits for a slot (an HTTP request of a reader, not log streaming)."""
    if scope.get("type") != "http":
        return False
    path = str(scope.get("path", ""))
    root = str(scope.get("root_path", "") or "")
    if root and path.startswith(root):  # an api-server behind a path prefix ([api] base_url)
        path = path[len(root):]
    if UNGATED_PART in path or path.rstrip("/") in UNGATED_PATHS:
        return False
    return any(path.startswith(prefix) or path == prefix.rstrip("/") for prefix in GATED_PREFIXES)


class _Gate:
    """At most ``limit`` holders at once on one event loop; a freed slot goes to the oldest waiter (FIFO, no
    barging), and a waiter that gives up (timeout, cancelled) leaves the queue without taking or losing a slot."""

    def __init__(self, limit: int) -> None:
        self.free = limit
        self.waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def acquire(self, timeout: float) -> bool:
        """Take a slot: ``True`` once held, ``False`` when none came within ``timeout`` seconds."""
        if self.free > 0 and not self.waiters:
            self.free -= 1
            return True
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            await asyncio.wait({waiter}, timeout=timeout)  # never cancels ``waiter`` itself
        except asyncio.CancelledError:  # the client went away while waiting
            self._give_up(waiter)
            raise
        if waiter.done():
            return True
        self._give_up(waiter)
        return False

    def _give_up(self, waiter: asyncio.Future[None]) -> None:
        if waiter.done() and not waiter.cancelled():  # the slot was handed over meanwhile: pass it on
            self.release()
            return
        waiter.cancel()
        try:
            self.waiters.remove(waiter)
        except ValueError:
            pass

    def release(self) -> None:
        """Give the slot back: to the oldest waiter still waiting, else to the pool."""
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1


class AdmissionLimit:
    """Pure ASGI middleware: at most ``limit`` reader requests of a worker run at once, the others wait FIFO.

    ``limit`` counts per api-server worker process (each has its own event loop and gate); ``wait_timeout``
    bounds a request's wait for its turn, after which it is answered ``503`` with ``Retry-After``. See the module
    docstring for what is gated and why.
    """

    def __init__(self, app: ASGIApp, *, limit: int, wait_timeout: float = DEFAULT_WAIT_TIMEOUT_S) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"AdmissionLimit: limit must be a whole number >= 1, not {limit!r}")
        if not isinstance(wait_timeout, (int, float)) or not math.isfinite(wait_timeout) or wait_timeout <= 0:
            raise ValueError(f"AdmissionLimit: wait_timeout must be a number of seconds > 0, not {wait_timeout!r}")
        self.app = app
        self.limit = limit
        self.wait_timeout = float(wait_timeout)
        # one gate per event loop (an api-server worker has one; a test may run several), made on first use
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Gate] = weakref.WeakKeyDictionary()

    def _gate(self) -> _Gate:
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            gate = self._gates[loop] = _Gate(self.limit)
        return gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not gated(scope):
            await self.app(scope, receive, send)
            return
        gate = self._gate()
        if not await gate.acquire(self.wait_timeout):
            await self._busy(send)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            gate.release()

    async def _busy(self, send: Send) -> None:
        body = json.dumps({
            "detail": (
                f"The api-server is busy: this request waited {self.wait_timeout:g} s "
                "([column_lineage] api_admission_wait_timeout) for one of the "
                f"{self.limit} requests a worker runs at once ([column_lineage] api_admission_limit). "
                f"Retry in {RETRY_AFTER_S} s; if this is frequent, raise the api-server's workers or the limit."
            ),
            "setting": "[column_lineage] api_admission_limit",
        }).encode("utf-8")
        await send({
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode("ascii")),
                (b"retry-after", str(RETRY_AFTER_S).encode("ascii")),
            ],
        })
        await send({"type": "http.response.body", "body": body})
