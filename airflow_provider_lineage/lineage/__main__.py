"""Command line of the lineage engine (no Airflow needed).

    python -m airflow_provider_lineage.lineage analyze RECORD.json|RUN_DIR|EVENTS.jsonl [--json]
    python -m airflow_provider_lineage.lineage explain RECORD.json|RUN_DIR|EVENTS.jsonl COLUMN
    python -m airflow_provider_lineage.lineage impact EVENTS.jsonl --upstream|--downstream NS:NAME:FIELD [--indirect]

Inputs: a capture record (one write), a run folder of capture records (every write of an application
run), or the OpenLineage events file the operator writes (``$AIRFLOW_HOME/lineage/events.jsonl``, JSON
lines). Bad input never gives a traceback: one line on stderr and exit status 2.
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from airflow_provider_lineage.lineage.record import CaptureRecord, collapse_nested, read_records


class UsageError(Exception):
    """Bad input: printed as one ``error:`` line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def _load(path: str) -> tuple[str, list[Any]]:
    """``("records", [CaptureRecord])`` or ``("events", [event dict])`` for a file or run folder."""
    p = Path(path)
    if p.is_dir():
        errors: list[str] = []
        records = collapse_nested(read_records(p, errors))
        for e in errors:
            print(f"warning: skipped unreadable capture record {e}", file=sys.stderr)
        if not records:
            raise UsageError(f"{path} holds no readable capture records (*.json)")
        return "records", records
    if not p.is_file():
        raise UsageError(f"{path} is neither a capture record, a run folder of them, nor an OpenLineage events file")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from exc
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and "format_version" in whole and "command" in whole:
        try:
            return "records", [CaptureRecord.from_dict(whole)]
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{path}: {exc}") from exc
    events = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"{path} line {n} is not JSON ({exc.msg}): expected a capture record (.json), "
                "a run folder of them, or OpenLineage events (JSON lines)"
            ) from exc
        if not (isinstance(ev, dict) and ("eventType" in ev or "run" in ev)):
            raise UsageError(f"{path} line {n} is neither a capture record nor an OpenLineage run event")
        events.append(ev)
    if not events:
        raise UsageError(f"{path} is empty")
    return "events", events


