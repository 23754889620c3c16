"""The scheduler's estate hook (plugins/dagrun_listener.py): a failed sync is retried before the tag map is
published, and a run that finishes while the hook's thread is ending is not left unsynced."""
from __future__ import annotations

import threading
from typing import Any

import pytest

from airflow_provider_lineage.plugins import dagrun_listener
from airflow_provider_lineage.plugins.estate import index


def test_a_failed_sync_is_retried_then_the_map_is_published_from_the_synced_index(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []

    def sync_all(factory: Any, *, wait: bool = False, **_: Any) -> dict[str, int]:
        calls.append(wait)
        if len(calls) < 3:
            raise RuntimeError("database is locked")
        return {"indexed": 1}

    slept: list[float] = []
    monkeypatch.setattr(index, "sync_all", sync_all)
    assert dagrun_listener._sync_with_retries(sleep=slept.append) is True
    assert calls == [True, True, True]  # waits for another process's sync rather than skip it
    assert slept == list(dagrun_listener.RETRY_DELAYS[:2])


def test_a_sync_that_keeps_failing_gives_up_after_the_last_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    def sync_all(factory: Any, **_: Any) -> dict[str, int]:
        raise RuntimeError("database is locked")

    slept: list[float] = []
    monkeypatch.setattr(index, "sync_all", sync_all)
    assert dagrun_listener._sync_with_retries(sleep=slept.append) is False
    assert slept == list(dagrun_listener.RETRY_DELAYS)


def test_a_kick_while_the_thread_ends_runs_the_work_again(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[int] = []
    done = threading.Event()

    def work() -> None:
        runs.append(1)
        if len(runs) == 1:  # a run finished after _work's last look at _again: its kick found the lock held
            dagrun_listener._again.set()
        else:
            dagrun_listener._again.clear()
            done.set()

    monkeypatch.setattr(dagrun_listener, "in_scheduler", lambda: True)
    monkeypatch.setattr(dagrun_listener, "_work", work)
    dagrun_listener._kick()
    assert done.wait(30)
    for _ in range(300):  # the thread releases the lock on its way out
        if dagrun_listener._running.acquire(blocking=False):
            dagrun_listener._running.release()
            break
        threading.Event().wait(0.1)
    assert len(runs) == 2
