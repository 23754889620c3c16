"""The transparent Sieve rule (``sieve.spark.enable``) under one Spark release: ``compat.py --sieve-prune`` runs
this with the Python of a venv holding ``pyspark==Y`` (and pyarrow, numpy), the project on PYTHONPATH.

    python sieve_prune.py OUT.json

A 12-file table (keys sorted across files, a NULL in one), a partitioned table and a catalog table
(``saveAsTable``), each indexed; for each filter kind the rows with ``enable`` must equal the rows without, and the
files read (``inputFiles()``) the index's candidates. Writes ``{"spark", "scala", "cases": [...], "ok"}``.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve import spark as sieve_spark
from airflow_provider_lineage.sieve.predicates import Eq, In, IsNull, Range
from airflow_provider_lineage.sieve.spark import prune

CASES = [("k = 17", Eq(17)), ("k IN (3, 250, 9999)", In([3, 250, 9999])), ("k BETWEEN 100 AND 130", Range(100, 130)),
         ("k > 400", Range(400, None, False)), ("k IS NULL", IsNull()), ("k <=> 42", Eq(42))]


def rows(df: Any) -> list[str]:
    return sorted(repr(tuple(r)) for r in df.collect())


def local(paths: list[str]) -> set[str]:
    return {os.path.normpath(p.removeprefix("file:")) for p in paths}


def main(out: str) -> int:
    base = tempfile.mkdtemp(prefix="sieve-prune-compat-")
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "1").config("spark.sql.warehouse.dir", f"{base}/wh")
             .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={base}").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    result: dict[str, Any] = {"spark": spark.version, "cases": []}
    try:
        result["scala"] = str(spark.sparkContext._jvm.scala.util.Properties.versionNumberString())
        root = f"{base}/t"
        os.makedirs(root)
        for i in range(12):
            ks = list(range(i * 40, (i + 1) * 40))
            if i == 3:
                ks[0] = None
            pq.write_table(pa.table({"k": pa.array(ks, pa.int64()), "v": pa.array(range(40), pa.int64())}),
                           f"{root}/part-{i:03d}.parquet")
        S.build(None, root, "k")
        proot = f"{base}/pt"
        spark.range(0, 300, 1, 3).selectExpr("id AS k", "id % 3 AS p").write.partitionBy("p").parquet(proot)
        S.build(None, proot, "k")
        spark.range(0, 600, 1, 6).selectExpr("id AS k", "id % 5 AS v").write.saveAsTable("sieve_prune_compat")
        croot = os.path.join(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"), "sieve_prune_compat")
        S.build(None, croot, "k")
        checks: list[tuple[str, str, Any, Any]] = [
            (f"parquet(t) WHERE {c}", root, pred, lambda c=c: spark.read.parquet(root).where(c)) for c, pred in CASES]
        checks.append(("partitioned WHERE k = 17", proot, Eq(17), lambda: spark.read.parquet(proot).where("k = 17")))
        checks.append(("SQL catalog table WHERE k IN (5, 550)", croot, In([5, 550]),
                       lambda: spark.sql("SELECT k, v FROM sieve_prune_compat WHERE k IN (5, 550)")))
        sieve_spark.enable(spark)
        for name, table, pred, query in checks:
            case: dict[str, Any] = {"case": name}
            try:
                df = query()
                want = set(S.open_index(table, "k").candidates(pred))
                got = local(df.inputFiles())
                pruned = rows(df)
                sieve_spark.disable(spark)
                plain = rows(query())
                sieve_spark.enable(spark)
                case.update(files=len(got), candidates=len(want), narrowing=prune.narrowings(df),
                            same_rows=pruned == plain, same_files=got == want)
            except Exception as exc:  # noqa: BLE001 - reported per case
                case["error"] = "".join(traceback.format_exception_only(type(exc), exc))[-1500:]
            result["cases"].append(case)
    except Exception as exc:  # noqa: BLE001 - reported
        result["error"] = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-3000:]
    result["ok"] = bool(result["cases"]) and "error" not in result and all(
        c.get("same_rows") and c.get("same_files") for c in result["cases"])
    with open(out, "w") as fh:
        json.dump(result, fh, indent=1)
    spark.stop()
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
