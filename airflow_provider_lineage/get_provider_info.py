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
                                   "airflow_provider_lineage.operators.pyspark",
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
                    "tags": {
                        "description": "Column tags as JSON, same shape as the Variable lineage_column_tags; "
                                       "read by each process from its own configuration, so no task can change it "
                                       "(docs/guard.md).",
                        "version_added": "0.2.0", "type": "string", "default": None,
                        "example": '{"datasets": [{"namespace": "file", "name": "/data/customers", '
                                   '"columns": {"email": ["pii"]}}]}',
                    },
                    "tags_variable": {
                        "description": "Airflow Variable the column tags are also read from; empty or none: "
                                       "no Variable (any task may overwrite a Variable through the task execution "
                                       "API).",
                        "version_added": "0.2.0", "type": "string", "example": "none",
                        "default": "lineage_column_tags",
                    },
                    "tag_map_private_key": {
                        "description": "Scheduler only: Ed25519 private key (PEM file path or text) that signs the "
                                       "published tag map lineage_column_tags_estate.",
                        "version_added": "0.2.0", "type": "string", "example": "/etc/airflow/tag_map.key",
                        "default": None, "sensitive": True,
                    },
                    "tag_map_public_key": {
                        "description": "Workers: the matching public key (PEM file path or text); when set, a "
                                       "published tag map without a valid signature fails require_masked closed.",
                        "version_added": "0.2.0", "type": "string", "example": "/etc/airflow/tag_map.pub",
                        "default": None,
                    },
                    "tags_file": {
                        "description": "JSON file of column tags, same shape as the Variable lineage_column_tags.",
                        "version_added": "0.2.0", "type": "string", "example": "/etc/airflow/column_tags.json",
                        "default": None,
                    },
                    "stopped_by_masking": {
                        "description": "Tags a masking transformation stops (JSON list or comma-separated).",
                        "version_added": "0.2.0", "type": "string", "example": "pii,secret", "default": "pii",
                    },
                    "indirect_lineage": {
                        "description": "Where dataset-wide INDIRECT edges (FILTER, JOIN, GROUP_BY, SORT) go in the "
                                       "columnLineage facet, for every SparkLineageSubmitOperator that does not set "
                                       "indirect_lineage: dataset (once per output, compact), fields (on every "
                                       "output field: what Marquez shows) or both. Unset: both when the task's "
                                       "events go to Marquez's endpoint (an http transport to api/v1/lineage), "
                                       "which ignores the dataset-level list; else dataset.",
                        "version_added": "0.2.0", "type": "string", "example": "fields", "default": None,
                    },
                    "sieve_badge_roots": {
                        "description": "api-server: local folders (comma-separated) under which the Column lineage "
                                       "view checks a Sieve index live (table listing, manifest, checksums). Outside "
                                       "them a badge shows what the index task recorded: the api-server reads no "
                                       "path a task chose (docs/ui.md).",
                        "version_added": "0.2.0", "type": "string", "example": "/data/lake,/data/marts",
                        "default": "",
                    },
                    "sieve_badge_max_files": {
                        "description": "api-server: a table under sieve_badge_roots with more entries than this is not "
                                       "walked for a badge (the recorded state is shown).",
                        "version_added": "0.2.0", "type": "integer", "example": "10000", "default": "10000",
                    },
                    "sieve_badge_timeout": {
                        "description": "api-server: seconds the live checks of one badge request may take in all.",
                        "version_added": "0.2.0", "type": "float", "example": "5", "default": "5",
                    },
                    "api_admission_limit": {
                        "description": "api-server: how many reader requests (/api/v2/, /ui/, /column-lineage/) "
                                       "each api-server worker runs at once; the others wait in arrival order. "
                                       "Airflow's list routes resolve 27-39 sync dependencies, each a thread-pool "
                                       "hop that waits behind every other request in flight, so a bounded number "
                                       "in flight answers many concurrent readers sooner. The task execution API, "
                                       "/auth/, log streaming and the health/version probes are never limited. "
                                       "0: no limit (docs/ui.md).",
                        "version_added": "0.2.0", "type": "integer", "example": "8", "default": "0",
                    },
                    "api_admission_wait_timeout": {
                        "description": "api-server: seconds a request waits for its turn under api_admission_limit "
                                       "before it is answered 503 with Retry-After.",
                        "version_added": "0.2.0", "type": "float", "example": "30", "default": "30",
                    },
                    "require_masked": {
                        "description": "require_masked for every SparkLineageSubmitOperator that does not set it.",
                        "version_added": "0.2.0", "type": "string", "example": "pii", "default": None,
                    },
                },
            },
        },
        "task-decorators": [
            {
                "class-name": "airflow_provider_lineage.decorators.pyspark_lineage.pyspark_lineage_task",
                "name": "pyspark_lineage",
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
