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
  plugins/guard/estate.py) and the asset events of every writer of each input dataset (URI = the OpenLineage
  dataset) and its ``extra["column_tags"]``, which this operator writes on the asset events of the
  tables it writes.

Nothing here fails the write: a problem is logged, kept in the record (``guard_problems``, shown on the
page) and the task goes on; only ``on_lineage_change="fail"`` / ``on_policy_violation="fail"`` fail
the task, after the write, with the diff or the violations in the message. The policy fails closed:
with ``require_masked``, tags that cannot be computed fully (a declaration, tag map or asset event that
cannot be read, lineage not captured, an output column with approximate lineage its inputs do not prove
clean: :func:`..lineage.tags.unproven`) fail the task like a violation, with the reason.

What the task shows (XComs, log, failure message, asset events) names only the datasets it reads or writes: a
tag path's hops through any other dataset are a count (:func:`redact_result`; docs/guard.md, "Who sees what").

Its sources of tags are module functions that tests and the UI's estate reach by this module's name
(``guard.asset_event_tags`` ...), so they stay together here; what the task may show of a record
(:mod:`.guard_view`) and the estate tag map's signature (:mod:`.guard_signing`) live beside it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider_lineage import conf as settings
from airflow_provider_lineage.lineage import diff as diffs
from airflow_provider_lineage.lineage import run_record
from airflow_provider_lineage.lineage import tags as tagging
from airflow_provider_lineage.lineage.naming import asset_uri
from airflow_provider_lineage.operators._lineage import guard_baseline, guard_signing, guard_view
from airflow_provider_lineage.operators._lineage.guard_view import (
    bounded_diff,
    own_datasets,
    redact_items,
    redact_result,
)

#: Provider config section of the guard settings (``AIRFLOW__COLUMN_LINEAGE__TAGS_FILE`` ...): :mod:`...conf`.
SECTION = settings.SECTION
CHANGE_MODES = ("ignore", "warn", "fail")
POLICY_MODES = ("warn", "fail")
#: Upper bound on the input datasets whose asset events are read for upstream tags.
MAX_INPUT_LOOKUPS = 500
#: Upper bound on the asset events read per input (since the estate map's time): beyond it the tags may be
#: incomplete (the policy fails closed).
MAX_EVENTS_PER_INPUT = 1000
#: How far before the estate tag map's time asset events are still read: a DAG run that was running when the
#: index synced is indexed when it ends, so its events are read from the events until then.
SYNC_MARGIN_DAYS = 7


#: Reached by these names (the task's record, the UI's estate): :mod:`.guard_view`, :mod:`.guard_signing`.
fit = guard_view.fit
VIEW_DIFF_ITEMS = guard_view.VIEW_DIFF_ITEMS
sign_published = guard_signing.sign_published
verify_published = guard_signing.verify_published
_identity = guard_view.dataset_identity

#: A list setting of :data:`SECTION` (:func:`...conf.setting_list`; the UI's estate reads it through this name).
setting_list = settings.setting_list


