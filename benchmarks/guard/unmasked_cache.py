"""``/api/tags/unmasked`` cached per estate index state: ``python benchmarks/guard/unmasked_cache.py [--sizes
small,medium]``.

Builds the synthetic estate of ``benchmarks/estate/run.py`` (same sizes, same generator, written through the
index's own ``_edge_set``) on SQLite in a temporary folder, declares ``pii`` on one column of every landing
table (``[column_lineage] tags``: no Airflow Variable read), and times
:func:`airflow_provider_lineage.plugins.guard.estate.unmasked` as the endpoint calls it:

* ``first_ms``: the first request after a sync (reads every current edge, propagates the tags, filters);
* ``other_user_ms``: the first request of another user (one who may read half the DAGs): the cached tag map,
  filtered for that user;
* ``cached_ms``: the next requests of both users (median): their answers, cached per index state;
* ``before_ms``: what every request cost before issue 37 (``tag_map`` over the user's DAGs' edges, uncached).

Prints the figures and writes ``benchmarks/guard/REPORT.md`` (with ``uptime``: the machine is shared).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.estate.run import NS, SIZES, T0, Estate


def _ms(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def measure(size: str, folder: Path, repeats: int) -> dict[str, Any]:
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    from airflow_provider_lineage.plugins.estate import index, ingest
    from airflow_provider_lineage.plugins.estate import schema as s
    from airflow_provider_lineage.plugins.guard import estate as guard_estate

    est = Estate(**SIZES[size])
    engine = create_engine(f"sqlite:///{folder / (size + '.db')}")
    s.metadata.drop_all(engine)
    index._ready.clear()
    with Session(engine) as session:
        index.ensure_schema(session)
        datasets = ingest.Datasets(session)
        rows = []
        for dag in range(est.dags):
            ref = ingest.edge_set(session, est.record(dag, 0), datasets)
            end = T0 + timedelta(minutes=dag)
            rows.append({"dag_run_id": dag, "dag_id": f"dag_{dag:04d}", "task_id": "spark", "run_id": "r0",
                         "map_index": -1, "state": "success", "start_date": end, "end_date": end, "xcom_ts": end,
                         "set_ref": ref, "status": "ok", "job": f"b/j{dag}", "owner": None, "note": None})
        session.execute(s.task_run.insert(), rows)
        session.commit()
    decl = {"datasets": [{"namespace": NS, "name": est.name(-1 - k), "columns": {"col_1": ["pii"]}}
                         for k in range(est.per_dag)]}
    os.environ["AIRFLOW__COLUMN_LINEAGE__TAGS"] = json.dumps(decl)
    os.environ["AIRFLOW__COLUMN_LINEAGE__TAGS_VARIABLE"] = "none"
    admin = {f"dag_{d:04d}" for d in range(est.dags)}
    half = {f"dag_{d:04d}" for d in range(0, est.dags, 2)}
    out: dict[str, Any] = {"size": size, **SIZES[size], "current_edges": 0}
    with Session(engine) as session:
        guard_estate.clear_cache()
        got: dict[str, Any] = {}
        out["first_ms"] = _ms(lambda: got.update(guard_estate.unmasked(session, admin, "pii") or {}))
        out["entries"] = len(got.get("unmasked", []))
        out["current_edges"] = len(guard_estate._cache.edges.graph) if guard_estate._cache.edges else 0
        out["other_user_ms"] = _ms(lambda: guard_estate.unmasked(session, half, "pii"))
        out["cached_ms"] = statistics.median(
            _ms(lambda u=u: guard_estate.unmasked(session, u, "pii")) for _ in range(repeats) for u in (admin, half))
        half_answer = guard_estate.unmasked(session, half, "pii") or {}
        out["half_user_entries"], out["half_user_hidden"] = len(half_answer["unmasked"]), half_answer["hidden"]
        declared = {(NS, est.name(-1 - k)): {"col_1": ["pii"]} for k in range(est.per_dag)}
        out["before_ms"] = statistics.median(
            _ms(lambda: guard_estate.tag_map(session, declared, ["pii"], admin)) for _ in range(max(1, repeats // 3)))
    engine.dispose()
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="small,medium")
    ap.add_argument("--repeats", type=int, default=6)
    ap.add_argument("--report", default=str(HERE / "REPORT.md"))
    args = ap.parse_args(argv)
    load = subprocess.run(["uptime"], check=False, capture_output=True, text=True).stdout.strip()
    results = []
    with tempfile.TemporaryDirectory(prefix="apl-guard-bench-") as tmp:
        for size in args.sizes.split(","):
            r = measure(size, Path(tmp), args.repeats)
            print(json.dumps(r))
            results.append(r)
    after = subprocess.run(["uptime"], check=False, capture_output=True, text=True).stdout.strip()
    lines = [
        "# `/api/tags/unmasked`: cached per estate index state (issue 37)",
        "",
        (
            "`python benchmarks/guard/unmasked_cache.py` (SQLite, the synthetic estate of `benchmarks/estate/run.py`, "
            "one current run per DAG, `pii` on one column of every landing table). The machine is shared: "
            f"`uptime` before: `{load}`; after: `{after}`."
        ),
        "",
        (
            "| size | current edges | unmasked entries | first request (ms) | another user's first (ms) | next "
            "requests (ms) | "
            "before issue 37, every request (ms) | a half-DAGs user: listed / hidden |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['size']} | {r['current_edges']:,} | {r['entries']:,} | {r['first_ms']:.0f} | "
            f"{r['other_user_ms']:.0f} | {r['cached_ms']:.1f} | {r['before_ms']:.0f} | {r['half_user_entries']:,} / "
            f"{r['half_user_hidden']:,} |"
        )
    Path(args.report).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
