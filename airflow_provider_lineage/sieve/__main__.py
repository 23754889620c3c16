"""Command line: ``python -m airflow_provider_lineage.sieve {build,sync,compact,rebuild,query,stats,status}``.

Errors print one line ``sieve: error: <problem>: <fix>`` and exit with code 2.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .build import DEFAULT_ERROR_BOUND
from .errors import IndexUnavailable, SieveError
from .predicates import Eq, In, IsNull, Predicate, Range

EPILOG = """examples:
  python -m airflow_provider_lineage.sieve build /data/lineitem l_shipdate --error-bound 0
  python -m airflow_provider_lineage.sieve query /data/lineitem l_shipdate --eq 1995-03-01
  python -m airflow_provider_lineage.sieve query /data/lineitem l_shipdate --range 1995-01-01:1995-02-01
  python -m airflow_provider_lineage.sieve sync /data/lineitem l_shipdate
  python -m airflow_provider_lineage.sieve stats /data/lineitem l_shipdate

TABLE is a directory path, a file: URI, or a catalog table name (needs Spark; for query/stats/
compact/status pass --index-path). Values are parsed by the column type: integers, ISO dates
(2024-01-31), ISO timestamps (2024-01-31T12:00:00, naive = UTC for TIMESTAMP columns), decimals."""


def _spark(master: str) -> Any:
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master(master).appName("sieve-cli")
            .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
            .config("spark.sql.session.timeZone", "UTC").getOrCreate())


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m airflow_provider_lineage.sieve",
                                description="Sieve learned data-skipping index for Parquet tables.",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("table", help="table directory, file: URI or catalog table name")
        sp.add_argument("column", help="indexed column")
        sp.add_argument("--index-path", help="index folder (default <table>/_sieve/<column>)")

    def sparky(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
        sp.add_argument("--no-spark", action="store_true",
                        help="path tables only: read keys with pyarrow on this machine (small tables)")

    b = sub.add_parser("build", help="build a new index version from the table's files")
    common(b)
    sparky(b)
    b.add_argument("--error-bound", type=int, default=DEFAULT_ERROR_BOUND,
                   help=f"segment error bound e (default {DEFAULT_ERROR_BOUND}; larger = cheaper syncs, more files read)")
    b.add_argument("--max-segment-keys", type=int, default=65536, help="segment size cap (default 65536)")
    b.add_argument("--mode", choices=("cow", "mor"), default="cow",
                   help="update mode: cow = copy-on-write, mor = merge-on-read (default cow)")
    b.add_argument("--keep-versions", type=int, default=3, help="index versions kept (default 3)")
    s = sub.add_parser("sync", help="update the index for added/removed/rewritten files (builds if none)")
    common(s)
    sparky(s)
    r = sub.add_parser("rebuild", help="build anew with the existing index's parameters")
    common(r)
    sparky(r)
    c = sub.add_parser("compact", help="fold merge-on-read deltas into segments (no Spark)")
    common(c)
    q = sub.add_parser("query", help="print candidate files as JSON lines")
    common(q)
    g = q.add_mutually_exclusive_group(required=True)
    g.add_argument("--eq", metavar="V", help="column = V")
    g.add_argument("--in", dest="in_", metavar="V1,V2,...", help="column IN (V1, V2, ...)")
    g.add_argument("--range", metavar="LOW:HIGH", help="LOW <= column <= HIGH, written LOW:HIGH or LOW..HIGH (timestamps: LOW..HIGH); a side may be empty")
    g.add_argument("--is-null", action="store_true", help="column IS NULL")
    q.add_argument("--exclusive", action="store_true", help="with --range: exclusive bounds")
    st = sub.add_parser("stats", help="print index statistics as JSON")
    common(st)
    ms = sub.add_parser("status", help="print the maintenance status (recommendation) as JSON")
    common(ms)
    return p


def _predicate(args: argparse.Namespace, idx: Any) -> Predicate:
    kt = idx.key_type
    try:
        if args.is_null:
            return IsNull()
        if args.eq is not None:
            return Eq(kt.parse(args.eq))
        if args.in_ is not None:
            return In([kt.parse(v.strip()) for v in args.in_.split(",") if v.strip()])
        if ".." in args.range or kt.kind in ("timestamp", "timestamp_ntz"):
            lo, hi = _split_ts_range(args.range)
        elif ":" in args.range:
            lo, hi = args.range.split(":", 1)
        else:
            raise ValueError("a range is written LOW:HIGH or LOW..HIGH")
        return Range(kt.parse(lo) if lo else None, kt.parse(hi) if hi else None,
                     not args.exclusive, not args.exclusive)
    except (ValueError, ArithmeticError) as exc:
        raise SieveError(f"cannot parse the query value for a {kt.type_name} column ({exc}): "
                         "use integers, ISO dates/timestamps or decimals; ranges as LOW:HIGH") from None


def _split_ts_range(text: str) -> tuple[str, str]:
    """Timestamps contain ':' themselves, so their ranges are written LOW..HIGH."""
    if ".." not in text:
        raise ValueError("timestamp ranges are written LOW..HIGH")
    lo, hi = text.split("..", 1)
    return lo, hi


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from . import build, compact, maintenance_status, open_index, rebuild, sync

    try:
        spark = None
        if args.command in ("build", "sync", "rebuild") and not args.no_spark:
            spark = _spark(args.master)
        if args.command == "build":
            out: Any = build(spark, args.table, args.column, index_path=args.index_path,
                             error_bound=args.error_bound, max_segment_keys=args.max_segment_keys,
                             mode=args.mode, keep_versions=args.keep_versions).to_dict()
        elif args.command == "sync":
            out = sync(spark, args.table, args.column, index_path=args.index_path).to_dict()
        elif args.command == "rebuild":
            out = rebuild(spark, args.table, args.column, index_path=args.index_path).to_dict()
        elif args.command == "compact":
            out = compact(args.table, args.column, index_path=args.index_path).to_dict()
        elif args.command == "stats":
            out = open_index(args.table, args.column, index_path=args.index_path).stats().to_dict()
        elif args.command == "status":
            out = maintenance_status(args.table, args.column, index_path=args.index_path).to_dict()
        else:
            idx = open_index(args.table, args.column, index_path=args.index_path)
            if idx.is_stale():
                print("sieve: warning: the table changed since the index was built; answers cover the "
                      "indexed files only: run sync", file=sys.stderr)
            for path in idx.candidates(_predicate(args, idx)):
                print(json.dumps({"file": path}))
            return 0
        print(json.dumps(out, indent=1, default=str))
        return 0
    except (SieveError, IndexUnavailable) as exc:
        print(f"sieve: error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"sieve: error: {exc}: check the path", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
