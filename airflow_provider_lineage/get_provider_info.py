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
                "python-modules": ["airflow_provider_lineage.operators.spark_lineage",
                                   "airflow_provider_lineage.operators.spark_sql",
                                   "airflow_provider_lineage.operators.spark_pipelines"],
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
        "config": {
            "column_lineage": {
                "description": "Lineage as a guard (docs/guard.md): column tags and the masking policy.",
                "options": {
                    "tags_file": {
                        "description": "JSON file of column tags, same shape as the Variable lineage_column_tags.",
                        "version_added": "0.2.0", "type": "string", "example": "/etc/airflow/column_tags.json",
                        "default": None,
                    },
                    "stopped_by_masking": {
                        "description": "Tags a masking transformation stops (JSON list or comma-separated).",
                        "version_added": "0.2.0", "type": "string", "example": "pii,secret", "default": "pii",
                    },
                    "require_masked": {
                        "description": "require_masked for every SparkLineageSubmitOperator that does not set it.",
                        "version_added": "0.2.0", "type": "string", "example": "pii", "default": None,
                    },
                },
            },
        },
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
