"""``SieveMaintenanceTrigger``: the deferrable half of :class:`~airflow_provider_lineage.sensors.sieve.SieveMaintenanceSensor`.

Runs in the triggerer. Every ``poke_interval`` seconds it checks each index the way the sensor's
``poke`` does -- a listing of the table's files and the index manifest, no Spark -- in a worker thread
(``asyncio.to_thread``), so the triggerer's event loop never blocks on the file system; the index
package itself is imported in that thread too (this module imports nothing heavy: the triggerer
imports it on its event loop). It fires once:

* ``{"status": "success", "indexes": [<need>, ...]}`` when at least one index needs work
  (each need is a :class:`~airflow_provider_lineage.sieve.maintain.Need` as a dict);
* ``{"status": "error", "message": ...}`` when a check raises (the sensor fails with the message);
* ``{"status": "timeout", "message": ...}`` at ``deadline`` (epoch seconds), if given.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

if TYPE_CHECKING:
    from airflow_provider_lineage.sieve.maintain import Need

CLASSPATH = "airflow_provider_lineage.triggers.sieve.SieveMaintenanceTrigger"


def pending_work(indexes: Sequence[Mapping[str, Any]], thresholds: Mapping[str, Any] | None = None,
                 update_strategy: str | None = None, storage_options: Mapping[str, Any] | None = None) -> list[Need]:
    """Every index's need (blocking: file listings and manifest reads). Raises on bad input.

    ``storage_options``: object-store options for tables/indexes on ``s3://`` etc. (see the core's
    ``sieve.fs``); None uses the store's usual environment.
    """
    # Imported here, not at module level: the triggerer imports this module on its event loop, and
    # the index package (numpy, pyarrow) costs ~0.3 s cold; run() calls this in a worker thread.
    from airflow_provider_lineage.sieve.maintain import Thresholds, check

    limits = Thresholds(**dict(thresholds or {}))
    return [check(str(i["table"]), str(i["column"]), index_path=i.get("index_path") or None, thresholds=limits,
                  update_strategy=update_strategy, storage_options=storage_options) for i in indexes]


class SieveMaintenanceTrigger(BaseTrigger):
    """Fires once when one of ``indexes`` needs work (or on an error / the deadline).

    :param indexes: ``[{"table": ..., "column": ..., "index_path": ...}]`` (JSON values only).
    :param thresholds: :class:`~airflow_provider_lineage.sieve.maintain.Thresholds` as a dict.
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
        while True:
            try:
                needs = await asyncio.to_thread(pending_work, self.indexes, self.thresholds, self.update_strategy,
                                            self.storage_options)
            except Exception as exc:  # noqa: BLE001 - reported as an event; the sensor fails with it
                yield TriggerEvent({"status": "error", "message": f"{type(exc).__name__}: {exc}"})
                return
            todo = [n.to_dict() for n in needs if n.action != "none"]
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
