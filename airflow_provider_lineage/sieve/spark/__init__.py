"""Sieve where Spark users read: ``spark.read.format("sieve")`` with filter push-down (PySpark 4.1+).

Enable once, read as usual (every ``spark.read.parquet`` / SQL scan of an indexed table reads only
the files its indexes cannot exclude, through Spark's own Parquet reader; :mod:`.prune`):

.. code-block:: python

    from airflow_provider_lineage.sieve import spark as sieve_spark

    sieve_spark.enable(spark)
    spark.read.parquet("/data/sales").where("customer_id = 42").count()

Or read through the ``sieve`` data source explicitly:

.. code-block:: python

    sieve_spark.register(spark)
    df = spark.read.format("sieve").load("/data/sales").where("customer_id = 42")
    df.rdd.getNumPartitions()          # the candidate files, packed into tasks as spark.read.parquet packs

Conditions on indexed columns (``=``, ``IN``, ``<``/``<=``/``>``/``>=``, ``BETWEEN``, ``IS NULL``,
``<=>``, ``LIKE 'prefix%'`` on strings, and their conjunctions, on any column with an index under
``<table>/_sieve/``) choose the files through the index; conditions on partition columns prune
folders; everything else is filtered by Spark. The answer is always the full read's: a stale index
also reads the files added since it was built, and a missing or damaged one reads every file (the
reason is logged). See :mod:`.source` for the mechanics and ``docs/sieve.md`` for the guide.

This package imports pyspark; the rest of :mod:`airflow_provider_lineage.sieve` does not need it.
"""
from __future__ import annotations

import logging
from typing import Any

from ..errors import SieveError

MIN_SPARK = (4, 1)
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"

__all__ = ["MIN_SPARK", "NATIVE_SHARE", "check_spark_version", "disable", "enable", "load", "register"]


def enable(spark: Any) -> None:
    """Prune every Parquet scan of ``spark`` through the tables' Sieve indexes, read by Spark's own
    reader (a Catalyst rule: :mod:`.prune`). Enable once, read as usual."""
    from .prune import enable as _enable

    _enable(spark)


def disable(spark: Any) -> None:
    """Undo :func:`enable` for ``spark``."""
    from .prune import disable as _disable

    _disable(spark)


def __getattr__(name: str) -> Any:
    if name == "NATIVE_SHARE":
        from .source import NATIVE_SHARE

        return NATIVE_SHARE
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _version_tuple(version: str) -> tuple[int, int]:
    parts = version.split(".")
    try:
        return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)
    except (IndexError, ValueError):
        return (0, 0)


def check_spark_version(version: str) -> None:
    """Raise SieveError unless Spark ``version`` hands Python data sources their filters (4.1+)."""
    if _version_tuple(version) < MIN_SPARK:
        raise SieveError(
            f"Spark {version} gives Python data sources no filter push-down (it came in Spark 4.1), so "
            'spark.read.format("sieve") could not skip a single file: on this Spark use '
            "airflow_provider_lineage.sieve.read(spark, table, column, predicate), e.g. "
            "sieve.read(spark, '/data/sales', 'customer_id', sieve.Eq(42)), or upgrade to Spark 4.1")


def register(spark: Any, *, enable_pushdown: bool = True) -> None:
    """Register the ``sieve`` data source with ``spark`` and turn on filter push-down for Python
    data sources (``spark.sql.python.filterPushdown.enabled``, off by default in Spark 4.1).

    The source reads as this session reads Parquet at the time of the call (time zone, case
    sensitivity, rebase modes, partition type inference: :class:`..files.ReadConf`); call it again
    after changing those settings (:func:`load` passes their current values with each read).

    The setting is the session's, not the source's: Spark 4.1 has no per-source switch, so every Python
    data source of the session gets its filters from then on. A source that does not implement
    ``pushFilters`` is unaffected (PySpark hands the filters back to Spark); one that does gets them
    instead of failing with ``DATA_SOURCE_PUSHDOWN_DISABLED``, and is then exposed to Spark 4.1's one
    planned read per relation (see :mod:`.plans`), which this source guards against and others may not.
    ``enable_pushdown=False`` registers the source and leaves the setting alone (the session must have it
    on before a ``sieve`` read; Spark raises ``DATA_SOURCE_PUSHDOWN_DISABLED`` otherwise). The change is
    logged.

    Raises SieveError on Spark 3.5 / 4.0, whose Python data sources get no filters: use
    :func:`airflow_provider_lineage.sieve.read` there.
    """
    import pyspark

    check_spark_version(getattr(spark, "version", None) or pyspark.__version__)
    check_spark_version(pyspark.__version__)
    try:
        from pyspark.sql.datasource import Filter  # noqa: F401 - the 4.1 push-down API
    except ImportError:
        check_spark_version("4.0")
    from .source import session_source

    spark.dataSource.register(session_source(spark))  # the source with this session's read settings
    if not enable_pushdown:
        return
    before = str(spark.conf.get(PUSHDOWN_CONF, "false")).lower()
    if before != "true":
        spark.conf.set(PUSHDOWN_CONF, "true")
        logging.getLogger(__name__).info(
            "Sieve: %s set to true for this session: every Python data source of the session now gets its "
            "filters (register(spark, enable_pushdown=False) leaves the setting alone)", PUSHDOWN_CONF)


def load(spark: Any, table: str, where: Any = None, *, native_share: float | None = None,
         **options: str) -> Any:
    """``spark.read.format("sieve").load(table).where(where)``, or, when ``where`` keeps at least
    ``native_share`` of the table's files (default :data:`.source.NATIVE_SHARE`), the same query
    through ``spark.read.parquet`` (faster for wide scans; ``benchmarks/sieve/SPARK_SOURCE.md``).

    ``where`` is a SQL condition string or a Column (None: the whole table, read natively).
    ``options`` are the source's (``freshness``, ``columns``, ``indexPaths``, and the read settings
    of :class:`..files.ReadConf`, by default the session's current ones). A table with a VARIANT
    column is read natively (the sieve reader cannot decode shredded VARIANT values). The
    choice plans the Sieve scan once (an index lookup, no Spark job). The source must be registered
    (:func:`register`).
    """
    from ..files import ReadConf
    from ..table import list_table_paths, spark_path
    from .source import NATIVE_SHARE, packing_options, table_root

    share = NATIVE_SHARE if native_share is None else native_share
    root = table_root({"path": table})
    given = {k.lower() for k in options}  # the session's settings, now (the caller's options win)
    session = {**ReadConf.from_spark(spark).to_options(), **packing_options(spark)}
    options = {**{k: v for k, v in session.items() if k.lower() not in given}, **options}

    def native() -> Any:
        df = spark.read.parquet(spark_path(root))
        if "columns" in options:
            df = df.select(*[c.strip() for c in options["columns"].split(",") if c.strip()])
        return df if where is None else df.where(where)

    if where is None:
        return native()
    df = spark.read.format("sieve").options(**options).load(table)
    if any(type(f.dataType).__name__ == "VariantType" for f in df.schema.fields):
        return native()  # the sieve reader cannot decode shredded VARIANT values; Spark's reader can
    df = df.where(where)
    # the files the scan reads: planned once with one file per task (an open cost above any split size)
    one_each = {k: v for k, v in options.items() if k.lower() not in ("opencostinbytes", "maxpartitionbytes")}
    files = spark.read.format("sieve").options(**one_each, openCostInBytes=str(1 << 62), maxPartitionBytes="1") \
        .load(table).where(where).rdd.getNumPartitions()
    total = len(list_table_paths(root))
    if total and files >= share * total:
        return native()
    return df
