"""Synthetic lineage records of a chain of tasks, in the operator's record format (lineage.run_record).

``records(tasks, columns, edges)``: ``tasks`` task runs; task ``i`` reads datasets ``i`` and ``i-1`` and
writes dataset ``i+1``; the ``columns`` are spread over the ``tasks + 1`` datasets and the ``edges`` over
the tasks (about 1 in 10 of them dataset-wide INDIRECT edges, the rest column edges of every
type/subtype, some masked). Deterministic (seeded).
"""
from __future__ import annotations

import random
from typing import Any

from airflow_provider_lineage.lineage import run_record

SUBTYPES = [("DIRECT", "IDENTITY"), ("DIRECT", "TRANSFORMATION"), ("DIRECT", "AGGREGATION"),
            ("INDIRECT", "CONDITIONAL"), ("INDIRECT", "WINDOW")]
DATASET_SUBTYPES = ["FILTER", "JOIN", "GROUP_BY", "SORT"]
TYPES = ["string", "bigint", "double", "date", "timestamp", "decimal(18,2)", "boolean"]


def dataset(i: int, n_fields: int) -> dict[str, Any]:
    return {"namespace": "file", "name": f"/lake/bench/table_{i:02d}", "table": None,
            "fields": [[f"col_{i:02d}_{k:04d}", TYPES[k % len(TYPES)]] for k in range(n_fields)]}


def records(tasks: int = 10, columns: int = 200, edges: int = 500, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    per = [columns // (tasks + 1) + (1 if i < columns % (tasks + 1) else 0) for i in range(tasks + 1)]
    all_ds = [dataset(i, per[i]) for i in range(tasks + 1)]
    out = []
    for t in range(tasks):
        n_edges = edges // tasks + (1 if t < edges % tasks else 0)
        reads = [all_ds[t]] + ([all_ds[t - 1]] if t else [])
        writes = all_ds[t + 1]
        datasets = [*reads, writes]
        rec: dict[str, Any] = {
            "format": run_record.FORMAT, "version": run_record.VERSION, "status": "ok",
            "job": {"namespace": "default", "name": f"ui_bench.task_{t:02d}"}, "run_id": f"bench-{seed}-{t}",
            "emission": "off", "datasets": datasets, "inputs": list(range(len(reads))), "outputs": [len(reads)],
            "edges": [], "dataset_edges": [], "problems": [], "truncated": None,
        }
        out_i = len(reads)
        seen: set[tuple[Any, ...]] = set()
        while len(rec["edges"]) + len(rec["dataset_edges"]) < n_edges:
            src_i = rng.randrange(len(reads))
            src_field = rng.choice(reads[src_i]["fields"])[0]
            if rng.random() < 0.1:
                e = [out_i, src_i, src_field, "INDIRECT", rng.choice(DATASET_SUBTYPES), 0]
                key = tuple(e)
                if key not in seen:
                    seen.add(key)
                    rec["dataset_edges"].append(e)
                continue
            typ, sub = rng.choice(SUBTYPES)
            e = [out_i, rng.choice(writes["fields"])[0], src_i, src_field, typ, sub, int(rng.random() < 0.05)]
            key = tuple(e)
            if key not in seen:
                seen.add(key)
                rec["edges"].append(e)
        out.append(rec)
    return out
