"""Provider metadata read by Airflow through the ``apache_airflow_provider`` entry point."""
from __future__ import annotations

from typing import Any


def get_provider_info() -> dict[str, Any]:
    from airflow_provider_lineage import __version__

    return {
        "package-name": "airflow-provider-lineage",
        "name": "Spark Lineage and Sieve Index",
        "description": (
            "Column-level OpenLineage lineage captured from Spark optimized plans, and Sieve "
            "learned data-skipping indexes for Parquet tables."
        ),
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "Spark Lineage",
                "external-doc-url": "https://openlineage.io/docs/spec/facets/dataset-facets/column_lineage_facet",
                "tags": ["software"],
            },
            {
                "integration-name": "Sieve Index",
                "tags": ["software"],
            },
        ],
        "operators": [
            {
                "integration-name": "Spark Lineage",
                "python-modules": ["airflow_provider_lineage.operators.spark_lineage"],
            },
            {
                "integration-name": "Sieve Index",
                "python-modules": ["airflow_provider_lineage.operators.sieve"],
            },
        ],
        "sensors": [
            {
                "integration-name": "Sieve Index",
                "python-modules": ["airflow_provider_lineage.sensors.sieve"],
            },
        ],
        "plugins": [
            {
                "name": "column_lineage",
                "plugin-class": "airflow_provider_lineage.plugins.column_lineage.ColumnLineagePlugin",
            },
        ],
        "triggers": [
            {
                "integration-name": "Sieve Index",
                "python-modules": ["airflow_provider_lineage.triggers.sieve"],
            },
        ],
    }
