"""Known-broken Spark combinations on the driver, named in the task log before they bite (no Airflow imports).

The launcher runs in the driver under whatever pyspark the driver's Python imports (a Spark
distribution's ``pyspark.zip``, or a pip-installed pyspark / pyspark-client), while the job runs on
the JVM of the Spark that spark-submit started. Two combinations are known to break:

* the driver's pyspark Python files are another release than the JVM's Spark: Python UDFs, pandas
  conversions and Spark Connect calls fail or hang in ways that do not name the cause;
* pyspark 4.2.0: Arrow-optimised Python UDFs hang over a Parquet scan (fixed in 4.2.1). The launcher
  turns ``spark.sql.execution.pythonUDF.arrow.enabled`` off for the run (plain Python UDFs then run
  without Arrow, same results) and says so; ``pandas_udf`` / ``useArrow=True`` UDFs stay at risk.
"""
from __future__ import annotations

import re
from typing import Any

ARROW_UDF_CONF = "spark.sql.execution.pythonUDF.arrow.enabled"
#: pyspark releases whose Arrow-optimised Python UDFs hang over a Parquet scan.
ARROW_UDF_HANG = frozenset({"4.2.0"})


def release(version: str) -> tuple[int, ...]:
    """``"4.1.3"`` -> ``(4, 1, 3)``; ``"4.2.0.dev1"`` -> ``(4, 2, 0)``."""
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


def mismatch(python_version: str, jvm_version: str) -> str | None:
    """The message for a driver pyspark that is not the JVM's Spark release, else None."""
    if release(python_version) == release(jvm_version):
        return None
    how = ("will break Python UDFs and pandas conversions" if release(python_version)[:2] != release(jvm_version)[:2]
           else "may break Python UDFs")
    return (f"the driver's pyspark is {python_version} but the job runs on Spark {jvm_version}: this {how}. "
            f"Fix: run the driver with Spark {jvm_version}'s own Python files (a Spark distribution's spark-submit "
            f"puts $SPARK_HOME/python/lib/pyspark.zip first on the driver's PYTHONPATH), or install "
            f"pyspark=={jvm_version} (and the same pyspark-client) where the driver's Python runs")


def check_session(spark: Any, python_version: str) -> list[str]:
    """Warnings for this session (a version mismatch, pyspark 4.2.0); may turn Arrow Python UDFs off."""
    warnings = []
    problem = mismatch(python_version, str(spark.version))
    if problem:
        warnings.append(problem)
    if python_version in ARROW_UDF_HANG or str(spark.version) in ARROW_UDF_HANG:
        text = (f"pyspark {python_version} / Spark {spark.version}: Arrow-optimised Python UDFs hang over a "
                "Parquet scan in 4.2.0 (fixed in 4.2.1): upgrade to Spark 4.2.1 or later")
        if str(spark.conf.get(ARROW_UDF_CONF, "false")).lower() == "true":
            spark.conf.set(ARROW_UDF_CONF, "false")
            text += f"; {ARROW_UDF_CONF} was turned off for this run"
        warnings.append(text + "; pandas_udf and useArrow=True UDFs can still hang on this release")
    return warnings
