"""Run scenarios on real local Spark with the capture listener, analyse each write, score it."""
from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.lineage.data import register_views, write_inputs
from benchmarks.lineage.scenario import Ctx, Scenario
from benchmarks.lineage.scoring import EngineEdges, Score, engine_edges, score_outputs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Analyzer = Callable[[Any], Any]


def make_spark(work: Path, app: str = "lineage-benchmark") -> SparkSession:
    """One small local session: ``local[2]``, 2 shuffle partitions, no UI, warehouse under ``work``."""
    import os
    import sys

    from pyspark.sql import SparkSession

    # Python UDF workers must run this interpreter (it has pyarrow/pandas), not python3 from PATH
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work.mkdir(parents=True, exist_ok=True)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.warehouse.dir", str(work / "warehouse"))
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={work}")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def load_analyzer() -> tuple[Analyzer | None, str]:
    """The engine's ``analyze_record``, or ``None`` and the reason it is unavailable."""
    try:
        from airflow_provider_lineage.lineage import analyze_record
    except Exception as exc:  # noqa: BLE001 - the engine is written concurrently; the harness must still run
        return None, f"airflow_provider_lineage.lineage.analyze_record is not importable: {exc!r}"
    return analyze_record, ""


def prepare(spark: SparkSession, work: Path) -> Ctx:
    """Write the input datasets and register their temp views; return the scenario context."""
    inputs = write_inputs(spark, work / "inputs")
    register_views(spark, inputs)
    out_root = work / "out"
    out_root.mkdir(parents=True, exist_ok=True)
    return Ctx(spark=spark, inputs=inputs, out_root=out_root)


@dataclass
class ScenarioResult:
    """What happened when one scenario ran."""

    scenario: Scenario
    score: Score
    records: int = 0
    analyze_ms: float = 0.0
    run_s: float = 0.0
    error: str | None = None
    outputs: list[EngineEdges] = field(default_factory=list)


def run_scenario(ctx: Ctx, sc: Scenario, analyze: Analyzer, records_dir: Path | None = None) -> ScenarioResult:
    """Run ``sc`` inside a ``CaptureSession``, analyse every successful write, score against the reference."""
    from airflow_provider_lineage.capture.listener import CaptureSession, drain
    from airflow_provider_lineage.lineage.record import collapse_nested

    started = time.perf_counter()
    problems: list[str] = []
    outputs: list[EngineEdges] = []
    analyze_ms = 0.0
    n_records = 0
    error: str | None = None
    try:
        if sc.setup:
            sc.setup(ctx)
        drain(ctx.spark)  # events of earlier writes still queued would reach the new listener
        with CaptureSession(ctx.spark) as cap:
            sc.run(ctx)
        records = collapse_nested(cap.records)
        if cap.listener is not None and cap.listener.errors:
            problems += [f"capture: {e}" for e in cap.listener.errors]
        if records_dir is not None:
            records_dir.mkdir(parents=True, exist_ok=True)
            (records_dir / f"{sc.sid}.json").write_text(
                "[\n" + ",\n".join(r.to_json() for r in records) + "\n]\n", encoding="utf-8"
            )
        for rec in records:
            if rec.status != "success":
                problems.append(f"write {rec.command} failed: {rec.error}")
                continue
            n_records += 1
            t0 = time.perf_counter()
            try:
                lin = analyze(rec)
            except Exception as exc:  # noqa: BLE001 - an engine crash is a scored failure
                problems.append(f"engine raised on {rec.command}: {exc!r}")
                continue
            finally:
                analyze_ms += (time.perf_counter() - t0) * 1000
            outputs.append(engine_edges(lin))
    except Exception as exc:  # noqa: BLE001 - a failing scenario is reported, the run goes on
        error = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        problems.append(f"scenario failed: {error}")
        traceback.print_exc()
    finally:
        if sc.teardown:
            try:
                sc.teardown(ctx)
            except Exception:  # noqa: BLE001,S110 - best-effort cleanup
                pass
    score = score_outputs(sc.expects, outputs)
    score.problems = problems + score.problems
    return ScenarioResult(
        scenario=sc,
        score=score,
        records=n_records,
        analyze_ms=analyze_ms,
        run_s=time.perf_counter() - started,
        error=error,
        outputs=outputs,
    )


def run_all(ctx: Ctx, scenarios: Iterable[Scenario], analyze: Analyzer, records_dir: Path | None = None,
            log: Callable[[str], None] = print) -> list[ScenarioResult]:
    results = []
    for sc in scenarios:
        res = run_scenario(ctx, sc, analyze, records_dir)
        d, i = res.score.direct, res.score.indirect
        log(
            f"  {sc.sid:<24} DIRECT P/R {d.precision * 100:5.1f}/{d.recall * 100:5.1f}  "
            f"INDIRECT P/R {i.precision * 100:5.1f}/{i.recall * 100:5.1f}  ({res.run_s:.1f}s)"
            + ("" if not res.score.problems else f"  ! {res.score.problems[0][:90]}")
        )
        results.append(res)
    return results


def dump_edges(results: list[ScenarioResult], path: Path) -> None:
    """Write every engine edge per scenario as JSON (for looking into misses)."""
    data = {
        r.scenario.sid: [
            {
                "output": o.output,
                "direct": sorted(f"{i} -> {c} {sorted(v)}" for (i, c), v in o.direct.items()),
                "indirect": sorted(f"{i} ~> {c} {sorted(v)}" for (i, c), v in o.indirect.items()),
            }
            for o in r.outputs
        ]
        for r in results
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
