"""Lineage accuracy + cost benchmark: prints precision/recall per scenario and writes REPORT.md.

Usage::

    .venv/bin/python benchmarks/lineage/run.py                 # everything (a few minutes)
    .venv/bin/python benchmarks/lineage/run.py --only C1,C2    # some scenarios, no cost, no report
    .venv/bin/python benchmarks/lineage/run.py --no-cost       # accuracy only

Captured records and the engine's edges are kept under ``benchmarks/lineage/data/work`` (git-ignored)
for looking into misses.
"""
from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.lineage.cost import run_cost
from benchmarks.lineage.harness import dump_edges, load_analyzer, make_spark, prepare, run_all
from benchmarks.lineage.report import render, totals
from benchmarks.lineage.scenario import Scenario
from benchmarks.lineage.scenarios_coverage import SCENARIOS
from benchmarks.lineage.scenarios_paper import PAPER_SCENARIOS

HERE = Path(__file__).resolve().parent


def all_scenarios() -> list[Scenario]:
    return [*PAPER_SCENARIOS, *SCENARIOS]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated scenario ids (implies --no-cost and no report)")
    ap.add_argument("--no-cost", action="store_true", help="skip the cost measurements")
    ap.add_argument("--work", type=Path, default=HERE / "data" / "work", help="scratch folder")
    ap.add_argument("--report", type=Path, default=HERE / "REPORT.md")
    args = ap.parse_args(argv)

    analyze, why = load_analyzer()
    if analyze is None:
        print(f"cannot run the lineage benchmark: {why}", file=sys.stderr)
        return 2
    scenarios = all_scenarios()
    if args.only:
        wanted = {s.strip() for s in args.only.split(",")}
        unknown = wanted - {s.sid for s in scenarios}
        if unknown:
            print(f"unknown scenario ids {sorted(unknown)}; known: {[s.sid for s in scenarios]}", file=sys.stderr)
            return 2
        scenarios = [s for s in scenarios if s.sid in wanted]

    started = time.perf_counter()
    spark = make_spark(args.work)
    try:
        ctx = prepare(spark, args.work)
        print(f"accuracy: {len(scenarios)} scenarios")
        results = run_all(ctx, scenarios, analyze, records_dir=args.work / "records")
        dump_edges(results, args.work / "engine_edges.json")
        _print_summary(results)
        cost = None
        if not args.no_cost and not args.only:
            cost = run_cost(spark, ctx.inputs, args.work, analyze)
        if not args.only:
            meta = {"date": dt.date.today().isoformat(), "spark": spark.version}
            args.report.write_text(render(results, cost, meta), encoding="utf-8")
            print(f"wrote {args.report}")
    finally:
        spark.stop()
    print(f"done in {time.perf_counter() - started:.0f}s")
    return 0


def _print_summary(results: list) -> None:
    print()
    print(f"{'scenario':<24} {'DIRECT P/R':>14} {'INDIRECT P/R':>14}   paper P/R")
    for r in results:
        d, i = r.score.direct, r.score.indirect
        paper = f"{r.scenario.paper[0]}/{r.scenario.paper[1]}" if r.scenario.paper else ""
        print(f"{r.scenario.sid:<24} {d.precision * 100:6.1f}/{d.recall * 100:5.1f}  "
              f"{i.precision * 100:6.1f}/{i.recall * 100:5.1f}   {paper}")
    t = totals(results)
    print(f"{'OVERALL':<24} {t.direct.precision * 100:6.1f}/{t.direct.recall * 100:5.1f}  "
          f"{t.indirect.precision * 100:6.1f}/{t.indirect.recall * 100:5.1f}")
    print(f"subtype agreement: DIRECT {t.direct.subtype_agreement * 100:.1f}%  "
          f"INDIRECT {t.indirect.subtype_agreement * 100:.1f}%  masking {t.direct.masking_agreement * 100:.1f}%")
    for r in results:
        misses = r.score.problems + r.score.direct.misses + r.score.indirect.misses
        if misses:
            print(f"  {r.scenario.sid}:")
            for m in misses:
                print(f"     {m}")


if __name__ == "__main__":
    raise SystemExit(main())
