"""Command line of the lineage engine (no Airflow needed).

    python -m airflow_provider_lineage.lineage analyze RECORD.json|DIR [--json]
    python -m airflow_provider_lineage.lineage explain RECORD.json COLUMN
    python -m airflow_provider_lineage.lineage impact EVENTS.jsonl --upstream|--downstream ns:name:field [--indirect]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from airflow_provider_lineage.capture.records import CaptureRecord, collapse_nested, read_records


def _records(path: str) -> list[CaptureRecord]:
    p = Path(path)
    if p.is_dir():
        return collapse_nested(read_records(p))
    if not p.is_file():
        raise SystemExit(f"error: {path} is neither a capture record file nor a folder of them")
    return [CaptureRecord.from_json(p.read_text(encoding="utf-8"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m airflow_provider_lineage.lineage", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("analyze", help="column lineage of capture records (a file, or a run folder)")
    a.add_argument("path")
    a.add_argument("--json", action="store_true", help="print the OpenLineage input/output datasets as JSON")
    e = sub.add_parser("explain", help="derivation tree of one output column")
    e.add_argument("record")
    e.add_argument("column")
    i = sub.add_parser("impact", help="upstream/downstream of a column across OpenLineage events (JSONL)")
    i.add_argument("events")
    g = i.add_mutually_exclusive_group(required=True)
    g.add_argument("--upstream", metavar="NS:NAME:FIELD")
    g.add_argument("--downstream", metavar="NS:NAME:FIELD")
    i.add_argument("--indirect", action="store_true", help="also follow INDIRECT (filter/join/...) influences")
    args = parser.parse_args(argv)

    if args.cmd == "analyze":
        from airflow_provider_lineage.lineage import LineageError, analyze_record
        from airflow_provider_lineage.lineage.summary import summarize

        lins = []
        for rec in _records(args.path):
            try:
                lins.append(analyze_record(rec))
            except LineageError as exc:
                print(f"skipped record {rec.record_id}: {exc}", file=sys.stderr)
        if args.json:
            from openlineage.client.serde import Serde

            from airflow_provider_lineage.lineage.facets import datasets_for

            ins, outs = datasets_for(lins)
            print(json.dumps({"inputs": [json.loads(Serde.to_json(d)) for d in ins],
                              "outputs": [json.loads(Serde.to_json(d)) for d in outs]}, indent=2))
        else:
            print("\n\n".join(summarize(lin) for lin in lins))
        return 0
    if args.cmd == "explain":
        from airflow_provider_lineage.lineage.explain import explain

        recs = _records(args.record)
        try:
            print(explain(recs[0], args.column))
        except KeyError as exc:
            print(f"error: {exc.args[0]}", file=sys.stderr)
            return 2
        return 0
    from airflow_provider_lineage.lineage.impact import LineageGraph

    graph = LineageGraph.from_events(args.events)
    ref = graph.parse_ref(args.upstream or args.downstream)
    hops = (graph.upstream if args.upstream else graph.downstream)(*ref, include_indirect=args.indirect)
    print(f"{'upstream' if args.upstream else 'downstream'} of {ref[0]}:{ref[1]}:{ref[2]}: {len(hops)} column(s)")
    for h in hops:
        print(f"  {h}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
