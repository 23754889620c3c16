"""Build an index over N distinct keys in a Spark driver capped at 512 MB (run as a subprocess).

Usage: python bounded_build_script.py WORKDIR N_KEYS [segments|hashed]
``hashed``: random 64-bit keys (a hash of the id) built with ``structure="hashed"``: the Spark job's
(page, hash, file) rows stream to the driver page by page.
Prints one JSON line: keys indexed, segments, index bytes, seconds, Python peak RSS, JVM max heap.
"""
from __future__ import annotations

import json
import resource
import sys
import time


def main(workdir: str, n: int, structure: str = "segments") -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from airflow_provider_lineage import sieve as S

    spark = (SparkSession.builder.master("local[2]").appName("sieve-bounded")
             .config("spark.driver.memory", "512m").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "8").config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    max_heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    root = f"{workdir}/t"
    # Keys 0, 3, 6, ... in 16 files; neighbouring keys mostly in different files (a steep R, so
    # segments close at the size cap and every segment has many blocks).
    (spark.range(0, n, numPartitions=16).select((F.col("id") * 3).alias("k"), (F.col("id") % 7).alias("v"))
     .repartition(16, F.col("k") % 16).write.mode("overwrite").parquet(root))
    if structure == "hashed":  # random keys instead: xxhash64 of the key, one distinct key per row
        root = f"{workdir}/h"
        (spark.range(0, n, numPartitions=16).select(F.xxhash64(F.col("id")).alias("k"), (F.col("id") % 7).alias("v"))
         .write.mode("overwrite").parquet(root))
        t0 = time.monotonic()
        stats = S.build(spark, root, "k", rows_per_partition=500_000, engine="spark", structure="hashed")
        secs = time.monotonic() - t0
        idx = S.open_index(root, "k")
        probe = spark.read.parquet(root).limit(1).collect()[0].k
        assert idx.candidates(S.Eq(probe))
        print(json.dumps({"keys": stats.keys, "structure": stats.structure, "index_bytes": stats.index_bytes,
                          "engine": idx.manifest.build_stats.get("engine"), "build_seconds": round(secs, 1),
                          "python_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
                          "jvm_max_heap_mb": max_heap // 2**20}))
        spark.stop()
        return
    t0 = time.monotonic()
    # error_bound=8: this layout's location set changes at every key in a 16-key cycle, so the
    # default bound 0 closes a segment every 16 keys (500,000 segments at 8 M keys) and the segment
    # list the driver keeps (about 2.3 KB per segment) would dominate what this test measures.
    stats = S.build(spark, root, "k", rows_per_partition=500_000, error_bound=8, engine="spark")
    secs = time.monotonic() - t0
    idx = S.open_index(root, "k")
    assert idx.candidates(S.Eq(3 * (n // 2)))
    print(json.dumps({"keys": stats.keys, "segments": stats.segments, "blocks": stats.blocks,
                      "index_bytes": stats.index_bytes, "bytes_per_key": round(stats.bytes_per_key, 3),
                      "build_seconds": round(secs, 1),
                      "python_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
                      "jvm_max_heap_mb": max_heap // 2**20,
                      "partitions": idx.manifest.build_stats.get("partitions")}))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), *sys.argv[3:4])
