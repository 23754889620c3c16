"""SieveMaintenanceTrigger: serialize() round trip, run() fires only once an index needs work, error
and timeout events, and the blocking checks run off the event loop."""
from __future__ import annotations

import asyncio
import json
import os
import time

import pytest

from airflow_provider_lineage.sieve.maintain import maintain
from airflow_provider_lineage.triggers.sieve import CLASSPATH, SieveMaintenanceTrigger
from tests.sieve.helpers import write_file


@pytest.fixture
def table(tmp_path) -> str:
    root = str(tmp_path / "t")
    for i in range(4):  # one added/removed file is a small drift (sync, not rebuild)
        write_file(f"{root}/part-{i}.parquet", list(range(i * 100, i * 100 + 100)))
    maintain(None, root, "k")
    return root


class TestSieveMaintenanceTrigger:
    def test_serialize_round_trip_is_json(self, table: str) -> None:
        trigger = SieveMaintenanceTrigger(indexes=[{"table": table, "column": "k", "index_path": None}],
                                          thresholds={"max_deltas": 2}, update_strategy="mor", poke_interval=1.5,
                                          deadline=123.0)
        classpath, kwargs = trigger.serialize()
        assert classpath == CLASSPATH
        assert json.loads(json.dumps(kwargs)) == kwargs
        import importlib

        module, _, name = classpath.rpartition(".")
        again = getattr(importlib.import_module(module), name)(**kwargs)
        assert again.serialize() == (classpath, kwargs)

    def test_fires_only_after_a_file_is_added(self, table: str) -> None:
        trigger = SieveMaintenanceTrigger(indexes=[{"table": table, "column": "k"}], poke_interval=0.05)

        async def scenario() -> dict:
            task = asyncio.create_task(trigger.run().__anext__())
            await asyncio.sleep(0.5)
            assert not task.done()  # the index is current: no event
            await asyncio.to_thread(write_file, f"{table}/part-9.parquet", [9000])
            event = await asyncio.wait_for(task, 60)
            return event.payload

        payload = asyncio.run(scenario())
        assert payload["status"] == "success"
        (need,) = payload["indexes"]
        assert (need["table"], need["column"], need["action"], need["files_added"]) == (table, "k", "sync", 1)

    def test_checks_do_not_block_the_event_loop(self, table: str) -> None:
        """The loop keeps running while a check is under way (it runs in a child process)."""
        os.remove(f"{table}/part-1.parquet")
        trigger = SieveMaintenanceTrigger(indexes=[{"table": table, "column": "k"}], poke_interval=0.05)

        async def scenario() -> tuple[int, dict]:
            task = asyncio.create_task(trigger.run().__anext__())
            ticks = 0
            while not task.done():
                await asyncio.sleep(0.01)
                ticks += 1
            return ticks, task.result().payload

        ticks, payload = asyncio.run(scenario())
        assert payload["status"] == "success" and ticks > 1

    def test_error_becomes_an_event(self) -> None:
        trigger = SieveMaintenanceTrigger(indexes=[{"table": "db.sales", "column": "day"}], poke_interval=0.05)
        payload = asyncio.run(trigger.run().__anext__()).payload
        assert payload["status"] == "error" and "index_path" in payload["message"]
        bad = SieveMaintenanceTrigger(indexes=[{"table": "/t", "column": "k"}], thresholds={"max_deltas": 0})
        payload = asyncio.run(bad.run().__anext__()).payload
        assert payload["status"] == "error" and "max_deltas=0" in payload["message"]

    def test_deadline_gives_a_timeout_event(self, table: str) -> None:
        trigger = SieveMaintenanceTrigger(indexes=[{"table": table, "column": "k"}], poke_interval=0.05,
                                          deadline=time.time() - 1)
        payload = asyncio.run(trigger.run().__anext__()).payload
        assert payload["status"] == "timeout" and "no index needed work" in payload["message"]


    def test_trigger_runs_share_one_child_and_a_cancelled_check_poisons_none(self, table: str, tmp_path) -> None:
        """Concurrent trigger runs get their own answers from one child process; a run cancelled in
        the middle of its check kills that child, so its half-read answer never reaches another run."""
        from airflow_provider_lineage.triggers import sieve as trigger_module

        other = str(tmp_path / "other")
        write_file(f"{other}/part-0.parquet", [1, 2, 3])  # never indexed: needs a build
        os.remove(f"{table}/part-1.parquet")  # needs a sync

        def run(root: str) -> SieveMaintenanceTrigger:
            return SieveMaintenanceTrigger(indexes=[{"table": root, "column": "k"}], poke_interval=0.05)

        async def scenario() -> tuple[list[dict], int]:
            cut = asyncio.create_task(run(other).run().__anext__())
            await asyncio.sleep(0.05)  # the child is starting or checking for it
            cut.cancel()
            events = await asyncio.gather(run(table).run().__anext__(), run(other).run().__anext__())
            pids = {trigger_module._checker().proc.pid}
            await run(table).run().__anext__()
            pids.add(trigger_module._checker().proc.pid)
            return [e.payload for e in events], len(pids)

        payloads, children = asyncio.run(scenario())
        assert [(p["status"], p["indexes"][0]["table"], p["indexes"][0]["action"]) for p in payloads] == [
            ("success", table, "sync"), ("success", other, "build")]
        assert children == 1

def test_the_triggerer_process_imports_nothing_heavy(table: str) -> None:
    """The triggerer imports the trigger's module on its event loop, and the index package's C
    initialisers (numpy, pyarrow) would stall that loop even from a thread: neither the module nor a
    check that fires loads them into the triggerer's process (the check runs in a child)."""
    import subprocess
    import sys

    os.remove(f"{table}/part-1.parquet")
    code = f"""
import asyncio, sys
from airflow_provider_lineage.triggers.sieve import SieveMaintenanceTrigger
heavy = ("numpy", "pyarrow", "airflow_provider_lineage.sieve")
before = [m for m in heavy if m in sys.modules]
event = asyncio.run(SieveMaintenanceTrigger(indexes=[{{"table": {table!r}, "column": "k"}}]).run().__anext__())
print(before, [m for m in heavy if m in sys.modules], event.payload["status"])
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip().splitlines()[-1] == "[] [] success", out
