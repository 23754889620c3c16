"""``SieveMaintenanceSensor``: wait until a Sieve index needs work, and say what work.

An index needs work when files of its table were added, removed or rewritten since the index
version (by the pipeline or anyone else: backfills, other jobs, manual fixes), when merge-on-read
deltas pile up, when its error budget is spent, or when it is missing, corrupt or unreadable. The
checks read the table's file listing and the index manifest only (no Spark), so poking is cheap:
the first poke also verifies every index file's checksum, later ones (and the trigger's) check a
hashed structure's header and last page, not every page.

The sensor returns (XCom ``return_value``) one entry per index that needs work --
``{"table", "column", "index_path", "action", "reason", ...}`` -- which a downstream
``SieveIndexOperator(indexes=sensor.output, mode="auto")`` takes as is.

Modes: ``poke``, ``reschedule`` and ``deferrable`` (the check moves to the triggerer:
:class:`~airflow_provider_lineage.triggers.sieve.SieveMaintenanceTrigger`).
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue

from airflow_provider_lineage import _compat
from airflow_provider_lineage.sieve.decisions import Thresholds, update_mode
from airflow_provider_lineage.sieve.errors import SieveError
from airflow_provider_lineage.sieve.fs import is_catalog_name
from airflow_provider_lineage.triggers.sieve import SieveMaintenanceTrigger, pending_work

if TYPE_CHECKING:
    from airflow.sdk import Context


class SieveMaintenanceSensor(BaseSensorOperator):
    """Wait until one of the given Sieve indexes needs work; return what each one needs.

    :param indexes: ``[{"table": ..., "column": ..., "index_path": ...}]`` (``index_path`` optional
        for path tables; required for catalog table names, since the check runs without Spark).
        (templated)
    :param table: instead of ``indexes``: one table (path / ``file:`` URI). (templated)
    :param columns: with ``table``: its indexed column(s). (templated)
    :param index_path: with ``table``: the index folder; ``{column}`` is replaced per column. (templated)
    :param max_deltas: merge-on-read: work is needed at this many delta files (default: the core's, 8).
    :param max_budget_fraction: work is needed when this share of an index's error budget is used
        (default: the core's, 0.5).
    :param update_strategy: the strategy the indexes should have; another one needs a rebuild.
    :param storage_options: for tables/indexes on an object store (``s3://``, ``gs://``, ...): keyword
        arguments of the store's pyarrow file system, e.g. ``{"access_key": "{{ conn.s3.login }}",
        "secret_key": "{{ conn.s3.password }}", "endpoint_override": ..., "region": ...}`` (templated,
        so an Airflow connection can supply them); default: the store's usual environment (AWS_* ...).
    :param deferrable: wait in the triggerer instead of a worker slot (default: Airflow's
        ``[operators] default_deferrable``, read when the sensor is created).
    :param poke_interval: time between checks, seconds or a ``timedelta`` / pendulum duration.
    :param timeout: how long to wait, seconds or a ``timedelta`` / pendulum duration; with
        ``soft_fail=True`` a timeout skips the task (nothing needed work) instead of failing it.
    """

    template_fields: Sequence[str] = ("indexes", "table", "columns", "index_path", "storage_options")
    ui_color = "#d9ead3"

    def __init__(
        self,
        *,
        indexes: Sequence[Mapping[str, Any]] | None = None,
        table: str | None = None,
        columns: str | Sequence[str] | None = None,
        index_path: str | None = None,
        max_deltas: int | None = None,
        max_budget_fraction: float | None = None,
        update_strategy: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        deferrable: bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if (indexes is None) == (table is None):
            raise ValueError("pass either indexes=[{'table': ..., 'column': ...}] or table= with columns=")
        if table is not None and not columns:
            raise ValueError(f"table={table!r} needs columns= (the indexed column or columns)")
        self.thresholds = {k: v for k, v in (("max_deltas", max_deltas), ("max_budget_fraction", max_budget_fraction))
                           if v is not None}
        try:
            Thresholds(**self.thresholds)
            update_mode(update_strategy)
        except SieveError as exc:
            raise ValueError(str(exc)) from None
        self.indexes = indexes
        self.table = table
        self.columns = columns
        self.index_path = index_path
        self.update_strategy = update_strategy
        self.storage_options = dict(storage_options) if storage_options else None
        self.deferrable = _compat.default_deferrable() if deferrable is None else bool(deferrable)
        self._verified = False  # set by the first poke, which verifies every index file's checksum

    def index_specs(self) -> list[dict[str, Any]]:
        """The indexes to check, after templating: ``[{"table", "column", "index_path"}]``."""
        if self.table is not None:
            cols = [self.columns] if isinstance(self.columns, str) else list(self.columns or [])
            specs = [{"table": self.table, "column": c,
                      "index_path": self.index_path.replace("{column}", c) if self.index_path else None} for c in cols]
        else:
            specs = []
            for i in self.indexes or []:
                if not isinstance(i, Mapping) or not i.get("table") or not i.get("column"):
                    raise ValueError(f"indexes entry {i!r} needs 'table' and 'column'")
                specs.append({"table": str(i["table"]), "column": str(i["column"]),
                              "index_path": i.get("index_path") or None})
        for s in specs:
            if is_catalog_name(s["table"]) and not s["index_path"]:
                raise ValueError(f"{s['table']!r} is a catalog table name: give its index_path (the sensor "
                                 "checks without Spark, so it cannot look the table's location up)")
        return specs

    def poke(self, context: Context) -> PokeReturnValue:
        from airflow_provider_lineage._compat import AirflowException

        try:
            # the first poke of this instance verifies every checksum; later ones (every poke_interval) check a
            # hashed structure's header and last page only, so a watch does not read the whole index each time
            needs = pending_work(self.index_specs(), self.thresholds, self.update_strategy, self.storage_options,
                                 full_verify=not self._verified)
            self._verified = True
        except (SieveError, ValueError) as exc:
            raise AirflowException(f"cannot check the Sieve indexes: {exc}") from exc
        for n in needs:
            self.log.info("Sieve: %s.%s: %s (%s)", n.table, n.column, n.action, n.reason)
        todo = [n.to_dict() for n in needs if n.action != "none"]
        return PokeReturnValue(is_done=bool(todo), xcom_value=todo or None)

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context=context)
        first = self.poke(context)
        if first.is_done:
            return first.xcom_value
        self.defer(
            trigger=SieveMaintenanceTrigger(
                indexes=self.index_specs(),
                thresholds=self.thresholds,
                update_strategy=self.update_strategy,
                storage_options=self.storage_options,
                poke_interval=self.poke_interval,
                deadline=time.time() + self.timeout,
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout),
        )
        return None

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        from airflow_provider_lineage._compat import (
            AirflowException,
            AirflowSensorTimeout,
            AirflowSkipException,
        )

        if not event:
            raise AirflowException(f"{self.task_id}: the Sieve maintenance trigger ended without an event")
        status = event.get("status")
        if status == "error":
            raise AirflowException(f"cannot check the Sieve indexes: {event.get('message')}")
        if status == "timeout":
            msg = f"{self.task_id}: {event.get('message')}"
            if self.soft_fail:
                raise AirflowSkipException(msg)
            raise AirflowSensorTimeout(msg)
        indexes = list(event.get("indexes") or [])
        for n in indexes:
            self.log.info(
                "Sieve: %s.%s needs %s (%s)", n.get("table"), n.get("column"), n.get("action"), n.get("reason")
            )
        return indexes
