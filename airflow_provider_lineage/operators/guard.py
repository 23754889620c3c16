"""Lineage as a guard, the Airflow side: diff with the previous run, column tags, policy (used by
:class:`~airflow_provider_lineage.operators.spark_lineage.SparkLineageSubmitOperator`).

The logic is in the lineage core (:mod:`..lineage.diff`, :mod:`..lineage.tags`); this module finds
what a worker may read in Airflow 3 without metadata-DB access, through the task SDK:

* the previous successful run of the same task and map index, ordered by the DAG runs' ``run_after``
  (runs without a logical date too: :mod:`.guard_baseline`), then its ``column_lineage`` XCom with
  ``ti.xcom_pull(run_id=...)``;
* the declared tags: Airflow Variable ``lineage_column_tags`` and/or the file named by the provider
  setting ``[column_lineage] tags_file``;
* the tags of the task's inputs that upstream tasks (this DAG or another) carried: the estate's tag map
  (Variable ``lineage_column_tags_estate``, written by the scheduler from the estate index:
  plugins/guard_estate.py) and the newest asset event of each input dataset (URI = the OpenLineage
  dataset) and its ``extra["column_tags"]``, which this operator writes on the asset events of the
  tables it writes.

Nothing here fails the write: a problem is logged, kept in the record (``guard_problems``, shown on the
page) and the task goes on; only ``on_lineage_change="fail"`` / ``on_policy_violation="fail"`` fail
the task, after the write, with the diff or the violations in the message.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from airflow_provider_lineage import _compat
from airflow_provider_lineage.lineage import diff as diffs
from airflow_provider_lineage.lineage import run_record
from airflow_provider_lineage.lineage import tags as tagging
from airflow_provider_lineage.lineage.naming import asset_uri
from airflow_provider_lineage.operators import guard_baseline

#: Provider config section of the guard settings (``AIRFLOW__COLUMN_LINEAGE__TAGS_FILE`` ...).
SECTION = "column_lineage"
CHANGE_MODES = ("ignore", "warn", "fail")
POLICY_MODES = ("warn", "fail")
#: Upper bound on the input datasets whose asset events are read for upstream tags.
MAX_INPUT_LOOKUPS = 50
#: Upper bound on the diff entries the record keeps for the view (the XCom has them all).
VIEW_DIFF_ITEMS = 300


def setting_list(option: str, default: list[str] | None) -> list[str] | None:
    """A list setting of :data:`SECTION`: JSON list or comma-separated; ``default`` when unset."""
    raw = _compat.airflow_conf().get(SECTION, option, fallback=None)
    if raw is None or not str(raw).strip():
        return default
    raw = str(raw).strip()
    if raw.startswith("["):
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"[{SECTION}] {option} = {raw!r} is not a JSON list ({exc}); use e.g. [\"pii\"] or pii,secret") from None
        return [str(v) for v in value]
    return [v.strip() for v in raw.split(",") if v.strip()]


def _sdk_variable(key: str) -> Any:
    from airflow.sdk import Variable

    return Variable.get(key, default=None)


def load_declaration(read_variable: Any = None) -> tuple[tagging.Declared, list[str]]:
    """The declared tags (Variable + file) and the problems met reading them (never raises).

    :param read_variable: reads the Variable's text (``None``: the task SDK's ``Variable.get``, in a task;
        the scheduler and api-server pass one that reads the metadata DB).
    """
    problems: list[str] = []
    found: list[tagging.Declared] = []
    try:
        raw = read_variable() if read_variable is not None else _sdk_variable(tagging.VARIABLE)
    except Exception as exc:  # noqa: BLE001 - a missing or unreadable Variable never fails the task
        raw, _ = None, problems.append(f"cannot read Variable {tagging.VARIABLE!r}: {exc!r}")
    if raw is not None:
        try:
            found.append(tagging.parse_declaration(raw))
        except tagging.TagsError as exc:
            problems.append(str(exc))
    path = _compat.airflow_conf().get(SECTION, "tags_file", fallback=None)
    if path:
        where = f"tags file {path} ([{SECTION}] tags_file)"
        try:
            found.append(tagging.parse_declaration(Path(path).read_text(encoding="utf-8"), where))
        except OSError as exc:
            problems.append(f"cannot read the {where}: {exc}")
        except tagging.TagsError as exc:
            problems.append(str(exc))
    declared = tagging.merge(*found)
    for (ns, name) in declared:  # a tag on a dataset that does not exist: reported, not fatal
        if ns == "file" and not Path(name).exists():
            problems.append(f"tags declared on {ns}:{name}, which does not exist (check the dataset name: the "
                            "OpenLineage name, an absolute path for files)")
    return declared, problems


def previous_record(ti: Any, map_index: int = -1) -> tuple[str | None, dict[str, Any] | None, str | None]:
    """``(run_id, record, note)`` of the previous successful run of this task (``None``s on a first run).

    The run is :func:`.guard_baseline.previous_success` (ordered by ``run_after``: runs without a logical
    date included); its record is its ``column_lineage`` XCom.
    """
    base = guard_baseline.previous_success(ti, map_index)
    if base.run_id is None:
        return None, None, base.note
    value = ti.xcom_pull(task_ids=ti.task_id, dag_id=ti.dag_id, key=run_record.XCOM_KEY, run_id=base.run_id,
                         map_indexes=map_index)
    if isinstance(value, str):
        value = json.loads(value)
    if not run_record.is_record(value):
        return base.run_id, None, (f"the previous successful run {base.run_id} kept no lineage record to compare with"
                                   + (f"; {base.note}" if base.note else ""))
    return base.run_id, value, base.note


def _identity(namespace: str, name: str) -> tuple[str, str]:
    """The dataset identity the estate index keys on (:func:`..lineage.canonical.canonical_identity`)."""
    from airflow_provider_lineage.lineage import canonical

    try:
        ns, nm = canonical.canonical_identity(namespace, name)
        return str(ns), str(nm)
    except Exception:  # noqa: BLE001 - the name as it is (as the index does)
        return namespace, name


def estate_tags(record: dict[str, Any]) -> tuple[tagging.Tags, list[str]]:
    """Tags of the record's input columns from the estate's tag map (Variable ``lineage_column_tags_estate``,
    which the scheduler writes from the estate index: every DAG's edges, stitched by dataset identity)."""
    try:
        raw = _sdk_variable(tagging.ESTATE_VARIABLE)
    except Exception as exc:  # noqa: BLE001 - never fails the task
        return {}, [f"cannot read Variable {tagging.ESTATE_VARIABLE!r} (tags along the estate): {exc!r}"]
    if raw is None:
        return {}, []
    ds = record.get("datasets") or []
    wanted = {_identity(ds[i]["namespace"], ds[i]["name"]): (ds[i]["namespace"], ds[i]["name"])
              for i in record.get("inputs") or [] if 0 <= i < len(ds)}
    try:
        return tagging.published_known(raw, wanted), []
    except (ValueError, tagging.TagsError) as exc:
        return {}, [(f"Variable {tagging.ESTATE_VARIABLE!r} (written by the scheduler from the estate index) is not "
                     f"a tag map ({str(exc)[:200]}): its tags are not inherited; it is rewritten after the next DAG run")]


def asset_event_tags(record: dict[str, Any]) -> tuple[tagging.Tags, list[str]]:
    """Tags of the record's input columns carried by the newest asset event of each input dataset."""
    from airflow.sdk.execution_time.context import InletEventsAccessor

    known: tagging.Tags = {}
    problems: list[str] = []
    ds = record.get("datasets") or []
    for i in (record.get("inputs") or [])[:MAX_INPUT_LOOKUPS]:
        d = ds[i]
        uri = asset_uri(d["namespace"], d["name"])
        try:
            # name and URI both: the assets this operator creates through its alias are named by their URI,
            # and a query by URI alone only sees assets some DAG declares (active ones)
            found = list(InletEventsAccessor(asset_name=uri, asset_uri=uri).ascending(False).limit(1))
        except Exception as exc:  # noqa: BLE001 - an unknown asset is normal (not written by a lineage task)
            if "not found" not in str(exc).lower() and "NOT_FOUND" not in str(exc):
                problems.append(f"cannot read asset events of {uri} (its tags are not inherited): {str(exc)[:200]}")
            continue
        if found:
            known.update(tagging.known_from_extra(d["namespace"], d["name"], found[0].extra))
    return known, problems


def upstream_tags(record: dict[str, Any]) -> tuple[tagging.Tags, list[str]]:
    """Tags of the record's input columns from upstream tasks of any DAG: the estate's tag map
    (:func:`estate_tags`) and, for what the index has not seen yet (an upstream task of this DAG run:
    the index syncs when a DAG run ends) or when there is no map, the newest asset event of each input."""
    known, problems = estate_tags(record)
    fresh, more = asset_event_tags(record)
    for c, entries in fresh.items():
        have = {(e["tag"], json.dumps(e["path"][0], sort_keys=True)) for e in known.get(c, [])}
        for e in entries:
            if (e["tag"], json.dumps(e["path"][0], sort_keys=True)) not in have:
                known.setdefault(c, []).append(e)
    return known, problems + more


class Guard:
    """One task run's diff, tags and policy (computed once, from the record the operator builds)."""

    def __init__(self, *, on_lineage_change: str, require_masked: list[str] | None, on_policy_violation: str) -> None:
        if on_lineage_change not in CHANGE_MODES:
            raise ValueError(f"on_lineage_change={on_lineage_change!r} is not one of {CHANGE_MODES}")
        if on_policy_violation not in POLICY_MODES:
            raise ValueError(f"on_policy_violation={on_policy_violation!r} is not one of {POLICY_MODES}")
        self.on_lineage_change = on_lineage_change
        self.require_masked = require_masked
        self.on_policy_violation = on_policy_violation
        self.diff: dict[str, Any] | None = None
        self.tags: dict[str, Any] | None = None
        self.policy: dict[str, Any] | None = None
        self.failure: str | None = None

    def run(self, ti: Any, record: dict[str, Any], log: Any, lineage_log: Any) -> None:
        """Fill ``record`` (``diff``, ``tags``, ``policy``, ``guard_problems``) and push the XComs."""
        problems: list[str] = []
        failures: list[str] = []
        outputs_known = record.get("status") == "ok"
        # 1. diff with the previous successful run of this task
        try:
            map_index = getattr(ti, "map_index", -1)
            prev_run, prev, note = previous_record(ti, -1 if map_index is None else map_index)
            if note:
                problems.append(note)
            self.diff = diffs.diff(prev, record, prev_run) if prev is not None else diffs.empty(None)
            if prev is None and prev_run is not None:
                self.diff["previous_run_id"] = None
            summary = diffs.summary(self.diff)
            if self.diff["changed"] and self.on_lineage_change != "ignore":
                lineage_log.warning("%s", summary)
            else:
                log.info("%s", summary)
            if self.diff["changed"] and self.on_lineage_change == "fail":
                failures.append(f"on_lineage_change='fail': the lineage of this task changed (the write is done; "
                                f"downstream tasks do not run on the changed shape).\n{summary}")
            ti.xcom_push(key=diffs.XCOM_KEY, value=self.diff)
            record["diff"] = _bounded(self.diff)
        except Exception as exc:  # noqa: BLE001 - the guard never fails the write
            problems.append(f"lineage diff not computed: {exc!r}")
            lineage_log.warning("lineage diff not computed: %r (the task is not affected)", exc)
        # 2. tags: declared + carried by upstream asset events, propagated along this task's edges
        try:
            declared, tag_problems = load_declaration()
            problems += tag_problems
            for p in tag_problems:
                lineage_log.warning("column tags: %s", p)
            known, up_problems = upstream_tags(record) if outputs_known else ({}, [])
            problems += up_problems
            stopped = setting_list("stopped_by_masking", list(tagging.DEFAULT_STOPPED_BY_MASKING)) or []
            result = tagging.propagate(record, declared, known, stopped)
            problems += tagging.unknown_columns(declared, record)
            _, outs = tagging.record_columns(record)
            required = self.require_masked
            if required is None:
                required = setting_list("require_masked", None)
            found = tagging.violations(result, outs, required or [])
            self.tags = result
            record["tags"] = tagging.for_record(result, record)
            log.info("%s", tagging.summary(result, outs, found))
            if required:
                self.policy = {"require_masked": list(required), "violations": found}
                record["policy"] = self.policy
                ti.xcom_push(key=tagging.POLICY_XCOM_KEY, value=self.policy)
                if found:
                    text = "\n".join(
                        f"  {v['column']['namespace']}:{v['column']['name']} column {v['column']['column']!r} receives "
                        f"{v['tag']!r} unmasked via " + " -> ".join(f"{p['name']}.{p['column']}" for p in v["path"])
                        for v in found)
                    msg = (f"lineage policy: {len(found)} output column(s) receive a require_masked tag "
                           f"({', '.join(required)}) through a path with no masking step:\n{text}")
                    if self.on_policy_violation == "fail":
                        failures.append(f"on_policy_violation='fail': {msg}")
                    else:
                        lineage_log.warning("%s", msg)
        except Exception as exc:  # noqa: BLE001 - the guard never fails the write
            problems.append(f"column tags not computed: {exc!r}")
            lineage_log.warning("column tags not computed: %r (the task is not affected)", exc)
        record["guard_problems"] = [p[:500] for p in problems[:20]]
        self.failure = "\n".join(failures) or None

    def dataset_tags(self, namespace: str, name: str) -> dict[str, list[dict[str, Any]]]:
        """``{column: [tag entries]}`` of one dataset (for the asset event's extra and the tags facet)."""
        return tagging.dataset_tags(self.tags, namespace, name) if self.tags else {}

    def add_tags_facets(self, datasets: list[Any]) -> None:
        """OpenLineage's standard ``tags`` dataset facet on every dataset with tagged columns."""
        if not self.tags:
            return
        from openlineage.client.generated import tags_dataset

        from airflow_provider_lineage.lineage.facets import PRODUCER

        for ds in datasets:
            cols = self.dataset_tags(ds.namespace, ds.name)
            if not cols:
                continue
            fields = [
                tags_dataset.TagsDatasetFacetFields(
                    key=e["tag"], value="masked" if e.get("masked") else "true",
                    source="USER" if e["source"] == "declared" else "LINEAGE", field=col)
                for col, entries in sorted(cols.items()) for e in entries
            ]
            facets = dict(ds.facets or {})
            facets["tags"] = tags_dataset.TagsDatasetFacet(tags=fields, producer=PRODUCER)
            ds.facets = facets


def _bounded(d: dict[str, Any]) -> dict[str, Any]:
    out = dict(d)
    for key in diffs.KEYS[2:]:
        if len(out[key]) > VIEW_DIFF_ITEMS:
            out[key] = out[key][:VIEW_DIFF_ITEMS]
            out.setdefault("cut", []).append(key)
    return out


def fit(record: dict[str, Any], limit: int) -> dict[str, Any]:
    """``record`` within ``limit`` bytes with the guard's keys: :func:`run_record.cut` lets the guard's
    details go first (the diff keeps ``changed``, ``previous_run_id`` and a ``cut`` marker; tags are
    dropped; the XComs ``lineage_diff`` / ``lineage_policy`` keep everything), then trims edges."""
    return run_record.cut(record, limit)
