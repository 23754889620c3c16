"""Lineage as a guard over the estate index (:mod:`..estate`): column tags along every DAG's column edges.

The estate index holds, per task, the lineage of its last successful run, with datasets stitched by
their identity (:func:`..estate.validate.canonical`). Over its DIRECT column edges the declared tags
(:func:`...operators._lineage.guard.read_declaration`: the setting ``[column_lineage] tags``, the file
``tags_file``, the Variable ``lineage_column_tags``) propagate with the operator's rules
(:func:`...lineage.tags.propagate_graph`: masking stops ``stopped_by_masking``, INDIRECT edges carry
nothing), across tasks and DAGs, whatever order the tasks ran in and whichever task wrote a table last:

* :func:`answer`: "where does ``pii`` reach unmasked" for the estate page and ``/api/tags/unmasked``.
  Computed once per state of the index (:func:`index_state`: a sync that changed it, a reindex) and
  declaration, over every DAG's edges, then filtered per user (:mod:`.access`): an entry whose column no
  readable DAG's lineage names is a count (``hidden``), a hop of a path likewise; the declaration's
  problems only for users who may read its source. No disk is looked at from a request.
* :func:`publish`: the tag map (inherited tags of every tagged column) in the Airflow Variable
  :data:`PUBLISHED_VARIABLE`, rewritten by the scheduler after the index syncs (:mod:`..dagrun_listener`).
  Workers have no metadata-DB access; the operator reads this Variable for the tags of its inputs
  (operators/_lineage/guard.py), besides the asset events of every writer of each input. Bounded by size; a dataset
  left out is listed by digest (``omitted``), so the operator fails its policy closed rather than read "no tags".

Metadata-DB side only (scheduler, api-server); reads the estate index, never writes it.
"""
from __future__ import annotations

import json
import logging
import threading
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from airflow_provider_lineage.lineage import tags as tagging
from airflow_provider_lineage.plugins.graph import dataset_id, label
from airflow_provider_lineage.plugins.guard import access

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

log = logging.getLogger(__name__)

#: Airflow Variable holding the estate's tag map (derived: rewritten after each sync, never edit it).
PUBLISHED_VARIABLE = tagging.ESTATE_VARIABLE
#: Upper bound on the published map's JSON (bytes); datasets beyond it are listed by digest in ``omitted``.
MAX_PUBLISHED_BYTES = 8 * 1024 * 1024
#: Declarations whose estate tags are kept in memory at once (per index state).
CACHED_DECLARATIONS = 4
#: Per-user answers kept (per index state): users sharing the same readable DAGs share one.
CACHED_ANSWERS = 32

Column = tuple[str, str, str]


def _read_variable(key: str) -> Any:
    from airflow.models.variable import Variable

    return Variable.get(key, default_var=None)


def read_declaration() -> Any:
    """The declaration as the operator reads it (:func:`...operators._lineage.guard.read_declaration`), its Variable
    read from the metadata DB."""
    from airflow_provider_lineage.operators._lineage import guard

    return guard.read_declaration(_read_variable)


def declaration() -> tuple[tagging.Declared, list[str]]:
    """``(declared tags, problems)`` as the operator reads them, from the metadata DB."""
    found = read_declaration()
    return found.declared, found.messages


def _canonical(declared: tagging.Declared) -> tagging.Declared:
    """Declarations under the index's identities, however a user spelled them (:func:`..lineage.canonical.match_key`:
    ``s3a://Bucket/`` + ``/data/customers/`` is the index's ``s3://bucket`` + ``data/customers``)."""
    from airflow_provider_lineage.lineage import canonical

    out: tagging.Declared = {}
    for (ns, name), cols in declared.items():
        out = tagging.merge(out, {canonical.match_key(ns, name): cols})
    return out


def identity(namespace: str, name: str) -> tuple[str, str]:
    """The dataset identity the estate index keys on (the name as it is when it cannot be computed)."""
    from airflow_provider_lineage.plugins.estate import validate

    try:
        return validate.canonical(namespace, name)
    except Exception:  # noqa: BLE001 - the name as it is (as the index does)
        return namespace, name


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
    return tagging.propagate_graph(_graph(edges), _canonical(declared), stopped)


