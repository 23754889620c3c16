"""Run SQL statements the way the ``spark-sql`` CLI does, as a PySpark application (under the launcher).

``SparkSqlLineageOperator`` submits :mod:`.launcher` with this file as the application::

    spark-submit [options] .../capture/launcher.py .../capture/sql_script.py -e "INSERT ...; CREATE TABLE ..."
    spark-submit [options] .../capture/launcher.py .../capture/sql_script.py -f /path/to/script.sql

so every write the statements make is captured like any PySpark application's. As ``spark-sql``:

* the statements are split on ``;`` outside quotes, back-quoted identifiers and comments (nested bracketed
  comments too, as Spark's parser reads them: ``/* a /* b */ c; */`` is one comment), and run in order
  with ``spark.sql``; the first failing statement stops the script with a non-zero exit code;
* a query's rows are printed tab-separated to stdout (the task log), streamed, never collected at once;
* the session uses the Hive catalog when Spark has Hive support and ``spark.sql.catalogImplementation`` is
  not set (``spark-sql`` always does), so tables are where ``spark-sql`` would put them.

No Airflow imports (it runs in the Spark driver).
"""
from __future__ import annotations

import sys
from collections.abc import Iterator

USAGE = "usage: sql_script.py (-e 'SQL; ...' | -f FILE.sql)"


def split_statements(text: str) -> list[str]:
    """The statements of a SQL script: ``;`` outside quotes, back-quotes and comments ends a statement.

    Comments are kept inside a statement (Spark's parser skips them); statements holding only comments or
    blanks are dropped.
    """
    out: list[str] = []
    buf: list[str] = []
    i, n = 0, len(text)
    quote: str | None = None
    while i < n:
        c = text[i]
        if quote is not None:
            buf.append(c)
            if c == "\\" and quote != "`" and i + 1 < n:
                buf.append(text[i + 1])
                i += 2
                continue
            if c == quote:
                quote = None
            i += 1
            continue
        if c in ("'", '"', "`"):
            quote = c
            buf.append(c)
        elif text.startswith("--", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            buf.append(text[i:end])
            i = end
            continue
        elif text.startswith("/*", i):
            end = _comment_end(text, i)
            buf.append(text[i:end])
            i = end
            continue
        elif c == ";":
            out.append("".join(buf))
            buf = []
        else:
            buf.append(c)
        i += 1
    out.append("".join(buf))
    return [s.strip() for s in out if _has_code(s)]


def _has_code(statement: str) -> bool:
    """Whether a statement holds more than blanks and comments."""
    lines = []
    for line in statement.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("--"):
            lines.append(stripped)
    text = " ".join(lines)
    while "/*" in text:
        start = text.index("/*")
        text = text[:start] + text[_comment_end(text, start):]
    return bool(text.strip())


def _comment_end(text: str, start: int) -> int:
    """The index just past the bracketed comment opening at ``start``: Spark's comments nest
    (``/* a /* b */ c */`` is one comment); an unclosed one runs to the end of the text."""
    depth, i, n = 0, start, len(text)
    while i < n:
        if text.startswith("/*", i):
            depth += 1
            i += 2
        elif text.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    return n


def parse_args(argv: list[str]) -> str:
    """The SQL text of ``-e SQL`` or ``-f FILE``."""
    if len(argv) != 2 or argv[0] not in ("-e", "-f"):
        raise SystemExit(f"{USAGE}; got {argv!r}")
    if argv[0] == "-e":
        return argv[1]
    with open(argv[1], encoding="utf-8") as fh:
        return fh.read()


def _rows(df: object) -> Iterator[str]:
    for row in df.toLocalIterator():  # type: ignore[attr-defined]
        yield "\t".join("NULL" if v is None else str(v) for v in row)


def run(argv: list[str]) -> None:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    statements = split_statements(parse_args(argv))
    builder = SparkSession.builder
    if SparkConf().get("spark.sql.catalogImplementation", None) is None and _has_hive():
        builder = builder.enableHiveSupport()
    spark = builder.getOrCreate()
    try:
        for statement in statements:
            print(f"spark-sql> {statement}", flush=True)
            df = spark.sql(statement)
            if df.columns:  # a query, or a command's result rows (SHOW, SET, DESCRIBE): printed as spark-sql does
                for line in _rows(df):
                    print(line)
                sys.stdout.flush()
    finally:
        spark.stop()


def _has_hive() -> bool:
    try:
        from pyspark import SparkContext

        jvm = SparkContext._jvm
        if jvm is None:
            return True  # no gateway yet: builder.enableHiveSupport() checks the classes itself
        jvm.java.lang.Class.forName("org.apache.hadoop.hive.conf.HiveConf")
        return True
    except Exception:  # noqa: BLE001 - a Spark build without Hive
        return False


if __name__ == "__main__":
    run(sys.argv[1:])
