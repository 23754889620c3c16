"""Column tags that follow lineage and stop at masking (pure Python, no Airflow).

Tags are declared once for the estate on source columns (:func:`parse_declaration`)::

    {"datasets": [{"namespace": "file", "name": "/data/customers", "columns": {"email": ["pii"]}}]}

:func:`propagate` carries the tags of a task's input columns to its output columns along the task's
column edges (a lineage record, :mod:`.run_record`):

* DIRECT edges (IDENTITY, TRANSFORMATION, AGGREGATION) carry every tag;
* INDIRECT edges (FILTER, JOIN, GROUP_BY, SORT, WINDOW, CONDITIONAL) carry none: a column that only
  decides which rows are kept does not put its values in the output;
* a masking edge (a hash, ``mask``, a count) stops the tags listed in ``stopped_by_masking``
  (default ``["pii"]``) and marks the others it carries as ``masked``.

Each tag on a column says where it came from: ``{"tag", "source": "declared" | "inherited",
"path": [{"namespace", "name", "column"}, ...], "masked"}``, the path running from the declared
column to this one (one entry for a declared tag). Across tasks and DAGs the inherited tags of a
task's output columns travel with its lineage record and its asset events; the next task passes
them in as ``known`` tags of its inputs.

:func:`violations` is the policy: an output column that *received* a tag of ``require_masked``
through a path with no masking step.
"""
from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_lineage.lineage import canonical

#: Airflow Variable holding the declaration (JSON).
VARIABLE = "lineage_column_tags"
#: Airflow Variable the scheduler writes the estate's tag map into (plugins/guard/estate.py; derived).
ESTATE_VARIABLE = "lineage_column_tags_estate"
#: XCom key of the policy result.
POLICY_XCOM_KEY = "lineage_policy"
DEFAULT_STOPPED_BY_MASKING = ("pii",)
#: The longest path kept on a tag (a longer one keeps its first and last hops with a marker between).
MAX_PATH = 24
DIRECT = "DIRECT"

Column = tuple[str, str, str]
Declared = dict[tuple[str, str], dict[str, list[str]]]
Tags = dict[Column, list[dict[str, Any]]]

EXAMPLE = '{"datasets": [{"namespace": "file", "name": "/data/customers", "columns": {"email": ["pii"]}}]}'


class TagsError(ValueError):
    """The tag declaration is malformed (the message names the problem and the fix).

    :ivar dataset: ``(namespace, name)`` the message names, if any;
    :ivar public: the message without that name (for readers who may not read the declaration).
    """

    def __init__(self, message: str, public: str | None = None, dataset: tuple[str, str] | None = None) -> None:
        super().__init__(message)
        self.public = public if public is not None else message
        self.dataset = dataset


def normalize_tag(tag: str) -> str:
    """A tag name as every part of the guard compares it: surrounding whitespace dropped, runs of inner whitespace
    one space, case folded (``" PII"`` is ``"pii"``): a declaration, ``require_masked``, ``stopped_by_masking`` and
    the tags carried by asset events or the estate map all go through it."""
    return " ".join(tag.split()).casefold()


def identity(namespace: str, name: str) -> tuple[str, str]:
    """The key a declaration and a lineage dataset are matched on (:func:`..canonical.match_key`): ``s3a://`` and
    ``s3://``, a trailing slash, a partition folder, ``file://``, host case all give one key."""
    return _match_key(namespace, name)


@functools.lru_cache(maxsize=4096)
def _match_key(namespace: str, name: str) -> tuple[str, str]:
    return canonical.match_key(namespace, name)


def decoded_json(value: Any, message: str) -> Any:
    """``value`` decoded when it is JSON text (bytes or str), as it is otherwise; invalid JSON raises
    :class:`TagsError` with ``message`` (its ``{error}`` replaced by the parser's complaint)."""
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise TagsError(message.replace("{error}", str(exc))) from None
    return value