def _graph(edges: list[Any]) -> list[tuple[Column, Column, str, bool, Any]]:
    return [((e.source[0], e.source[1], e.source_col), (e.target[0], e.target[1], e.target_col), e.type, e.masking,
             e.run) for e in edges]


# -- the cache: one per state of the index ------------------------------------------------------------------

def index_state(session: Session) -> tuple[Any, ...]:
    """What the estate's current edges depend on, read cheaply: the index's bookkeeping rows (the sync
    watermark and whatever else it keeps) and the count, newest id, newest XCom time, newest end and
    successes of its task runs. A sync that indexed, refreshed or pruned anything, or a reindex, changes it."""
    from sqlalchemy import case, func, select

    from airflow_provider_lineage.plugins.estate import schema

    t = schema.task_run.c
    meta = tuple(sorted((str(k), str(v)) for k, v in session.execute(select(schema.meta.c.key, schema.meta.c.value))))
    runs = session.execute(select(func.count(), func.max(t.id), func.max(t.xcom_ts), func.max(t.end_date),
                                  func.sum(case((t.state == "success", 1), else_=0)))).one()
    bind = session.get_bind()
    return (str(getattr(bind, "url", "")), meta, tuple(str(v) for v in runs))


@dataclass
class EstateEdges:
    """The estate's current column edges, in memory for one index state: the graph the tags follow, and
    which DAGs' lineage names each column (the access rule of :mod:`.access`)."""

    graph: list[tuple[Column, Column, str, bool, Any]]
    #: column -> the DAGs whose edges lead into or out of it
    column_dags: dict[Column, frozenset[str]]
    #: (source column, target column) of a DIRECT edge -> the runs that produced it
    runs: dict[tuple[Column, Column], list[Any]]

    @classmethod
    def of(cls, edges: list[Any]) -> EstateEdges:
        graph = _graph(edges)
        dags: dict[Column, set[str]] = {}
        runs: dict[tuple[Column, Column], list[Any]] = {}
        for src, dst, typ, _mask, run in graph:
            dag = getattr(run, "dag_id", None)
            for c in (src, dst):
                if c[2]:
                    dags.setdefault(c, set()).add(dag)
            if typ == tagging.DIRECT and dst[2]:
                runs.setdefault((src, dst), []).append(run)
        return cls(graph, {c: frozenset(d) for c, d in dags.items()}, runs)

    def readable(self, column: Column, readable: Collection[str] | None) -> bool:
        if readable is None:
            return column in self.column_dags
        dags = self.column_dags.get(column)
        return dags is not None and not dags.isdisjoint(readable)


@dataclass
class EstateTags:
    """The tags along the estate for one declaration (over every DAG's edges)."""

    result: dict[str, Any] | None
    declaration: Any
    unknown: list[tuple[str, str]]
    #: what the answers derived from it are cached under (``None``: not cached)
    key: Any = None


class _Cache:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state: tuple[Any, ...] | None = None
        self.edges: EstateEdges | None = None
        self.tags: dict[Any, EstateTags] = {}
        #: per-user answers (tag map key, the user's DAGs, tag, sources): a repeated request costs a lookup
        self.answers: dict[Any, dict[str, Any]] = {}

    def clear(self) -> None:
        with self.lock:
            self.state, self.edges, self.tags, self.answers = None, None, {}, {}


_cache = _Cache()


def clear_cache() -> None:
    """Forget the cached estate edges and tags (tests; the next request reads them again)."""
    _cache.clear()


def estate_edges(session: Session, state: tuple[Any, ...] | None = None) -> EstateEdges:
    """The estate's current edges, read once per :func:`index_state` (shared by every request and user)."""
    from airflow_provider_lineage.plugins.estate import index, query

    index.ensure_schema(session)
    state = index_state(session) if state is None else state
    with _cache.lock:
        if _cache.state == state and _cache.edges is not None:
            return _cache.edges
        edges = EstateEdges.of(query.edges_as_of(session))
        _cache.state, _cache.edges, _cache.tags, _cache.answers = state, edges, {}, {}
        return edges


def _stopped() -> list[str]:
    from airflow_provider_lineage.operators._lineage import guard

    return guard.setting_list("stopped_by_masking", list(tagging.DEFAULT_STOPPED_BY_MASKING)) or []


