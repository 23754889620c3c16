"""``SieveMaintenanceTrigger``: the deferrable half of
:class:`~airflow_provider_lineage.sensors.sieve.SieveMaintenanceSensor`.

Runs in the triggerer. Every ``poke_interval`` seconds it checks each index the way the sensor's
``poke`` does -- a listing of the table's files and the index manifest, no Spark -- in a child
process (:mod:`._sieve_check`, one per triggerer, shared by its trigger runs), so the triggerer's event loop never
blocks: neither on the file system nor on importing the index package (numpy and pyarrow hold the
GIL while they initialise, which would stall the loop even from a thread). This module imports
nothing heavy itself (the triggerer imports it on its event loop). It fires once:

* ``{"status": "success", "indexes": [<need>, ...]}`` when at least one index needs work
  (each need is a :class:`~airflow_provider_lineage.sieve.decisions.Need` as a dict);
* ``{"status": "error", "message": ...}`` when a check raises (the sensor fails with the message);
* ``{"status": "timeout", "message": ...}`` at ``deadline`` (epoch seconds), if given.
"""
from __future__ import annotations

import asyncio
import json
import sys
import time
import weakref
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_lineage.triggers._sieve_check import pending_work

__all__ = ["CLASSPATH", "SieveMaintenanceTrigger", "pending_work"]

CLASSPATH = "airflow_provider_lineage.triggers.sieve.SieveMaintenanceTrigger"


class _Checker:
    """A child interpreter (:mod:`._sieve_check`) that runs the checks, one JSON line each way.

    Not a thread: importing the index package (numpy, pyarrow) runs C initialisers that hold the GIL
    for 0.3-0.6 s, which stalls the triggerer's event loop even from a worker thread. One child serves
    every trigger run of an event loop (:func:`_checker`; about 125 MB once, not per deferred sensor):
    it keeps its imports, answers one request at a time, and exits when its stdin closes (the
    triggerer stops or dies). An exchange cut short (a trigger cancelled mid-check, a broken pipe)
    kills the child, so a half-read answer never reaches another trigger.
    """

    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.lock = asyncio.Lock()

    async def check(self, request: dict[str, Any]) -> dict[str, Any]:
        async with self.lock:
            try:
                return await self._ask(request)
            except BaseException:
                await self._kill()
                raise

    async def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.proc is None or self.proc.returncode is not None:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "airflow_provider_lineage.triggers._sieve_check",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 24)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        await self.proc.stdin.drain()
        line = await self.proc.stdout.readline()
        if not line:
            code = await self.proc.wait()
            raise RuntimeError(f"the Sieve check process exited with {code} (its error is in the triggerer log)")
        return dict(json.loads(line))

    async def _kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.returncode is None:
            proc.kill()
            await asyncio.shield(proc.wait())


_CHECKERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Checker] = weakref.WeakKeyDictionary()


def _checker() -> _Checker:
    """The running event loop's shared checker (the triggerer has one loop; tests make several)."""
    loop = asyncio.get_running_loop()
    checker = _CHECKERS.get(loop)
    if checker is None:
        checker = _CHECKERS[loop] = _Checker()
    return checker


class SieveMaintenanceTrigger(BaseTrigger):
    """Fires once when one of ``indexes`` needs work (or on an error / the deadline).

    :param indexes: ``[{"table": ..., "column": ..., "index_path": ...}]`` (JSON values only).
    :param thresholds: :class:`~airflow_provider_lineage.sieve.decisions.Thresholds` as a dict.
    :param update_strategy: the strategy the indexes should have (another one needs a rebuild).
    :param poke_interval: seconds between checks.
    :param deadline: epoch seconds after which a ``timeout`` event fires (None: never).
    :param storage_options: object-store options (JSON values only; None: the store's environment).
    """

    def __init__(
        self,
        indexes: list[dict[str, Any]],
        thresholds: dict[str, Any] | None = None,
        update_strategy: str | None = None,
        poke_interval: float = 60.0,
        deadline: float | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.storage_options = dict(storage_options) if storage_options else None
        self.indexes = [dict(i) for i in indexes]
        self.thresholds = dict(thresholds or {})
        self.update_strategy = update_strategy
        self.poke_interval = float(poke_interval)
        self.deadline = deadline

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            CLASSPATH,
            {
                "indexes": self.indexes,
                "thresholds": self.thresholds,
                "update_strategy": self.update_strategy,
                "poke_interval": self.poke_interval,
                "deadline": self.deadline,
                "storage_options": self.storage_options,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        checker = _checker()
        # the sensor's first poke, just before it deferred, verified every checksum: the repeated checks
        # here read a hashed structure's header and last page only (not the whole index every minute)
        request = {"indexes": self.indexes, "thresholds": self.thresholds, "update_strategy": self.update_strategy,
                   "storage_options": self.storage_options, "full_verify": False}
        while True:
            try:
                answer = await checker.check(request)
            except Exception as exc:  # noqa: BLE001 - reported as an event; the sensor fails with it
                answer = {"error": f"{type(exc).__name__}: {exc}"}
            if "error" in answer:
                yield TriggerEvent({"status": "error", "message": answer["error"]})
                return
            needs = answer["needs"]
            todo = [n for n in needs if n["action"] != "none"]
            if todo:
                for n in todo:
                    self.log.info("Sieve: %s.%s needs %s (%s)", n["table"], n["column"], n["action"], n["reason"])
                yield TriggerEvent({"status": "success", "indexes": todo})
                return
            if self.deadline is not None and time.time() >= self.deadline:
                yield TriggerEvent({"status": "timeout",
                                    "message": f"no index needed work before the deadline ({len(needs)} checked)"})
                return
            await asyncio.sleep(self.poke_interval)
