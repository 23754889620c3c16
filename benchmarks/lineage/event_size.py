"""Bytes of the OpenLineage COMPLETE event (and of the run record the UI keeps) for a wide output, per placement
of the dataset-wide INDIRECT edges (issue 36, item 4), and what an http transport to Marquez sends (issue 51).

The lineage is the engine's result shape (:class:`~airflow_provider_lineage.lineage.model.WriteLineage`) of a
wide feature table: ``--columns`` output columns (default 1,200) computed from two joined inputs, each column
from one or two input columns, under shared dataset-wide keys: the join keys on both sides, filter columns,
a sort column (``--keys`` in all, default 6). It is built directly (no Spark: the facet's size depends on the
lineage, not on how the plan was captured), the way ``analyze_record`` returns it, then turned into the
event exactly as the operator does (:func:`.facets.datasets_for`, :func:`.events.build_event`, serialised
with openlineage-python's ``Serde``).

    python -m benchmarks.lineage.event_size [--columns 1200] [--keys 6] [--report benchmarks/lineage/EVENT_SIZE.md]

Prints, per placement (``dataset``: the default; ``fields``; ``both``): event bytes, gzip bytes, edges in
``fields`` and in ``dataset``, whether it fits the 1 MB limits of the Kafka/http transports, what
:func:`.transport.fit_events` does with it, and the run record's bytes (kept whole under its 512 KiB bound?).
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

from airflow_provider_lineage.lineage import run_record
from airflow_provider_lineage.lineage.events import LineageResult, build_event, new_run_id
from airflow_provider_lineage.lineage.facets import datasets_for
from airflow_provider_lineage.lineage.model import INDIRECT_PLACEMENTS, FieldEdge, WriteLineage
from airflow_provider_lineage.lineage.naming import DatasetRef

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_REPORT = ROOT / "benchmarks" / "lineage" / "EVENT_SIZE.md"
LIMIT = 1_000_000


def wide_lineage(columns: int = 1200, keys: int = 6, base: str = "/data/lake") -> WriteLineage:
    """A write of ``columns`` output columns from two joined inputs under ``keys`` shared dataset-wide keys."""
    left = DatasetRef("file", f"{base}/events", None)
    right = DatasetRef("file", f"{base}/customers", None)
    half = max(columns // 2, 1)
    left_fields = [(f"feature_source_{i:04d}", "double") for i in range(half)] + [("customer_id", "bigint"),
                                                                                  ("event_date", "date"),
                                                                                  ("status", "string")]
    right_fields = [(f"attribute_{i:04d}", "string") for i in range(columns - half)] + [("customer_id", "bigint"),
                                                                                         ("segment", "string")]
    cols: dict[str, list[FieldEdge]] = {}
    out_fields = []
    for i in range(columns):
        name = f"feature_{i:04d}"
        out_fields.append((name, "double"))
        if i < half:
            src = left_fields[i][0]
            es = [FieldEdge(left, src, "DIRECT", "TRANSFORMATION")]
            if i % 3 == 0:  # a ratio of two features
                es.append(FieldEdge(left, left_fields[(i + 1) % half][0], "DIRECT", "TRANSFORMATION"))
        else:
            es = [FieldEdge(right, right_fields[i - half][0], "DIRECT", "IDENTITY")]
        cols[name] = es
    shared = [FieldEdge(left, "customer_id", "INDIRECT", "JOIN"), FieldEdge(right, "customer_id", "INDIRECT", "JOIN"),
              FieldEdge(left, "event_date", "INDIRECT", "FILTER"), FieldEdge(left, "status", "INDIRECT", "FILTER"),
              FieldEdge(right, "segment", "INDIRECT", "FILTER"), FieldEdge(left, "event_date", "INDIRECT", "SORT")]
    while len(shared) < keys:
        n = len(shared)
        shared.append(FieldEdge(left, left_fields[n][0], "INDIRECT", "FILTER"))
    return WriteLineage(output=DatasetRef("file", f"{base}/features", None), output_fields=out_fields,
                        inputs=[(left, left_fields), (right, right_fields)], columns=cols,
                        dataset_edges=shared[:keys], command="InsertIntoHadoopFsRelationCommand")


def event_of(lin: WriteLineage, indirect: str) -> Any:
    """The COMPLETE event the operator would emit for ``lin`` with this placement."""
    ins, outs = datasets_for([lin], indirect=indirect)
    return build_event("COMPLETE", job_namespace="airflow", job_name="features.build", run_id=new_run_id(),
                       inputs=ins, outputs=outs)


def event_json(lin: WriteLineage, indirect: str) -> str:
    """The COMPLETE event the operator would emit for ``lin`` with this placement, as JSON."""
    from openlineage.client.serde import Serde

    return Serde.to_json(event_of(lin, indirect))


def split_for_marquez(event: Any) -> tuple[int, int]:
    """What the operator's own emission does with ``event`` on an http transport to Marquez's endpoint (the
    README's setting; :func:`.transport.fit_events` at the 1,000,000-byte limit): (events sent, largest bytes).
    The client is built, never connected."""
    from airflow_provider_lineage.lineage import transport

    client, _ = transport.client_for({"transport": {"type": "http", "url": "http://127.0.0.1:9",
                                                    "endpoint": transport.MARQUEZ_ENDPOINT}})
    parts = transport.fit_events(client, [event])
    return len(parts), max(transport.wire_bytes(client, p) for p in parts)


def measure(columns: int = 1200, keys: int = 6) -> dict[str, Any]:
    lin = wide_lineage(columns, keys)
    out: dict[str, Any] = {"columns": columns, "keys": keys, "placements": {}}
    for placement in INDIRECT_PLACEMENTS:
        from openlineage.client.serde import Serde

        event = event_of(lin, placement)
        text = Serde.to_json(event)
        sent, largest = split_for_marquez(event)
        doc = json.loads(text)
        facet = doc["outputs"][0]["facets"]["columnLineage"]
        size = len(text.encode())
        out["placements"][placement] = {
            "event_bytes": size,
            "gzip_bytes": len(gzip.compress(text.encode())),
            "field_edges": sum(len(i["transformations"]) for f in facet["fields"].values() for i in f["inputFields"]),
            "dataset_edges": sum(len(i["transformations"]) for i in facet.get("dataset") or []),
            "fits_1mb": size <= LIMIT,
            "http_events": sent,
            "http_largest": largest,
        }
    record = run_record.build(LineageResult(lineages=[lin]), job_namespace="airflow", job_name="features.build",
                              run_id="r", emission="self")
    out["run_record_bytes"] = run_record.size(record)
    out["run_record_truncated"] = record["truncated"] is not None
    return out


def report(results: list[dict[str, Any]]) -> str:
    lines = ["# Event size of a wide output (issues 36 and 51)", "",
             "Generated by `python -m benchmarks.lineage.event_size` (no Spark: the engine's result shape, turned into",
             "the COMPLETE event as the operator does). Limits: Kafka's default `message.max.bytes` (1,048,588) /",
             "producer `max.request.size` (1,048,576), and the 1 MB request-body limit of common proxies in front",
             "of an http endpoint (nginx `client_max_body_size`); the transports hold events to 1,000,000 bytes.",
             "`both` is what a task sends to Marquez's endpoint with `indirect_lineage` unset (issue 51); the last two",
             "columns are what the operator's own emission sends on that http transport (split per share of the",
             "output's columns, no edge dropped: `transport.fit_events`). Through Airflow's OpenLineage provider the",
             "event goes as built (the provider's transport has no limit of its own; a proxy in front of Marquez may).",
             "",
             ("| columns | shared keys | placement | event bytes | gzip bytes | edges in fields | edges in dataset "
              "| <= 1 MB | http events sent | largest sent |"),
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for placement, p in r["placements"].items():
            lines.append(
                f"| {r['columns']:,} | {r['keys']} | {placement} | {p['event_bytes']:,} | {p['gzip_bytes']:,} | "
                f"{p['field_edges']:,} | {p['dataset_edges']:,} | {'yes' if p['fits_1mb'] else 'no'} | "
                f"{p['http_events']} | {p['http_largest']:,} |"
            )
    lines += ["", "Run record kept for the UI (XCom, bounded at 512 KiB; dataset-wide edges always apart):", "",
              "| columns | record bytes | cut |", "|---|---|---|"]
    for r in results:
        lines.append(
            f"| {r['columns']:,} | {r['run_record_bytes']:,} | {'yes' if r['run_record_truncated'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--columns", type=int, nargs="*", default=[200, 1200, 2000])
    ap.add_argument("--keys", type=int, default=6)
    ap.add_argument("--report", default=str(DEFAULT_REPORT))
    args = ap.parse_args(argv)
    results = [measure(c, args.keys) for c in args.columns]
    text = report(results)
    sys.stdout.write(text)
    if args.report:
        Path(args.report).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