def parse_declaration(value: Any, where: str = f"Variable {VARIABLE!r}") -> Declared:
    """``{(namespace, name): {column: [tag, ...]}}`` from the JSON text (or decoded JSON) of a declaration.

    Raises :class:`TagsError` naming the problem, where it is, and the expected shape.
    """
    value = decoded_json(value, f"{where} is not valid JSON ({{error}}); expected e.g. {EXAMPLE}")
    if not isinstance(value, dict) or not isinstance(value.get("datasets"), list):
        raise TagsError(f"{where} must be a JSON object with a \"datasets\" list; expected e.g. {EXAMPLE}")
    out: Declared = {}
    for i, entry in enumerate(value["datasets"]):
        at = f"{where}: datasets[{i}]"
        if not isinstance(entry, dict):
            raise TagsError(f"{at} is not an object; expected {{\"namespace\", \"name\", \"columns\"}}")
        ns, name, cols = entry.get("namespace"), entry.get("name"), entry.get("columns")
        if not isinstance(ns, str) or not ns or not isinstance(name, str) or not name:
            raise TagsError(f"{at} needs \"namespace\" and \"name\" strings (the OpenLineage dataset, e.g. "
                            "\"file\" and \"/data/customers\")")
        if not isinstance(cols, dict):
            fix = "needs \"columns\": an object of column -> list of tags, e.g. {\"email\": [\"pii\"]}"
            raise TagsError(f"{at} ({ns}:{name}) {fix}", f"{at} {fix}", (ns, name))
        # the dataset as the lineage names it, however the user spelled it (canonical.declared_identity)
        target = out.setdefault(canonical.declared_identity(ns, name), {})
        for col, tags in cols.items():
            if isinstance(tags, str):
                tags = [tags]
            if not isinstance(tags, list) or not all(isinstance(t, str) and t.strip() for t in tags):
                raise TagsError(f"{at} ({ns}:{name}) column {col!r}: tags must be a list of non-empty strings, "
                                f"got {tags!r}", f"{at}: a column's tags must be a list of non-empty strings",
                                (ns, name))
            known = target.setdefault(col, [])
            known += [t for t in map(normalize_tag, tags) if t not in known]
    return out


def used_tags(declared: Declared) -> set[str]:
    """Every tag a declaration puts on some column (normalised)."""
    return {normalize_tag(t) for cols in declared.values() for tags in cols.values() for t in tags}


def merge(*declarations: Declared) -> Declared:
    """One declaration from several (the Variable and the file): tags add up."""
    out: Declared = {}
    for d in declarations:
        for key, cols in d.items():
            target = out.setdefault(key, {})
            for col, tags in cols.items():
                known = target.setdefault(col, [])
                known += [t for t in tags if t not in known]
    return out


def _col(c: Column) -> dict[str, Any]:
    return {"namespace": c[0], "name": c[1], "column": c[2]}


def _key(c: Mapping[str, Any]) -> Column:
    return (c["namespace"], c["name"], c["column"])


def _by_identity(declared: Declared) -> dict[tuple[str, str], dict[str, list[str]]]:
    """The declaration keyed by :func:`identity` (two spellings of one dataset add up)."""
    out: dict[tuple[str, str], dict[str, list[str]]] = {}
    for (ns, name), cols in declared.items():
        target = out.setdefault(identity(ns, name), {})
        for col, tags in cols.items():
            known = target.setdefault(col, [])
            known += [t for t in map(normalize_tag, tags) if t not in known]
    return out


def declared_tags(declared: Declared, columns: Iterable[Column]) -> Tags:
    """The declared tags of ``columns`` (path: the column itself), matched by dataset :func:`identity`."""
    by_id = _by_identity(declared)
    out: Tags = {}
    for c in columns:
        for tag in by_id.get(identity(c[0], c[1]), {}).get(c[2], []):
            out.setdefault(c, []).append({"tag": tag, "source": "declared", "path": [_col(c)], "masked": False})
    return out