def parse_mode(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """``value`` of the enum argument ``name`` normalised (case, spaces), or a :class:`ValueError` naming the
    allowed values: a mode the guard does not know must never read as "no guard"."""
    if isinstance(value, str) and value.strip().lower() in allowed:
        return value.strip().lower()
    raise ValueError(f"{name}={value!r} is not one of {', '.join(repr(a) for a in allowed)} (case does not matter)")


def parse_require_masked(value: Any) -> list[str] | None:
    """``require_masked`` as a list of tags (``"pii"`` -> ``["pii"]``), ``None`` when unset; a
    :class:`ValueError` for anything else."""
    try:
        return tagging.parse_tag_list(value, "require_masked")
    except tagging.TagsError as exc:
        raise ValueError(str(exc)) from None


def _sdk_variable(key: str) -> Any:
    from airflow.sdk import Variable

    return Variable.get(key, default=None)


#: The sources of a declaration, in the order they are read (``source`` of :class:`Declaration` problems).
SOURCES = ("setting", "file", "variable")


@dataclass
class Declaration:
    """The declared tags and where they came from.

    :ivar declared: the merged declaration (tags add up across sources).
    :ivar problems: ``(source, message)`` of every source that could not be read fully (``source`` one of
        :data:`SOURCES`): the declaration is then incomplete, and a policy fails closed on it.
    :ivar texts: the raw text of each source read (what a cache of anything derived from it keys on).
    """

    declared: tagging.Declared = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)
    texts: tuple[Any, ...] = ()
    #: ``(source, declaration)`` of each source read (who declared what)
    by_source: list[tuple[str, tagging.Declared]] = field(default_factory=list)
    #: per problem: ``(the message without a dataset name, the dataset it names or None)``
    public: list[tuple[str, tuple[str, str] | None]] = field(default_factory=list)

    def add(self, source: str, exc: Exception | str) -> None:
        self.problems.append((source, str(exc)))
        self.public.append((getattr(exc, "public", str(exc)), getattr(exc, "dataset", None)))

    def messages_for(self, datasets: Any) -> list[str]:
        """The problems as a task may show them: a dataset the task does not read or write is not named."""
        return [msg if named is None or named in datasets else public
                for (_, msg), (public, named) in zip(self.problems, self.public, strict=True)]

    @property
    def messages(self) -> list[str]:
        return [m for _, m in self.problems]


def variable_name() -> str | None:
    """The Airflow Variable the declaration is read from (``[column_lineage] tags_variable``, default
    ``lineage_column_tags``); ``None`` when the setting is empty or ``none``: no Variable is read, so no task
    can change the declaration (docs/guard.md, "Who can change the policy")."""
    return settings.tags_variable()


def read_declaration(read_variable: Any = None) -> Declaration:
    """The declared tags from every configured source (never raises):

    1. the provider setting ``[column_lineage] tags`` (the JSON itself, in airflow.cfg or
       ``AIRFLOW__COLUMN_LINEAGE__TAGS``: read by each process from its own configuration);
    2. the file named by ``[column_lineage] tags_file``;
    3. the Airflow Variable :func:`variable_name` (``lineage_column_tags``), unless switched off.

    :param read_variable: ``read_variable(key)`` reads a Variable's text (``None``: the task SDK's
        ``Variable.get``, in a task; the scheduler and api-server pass one that reads the metadata DB).
    """
    out = Declaration()
    found: list[tagging.Declared] = []
    texts: list[Any] = []
    inline = settings.tags()
    if inline is not None:
        texts.append(("setting", str(inline)))
        try:
            found.append(tagging.parse_declaration(str(inline), f"[{SECTION}] tags"))
            out.by_source.append(("setting", found[-1]))
        except tagging.TagsError as exc:
            out.add("setting", exc)
    path = settings.tags_file()
    if path:
        where = f"tags file {path} ([{SECTION}] tags_file)"
        try:
            text = Path(path).read_text(encoding="utf-8")
            texts.append(("file", path, text))
            found.append(tagging.parse_declaration(text, where))
            out.by_source.append(("file", found[-1]))
        except OSError as exc:
            texts.append(("file", path, repr(exc)))
            out.add("file", f"cannot read the {where}: {exc}")
        except tagging.TagsError as exc:
            out.add("file", exc)
    key = variable_name()
    if key is not None:
        try:
            raw = read_variable(key) if read_variable is not None else _sdk_variable(key)
        except Exception as exc:  # noqa: BLE001 - reported; a policy fails closed on it
            raw = None
            out.add("variable", f"cannot read Variable {key!r}: {exc!r}")
        texts.append(("variable", key, raw))
        if raw is not None:
            try:
                found.append(tagging.parse_declaration(raw, f"Variable {key!r}"))
                out.by_source.append(("variable", found[-1]))
            except tagging.TagsError as exc:
                out.add("variable", exc)
    out.declared = tagging.merge(*found)
    out.texts = tuple(texts)
    return out


