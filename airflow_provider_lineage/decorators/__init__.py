"""TaskFlow decorators (``@task.pyspark_lineage``) over the same capture core as the operators."""
