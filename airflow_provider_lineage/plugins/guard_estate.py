"""Lineage as a guard over the estate index (:mod:`.estate`): column tags along every DAG's column edges.

The estate index holds, per task, the lineage of its last successful run, with datasets stitched by
their identity (:func:`.estate.index.canonical`). Over its DIRECT column edges the declared tags
(Variable ``lineage_column_tags`` / ``[column_lineage] tags_file``) propagate with the operator's rules
(:func:`..lineage.tags.propagate_graph`: masking stops ``stopped_by_masking``, INDIRECT edges carry
nothing), across tasks and DAGs, whatever order the tasks ran in and whichever task wrote a table last:

* :func:`unmasked`: "where does ``pii`` reach unmasked" for the estate page and ``/api/tags/unmasked``
  (``None`` when the index has no lineage or cannot be read: the caller lists from the records instead);
* :func:`publish`: the tag map (inherited tags of every tagged column) in the Airflow Variable
  :data:`PUBLISHED_VARIABLE`, rewritten by the scheduler after the index syncs (:mod:`.estate.listener`).
  Workers have no metadata-DB access; the operator reads this Variable for the tags of its inputs
  (operators/guard.py), besides the newest asset event of each input.

Metadata-DB side only (scheduler, api-server); never raises into its caller's work beyond what it says.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Collection
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from airflow_provider_lineage.lineage import tags as tagging
from airflow_provider_lineage.plugins.graph import dataset_id, label

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

log = logging.getLogger(__name__)

#: Airflow Variable holding the estate's tag map (derived: rewritten after each sync, never edit it).
PUBLISHED_VARIABLE = tagging.ESTATE_VARIABLE
#: Upper bound on the columns the published map holds (beyond: the map says ``"cut"``).
MAX_PUBLISHED_COLUMNS = 5000


def _read_variable() -> Any:
    from airflow.models.variable import Variable

    return Variable.get(tagging.VARIABLE, default_var=None)


def declaration() -> tuple[tagging.Declared, list[str]]:
    """The declared tags as the operator reads them (Variable + file), read from the metadata DB."""
    from airflow_provider_lineage.operators import guard

    return guard.load_declaration(_read_variable)


def _canonical(declared: tagging.Declared) -> tagging.Declared:
    from airflow_provider_lineage.plugins.estate import index

    out: tagging.Declared = {}
    for (ns, name), cols in declared.items():
        out = tagging.merge(out, {index.canonical(ns, name): cols})
    return out


def tag_map(session: Session, declared: tagging.Declared, stopped: Collection[str],
            readable: Collection[str] | None = None) -> dict[str, Any] | None:
    """Tags propagated over the estate's edges (of the DAGs ``readable``; ``None``: all), as of now.

    ``None`` when the index holds no column edge (nothing indexed yet, or its tables are missing).
    """
    from sqlalchemy import select

    from airflow_provider_lineage.plugins.estate import index, query, schema

    index.ensure_schema(session)
    if not any(cols for cols in declared.values()):  # nothing declared: nothing to carry, no edge read
        has_edges = session.scalar(select(schema.edge.c.set_ref).limit(1)) is not None
        return tagging.propagate_graph([], {}, stopped) if has_edges else None
    edges = query.edges_as_of(session, dag_ids=readable)
    if not edges:
        return None
    graph = [((e.source[0], e.source[1], e.source_col), (e.target[0], e.target[1], e.target_col), e.type, e.masking,
              e.run) for e in edges]
    return tagging.propagate_graph(graph, _canonical(declared), stopped)


def unmasked(session: Session, readable: Collection[str] | None, tag: str | None) -> dict[str, Any] | None:
    """``{"unmasked": [...], "edges": N, "problems": [...]}`` from the estate index; ``None``: no index data.

    Each entry as :func:`.guard_view.unmasked_entries` gives it (``tag``, ``dataset``, ``label``, ``column``,
    ``path``) with the task run whose edge brought the tag to the column (``dag_id``, ``task_id``,
    ``map_index``, ``run_id``). Only edges of DAGs the user may read are followed.
    """
    from airflow_provider_lineage.operators import guard

    try:
        declared, problems = declaration()
        stopped = guard.setting_list("stopped_by_masking", list(tagging.DEFAULT_STOPPED_BY_MASKING)) or []
        result = tag_map(session, declared, stopped, readable)
    except Exception:
        log.warning("where tags reach unmasked: the estate index could not be read (listing from the records)",
                    exc_info=True)
        session.rollback()
        return None
    if result is None:
        return None
    out = []
    for (ns, name, column), entry, run in tagging.unmasked_of(result, tag):
        out.append({"dag_id": getattr(run, "dag_id", None), "task_id": getattr(run, "task_id", None),
                    "map_index": getattr(run, "map_index", None), "run_id": getattr(run, "run_id", None),
                    "tag": entry["tag"], "dataset": dataset_id(ns, name), "label": label(ns, name, None),
                    "column": column, "path": entry["path"]})
    out.sort(key=lambda u: (u["tag"], u["label"], u["column"], u["dag_id"] or "", u["task_id"] or ""))
    return {"unmasked": out, "columns_tagged": len(result["columns"]), "problems": problems}


def published_value(result: dict[str, Any]) -> dict[str, Any]:
    """The JSON of :data:`PUBLISHED_VARIABLE`: inherited tags by dataset and column (bounded)."""
    by_ds: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = {}
    n = 0
    cut = False
    for (ns, name, column), entries in sorted(result["columns"].items()):
        inherited = [e for e in entries if e["source"] == "inherited"]
        if not inherited:
            continue
        if n >= MAX_PUBLISHED_COLUMNS:
            cut = True
            break
        by_ds.setdefault((ns, name), {})[column] = inherited
        n += 1
    return {"generated": datetime.now(UTC).isoformat(), "cut": cut,
            "datasets": [{"namespace": ns, "name": name, "columns": cols} for (ns, name), cols in by_ds.items()]}


def publish(session: Session) -> int | None:
    """Write the estate's tag map into :data:`PUBLISHED_VARIABLE` (when it changed); returns the tagged
    columns published (``None``: no index data, the Variable is left as it is). Commits."""
    from airflow.models.variable import Variable

    from airflow_provider_lineage.operators import guard

    declared, problems = declaration()
    for p in problems:
        log.warning("column tags: %s", p)
    stopped = guard.setting_list("stopped_by_masking", list(tagging.DEFAULT_STOPPED_BY_MASKING)) or []
    result = tag_map(session, declared, stopped)
    if result is None:
        return None
    value = published_value(result)
    old = Variable.get(PUBLISHED_VARIABLE, default_var=None)
    if old is not None:
        try:
            if json.loads(old).get("datasets") == value["datasets"] and json.loads(old).get("cut") == value["cut"]:
                return sum(len(d["columns"]) for d in value["datasets"])
        except ValueError:
            pass
    Variable.set(PUBLISHED_VARIABLE, json.dumps(value, separators=(",", ":")),
                 description="Column tags along the estate's lineage (airflow-provider-lineage, docs/guard.md): "
                             "derived, rewritten after each DAG run; do not edit", session=session)
    session.commit()
    return sum(len(d["columns"]) for d in value["datasets"])


def answer(session: Session, readable: Collection[str] | None, tag: str | None, limit: int) -> dict[str, Any]:
    """The ``/api/tags/unmasked`` answer: from the estate index (``"source": "estate"``), or, when it has no
    lineage or cannot be read, from the newest lineage record of every task (``"source": "records"``)."""
    from airflow_provider_lineage.plugins import guard_view, store

    found = unmasked(session, readable, tag)
    if found is not None:
        return {"tag": tag, "source": "estate", "unmasked": found["unmasked"][:limit],
                "columns_tagged": found["columns_tagged"], "problems": found["problems"]}
    records = store.recent_records(session, None if readable is None else set(readable), '"tags"', limit=limit)
    return {"tag": tag, "source": "records", "unmasked": guard_view.unmasked_from_records(records, tag),
            "records_read": len(records)}
