"""What the capture's SparkContext listener (capture/driver_jobs.py ``DriverJobs``) costs a job of many tiny tasks.

Runs ``spark.range(0, n, 1, numPartitions=P).count()`` for each P with the listener

* ``off``: not registered;
* ``python``: the Python object registered itself (py4j calls Python for every listener event);
* ``forwarder``: behind the JVM filter of capture/listener_forwarder.py (the capture's default),

interleaved round by round (the machine is shared: neighbouring runs see the same load), and prints the job's wall
time, the time until Spark's listener bus has delivered everything (the listener's backlog) and the number of Python
callbacks (counted in the Python object).

    python benchmarks/capture/listener_events.py [--partitions 2000,20000] [--rounds 2] [--master local[2]]
"""
from __future__ import annotations

import argparse
import statistics
import time

MODES = ("off", "python", "forwarder")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", default="2000,20000")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()

    from pyspark.sql import SparkSession

    from airflow_provider_lineage.capture import listener_forwarder
    from airflow_provider_lineage.capture.session import drain_bus, install

    spark = (SparkSession.builder.master(args.master).appName("listener-events-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    sc = spark.sparkContext
    listener = install(spark, lambda _record: None)
    jobs = listener.driver_jobs
    jobs.unregister()  # registered per mode below
    probe = listener_forwarder.register(sc, jobs, job_starts=listener_forwarder.JOBS_NONE)
    print(f"forwarder compiled: {listener_forwarder.is_forwarder(probe)}")
    listener_forwarder.unregister(sc, probe)
    spark.range(0, 100, 1, numPartitions=10).count()  # warm up
    results: dict[tuple[int, str], list[tuple[float, float, int]]] = {}
    for parts in [int(p) for p in args.partitions.split(",")]:
        for rnd in range(args.rounds):
            order = MODES if rnd % 2 == 0 else tuple(reversed(MODES))
            for mode in order:
                added = None
                if mode == "python":
                    added = listener_forwarder.python_proxy(sc, jobs)
                    sc._jsc.sc().addSparkListener(added)
                elif mode == "forwarder":
                    added = listener_forwarder.register(sc, jobs, other_events=("SparkListenerSQLExecutionEnd",),
                                                        job_starts=listener_forwarder.JOBS_OUTSIDE_SQL)
                drain_bus(sc, 600)
                before = jobs.callbacks
                t0 = time.perf_counter()
                spark.range(0, parts * 10, 1, numPartitions=parts).count()
                job_s = time.perf_counter() - t0
                drain_bus(sc, 600)
                drained_s = time.perf_counter() - t0
                calls = jobs.callbacks - before
                if added is not None:
                    listener_forwarder.unregister(sc, added)
                results.setdefault((parts, mode), []).append((job_s, drained_s, calls))
                print(f"P={parts:>6} round {rnd} {mode:<9} job {job_s:7.2f}s  bus drained {drained_s:7.2f}s  "
                      f"python callbacks {calls}", flush=True)
    print("\nmedians:")
    print(f"{'tasks':>7} {'listener':<10} {'job s':>8} {'drained s':>10} {'py callbacks':>13}")
    for (parts, mode), runs in results.items():
        print(f"{parts:>7} {mode:<10} {statistics.median(r[0] for r in runs):8.2f} "
              f"{statistics.median(r[1] for r in runs):10.2f} {statistics.median(r[2] for r in runs):13.0f}")
    spark._jsparkSession.listenerManager().unregister(listener)
    listener.close()
    spark.stop()


if __name__ == "__main__":
    main()
