"""Reading the lineage records and Sieve index results from Airflow's metadata database.

The records are XComs (key :data:`~airflow_provider_lineage.lineage.run_record.XCOM_KEY`) that
:class:`~airflow_provider_lineage.operators.spark_lineage.SparkLineageSubmitOperator` pushed; the
api-server reads them from the metadata DB, whatever the executor. Values are decoded as plain JSON
(``json.loads``), never through Airflow's XCom deserialiser (which can build arbitrary classes) and
never unpickled; a value that is not a record is reported as unreadable.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_lineage.lineage import run_record
from airflow_provider_lineage.plugins.graph import TaskRecord

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

LINEAGE_OPERATORS = ("SparkLineageSubmitOperator",)
SIEVE_OPERATORS = ("SieveIndexOperator",)
#: How many of the newest records the search reads at most.
SEARCH_RECORDS = 500


def decode(value: Any) -> Any:
    """An XCom column value as plain JSON (strings are parsed with ``json.loads``; nothing else runs).

    A reference to ``XComObjectStorageBackend``'s object storage is followed and the object parsed as
    JSON (:func:`.estate.values.read`); an unreadable one gives ``None``.
    """
    from airflow_provider_lineage.plugins.estate import values

    try:
        return values.read(value)
    except values.UnreadableValue:
        return None


def run_tasks(session: Session, dag_id: str, run_id: str, task_id: str | None = None,
              map_index: int | None = None) -> list[TaskRecord]:
    """The run's lineage tasks: every task instance with a record, plus lineage operators without one."""
    from airflow.models.taskinstance import TaskInstance as TI
    from airflow.models.xcom import XComModel
    from sqlalchemy import select

    tis = select(TI.task_id, TI.map_index, TI.state, TI.operator).where(TI.dag_id == dag_id, TI.run_id == run_id)
    xcoms = select(XComModel.task_id, XComModel.map_index, XComModel.value).where(
        XComModel.dag_id == dag_id, XComModel.run_id == run_id, XComModel.key == run_record.XCOM_KEY)
    if task_id is not None:
        tis, xcoms = tis.where(TI.task_id == task_id), xcoms.where(XComModel.task_id == task_id)
        if map_index is not None:
            tis, xcoms = tis.where(TI.map_index == map_index), xcoms.where(XComModel.map_index == map_index)
    records: dict[tuple[str, int], Any] = {(t, m): v for t, m, v in session.execute(xcoms)}
    out: list[TaskRecord] = []
    for t, m, state, operator in session.execute(tis.order_by(TI.task_id, TI.map_index)):
        raw = records.pop((t, m), None)
        if raw is None and operator not in LINEAGE_OPERATORS:
            continue
        out.append(_task(t, m, str(state) if state is not None else None, operator, raw))
    for (t, m), raw in records.items():  # a record whose task instance row is gone
        out.append(_task(t, m, None, None, raw))
    return out


def _task(task_id: str, map_index: int, state: str | None, operator: str | None, raw: Any) -> TaskRecord:
    if state is not None and "." in state:
        state = state.rsplit(".", 1)[-1].lower()
    if raw is None:
        return TaskRecord(task_id, map_index, state, operator)
    value = decode(raw)
    if not run_record.is_record(value):
        return TaskRecord(task_id, map_index, state, operator, None,
                          note=f"the XCom '{run_record.XCOM_KEY}' of this task is not a lineage record this view "
                               "can read (a custom XCom backend keeps values elsewhere?)")
    return TaskRecord(task_id, map_index, state, operator, value)


def recent_records(session: Session, dag_ids: set[str] | None, query: str,
                   limit: int = SEARCH_RECORDS) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``(where, record)`` of the newest records of readable DAGs whose JSON mentions ``query``."""
    from airflow.models.xcom import XComModel
    from sqlalchemy import String, cast, select

    stmt = select(XComModel.dag_id, XComModel.run_id, XComModel.task_id, XComModel.map_index,
                  XComModel.timestamp, XComModel.value).where(XComModel.key == run_record.XCOM_KEY)
    if dag_ids is not None:
        if not dag_ids:
            return []
        stmt = stmt.where(XComModel.dag_id.in_(sorted(dag_ids)))
    if query:
        escaped = query.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        stmt = stmt.where(cast(XComModel.value, String).ilike(f"%{escaped}%", escape="\\"))
    stmt = stmt.order_by(XComModel.timestamp.desc()).limit(limit)
    out = []
    for dag_id, run_id, task_id, map_index, ts, raw in session.execute(stmt):
        value = decode(raw)
        if run_record.is_record(value):
            where = {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": map_index,
                     "timestamp": ts.isoformat() if ts else None}
            out.append((where, value))
    return out


def sieve_results(session: Session, dag_id: str, run_id: str) -> list[dict[str, Any]]:
    """The results (``MaintainResult`` dicts) the run's Sieve index tasks returned, newest index state per column,
    each with ``task_id`` and ``recorded_at`` (when the task pushed it: the badge's "checked" time)."""
    from airflow.models.taskinstance import TaskInstance as TI
    from airflow.models.xcom import XComModel
    from sqlalchemy import select

    stmt = (
        select(XComModel.task_id, XComModel.value, XComModel.timestamp)
        .join(TI, (TI.dag_id == XComModel.dag_id) & (TI.run_id == XComModel.run_id)
              & (TI.task_id == XComModel.task_id) & (TI.map_index == XComModel.map_index))
        .where(XComModel.dag_id == dag_id, XComModel.run_id == run_id, XComModel.key == "return_value",
               TI.operator.in_(SIEVE_OPERATORS))
    )
    out = []
    for task_id, raw, ts in session.execute(stmt):
        value = decode(raw)
        for entry in value if isinstance(value, list) else []:
            if isinstance(entry, dict) and entry.get("table_root") and entry.get("column"):
                out.append({**entry, "task_id": task_id, "recorded_at": ts.isoformat() if ts else None})
    return out
