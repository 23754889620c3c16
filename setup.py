"""Packaging for airflow-provider-lineage.

The pins below are deliberate:

* ``apache-airflow-providers-apache-spark`` 6.x depends on ``pyspark-client``, which installs into
  the same ``pyspark/`` package tree as the full ``pyspark`` distribution. A mismatched pair
  overwrites ``pyspark/version.py`` and friends and breaks Python UDFs at run time, so both are
  pinned to one release.
* That release is 4.1.3, the newest one published as both ``pyspark`` and ``pyspark-client``
  whose Python UDFs work: 4.2.0 (the newest ``pyspark-client``) hangs Arrow-optimised Python UDFs
  over a Parquet table scan, and 4.2.1 / 4.3.0 have no ``pyspark-client`` of the same release
  (installing one over the other would mix two releases' Python files in one tree).
  ``tests/test_environment.py`` asserts one coherent release (driver files, workers'
  ``pyspark.zip``, jars, JVM) and runs Python, pandas and SQL UDFs over a Parquet table scan,
  in-process and through the launcher, each with a bounded wait.
* PySpark 4.1 does not support pandas 3 yet, so pandas stays below 3.
"""
from __future__ import annotations

from pathlib import Path

from setuptools import find_packages, setup

SPARK_VERSION = "4.1.3"

HERE = Path(__file__).parent

setup(
    name="airflow-provider-lineage",
    version="0.1.0",
    description=(
        "Apache Airflow provider: column-level OpenLineage lineage from Spark optimized plans, "
        "and Sieve learned data-skipping indexes for Parquet tables."
    ),
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.11",
    packages=find_packages(include=["airflow_provider_lineage", "airflow_provider_lineage.*"]),
    include_package_data=True,
    install_requires=[
        "apache-airflow>=3.0,<4",
        "apache-airflow-providers-apache-spark>=6.0,<7",
        f"pyspark=={SPARK_VERSION}",
        f"pyspark-client=={SPARK_VERSION}",
        "openlineage-python>=1.40,<2",
        "pendulum>=3.0",
        "numpy>=1.26",
        "pyarrow>=15",
        "pandas>=2.2,<3",
    ],
    extras_require={
        "openlineage": ["apache-airflow-providers-openlineage>=2.0"],
        "dev": [
            "apache-airflow-providers-openlineage>=2.0",
            "pytest>=8",
            "pytest-timeout>=2.3",
            "hypothesis>=6.100",
            "jsonschema>=4.20",
            "sqlglot>=25",
            "matplotlib>=3.8",
            "tpchgen-cli>=1.0",
            "ruff>=0.6",
        ],
    },
    entry_points={
        "apache_airflow_provider": [
            "provider_info=airflow_provider_lineage.get_provider_info:get_provider_info",
        ],
    },
    classifiers=[
        "Framework :: Apache Airflow",
        "Framework :: Apache Airflow :: Provider",
        "Programming Language :: Python :: 3.11",
        "License :: OSI Approved :: Apache Software License",
    ],
)