def estate_tags(session: Session) -> tuple[EstateTags, EstateEdges]:
    """The tags along the estate for the current declaration, computed once per index state and declaration."""
    from sqlalchemy import select

    from airflow_provider_lineage.plugins.estate import index, schema

    found = read_declaration()
    stopped = _stopped()
    index.ensure_schema(session)
    state = index_state(session)
    if not any(cols for cols in found.declared.values()):  # nothing declared: nothing to carry, no edge read
        has_edges = session.scalar(select(schema.edge.c.set_ref).limit(1)) is not None
        result = tagging.propagate_graph([], {}, stopped) if has_edges else None
        return EstateTags(result, found, _unknown_declared(session, found)), EstateEdges([], {}, {})
    edges = estate_edges(session, state)
    key = (json.dumps(found.texts, default=str, sort_keys=True), tuple(stopped))
    with _cache.lock:
        if _cache.state == state and key in _cache.tags:
            return _cache.tags[key], edges
    result = tagging.propagate_graph(edges.graph, _canonical(found.declared), stopped) if edges.graph else None
    out = EstateTags(result, found, _unknown_declared(session, found), (state, key))
    with _cache.lock:
        if _cache.state == state:
            while len(_cache.tags) >= CACHED_DECLARATIONS:
                _cache.tags.pop(next(iter(_cache.tags)))
            _cache.tags[key] = out
    return out, edges


def _unknown_declared(session: Session, found: Any) -> list[tuple[str, str]]:
    """``(source, problem)`` for each declared dataset no lineage record in the index names (a typo in the
    declaration?): looked up in the index, never on a disk."""
    from sqlalchemy import and_, or_, select

    from airflow_provider_lineage.plugins.estate import schema

    wanted: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for source, declared in found.by_source:
        for ns, name in declared:
            wanted.setdefault(identity(ns, name), []).append((source, ns, name))
    keys = sorted(wanted)
    have: set[tuple[str, str]] = set()
    d = schema.dataset.c
    for i in range(0, len(keys), 200):
        part = keys[i:i + 200]
        have |= {(r.namespace, r.name) for r in session.execute(select(d.namespace, d.name).where(
            or_(*[and_(d.namespace == ns, d.name == name) for ns, name in part])))}
    return [(source, (f"tags declared on {ns}:{name}, which no lineage record in the estate index names (check the "
                     "dataset name: the OpenLineage name, an absolute path for files; or no lineage task read or "
                     "wrote it yet)"))
            for key in keys if key not in have for source, ns, name in wanted[key]]


# -- the answers ---------------------------------------------------------------------------------------------

def _hop_key(hop: dict[str, Any]) -> Column:
    return (str(hop.get("namespace")), str(hop.get("name")), str(hop.get("column")))


def _pick_run(edges: EstateEdges, entry: dict[str, Any], via: Any, readable: Collection[str] | None) -> Any:
    """The run that brought the tag to the column, one of a readable DAG (``None``: none the user may read)."""
    if readable is None or getattr(via, "dag_id", None) in readable:
        return via
    path = entry["path"]
    if len(path) >= 2:
        for run in edges.runs.get((_hop_key(path[-2]), _hop_key(path[-1])), []):
            if getattr(run, "dag_id", None) in readable:
                return run
    return None


