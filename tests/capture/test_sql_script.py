"""capture/sql_script.py: the statement splitter, checked against Spark's own parser where it matters."""
from __future__ import annotations

from airflow_provider_lineage.capture.sql_script import split_statements

NESTED = "/* a /* b */ c; */ SELECT 1 AS one"


def test_nested_comments_are_one_comment() -> None:
    assert split_statements(NESTED) == [NESTED]
    assert split_statements(f"{NESTED}; SELECT 2 /* x /* y; */ z; */; /* only /* a */ comment; */") == [
        NESTED, "SELECT 2 /* x /* y; */ z; */"]


def test_unclosed_nested_comment_runs_to_the_end() -> None:
    assert split_statements("SELECT 1; /* a /* b */ c; SELECT 2") == ["SELECT 1"]


def test_spark_reads_the_nested_comment_as_one_statement(spark) -> None:
    """What the splitter keeps together, Spark's parser runs as one statement (a split one would not parse)."""
    (statement,) = split_statements(NESTED)
    assert [tuple(r) for r in spark.sql(statement).collect()] == [(1,)]