def record_columns(record: Mapping[str, Any]) -> tuple[list[Column], list[Column]]:
    """``(input columns, output columns)`` of a lineage record (from the datasets' schemas and edges)."""
    ds = record.get("datasets") or []
    ins: dict[Column, None] = {}
    outs: dict[Column, None] = {}
    for role, target in (("inputs", ins), ("outputs", outs)):
        for i in record.get(role) or []:
            if 0 <= i < len(ds):
                for f in ds[i].get("fields") or []:
                    target[(ds[i]["namespace"], ds[i]["name"], f[0])] = None
    for o, ofield, s, sfield, *_ in record.get("edges") or []:
        if 0 <= s < len(ds) and s not in (record.get("outputs") or []):
            ins[(ds[s]["namespace"], ds[s]["name"], sfield)] = None
        if 0 <= o < len(ds):
            outs[(ds[o]["namespace"], ds[o]["name"], ofield)] = None
    return list(ins), list(outs)


def _short_path(path: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if len(path) <= MAX_PATH:
        return path
    half = MAX_PATH // 2
    return [*path[:half], {"namespace": "", "name": "...", "column": f"{len(path) - 2 * half} more"}, *path[-half:]]


def propagate(
    record: Mapping[str, Any],
    declared: Declared,
    known: Tags | None = None,
    stopped_by_masking: Iterable[str] = DEFAULT_STOPPED_BY_MASKING,
) -> dict[str, Any]:
    """Tags of the record's columns: declared ones, ``known`` ones of its inputs, carried along its edges.

    :param known: tags of input columns from upstream tasks (their ``inherited`` entries, with paths).
    :return: ``{"columns": {column: [tag entries]}, "stopped": [{"column", "tag", "path", "at"}]}``
        where ``columns`` covers every input and output column that has a tag, and ``stopped`` lists
        tags a masking step stopped (``at``: the masking edge's output column).
    """
    stopped_set = {normalize_tag(t) for t in stopped_by_masking}
    ds = record.get("datasets") or []
    ins, outs = record_columns(record)
    tags: Tags = declared_tags(declared, [*ins, *outs])
    for c, entries in (known or {}).items():
        have = {entry_key(e) for e in tags.get(c, []) if e.get("path")}
        for e in entries:
            if e.get("path") and entry_key(e) not in have:
                have.add(entry_key(e))
                tags.setdefault(c, []).append({**e, "tag": normalize_tag(e["tag"])})
    stopped: dict[tuple[Column, str, Column], dict[str, Any]] = {}
    edges = []
    for o, ofield, s, sfield, typ, sub, mask in record.get("edges") or []:
        if 0 <= o < len(ds) and 0 <= s < len(ds) and typ == DIRECT:
            edges.append(((ds[s]["namespace"], ds[s]["name"], sfield), (ds[o]["namespace"], ds[o]["name"], ofield),
                          sub, bool(mask)))
    for _ in range(len(edges) + 1):  # writes of one task can read each other: repeat until nothing new
        grew = False
        for src, dst, _sub, mask in edges:
            for e in list(tags.get(src, [])):
                origin = _key(e["path"][0])
                if mask and e["tag"] in stopped_set:
                    stopped.setdefault((dst, e["tag"], origin), {
                        "column": _col(dst), "tag": e["tag"], "path": _short_path([*e["path"], _col(dst)]),
                        "at": _col(dst)})
                    continue
                have = tags.setdefault(dst, [])
                masked = bool(e.get("masked")) or mask
                # an unmasked arrival is kept beside a masked one of the same origin (the column has it unmasked)
                if any(h["tag"] == e["tag"] and _key(h["path"][0]) == origin and (not h.get("masked") or masked)
                       for h in have):
                    continue
                have.append({"tag": e["tag"], "source": "inherited", "path": _short_path([*e["path"], _col(dst)]),
                             "masked": masked})
                grew = True
        if not grew:
            break
    # a tag that reached a column unmasked by one path and was stopped on another: the column has it
    return {"columns": tags, "stopped": list(stopped.values())}


def entry_key(e: Mapping[str, Any]) -> tuple[str, Column, bool]:
    """What two tag entries of one column are the same on: the tag, its origin, masked or not (an unmasked arrival is
    never hidden by a masked one of the same origin)."""
    return (normalize_tag(e["tag"]), _key(e["path"][0]), bool(e.get("masked")))


def violations(
    result: Mapping[str, Any], outputs: Iterable[Column], require_masked: Iterable[str]
) -> list[dict[str, Any]]:
    """Output columns that received a ``require_masked`` tag through a path with no masking step."""
    required = {normalize_tag(t) for t in require_masked}
    out = []
    for c in outputs:
        for e in result["columns"].get(c, []):
            if e["tag"] in required and e["source"] == "inherited" and not e.get("masked"):
                out.append({"column": _col(c), "tag": e["tag"], "path": e["path"]})
    return sorted(out, key=lambda v: (v["column"]["name"], v["column"]["column"], v["tag"]))


def for_record(result: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON the lineage record keeps: ``{"columns": [[dataset index, column, [entries]]], "stopped"}``."""
    index = {(d["namespace"], d["name"]): i for i, d in enumerate(record.get("datasets") or [])}
    cols = [[index[(c[0], c[1])], c[2], entries] for c, entries in result["columns"].items()
            if (c[0], c[1]) in index and entries]
    return {"columns": sorted(cols, key=lambda x: (x[0], x[1])), "stopped": result["stopped"]}


def dataset_tags(result: Mapping[str, Any], namespace: str, name: str) -> dict[str, list[dict[str, Any]]]:
    """``{column: [entries]}`` of one dataset (what an asset event's extra carries downstream)."""
    return {c[2]: entries for c, entries in result["columns"].items() if (c[0], c[1]) == (namespace, name) and entries}


def _path_ok(path: Any) -> bool:
    return (isinstance(path, list) and bool(path) and all(
        isinstance(p, Mapping) and isinstance(p.get("namespace"), str) and isinstance(p.get("name"), str)
        and (p.get("column") is None or isinstance(p.get("column"), str)) for p in path))


def column_tags(namespace: str, name: str, value: Any, where: str) -> Tags:
    """The tags of a dataset's columns from ``{column: [entries]}`` (an asset event's ``column_tags``, a
    published map's ``columns``), checked field by field.

    Raises :class:`TagsError` naming the first malformed part: a tag map that cannot be read fully must not
    read as "no tags" (the policy fails closed on it).
    """
    if not isinstance(value, Mapping):
        raise TagsError(f"{where}: the column tags of {namespace}:{name} are not an object of column -> list of "
                        f"tag entries (got {type(value).__name__})")
    out: Tags = {}
    for col, entries in value.items():
        if not isinstance(col, str) or not isinstance(entries, list):
            raise TagsError(f"{where}: column {col!r} of {namespace}:{name}: expected a list of tag entries "
                            f"{{\"tag\", \"path\", \"masked\"}}, got {type(entries).__name__}")
        good = []
        for e in entries:
            if not (isinstance(e, Mapping) and isinstance(e.get("tag"), str) and e["tag"] and _path_ok(e.get("path"))
                    and isinstance(e.get("masked", False), bool)):
                raise TagsError(f"{where}: column {col!r} of {namespace}:{name}: malformed tag entry {str(e)[:120]} "
                                "(expected {\"tag\": a non-empty string, \"path\": a non-empty list of "
                                "{\"namespace\", \"name\", \"column\"}, \"masked\": true/false})")
            good.append({"tag": normalize_tag(e["tag"]), "source": "inherited", "masked": bool(e.get("masked")),
                         "path": [{"namespace": p["namespace"], "name": p["name"], "column": p.get("column"),
                                   **({"hidden": p["hidden"]} if isinstance(p.get("hidden"), int) else {})}
                                  for p in e["path"]]})
        if good:
            out[(namespace, name, col)] = good
    return out


def known_from_extra(namespace: str, name: str, extra: Any) -> Tags:
    """The tags of a dataset's columns from the ``column_tags`` of an asset event's extra (validated JSON).

    An extra without ``column_tags`` carries no tags; a malformed one raises :class:`TagsError`.
    """
    if not isinstance(extra, Mapping) or extra.get("column_tags") is None:
        return {}
    return column_tags(namespace, name, extra["column_tags"], f"the asset event of {namespace}:{name}")


def unknown_columns(declared: Declared, record: Mapping[str, Any]) -> list[str]:
    """Declared columns missing from the schema of a dataset the record knows (reported, not fatal)."""
    out = []
    by_id = _by_identity(declared)
    for d in record.get("datasets") or []:
        cols = by_id.get(identity(d["namespace"], d["name"]))
        fields = {f[0] for f in d.get("fields") or []}
        if cols and fields:
            out += [f"tags declared on column {c!r} of {d['namespace']}:{d['name']}, which has no such column "
                    f"(columns: {', '.join(sorted(fields))})" for c in sorted(cols) if c not in fields]
    return out


def hop_label(hop: Mapping[str, Any], short: bool = True) -> str:
    """One hop of a tag path as text: ``customers.email`` (``short``: the last part of the name), or for a stretch
    of hops the reader may not see (a marker with ``hidden``) ``(2 datasets of other DAGs)``."""
    if isinstance(hop.get("hidden"), int):
        n = hop["hidden"]
        return f"({n} dataset{'s' if n != 1 else ''} of other DAGs)"
    name = str(hop.get("name"))
    return f"{name.rstrip('/').rsplit('/', 1)[-1] if short else name}.{hop.get('column')}"


def unproven(
    record: Mapping[str, Any], result: Mapping[str, Any], require_masked: Iterable[str]
) -> list[dict[str, Any]]:
    """The record's approximate output columns (its ``approximate`` list: :mod:`.run_record`) that a
    ``require_masked`` policy cannot prove clean: ``[{"column", "reasons", "why"}]``.

    A column is proved clean only when every input is known (no reason starts with :data:`..model.UNKNOWN_INPUT`)
    and none of the inputs of its DIRECT edges (over-approximated: every column the value could come from) carries a
    required tag, unless that tag was masked upstream on an exact path; an approximate edge is never taken as
    masking, and an input that is itself an unproven column of the same task is not clean. INDIRECT edges carry no
    value (as in :func:`propagate`).
    """
    from airflow_provider_lineage.lineage.model import UNKNOWN_INPUT

    required = {normalize_tag(t) for t in require_masked}
    ds = record.get("datasets") or []
    approx: dict[Column, list[str]] = {}
    for item in record.get("approximate") or []:
        if isinstance(item, list) and len(item) == 3 and isinstance(item[0], int) and 0 <= item[0] < len(ds):
            c = (ds[item[0]]["namespace"], ds[item[0]]["name"], str(item[1]))
            approx.setdefault(c, []).extend(str(r) for r in item[2] or [])
    if not approx or not required:
        return []
    sources: dict[Column, list[Column]] = {}
    for o, ofield, src, sfield, typ, *_ in record.get("edges") or []:
        if 0 <= o < len(ds) and 0 <= src < len(ds) and typ == DIRECT:
            dst = (ds[o]["namespace"], ds[o]["name"], ofield)
            if dst in approx:
                sources.setdefault(dst, []).append((ds[src]["namespace"], ds[src]["name"], sfield))
    why: dict[Column, str] = {}
    for _ in range(len(approx) + 1):  # an unproven column read by another write of the task: until stable
        grew = False
        for c, reasons in approx.items():
            if c in why:
                continue
            if any(r.startswith(UNKNOWN_INPUT) for r in reasons):
                why[c] = "an input could not be named, so nothing proves the column clean"
            for src in sources.get(c, []):
                if c in why:
                    break
                tagged = sorted({e["tag"] for e in result["columns"].get(src, [])
                                 if e["tag"] in required and not (e.get("masked") and e["source"] == "inherited")})
                if tagged:
                    why[c] = (f"its input {hop_label(_col(src))} carries {', '.join(map(repr, tagged))} and an "
                              "approximate edge is never taken as masking")
                elif src in why:
                    why[c] = f"its input {hop_label(_col(src))} is itself approximate and not proved clean"
            grew = grew or c in why
        if not grew:
            break
    return [{"column": _col(c), "reasons": approx[c][:5], "why": why[c]}
            for c in sorted(why, key=lambda c: (c[1], c[2]))]


def summary(result: Mapping[str, Any], outputs: Iterable[Column], found: list[dict[str, Any]]) -> str:
    """Task-log lines: tags of the output columns, tags stopped by masking, violations."""
    lines = []
    for c in outputs:
        for e in result["columns"].get(c, []):
            how = " -> ".join(hop_label(p) for p in e["path"])
            lines.append(f"  {c[1].rstrip('/').rsplit('/', 1)[-1]}.{c[2]}: {e['tag']} ({e['source']}"
                         f"{', masked' if e.get('masked') else ''}) via {how}")
    for s in result["stopped"]:
        lines.append(f"  {s['tag']} stopped by masking at {s['at']['name'].rstrip('/').rsplit('/', 1)[-1]}."
                     f"{s['at']['column']}")
    for v in found:
        lines.append(f"  VIOLATION: {v['tag']} reaches {v['column']['name']}.{v['column']['column']} unmasked")
    return "column tags:\n" + "\n".join(lines) if lines else "column tags: none on this task's columns"


def propagate_graph(
    edges: Iterable[tuple[Column, Column, str, bool, Any]],
    declared: Declared,
    stopped_by_masking: Iterable[str] = DEFAULT_STOPPED_BY_MASKING,
) -> dict[str, Any]:
    """Tags over a whole graph of column edges (the estate's: every task of every DAG), the same rules as
    :func:`propagate`: DIRECT edges carry, a masking edge stops ``stopped_by_masking`` and marks the rest.

    :param edges: ``(source column, target column, type, masking, via)``; ``via`` (e.g. the task run that
        produced the edge) is kept for the last hop of each tag that reaches a column.
    :return: ``{"columns": {column: [entries]}, "stopped": [...], "via": {(column, tag, origin): via}}``;
        breadth first, so a path is a shortest one, and an unmasked path wins over a masked one.
    """
    stopped_set = {normalize_tag(t) for t in stopped_by_masking}
    out: dict[Column, list[tuple[Column, bool, Any]]] = {}
    for src, dst, typ, mask, via in edges:
        if typ == DIRECT and dst[2]:
            out.setdefault(src, []).append((dst, bool(mask), via))
    found: dict[tuple[Column, str, Column], dict[str, Any]] = {}
    via_of: dict[tuple[Column, str, Column], Any] = {}
    stopped: dict[tuple[Column, str, Column], dict[str, Any]] = {}
    queue: list[tuple[Column, str, Column]] = []
    for (ns, name), cols in declared.items():
        for col, tag_list in cols.items():
            c = (ns, name, col)
            for tag in map(normalize_tag, tag_list):
                found[(c, tag, c)] = {"tag": tag, "source": "declared", "path": [_col(c)], "masked": False}
                queue.append((c, tag, c))
    while queue:
        nxt: list[tuple[Column, str, Column]] = []
        for key in queue:
            c, tag, origin = key
            e = found[key]
            for dst, mask, via in out.get(c, []):
                if mask and tag in stopped_set:
                    stopped.setdefault((dst, tag, origin), {"column": _col(dst), "tag": tag, "at": _col(dst),
                                                            "path": _short_path([*e["path"], _col(dst)])})
                    continue
                masked = bool(e.get("masked")) or mask
                k = (dst, tag, origin)
                have = found.get(k)
                if have is not None and (have["source"] == "declared" or not have["masked"] or masked):
                    continue  # known already, by a path at least as good
                found[k] = {"tag": tag, "source": "inherited", "path": _short_path([*e["path"], _col(dst)]),
                            "masked": masked}
                via_of[k] = via
                nxt.append(k)
        queue = nxt
    columns: Tags = {}
    for (c, _tag, _origin), e in found.items():
        columns.setdefault(c, []).append(e)
    # a tag stopped on one path that reached the column unmasked on another: the column has it
    stopped = {k: v for k, v in stopped.items() if k not in found}
    return {"columns": columns, "stopped": list(stopped.values()), "via": via_of}


def unmasked_of(result: Mapping[str, Any], tag: str | None = None) -> list[tuple[Column, dict[str, Any], Any]]:
    """``(column, entry, via)`` of every tag that reached a column along no masking step (inherited only)."""
    out = []
    tag = None if tag is None else normalize_tag(tag)
    for c, entries in result["columns"].items():
        for e in entries:
            if e["source"] == "inherited" and not e.get("masked") and (tag is None or e["tag"] == tag):
                out.append((c, e, result.get("via", {}).get((c, e["tag"], _key(e["path"][0])))))
    return out


def identity_digest(namespace: str, name: str) -> str:
    """A short stable digest of a dataset identity (what a bounded published map lists for the datasets it
    omits, so a reader can tell "no tags" from "left out")."""
    return hashlib.sha256(f"{namespace}\x00{name}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


def published_known(value: Any, columns: Mapping[tuple[str, str], tuple[str, str]]) -> Tags:
    """The inherited tags of some datasets' columns from a published estate tag map (validated JSON).

    :param value: ``{"datasets": [{"namespace", "name", "columns": {column: [entries]}}], "omitted": [digest]}``
        (JSON text or decoded).
    :param columns: ``{identity (namespace, name) in the map: the dataset (namespace, name) to key them by}``.
    :raises TagsError: the map is malformed, or it omits (over its size bound) one of ``columns``' datasets:
        their tags cannot be known (a reader with a policy fails closed).
    """
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise TagsError(f"the published estate tag map is not valid JSON ({exc})") from None
    out: Tags = {}
    where = f"the published estate tag map ({ESTATE_VARIABLE})"
    if not isinstance(value, Mapping) or not isinstance(value.get("datasets"), list):
        raise TagsError(f"{where} is not a JSON object with a \"datasets\" list")
    omitted = value.get("omitted")
    if omitted is not None and not (isinstance(omitted, list) and all(isinstance(o, str) for o in omitted)):
        raise TagsError(f"{where}: \"omitted\" is not a list of dataset digests")
    if value.get("cut") and omitted is None:
        raise TagsError(
            f"{where} is cut (an older version bounded it by columns) and does not say which datasets it "
            "left out: the tags of this task's inputs may be missing; it is rewritten after the next DAG run"
        )
    left_out = set(omitted or ())
    for key, want in columns.items():
        if identity_digest(*key) in left_out:
            raise TagsError(f"{where} leaves out {key[0]}:{key[1]} (over its size bound): the inherited tags of this "
                            "input cannot be known")
    for i, d in enumerate(value["datasets"]):
        if not isinstance(d, Mapping) or not isinstance(d.get("namespace"), str) or not isinstance(d.get("name"), str):
            raise TagsError(f"{where}: datasets[{i}] is not an object with \"namespace\" and \"name\" strings")
        want = columns.get((d["namespace"], d["name"]))
        if want is None:
            continue
        for c, entries in column_tags(want[0], want[1], d.get("columns"), where).items():
            out.setdefault(c, []).extend(entries)
    return out


def parse_tag_list(value: Any, what: str = "require_masked") -> list[str] | None:
    """A list of tags from what a user wrote: ``None``; ``"pii"``; ``"pii, secret"``; ``'["pii"]'`` (a JSON list,
    what a templated list renders to); a list or tuple of strings. Tags come back normalised (:func:`normalize_tag`:
``"PII"`` and ``" pii"`` are ``"pii"``).

    Raises :class:`TagsError` naming the value and the expected forms (never a list of characters).
    """
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError:
                raise TagsError(f"{what}={value!r} looks like a JSON list but is not valid JSON; use e.g. "
                                "[\"pii\"], \"pii\" or \"pii,secret\" (a template rendering a list: "
                                "{{ ... | tojson }})") from None
        else:
            value = [t for t in text.split(",") if t.strip()]
    if isinstance(value, (list, tuple, set, frozenset)):
        out: list[str] = []
        for t in value:
            if not isinstance(t, str) or not t.strip():
                raise TagsError(f"{what}={value!r}: every tag must be a non-empty string (got {t!r}); use e.g. "
                                "[\"pii\"]")
            if normalize_tag(t) not in out:
                out.append(normalize_tag(t))
        return out
    raise TagsError(f"{what}={value!r} is a {type(value).__name__}: use a tag, a comma-separated string or a list "
                    "of tags, e.g. [\"pii\"]")