def load_declaration(read_variable: Any = None) -> tuple[tagging.Declared, list[str]]:
    """``(declared tags, problems)`` of :func:`read_declaration` (never raises). A problem means the
    declaration is incomplete: :class:`Guard` fails a ``require_masked`` policy on it."""
    found = read_declaration(read_variable)
    return found.declared, found.messages


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


#: A key setting of :data:`SECTION` (:func:`...conf.key_setting`; the scheduler's estate signs with it).
_key_setting = settings.key_setting


def estate_tags(record: dict[str, Any], generated: list[str] | None = None) -> tuple[tagging.Tags, list[str]]:
    """Tags of the record's input columns from the estate's tag map (Variable ``lineage_column_tags_estate``,
    which the scheduler writes from the estate index: every DAG's edges, stitched by dataset identity).

    The problems returned mean the inherited tags may be incomplete (an unreadable or malformed map, a map
    that leaves out one of the inputs); no map at all (a fresh deployment) is not one. ``generated``, when given,
    receives the map's time (what :func:`asset_event_tags` reads events since).
    """
    try:
        public = settings.key_setting("tag_map_public_key")
        raw = _sdk_variable(tagging.ESTATE_VARIABLE)
    except Exception as exc:  # noqa: BLE001 - reported; a policy fails closed on it
        return {}, [f"cannot read Variable {tagging.ESTATE_VARIABLE!r} (tags along the estate): {exc!r}"]
    if raw is None:
        return {}, ([(f"Variable {tagging.ESTATE_VARIABLE!r} is missing, and [{SECTION}] tag_map_public_key says the "
                     "scheduler's signed map must be there (it is written when a DAG run ends)")] if public else [])
    ds = record.get("datasets") or []
    wanted = {_identity(ds[i]["namespace"], ds[i]["name"]): (ds[i]["namespace"], ds[i]["name"])
              for i in record.get("inputs") or [] if 0 <= i < len(ds)}
    try:
        if public is not None:
            raw = verify_published(raw, public)
        known = tagging.published_known(raw, wanted)
        value = tagging.decoded_json(raw, "{error}")
        if generated is not None and isinstance(value, dict) and isinstance(value.get("generated"), str):
            generated.append(value["generated"])
        return known, []
    except (ValueError, TypeError, tagging.TagsError) as exc:
        return {}, [(f"Variable {tagging.ESTATE_VARIABLE!r} (written by the scheduler from the estate index) cannot "
                     f"be used: {str(exc)[:300]}; its tags are not inherited (it is rewritten after the next DAG run)")]


def _writer(event: Any) -> tuple[Any, ...]:
    """Who wrote an asset event: a task (DAG, task, map index), or, for an event posted through the API (no
    source task), the event itself (every posted event counts)."""
    task = getattr(event, "source_task_id", None)
    if task is None:
        return ("posted", getattr(event, "id", id(event)))
    return (getattr(event, "source_dag_id", None), task, getattr(event, "source_map_index", None))


