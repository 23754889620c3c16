"""The Spark application the Airflow ``SieveIndexOperator`` submits (no Airflow imports).

``spark-submit job.py SPEC RESULT``: ``SPEC`` is a JSON file (or an inline JSON text starting with
``{``) describing a list of index jobs; ``RESULT`` is the JSON file written at the end (atomically)::

    {"spec_version": 1,
     "jobs": [{"table": "/data/sales", "column": "day", "mode": "auto", "index_path": null,
               "update_strategy": null, "options": {"error_bound": 0}, "thresholds": {"max_deltas": 8}}]}

    {"result_version": 1, "spark_version": "4.1.3", "ok": true,
     "results": [<MaintainResult.to_dict()>, ...]}

Every job runs (a failed one does not stop the others); the exit code is 0 when all succeeded, 1
when one failed (its record says why), 2 for a bad spec. While a job runs, a progress line is
printed every ``progress_seconds`` (Spark stages and tasks done), so long builds show they move.

Also a small CLI without Spark submission: ``python -m airflow_provider_lineage.sieve.job SPEC
RESULT [--master local[2]] [--no-spark]``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Self

if __package__ in (None, ""):
    # Run as a script (spark-submit .../sieve/job.py): this folder is sys.path[0]; drop it so its
    # module names (table, keys, model ...) cannot shadow others, and import the package normally.
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

from airflow_provider_lineage.sieve.decisions import RESULT_VERSION, Thresholds
from airflow_provider_lineage.sieve.errors import SieveError
from airflow_provider_lineage.sieve.fs import STORAGE_OPTIONS_ENV, options_from_env, storage_options
from airflow_provider_lineage.sieve.maintain import MaintainResult, maintain_safely

SPEC_VERSION = 1
PROGRESS_SECONDS = 30.0


@dataclass
class IndexJob:
    """One entry of the spec: which index to maintain and how."""

    table: str
    column: str
    mode: str = "auto"
    index_path: str | None = None
    update_strategy: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    thresholds: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "column": self.column, "mode": self.mode, "index_path": self.index_path,
                "update_strategy": self.update_strategy, "options": dict(self.options),
                "thresholds": dict(self.thresholds)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> IndexJob:
        missing = [k for k in ("table", "column") if not d.get(k)]
        if missing:
            raise SieveError(f"index job {d!r} lacks {', '.join(missing)}: every job needs a table and a column")
        return cls(table=str(d["table"]), column=str(d["column"]), mode=str(d.get("mode") or "auto"),
                   index_path=d.get("index_path") or None, update_strategy=d.get("update_strategy") or None,
                   options=dict(d.get("options") or {}), thresholds=dict(d.get("thresholds") or {}))


def spec_to_json(jobs: list[IndexJob], *, progress_seconds: float = PROGRESS_SECONDS) -> str:
    return json.dumps({"spec_version": SPEC_VERSION, "progress_seconds": progress_seconds,
                       "jobs": [j.to_dict() for j in jobs]})


def load_spec(text_or_path: str) -> tuple[list[IndexJob], float]:
    text = text_or_path
    if not text_or_path.lstrip().startswith("{"):
        with open(text_or_path, encoding="utf-8") as fh:
            text = fh.read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SieveError(f"the job spec is not JSON ({exc}): pass a file written by spec_to_json") from exc
    if data.get("spec_version") != SPEC_VERSION:
        raise SieveError(f"job spec version {data.get('spec_version')!r} is not {SPEC_VERSION}: the operator "
                         "and the job come from different package versions; install one version on both")
    return [IndexJob.from_dict(j) for j in data.get("jobs") or []], float(data.get("progress_seconds") or 0)


def write_results(path: str, results: list[MaintainResult], spark_version: str | None = None) -> None:
    """Write the result file atomically (temp file + rename in the same folder)."""
    payload = {"result_version": RESULT_VERSION, "spark_version": spark_version,
               "ok": all(r.status == "ok" for r in results), "results": [r.to_dict() for r in results]}
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=1, default=str)
    os.replace(tmp, path)


def read_results(path: str) -> list[MaintainResult]:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if data.get("result_version") != RESULT_VERSION:
        raise SieveError(f"result file {path} has version {data.get('result_version')!r}, not {RESULT_VERSION}: "
                         "install one package version on the Airflow worker and the Spark driver")
    return [MaintainResult.from_dict(r) for r in data.get("results") or []]


class Progress:
    """Prints one line every ``every`` seconds while a job runs (Spark stage/task counts if any)."""

    def __init__(self, spark: Any, every: float) -> None:
        self.spark, self.every = spark, every
        self.label = ""
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        if self.every > 0:
            self._thread = threading.Thread(target=self._run, name="sieve-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def start(self, label: str) -> None:
        self.label, self.t0 = label, time.monotonic()

    def line(self) -> str:
        text = f"sieve-job: {self.label}: running for {time.monotonic() - self.t0:.0f} s"
        if self.spark is not None:
            try:
                tracker = self.spark.sparkContext.statusTracker()
                stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
                done = sum(s.numCompletedTasks for s in stages if s)
                total = sum(s.numTasks for s in stages if s)
                text += f"; Spark: {len(stages)} active stage(s), {done}/{total} tasks done"
            except Exception as exc:  # noqa: BLE001 - progress is best effort
                text += f"; (no Spark progress: {type(exc).__name__})"
        return text

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            print(self.line(), flush=True)


def run_jobs(spark: Any, jobs: list[IndexJob], *, progress_seconds: float = PROGRESS_SECONDS) -> list[MaintainResult]:
    """Run every job (failures become error records) and print one summary line per index."""
    results: list[MaintainResult] = []
    try:
        options = options_from_env()
    except SieveError as exc:
        return [MaintainResult(table=j.table, column=j.column, requested=j.mode, status="error", error=str(exc),
                               error_type="SieveError") for j in jobs]
    if options:
        print(f"sieve-job: object-store options from ${STORAGE_OPTIONS_ENV}: {', '.join(sorted(options))}", flush=True)
    with Progress(spark, progress_seconds) as progress, storage_options(options):
        for job in jobs:
            label = f"{job.table}.{job.column}"
            progress.start(label)
            print(f"sieve-job: {label}: mode={job.mode}", flush=True)
            try:
                thresholds = Thresholds(**job.thresholds)
            except (TypeError, SieveError) as exc:
                res = MaintainResult(table=job.table, column=job.column, requested=job.mode, status="error",
                                     error=f"bad thresholds {job.thresholds}: {exc}", error_type="SieveError")
            else:
                res = maintain_safely(spark, job.table, job.column, mode=job.mode, index_path=job.index_path,
                                      update_strategy=job.update_strategy, thresholds=thresholds,
                                      log=lambda m: print(f"sieve-job: {m}", flush=True), **job.options)
            print(f"sieve-job: {res.summary()}", flush=True)
            results.append(res)
    return results


def _session(master: str | None) -> Any:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("sieve-index")
    if master:
        builder = builder.master(master)
    builder = builder.config("spark.sql.session.timeZone", "UTC")
    return builder.getOrCreate()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="sieve-job", description="Maintain Sieve indexes from a JSON job spec.")
    p.add_argument("spec", help="job spec: a JSON file, or the JSON text itself")
    p.add_argument("result", help="result JSON file to write")
    p.add_argument("--master", default=None, help="Spark master when run without spark-submit")
    p.add_argument("--no-spark", action="store_true", help="path tables only: pyarrow on this machine")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        jobs, every = load_spec(args.spec)
    except (OSError, SieveError) as exc:
        print(f"sieve-job: error: {exc}", file=sys.stderr)
        return 2
    spark = None if args.no_spark else _session(args.master)
    try:
        results = run_jobs(spark, jobs, progress_seconds=every)
        write_results(args.result, results, getattr(spark, "version", None))
    finally:
        if spark is not None:
            spark.stop()
    return 0 if all(r.status == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