def unmasked(session: Session, readable: Collection[str] | None, tag: str | None,
             sources: Collection[str] | None = None) -> dict[str, Any] | None:
    """``{"unmasked": [...], "hidden": N, "columns_tagged": N, "problems": [...], "problems_hidden": N}`` from
    the estate index; ``None``: no index data, or it cannot be read.

    Each entry (``tag``, ``dataset``, ``label``, ``column``, ``path``) with the task run whose edge brought the
    tag to the column (``dag_id``, ``task_id``, ``map_index``, ``run_id``). The tags follow every DAG's edges;
    an entry whose column no DAG of ``readable`` names is counted in ``hidden``, a hop likewise shows as a
    marker (:mod:`.access`). ``sources``: the declaration sources whose problems the user may read
    (``None``: all).
    """
    try:
        tags, edges = estate_tags(session)
    except Exception:
        log.warning("where tags reach unmasked: the estate index could not be read (listing from the records)",
                    exc_info=True)
        session.rollback()
        return None
    if tags.result is None:
        return None
    cache_key = (
        None
        if tags.key is None
        else (
            tags.key,
            None if readable is None else frozenset(readable),
            tag,
            None if sources is None else frozenset(sources),
        )
    )
    if cache_key is not None:
        with _cache.lock:
            hit = _cache.answers.get(cache_key)
        if hit is not None:
            return hit
    out = []
    hidden = 0
    hidden_hops = 0
    memo: dict[Column, bool] = {}

    def can(c: Column) -> bool:
        seen = memo.get(c)
        if seen is None:
            seen = memo[c] = edges.readable(c, readable)
        return seen

    for (ns, name, column), entry, via in tagging.unmasked_of(tags.result, tag):
        if not can((ns, name, column)):
            hidden += 1
            continue
        path, n = access.redact(entry["path"], access.hops_visible(entry["path"], can, _hop_key))
        hidden_hops += n
        run = _pick_run(edges, entry, via, readable)
        out.append({"dag_id": getattr(run, "dag_id", None), "task_id": getattr(run, "task_id", None),
                    "map_index": getattr(run, "map_index", None), "run_id": getattr(run, "run_id", None),
                    "tag": entry["tag"], "dataset": dataset_id(ns, name), "label": label(ns, name, None),
                    "column": column, "path": path})
    out.sort(key=lambda u: (u["tag"], u["label"], u["column"], u["dag_id"] or "", u["task_id"] or ""))
    problems, problems_hidden = access.filter_problems(
        [*tags.declaration.problems, *tags.unknown], sources)
    tagged = sum(1 for c in tags.result["columns"] if can(c))
    answer = {"unmasked": out, "hidden": hidden, "hidden_hops": hidden_hops, "columns_tagged": tagged,
              "problems": problems, "problems_hidden": problems_hidden}
    if cache_key is not None:
        with _cache.lock:
            if _cache.state == tags.key[0]:
                while len(_cache.answers) >= CACHED_ANSWERS:
                    _cache.answers.pop(next(iter(_cache.answers)))
                _cache.answers[cache_key] = answer
    return answer


def published_value(result: dict[str, Any], max_bytes: int = MAX_PUBLISHED_BYTES) -> dict[str, Any]:
    """The JSON of :data:`PUBLISHED_VARIABLE`: inherited tags by dataset and column, at most ``max_bytes``.

    Whole datasets are kept or left out; a dataset left out is listed by digest
    (:func:`...lineage.tags.identity_digest`) in ``omitted``, so a task reading it knows its tags are missing
    (its policy fails closed) rather than reading "no tags".
    """
    by_ds: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = {}
    for (ns, name, column), entries in sorted(result["columns"].items()):
        inherited = [e for e in entries if e["source"] == "inherited"]
        if inherited:
            by_ds.setdefault((ns, name), {})[column] = inherited
    datasets: list[dict[str, Any]] = []
    omitted: list[str] = []
    size = 200
    for (ns, name), cols in by_ds.items():
        item = {"namespace": ns, "name": name, "columns": cols}
        n = len(json.dumps(item, separators=(",", ":"))) + 1
        if size + n > max_bytes:
            omitted.append(tagging.identity_digest(ns, name))
            size += 19
            continue
        datasets.append(item)
        size += n
    return {"generated": datetime.now(UTC).isoformat(), "cut": bool(omitted), "omitted": omitted,
            "datasets": datasets}