def asset_event_tags(record: dict[str, Any], since: str | None = None) -> tuple[tagging.Tags, list[str]]:
    """Tags of the record's input columns carried by the asset events of each input dataset: the newest event
    of every writer (each task that wrote it, each event posted through the API) since ``since`` (the estate
    tag map's time, less :data:`SYNC_MARGIN_DAYS`; ``None``: every event), their tags added up. A second writer of
    the same table, or a posted event without tags, never replaces the tags another writer carried.

    The problems returned mean the inherited tags may be incomplete (an asset event that could not be read,
    a malformed ``column_tags``, more inputs than :data:`MAX_INPUT_LOOKUPS`, more events than
    :data:`MAX_EVENTS_PER_INPUT` since ``since``); an input no lineage task wrote (no such asset) is not one.
    """
    from airflow.sdk.execution_time.context import InletEventsAccessor

    known: tagging.Tags = {}
    problems: list[str] = []
    ds = record.get("datasets") or []
    inputs = [i for i in record.get("inputs") or [] if 0 <= i < len(ds)]
    if len(inputs) > MAX_INPUT_LOOKUPS:
        problems.append(f"this task read {len(inputs)} datasets: the asset events of the first {MAX_INPUT_LOOKUPS} "
                        "only were read for upstream tags")
    for i in inputs[:MAX_INPUT_LOOKUPS]:
        d = ds[i]
        uri = asset_uri(d["namespace"], d["name"])
        try:
            # name and URI both: the assets this operator creates through its alias are named by their URI,
            # and a query by URI alone only sees assets some DAG declares (active ones)
            events = InletEventsAccessor(asset_name=uri, asset_uri=uri).ascending(False)
            if since is not None:
                events = events.after(since)
            found = list(events.limit(MAX_EVENTS_PER_INPUT + 1))
        except Exception as exc:  # noqa: BLE001 - an unknown asset is normal (not written by a lineage task)
            if "not found" not in str(exc).lower() and "NOT_FOUND" not in str(exc):
                problems.append(f"cannot read asset events of {uri} (its tags are not inherited): {str(exc)[:200]}")
            continue
        if len(found) > MAX_EVENTS_PER_INPUT:
            problems.append(f"{uri} has more than {MAX_EVENTS_PER_INPUT} asset events "
                            + ("since the estate index last synced" if since else "(and no estate tag map)")
                            + ": the tags of the older ones were not read")
            found = found[:MAX_EVENTS_PER_INPUT]
        got, bad = tags_of_events(d["namespace"], d["name"], found)
        for c, entries in got.items():
            known.setdefault(c, []).extend(entries)
        problems += bad
    return known, problems


def tags_of_events(namespace: str, name: str, events: list[Any]) -> tuple[tagging.Tags, list[str]]:
    """The tags of one dataset's columns from its asset events (newest first): the newest event of each writer
    (:func:`_writer`), added up; ``(tags, problems)`` (a malformed ``column_tags``: its tags are not inherited)."""
    newest: dict[tuple[Any, ...], Any] = {}
    for event in events:  # newest first: the first event of each writer is its newest
        newest.setdefault(_writer(event), event)
    known: tagging.Tags = {}
    problems: list[str] = []
    for event in newest.values():
        try:
            for c, entries in tagging.known_from_extra(namespace, name, event.extra).items():
                have = known.setdefault(c, [])
                keys = {tagging.entry_key(e) for e in have}
                have += [e for e in entries if tagging.entry_key(e) not in keys]
        except tagging.TagsError as exc:
            problems.append(f"{str(exc)[:300]}: its tags are not inherited")
    return known, problems


def upstream_tags(record: dict[str, Any]) -> tuple[tagging.Tags, list[str]]:
    """Tags of the record's input columns from upstream tasks of any DAG: the estate's tag map
    (:func:`estate_tags`) and, for what the index has not seen yet (an upstream task of this DAG run:
    the index syncs when a DAG run ends) or when there is no map, the asset events of each input.
    Every problem returned means the tags may be incomplete.

    The map holds every writer of an input the estate index has seen; the asset events add every writer since
    the map was written (:func:`asset_event_tags`). Tags add up: one writer never replaces another's."""
    generated: list[str] = []
    known, problems = estate_tags(record, generated)
    since = None
    if generated:
        try:
            import pendulum

            since = pendulum.parse(generated[0]).subtract(days=SYNC_MARGIN_DAYS).isoformat()  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - every event then
            since = None
    fresh, more = asset_event_tags(record, since)
    for c, entries in fresh.items():
        have = {(e["tag"], json.dumps(e["path"][0], sort_keys=True), bool(e.get("masked"))) for e in known.get(c, [])}
        for e in entries:
            if (e["tag"], json.dumps(e["path"][0], sort_keys=True), bool(e.get("masked"))) not in have:
                known.setdefault(c, []).append(e)
    return known, problems + more


