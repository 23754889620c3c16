"""``plugins/admission.py``: the api-server's admission limit for readers, on a real ASGI app (issue 47 item 10).

Requests are ordered by events, never by sleeps: a handler holds its slot until the test sets its event, and a
request is known to wait for a slot when the gate lists it as a waiter.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import httpx
import pytest
from fastapi import FastAPI

from airflow_provider_lineage import conf
from airflow_provider_lineage.plugins import column_lineage
from airflow_provider_lineage.plugins.admission import AdmissionLimit, gated


class Probe:
    """A FastAPI app whose ``/hold/{name}`` routes (under each prefix) record their start and end and wait for the
    test's event, and the admission middleware in front of it."""

    def __init__(self, limit: int = 1, wait_timeout: float = 30.0) -> None:
        self.log: list[str] = []
        self.entered: dict[str, asyncio.Event] = {}
        self.release: dict[str, asyncio.Event] = {}
        app = FastAPI()

        async def hold(name: str) -> dict[str, str]:
            self.log.append(f"start {name}")
            self._event(self.entered, name).set()
            await self._event(self.release, name).wait()
            self.log.append(f"end {name}")
            return {"name": name}

        for path in ("/api/v2/hold/{name}", "/ui/hold/{name}", "/column-lineage/hold/{name}", "/execution/hold/{name}",
                     "/auth/hold/{name}", "/api/v2/dags/d/dagRuns/r/taskInstances/t/logs/{name}"):
            app.add_api_route(path, hold)
        app.add_middleware(AdmissionLimit, limit=limit, wait_timeout=wait_timeout)
        self.app = app
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")

    @staticmethod
    def _event(events: dict[str, asyncio.Event], name: str) -> asyncio.Event:
        return events.setdefault(name, asyncio.Event())

    def entered_event(self, name: str) -> asyncio.Event:
        return self._event(self.entered, name)

    def let_go(self, name: str) -> None:
        self._event(self.release, name).set()

    def get(self, path: str) -> asyncio.Task[httpx.Response]:
        return asyncio.ensure_future(self.client.get(path))


def _run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(test())


async def _waiters(probe: Probe, count: int) -> None:
    """Yield to the loop until ``count`` requests wait at the gate (no clock involved)."""
    for _ in range(10_000):
        gates = list(_middleware(probe)._gates.values())
        if gates and len(gates[0].waiters) >= count:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{count} waiters never queued")


def _middleware(probe: Probe) -> AdmissionLimit:
    stack = probe.app.middleware_stack
    assert stack is not None, "the app has not served a request yet"
    while not isinstance(stack, AdmissionLimit):
        stack = stack.app
    return stack


def test_limit_1_serializes_two_readers_in_arrival_order() -> None:
    async def go() -> None:
        probe = Probe(limit=1)
        first = probe.get("/api/v2/hold/a")
        await probe.entered_event("a").wait()
        second = probe.get("/ui/hold/b")
        third = probe.get("/column-lineage/hold/c")
        await _waiters(probe, 2)
        assert probe.log == ["start a"]  # b and c wait for a's slot
        probe.let_go("a")
        probe.let_go("b")
        probe.let_go("c")
        responses = await asyncio.gather(first, second, third)
        assert [r.status_code for r in responses] == [200, 200, 200]
        assert probe.log == ["start a", "end a", "start b", "end b", "start c", "end c"]  # FIFO, one at a time
        gate = next(iter(_middleware(probe)._gates.values()))
        assert gate.free == 1 and not gate.waiters
        await probe.client.aclose()

    _run(go)


@pytest.mark.parametrize("path", [
    "/execution/hold/x", "/auth/hold/x", "/api/v2/dags/d/dagRuns/r/taskInstances/t/logs/x",
])
def test_task_api_auth_and_log_streaming_never_wait(path: str) -> None:
    async def go() -> None:
        probe = Probe(limit=1)
        holder = probe.get("/api/v2/hold/a")
        await probe.entered_event("a").wait()
        probe.let_go("x")
        response = await probe.client.get(path)  # answered while a still holds the only slot
        assert response.status_code == 200 and probe.log == ["start a", "start x", "end x"]
        probe.let_go("a")
        assert (await holder).status_code == 200
        await probe.client.aclose()

    _run(go)


def test_a_request_that_waits_too_long_gets_503_with_retry_after() -> None:
    async def go() -> None:
        probe = Probe(limit=1, wait_timeout=0.01)
        holder = probe.get("/api/v2/hold/a")
        await probe.entered_event("a").wait()
        response = await probe.client.get("/api/v2/hold/b")  # a holds its slot until released below
        assert response.status_code == 503
        assert response.headers["retry-after"].isdigit()
        assert response.headers["content-type"] == "application/json"
        assert "[column_lineage] api_admission_limit" in response.json()["detail"]
        assert "api_admission_wait_timeout" in response.json()["detail"]
        assert "start b" not in probe.log
        probe.let_go("a")
        assert (await holder).status_code == 200
        gate = next(iter(_middleware(probe)._gates.values()))
        assert gate.free == 1 and not gate.waiters  # the timed-out waiter took no slot with it
        probe.let_go("c")
        assert (await probe.client.get("/api/v2/hold/c")).status_code == 200
        await probe.client.aclose()

    _run(go)