# -- events -------------------------------------------------------------------------------------------
def _outputs_with_lineage(events: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(namespace, name, columnLineage facet)`` per output, merged over events (last facet wins per field)."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for ev in events:
        for out in ev.get("outputs") or []:
            facet = (out.get("facets") or {}).get("columnLineage")
            if not facet:
                continue
            m = merged.setdefault((out["namespace"], out["name"]), {"fields": {}, "dataset": []})
            m["fields"].update(facet.get("fields") or {})
            for d in facet.get("dataset") or []:
                if d not in m["dataset"]:
                    m["dataset"].append(d)
    return [(ns, name, f) for (ns, name), f in merged.items()]


def _kinds(inp: dict[str, Any]) -> str:
    ts = inp.get("transformations") or []
    return (
        ", ".join(
            sorted({f"{t.get('type')}/{t.get('subtype')}" + (", masked" if t.get("masking") else "") for t in ts})
        )
        or "?"
    )


def _field_lines(spec: dict[str, Any], indent: str, all_rows: list[dict[str, Any]] | None = None) -> list[str]:
    """One line per input field; transformations repeated from the ``dataset`` list (``all_rows``) are left
    out, as they are printed once under ``[all rows]`` (the facet carries them in both places by default)."""
    shared = {
        (d["namespace"], d["name"], d["field"], t.get("type"), t.get("subtype"))
        for d in all_rows or []
        for t in d.get("transformations") or []
    }
    lines = []
    for i in spec.get("inputFields") or []:
        ts = [t for t in i.get("transformations") or []
              if (i["namespace"], i["name"], i["field"], t.get("type"), t.get("subtype")) not in shared]
        if shared and i.get("transformations") and not ts:
            continue
        lines.append(f"{indent}{i['namespace']}:{i['name']}.{i['field']} ({_kinds({'transformations': ts})})")
    return lines


def _analyze_events(events: list[dict[str, Any]]) -> str:
    outs = _outputs_with_lineage(events)
    if not outs:
        raise UsageError("the events carry no columnLineage facet (no Spark write was analysed)")
    blocks = []
    for ns, name, facet in outs:
        lines = [f"column lineage of {ns}:{name} (from the columnLineage facet)"]
        for col, spec in facet["fields"].items():
            got = _field_lines(spec, "      ", facet["dataset"])
            lines.append(f"  {col} <-" + ("" if got else " (no input field)"))
            lines.extend(got)
        if facet["dataset"]:
            lines.append("  [all rows]")
            lines.extend(_field_lines({"inputFields": facet["dataset"]}, "      "))
        approx = _approximate_of(facet)
        if approx:
            lines.append(f"  approximate: {len(approx)} column(s)")
            lines.extend(f"  [approximate] {col}: {why}" for col, why in approx.items())
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _approximate_of(facet: dict[str, Any]) -> dict[str, str]:
    """Output column -> the ``approximate: <reason>`` its transformations' descriptions carry (the facet's form of
    ``WriteLineage.approximate_columns``)."""
    out: dict[str, str] = {}
    for col, spec in (facet.get("fields") or {}).items():
        for i in spec.get("inputFields") or []:
            for t in i.get("transformations") or []:
                desc = str(t.get("description") or "")
                if desc.startswith("approximate:") and col not in out:
                    out[col] = desc.removeprefix("approximate:").strip()
    return out


def _explain_events(events: list[dict[str, Any]], column: str) -> str:
    hits = []
    for ns, name, facet in _outputs_with_lineage(events):
        for col, spec in facet["fields"].items():
            if col.lower() == column.lower():
                lines = [f"{ns}:{name}.{col} <- (one hop, from the columnLineage facet)"]
                lines += _field_lines(spec, "  ", facet["dataset"])
                if facet["dataset"]:
                    lines.append("rows of the output are influenced by:")
                    lines += _field_lines({"inputFields": facet["dataset"]}, "  ")
                hits.append("\n".join(lines))
    if not hits:
        raise UsageError(f"no output column {column!r} in the events' columnLineage facets")
    note = ("(the expression-level derivation needs the write's capture record: run explain on the run folder, "
            "e.g. the operator's capture_dir)")
    return "\n\n".join(hits) + "\n" + note


# -- commands -------------------------------------------------------------------------------------------
def _analyze(args: argparse.Namespace) -> int:
    from airflow_provider_lineage.lineage import LineageError, analyze_record
    from airflow_provider_lineage.lineage.summary import summarize

    kind, items = _load(args.path)
    if kind == "events":
        if args.json:
            print(json.dumps([{"namespace": ns, "name": n, "columnLineage": f, "approximate": _approximate_of(f)}
                              for ns, n, f in _outputs_with_lineage(items)], indent=2))
        else:
            print(_analyze_events(items))
        return 0
    lins = []
    for rec in items:
        if rec.status != "success":
            print(f"skipped record {rec.record_id}: the write failed ({rec.error})", file=sys.stderr)
            continue
        try:
            lins.append(analyze_record(rec))
        except LineageError as exc:
            print(f"skipped record {rec.record_id}: {exc}", file=sys.stderr)
    if not lins:
        raise UsageError(f"no analysable write in {args.path}")
    if args.json:
        from openlineage.client.serde import Serde

        from airflow_provider_lineage.lineage.facets import datasets_for

        ins, outs = datasets_for(lins)
        approximate: dict[str, dict[str, list[str]]] = {}
        for lin in lins:  # output -> column -> reasons (docs/engine.md, "What the capture cannot see")
            if lin.output is None or not lin.approximate_columns:
                continue
            cols = approximate.setdefault(f"{lin.output.namespace}:{lin.output.name}", {})
            for col, reasons in lin.approximate_columns.items():
                cols.setdefault(col, []).extend(r for r in reasons if r not in cols.get(col, []))
        print(json.dumps({"inputs": [json.loads(Serde.to_json(d)) for d in ins],
                          "outputs": [json.loads(Serde.to_json(d)) for d in outs],
                          "approximate": approximate}, indent=2))
    else:
        print("\n\n".join(summarize(lin) for lin in lins))
    return 0


def _explain(args: argparse.Namespace) -> int:
    from airflow_provider_lineage.lineage import LineageError
    from airflow_provider_lineage.lineage.explain import explain

    kind, items = _load(args.record)
    if kind == "events":
        print(_explain_events(items, args.column))
        return 0
    blocks, columns = [], set()
    for rec in items:
        target = (rec.output.table or rec.output.location) if rec.output else None
        try:
            text = explain(rec, args.column)
        except KeyError as exc:
            columns.update(str(exc.args[0]).split("columns are: ", 1)[-1].split(", "))
            continue
        except LineageError as exc:
            print(f"skipped record {rec.record_id}: {exc}", file=sys.stderr)
            continue
        head = f"== write #{rec.sequence} {rec.command} -> {target or '?'}" if len(items) > 1 else None
        blocks.append(f"{head}\n{text}" if head else text)
    if not blocks:
        close = difflib.get_close_matches(args.column, sorted(c for c in columns if c), n=3, cutoff=0.5)
        hint = (
            f"; did you mean {', '.join(close)}?"
            if close
            else (f"; columns are: {', '.join(sorted(columns))}" if columns else "")
        )
        raise UsageError(f"no output column {args.column!r} in {args.record}{hint}")
    print("\n\n".join(blocks))
    return 0


def _impact(args: argparse.Namespace) -> int:
    from airflow_provider_lineage.lineage.impact import LineageGraph

    kind, events = _load(args.events)
    if kind != "events":
        raise UsageError(f"{args.events} is a capture record/run folder; impact reads OpenLineage events (JSON lines)")
    graph = LineageGraph.from_events(events)
    try:
        ref = graph.resolve_ref(args.upstream or args.downstream)
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc.args[0])) from exc
    hops = (graph.upstream if args.upstream else graph.downstream)(*ref, include_indirect=args.indirect)
    print(f"{'upstream' if args.upstream else 'downstream'} of {ref[0]}:{ref[1]}:{ref[2]}: {len(hops)} column(s)")
    for h in hops:
        print(f"  {h}")
    return 0