class Guard:
    """One task run's diff, tags and policy (computed once, from the record the operator builds).

    The arguments are checked and normalised here (``"Fail"`` is ``"fail"``, ``"pii"`` is ``["pii"]``): a
    :class:`ValueError` names a bad one. The policy fails closed: when ``require_masked`` is set and the
    tags cannot be computed fully (a declaration or tag map that cannot be read, a malformed upstream tag,
    lineage the operator could not capture), the task fails with the reason (``on_policy_violation="warn"``:
    a warning), as it does on a violation.
    """

    def __init__(self, *, on_lineage_change: str, require_masked: Any, on_policy_violation: str) -> None:
        self.on_lineage_change = parse_mode("on_lineage_change", on_lineage_change, CHANGE_MODES)
        self.on_policy_violation = parse_mode("on_policy_violation", on_policy_violation, POLICY_MODES)
        self.require_masked = parse_require_masked(require_masked)
        self.required: list[str] = list(self.require_masked if self.require_masked is not None
                                        else settings.require_masked())
        self.diff: dict[str, Any] | None = None
        self.tags: dict[str, Any] | None = None
        self.policy: dict[str, Any] | None = None
        self.failure: str | None = None
        #: why the tags may be incomplete (the policy fails closed on any)
        self.incomplete: list[str] = []
        self.checked = False

    def run(self, ti: Any, record: dict[str, Any], log: Any, lineage_log: Any) -> None:
        """Fill ``record`` (``diff``, ``tags``, ``policy``, ``guard_problems``) and push the XComs."""
        problems: list[str] = []
        failures: list[str] = []
        incomplete: list[str] = []
        status = record.get("status")
        outputs_known = status in ("ok", "approximate")  # approximate: outputs known, see record["approximate"]
        if status not in ("ok", "approximate", "no_writes"):
            incomplete.append(f"the lineage of this run was not captured (record status {status!r}: see the lineage "
                              "problems above), so the tags its outputs receive are not known")
        if record.get("truncated"):
            incomplete.append("the lineage record was cut to its size bound before the tags were computed: edges "
                              "beyond it were not followed")
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
            record["diff"] = bounded_diff(self.diff)
        except Exception as exc:  # noqa: BLE001 - the guard never fails the write
            problems.append(f"lineage diff not computed: {exc!r}")
            lineage_log.warning("lineage diff not computed: %r (the task is not affected)", exc)
        # 2. tags: declared + carried by upstream tasks, propagated along this task's edges
        required = self.required
        found: list[dict[str, Any]] = []
        unproven: list[dict[str, Any]] = []
        undeclared: list[str] = []
        hidden = 0
        try:
            found_decl = read_declaration()
            declared = found_decl.declared
            # the task log and record are read by whoever may read this DAG: no other dataset named
            tag_problems = found_decl.messages_for({(d.get("namespace"), d.get("name"))
                                                    for d in record.get("datasets") or []})
            incomplete += tag_problems
            for p in tag_problems:
                lineage_log.warning("column tags: %s", p)
            known, up_problems = upstream_tags(record) if outputs_known else ({}, [])
            incomplete += up_problems
            for p in up_problems:
                lineage_log.warning("column tags: %s", p)
            stopped = settings.stopped_by_masking()
            result = tagging.propagate(record, declared, known, stopped)
            problems += tagging.unknown_columns(declared, record)
            _, outs = tagging.record_columns(record)
            found = tagging.violations(result, outs, required)
            # 2b. approximate columns (inputs a superset, or unknown): closed unless their inputs prove them clean
            unproven = tagging.unproven(record, result, required)
            for u in unproven:
                c = u["column"]
                incomplete.append(f"{c['namespace']}:{c['name']} column {c['column']!r} has approximate lineage "
                                  f"({'; '.join(u['reasons'])[:300]}) and {u['why']}")
            # 2c. a required tag no declaration (nor any upstream tag) uses: the policy guards nothing for it
            used = tagging.used_tags(declared) | {e["tag"] for entries in known.values() for e in entries}
            undeclared = [t for t in required if t not in used]
            if undeclared:
                lineage_log.warning("lineage policy: require_masked tag(s) %s: no tag declaration uses them, so the "
                                    "policy checks nothing for them (a misspelt tag? declared tags: %s)",
                                    ", ".join(map(repr, undeclared)),
                                    ", ".join(sorted(tagging.used_tags(declared))) or "none")
            # what leaves the task (XComs, log, failure message, asset events) names this task's datasets only:
            # hops through any other dataset are counted (docs/guard.md, "Who sees what")
            visible = own_datasets(record)
            result, _ = redact_result(result, visible)
            found, hidden = redact_items(found, visible)  # the policy says how many hops its paths hide
            self.tags = result
            record["tags"] = tagging.for_record(result, record)
            log.info("%s", tagging.summary(result, outs, found))
        except Exception as exc:  # noqa: BLE001 - the guard never fails the write; a policy fails closed
            incomplete.append(f"column tags not computed: {exc!r}")
            lineage_log.warning("column tags not computed: %r", exc)
        # 3. the policy: violations, or tags that cannot be known fully (fail closed)
        self.incomplete = incomplete
        if required:
            self.policy = {"require_masked": list(required), "violations": found,
                           **({"incomplete": [p[:500] for p in incomplete[:20]]} if incomplete else {}),
                           **({"approximate": unproven[:50]} if unproven else {}),
                           **({"undeclared": undeclared} if undeclared else {}),
                           **({"hidden_hops": hidden} if hidden else {})}
            record["policy"] = self.policy
            try:
                ti.xcom_push(key=tagging.POLICY_XCOM_KEY, value=self.policy)
            except Exception as exc:  # noqa: BLE001 - the failure below still says it
                lineage_log.warning("could not push %s: %r", tagging.POLICY_XCOM_KEY, exc)
            msgs = []
            if found:
                text = "\n".join(
                    f"  {v['column']['namespace']}:{v['column']['name']} column {v['column']['column']!r} receives "
                    f"{v['tag']!r} unmasked via " + " -> ".join(tagging.hop_label(p, short=False) for p in v["path"])
                    for v in found)
                msgs.append(f"lineage policy: {len(found)} output column(s) receive a require_masked tag "
                            f"({', '.join(required)}) through a path with no masking step:\n{text}")
            if incomplete:
                msgs.append(f"lineage policy: require_masked ({', '.join(required)}) cannot be checked fully, so it "
                            "fails closed:\n" + "\n".join(f"  {p}" for p in incomplete))
            if undeclared:
                problems.append(f"require_masked tag(s) {', '.join(map(repr, undeclared))} used by no tag declaration: "
                                "the policy checks nothing for them")
            for msg in msgs:
                if self.on_policy_violation == "fail":
                    failures.append(f"on_policy_violation='fail': {msg}")
                else:
                    lineage_log.warning("%s", msg)
        self.checked = True
        record["guard_problems"] = [p[:500] for p in (incomplete + problems)[:20]]
        self.failure = "\n".join(failures) or None

    def not_checked(self, reason: str, lineage_log: Any) -> None:
        """The operator could not run the guard (``reason``): with ``require_masked`` the policy fails closed."""
        if self.checked or not self.required:
            return
        msg = (f"lineage policy: require_masked ({', '.join(self.required)}) was not checked, so it fails closed: "
               f"{reason}")
        if self.on_policy_violation == "fail":
            self.failure = "\n".join(filter(None, [self.failure, f"on_policy_violation='fail': {msg}"]))
        else:
            lineage_log.warning("%s", msg)
        self.checked = True

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
