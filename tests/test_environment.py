"""Guards the pyspark / pyspark-client overlap (see setup.py): both must be the same release."""
from __future__ import annotations

import importlib.metadata as md
from pathlib import Path


def test_pyspark_is_full_distribution_with_jars() -> None:
    import pyspark

    assert md.version("pyspark") == md.version("pyspark-client") == pyspark.__version__, (
        "pyspark and pyspark-client must be the same release: reinstall with ./dev.sh setup"
    )
    jars = Path(pyspark.__file__).parent / "jars"
    assert jars.is_dir() and any(j.name.startswith("spark-sql_") for j in jars.iterdir())


def test_python_udf_runs(spark) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    plus_one = F.udf(lambda x: x + 1, LongType())
    assert [r[0] for r in spark.range(3).select(plus_one("id")).collect()] == [1, 2, 3]


def test_provider_registered() -> None:
    eps = [ep for ep in md.entry_points(group="apache_airflow_provider") if ep.value.startswith("airflow_provider_lineage")]
    assert len(eps) == 1
    info = eps[0].load()()
    assert info["package-name"] == "airflow-provider-lineage" and info["name"] and info["description"]