def _prog() -> str:
    """``spark-lineage`` when run as the console script, else ``python -m airflow_provider_lineage.lineage``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name and not name.endswith(".py") else "python -m airflow_provider_lineage.lineage"

def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog=_prog(), description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    a = sub.add_parser(
        "analyze", help="column lineage of capture records (a file or a run folder) or of an events file"
    )
    a.add_argument("path")
    a.add_argument("--json", action="store_true", help="print the OpenLineage datasets (or the events' facets) as JSON")
    e = sub.add_parser("explain", help="derivation tree of one output column (every write of a run folder)")
    e.add_argument("record", metavar="RECORD|RUN_DIR|EVENTS")
    e.add_argument("column")
    i = sub.add_parser("impact", help="upstream/downstream of a column across OpenLineage events (JSONL)")
    i.add_argument("events")
    g = i.add_mutually_exclusive_group(required=True)
    g.add_argument("--upstream", metavar="NS:NAME:FIELD")
    g.add_argument("--downstream", metavar="NS:NAME:FIELD")
    i.add_argument("--indirect", action="store_true", help="also follow INDIRECT (filter/join/...) influences")
    args = parser.parse_args(argv)
    try:
        return {"analyze": _analyze, "explain": _explain, "impact": _impact}[args.cmd](args)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - never a traceback; the message says what went wrong
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