def publish(session: Session) -> int | None:
    """Write the estate's tag map into :data:`PUBLISHED_VARIABLE` (when it changed), signed with
    ``[column_lineage] tag_map_private_key`` when set; returns the tagged columns published (``None``: no index
    data and no key, the Variable is left as it is). Commits."""
    from airflow.models.variable import Variable

    from airflow_provider_lineage.operators._lineage import guard

    found = read_declaration()
    for p in found.messages:
        log.warning("column tags: %s", p)
    private = guard._key_setting("tag_map_private_key")
    result = tag_map(session, found.declared, _stopped())
    if result is None:
        if private is None:
            return None
        result = {"columns": {}}  # signed maps are required by the workers: an empty one, signed
    value = published_value(result)
    old = Variable.get(PUBLISHED_VARIABLE, default_var=None)
    if old is not None:
        try:
            before = json.loads(old)
            if all(before.get(k) == value[k] for k in ("datasets", "cut", "omitted")) and (
                    private is None or isinstance(before.get("signature"), str)):
                if private is not None:  # unchanged, and signed by this key (a forged copy is rewritten)
                    guard.verify_published(before, _public_of(private))
                return sum(len(d["columns"]) for d in value["datasets"])
        except (ValueError, AttributeError, tagging.TagsError):
            pass
    if private is not None:
        value["signature"] = guard.sign_published(value, private)
    Variable.set(PUBLISHED_VARIABLE, json.dumps(value, separators=(",", ":")),
                 description="Column tags along the estate's lineage (airflow-provider-lineage, docs/guard.md): "
                             "derived, rewritten after each DAG run; do not edit", session=session)
    session.commit()
    return sum(len(d["columns"]) for d in value["datasets"])


def _public_of(private_pem: str) -> str:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(private_pem.encode("utf-8"), password=None)
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")


def answer(session: Session, readable: Collection[str] | None, tag: str | None, limit: int,
           sources: Collection[str] | None = None) -> dict[str, Any]:
    """The ``/api/tags/unmasked`` answer: from the estate index (``"source": "estate"``), or, when it has no
    lineage or cannot be read, from the newest lineage record of every task of the DAGs ``readable``
    (``"source": "records"``). See :func:`unmasked` for ``sources`` and the counts."""
    from airflow_provider_lineage.plugins import store
    from airflow_provider_lineage.plugins.guard import view

    found = unmasked(session, readable, tag, sources)
    if found is not None:
        return {"tag": tag, "source": "estate", "unmasked": found["unmasked"][:limit],
                "truncated": len(found["unmasked"]) > limit, "hidden": found["hidden"],
                "hidden_hops": found["hidden_hops"], "columns_tagged": found["columns_tagged"],
                "problems": found["problems"], "problems_hidden": found["problems_hidden"]}
    records = store.recent_records(session, None if readable is None else set(readable), '"tags"', limit=limit)
    items = view.unmasked_from_records(records, tag)
    own = {identity(d["namespace"], d["name"]) for _, rec in records for d in rec.get("datasets") or []
           if isinstance(d, dict) and isinstance(d.get("namespace"), str) and isinstance(d.get("name"), str)}
    hidden_hops = 0
    for u in items:
        u["path"], n = access.redact(u["path"], access.hops_visible(
            u["path"], lambda c: identity(c[0], c[1]) in own, _hop_key))
        hidden_hops += n
    return {"tag": tag, "source": "records", "unmasked": items[:limit], "truncated": len(items) > limit,
            "hidden": 0, "hidden_hops": hidden_hops, "records_read": len(records)}


def run_view_access(session: Session, graph: dict[str, Any], readable_dags: Any) -> Any:
    """``visible(hop)`` for the tag paths of a run's graph (:func:`.view.redact`): a hop on a dataset of the run
    itself (its DAG is readable: the view checked it), or on a column a DAG of ``readable_dags()`` names in
    the estate index. The index is read only when a path leaves the run; when it cannot be read, only the
    run's own hops show (a display fails soft, never with a name)."""
    own = {identity(d["namespace"], d["name"]) for d in graph.get("datasets") or []
           if isinstance(d.get("namespace"), str) and isinstance(d.get("name"), str)}
    known: dict[str, Any] = {}

    def visible(hop: dict[str, Any]) -> bool:
        ns, name, column = hop.get("namespace"), hop.get("name"), hop.get("column")
        if not isinstance(ns, str) or not isinstance(name, str):
            return False
        key = identity(ns, name)
        if key in own:
            return True
        if "edges" not in known:
            from airflow_provider_lineage.plugins.estate import index

            try:
                known["readable"] = set(readable_dags())
                try:
                    index.sync(session)
                except Exception:  # noqa: BLE001 - the index as it is
                    session.rollback()
                known["edges"] = estate_edges(session)
            except Exception:
                log.warning("tag paths of the run view: the estate index could not be read (other DAGs' hops hidden)",
                            exc_info=True)
                session.rollback()
                known["edges"] = None
        edges = known["edges"]
        return edges is not None and edges.readable((key[0], key[1], str(column)), known["readable"])

    return visible