def test_a_cancelled_waiter_leaves_the_queue_and_keeps_no_slot() -> None:
    async def go() -> None:
        probe = Probe(limit=1)
        holder = probe.get("/api/v2/hold/a")
        await probe.entered_event("a").wait()
        gone = probe.get("/api/v2/hold/b")
        await _waiters(probe, 1)
        gone.cancel()  # the client went away while waiting
        with pytest.raises(asyncio.CancelledError):
            await gone
        probe.let_go("a")
        await holder
        gate = next(iter(_middleware(probe)._gates.values()))
        assert gate.free == 1 and not gate.waiters and "start b" not in probe.log
        await probe.client.aclose()

    _run(go)


@pytest.mark.parametrize(("scope", "expected"), [
    ({"type": "http", "path": "/api/v2/dags"}, True),
    ({"type": "http", "path": "/ui/grid/x"}, True),
    ({"type": "http", "path": "/column-lineage"}, True),
    ({"type": "http", "path": "/airflow/api/v2/dags", "root_path": "/airflow"}, True),
    ({"type": "http", "path": "/execution/task-instances/x/heartbeat"}, False),
    ({"type": "http", "path": "/auth/token"}, False),
    ({"type": "http", "path": "/api/v2/monitor/health"}, False),
    ({"type": "http", "path": "/api/v2/version"}, False),
    ({"type": "http", "path": "/api/v2/dags/d/dagRuns/r/taskInstances/t/logs/1"}, False),
    ({"type": "http", "path": "/static/x.js"}, False),
    ({"type": "websocket", "path": "/api/v2/dags"}, False),
    ({"type": "lifespan"}, False),
])
def test_what_is_gated(scope: dict[str, str], expected: bool) -> None:
    assert gated(scope) is expected


def test_bad_arguments_are_refused() -> None:
    app = FastAPI()
    with pytest.raises(ValueError, match="limit must be a whole number >= 1"):
        AdmissionLimit(app, limit=0)
    with pytest.raises(ValueError, match="wait_timeout must be a number of seconds > 0"):
        AdmissionLimit(app, limit=1, wait_timeout=0)


def test_the_plugin_adds_the_middleware_only_when_the_limit_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW__COLUMN_LINEAGE__API_ADMISSION_LIMIT", raising=False)
    assert column_lineage._root_middlewares() == []  # the default: off
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__API_ADMISSION_LIMIT", "0")
    assert column_lineage._root_middlewares() == []
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__API_ADMISSION_LIMIT", "8")
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__API_ADMISSION_WAIT_TIMEOUT", "12.5")
    [entry] = column_lineage._root_middlewares()
    assert entry["middleware"] is AdmissionLimit
    assert entry["kwargs"] == {"limit": 8, "wait_timeout": 12.5}
    app = FastAPI()  # as Airflow's init_plugins applies it
    app.add_middleware(entry["middleware"], *entry["args"], **entry["kwargs"])
    stack = app.build_middleware_stack()
    while not isinstance(stack, AdmissionLimit):
        stack = stack.app
    assert stack.limit == 8 and stack.wait_timeout == 12.5


def test_settings_defaults_and_bad_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW__COLUMN_LINEAGE__API_ADMISSION_LIMIT", raising=False)
    monkeypatch.delenv("AIRFLOW__COLUMN_LINEAGE__API_ADMISSION_WAIT_TIMEOUT", raising=False)
    assert conf.api_admission_limit() == 0
    assert conf.api_admission_wait_timeout() == 30.0
    for bad in ("-1", "eight", "2.5"):
        monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__API_ADMISSION_LIMIT", bad)
        with pytest.raises(ValueError, match=r"\[column_lineage\] api_admission_limit = .* whole number >= 0"):
            conf.api_admission_limit()
    for bad in ("0", "-3", "soon", "nan", "inf"):
        monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__API_ADMISSION_WAIT_TIMEOUT", bad)
        with pytest.raises(ValueError, match=r"api_admission_wait_timeout = .* number of seconds > 0"):
            conf.api_admission_wait_timeout()


def test_a_bad_setting_leaves_the_plugin_loaded_without_the_limit(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__API_ADMISSION_LIMIT", "eight")
    with caplog.at_level("ERROR"):
        assert column_lineage._root_middlewares() == []
    assert "api_admission_limit" in caplog.text and "without the admission limit" in caplog.text
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__API_ADMISSION_LIMIT", "8")
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__API_ADMISSION_WAIT_TIMEOUT", "soon")
    assert column_lineage._root_middlewares() == []
