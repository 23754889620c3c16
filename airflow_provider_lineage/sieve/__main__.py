"""Command line: ``python -m airflow_provider_lineage.sieve {build,sync,compact,rebuild,query,stats,status}``.

Errors print one line ``sieve: error: <problem>: <fix>`` and exit with code 2. ``query`` prints the
candidate files as JSON lines on stdout and a one-line summary on stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any

from .build import DEFAULT_ERROR_BOUND
from .errors import IndexUnavailable, SieveError
from .fingerprints import DEFAULT_FPP
from .predicates import Eq, In, IsNull, Predicate, Range

EPILOG = """examples:
  python -m airflow_provider_lineage.sieve build /data/lineitem l_shipdate --error-bound 0
  python -m airflow_provider_lineage.sieve query /data/lineitem l_shipdate --eq 1995-03-01
  python -m airflow_provider_lineage.sieve query /data/lineitem l_shipdate --range 1995-01-01:1995-02-01
  python -m airflow_provider_lineage.sieve query /data/t code --range -10 -5      (or --range=-10:-5)
  python -m airflow_provider_lineage.sieve build db.sales day --conf spark.sql.warehouse.dir=/wh
  python -m airflow_provider_lineage.sieve sync /data/lineitem l_shipdate
  python -m airflow_provider_lineage.sieve stats /data/lineitem l_shipdate

TABLE is a directory path, a file: URI, an object-store URI (s3://, gs://, abfs://, hdfs://;
credentials from the environment, e.g. AWS_*), or a catalog table name (needs Spark; for
query/stats/compact/status pass --index-path). Values are parsed by the column type: integers, ISO dates
(2024-01-31), ISO timestamps (2024-01-31T12:00:00, naive = UTC for TIMESTAMP columns), decimals,
text for strings (--eq C-000123; ranges --range C-1..C-2 or --range C-1 C-2), hex for binary.

query answers are stale-safe: files added or rewritten since the index version are listed too
(they are unindexed), removed files never; stderr gets one line such as
"sieve: 3 of 200 files (3 from the index, 0 unindexed)". --freshness names compares file names only
(cheaper; blind to files rewritten in place); --freshness footer also compares every file's Parquet
footer checksum (an index built with --freshness footer: sees a rewrite that kept size and mtime);
--assume-fresh skips the table listing.
Ranges: --range LOW:HIGH, --range LOW..HIGH, --range LOW,HIGH or --range LOW HIGH; negative
numbers work in every form (--range -10 -5, --range -10:-5, --range=-10,-5); a side may be
empty (--range 5: , --range :5) to leave it unbounded."""


QUERY_EPILOG = """ranges (a side may be empty to leave it unbounded):
  --range 10:20   --range 10,20   --range 10..20   --range 10 20
  --range -10 -5  --range -10:-5  --range=-10,-5   (negative numbers)
  --range 2024-01-01T00:00:00..2024-01-02T00:00:00  (timestamps: LOW..HIGH or LOW HIGH)
  --range C-000100..C-000199   --range "C 1" "C 2"   (strings: LOW..HIGH or LOW HIGH)
output: one {"file": ...} JSON line per candidate on stdout, then on stderr one line such as
  sieve: 3 of 200 files (3 from the index, 0 unindexed)
Files added or rewritten since the index version are candidates (unindexed), removed files never;
--freshness names compares file names only (for tables whose files are never rewritten in place);
--freshness footer also compares every file's Parquet footer checksum (index built with --freshness footer);
--assume-fresh answers from the index alone (only right after a sync)."""


def _spark(master: str, conf: list[str] | None = None) -> Any:
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master).appName("sieve-cli")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.session.timeZone", "UTC"))
    for k, v in _confs(conf or []):
        builder = builder.config(k, v)
    return builder.getOrCreate()


def _confs(items: list[str]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise SieveError(f"--conf {item!r} is not KEY=VALUE: write e.g. --conf spark.sql.warehouse.dir=/wh")
        out.append((k.strip(), v))
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=_prog(),
                                description="Sieve learned data-skipping index for Parquet tables.",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("table", help="table directory, file: or s3:// (gs://, ...) URI, or catalog table name")
        sp.add_argument("column", help="indexed column")
        sp.add_argument("--index-path", help="index folder (default <table>/_sieve/<column>)")

    def sparky(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
        sp.add_argument("--no-spark", action="store_true",
                        help="path tables only: read keys with pyarrow on this machine (small tables)")
        sp.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="Spark setting for the session (repeatable), e.g. for catalog tables: "
                             "--conf spark.sql.warehouse.dir=/wh --conf spark.sql.catalogImplementation=hive")

    b = sub.add_parser("build", help="build a new index version from the table's files")
    common(b)
    sparky(b)
    b.add_argument(
        "--error-bound",
        type=int,
        default=DEFAULT_ERROR_BOUND,
        help=f"segment error bound e (default {DEFAULT_ERROR_BOUND}; larger = cheaper syncs, more files read)",
    )
    b.add_argument("--max-segment-keys", type=int, default=65536, help="segment size cap (default 65536)")
    b.add_argument("--mode", choices=("cow", "mor"), default="cow",
                   help="update mode: cow = copy-on-write, mor = merge-on-read (default cow)")
    b.add_argument("--keep-versions", type=int, default=3, help="index versions kept (default 3)")
    b.add_argument("--engine", choices=("auto", "spark", "pyarrow"), default="auto",
                   help="how keys are read: pyarrow on this machine or a Spark job (default auto: pyarrow "
                        "up to 8 M rows)")
    b.add_argument("--structure", choices=("auto", "segments", "hashed", "fuse", "pages"), default="auto",
                   help="index structure: segments (ordered keys), hashed (keys without order: UUIDs, random "
                        "ids; the keys in one file each go to a retrieval structure when numba is installed and "
                        "that is smaller), auto (default: chosen from a sample of the column), or a hashed index "
                        "forced to use the retrieval structure (fuse) or fingerprint pages only (pages)")
    b.add_argument("--fpp", type=float, default=DEFAULT_FPP,
                   help=f"hashed: share of absent keys that may read a file (default {DEFAULT_FPP})")
    b.add_argument("--freshness", choices=("stat", "footer"), default="stat",
                   help="footer = record every file's Parquet footer checksum, for --freshness footer checks "
                        "(sees a file rewritten with the same size and its mtime set back); default stat")
    s = sub.add_parser("sync", help="update the index for added/removed/rewritten files (builds if none)")
    common(s)
    sparky(s)
    s.add_argument("--freshness", choices=("stat", "footer"), default=None,
                   help="footer = compare and record footer checksums (rebuilds an index without them); "
                        "default: as the index records")
    r = sub.add_parser("rebuild", help="build anew with the existing index's parameters")
    common(r)
    sparky(r)
    c = sub.add_parser("compact", help="fold merge-on-read deltas into segments (no Spark)")
    common(c)
    q = sub.add_parser("query", help="print candidate files as JSON lines (summary on stderr)",
                       epilog=QUERY_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    common(q)
    g = q.add_mutually_exclusive_group(required=True)
    g.add_argument("--eq", metavar="V", help="column = V")
    g.add_argument("--in", dest="in_", metavar="V1,V2,...", help="column IN (V1, V2, ...)")
    g.add_argument("--range", nargs="+", metavar="LOW:HIGH",
                   help="LOW <= column <= HIGH, written LOW:HIGH, LOW,HIGH, LOW..HIGH (timestamps: "
                        "LOW..HIGH or LOW HIGH) or as two values LOW HIGH; negative numbers work "
                        "(--range -10 -5, --range=-10:-5); a side may be empty")
    g.add_argument("--is-null", action="store_true", help="column IS NULL")
    q.add_argument("--exclusive", action="store_true", help="with --range: exclusive bounds")
    q.add_argument("--assume-fresh", action="store_true",
                   help="answer from the index alone, without listing the table (only right after a sync)")
    q.add_argument("--freshness", choices=("stat", "footer", "names", "none"), default="stat",
                   help="how the table is checked against the index: stat = every file's size and mtime "
                        "(default), footer = also every file's Parquet footer checksum (an index built with "
                        "--freshness footer), names = file names only (for tables whose files are never "
                        "rewritten in place), none = no check (as --assume-fresh)")
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
        lo, hi = _split_range(args.range, kt.kind in ("timestamp", "timestamp_ntz", "string"))
        return Range(kt.parse(lo) if lo else None, kt.parse(hi) if hi else None,
                     not args.exclusive, not args.exclusive)
    except (ValueError, ArithmeticError) as exc:
        raise SieveError(f"cannot parse the query value for a {kt.type_name} column ({exc}): "
                         "use integers, ISO dates/timestamps, decimals, text or hex bytes; ranges as "
                         "LOW:HIGH (LOW..HIGH or LOW HIGH for timestamps and strings)") from None


def _split_range(parts: list[str], timestamps: bool) -> tuple[str, str]:
    """LOW HIGH (two values), LOW..HIGH, or (not timestamps or strings: they may contain ':' or ',')
    LOW:HIGH / LOW,HIGH."""
    if len(parts) == 2:
        return parts[0].strip(), parts[1].strip()
    if len(parts) != 1:
        raise ValueError("--range takes one value LOW:HIGH or two values LOW HIGH")
    text = parts[0]
    if ".." in text:
        lo, hi = text.split("..", 1)
        return lo.strip(), hi.strip()
    if timestamps:
        raise ValueError("timestamp and string ranges are written LOW..HIGH or as two values LOW HIGH")
    for sep in (":", ","):
        if sep in text:
            lo, hi = text.split(sep, 1)
            return lo.strip(), hi.strip()
    raise ValueError("a range is written LOW:HIGH, LOW,HIGH, LOW..HIGH or LOW HIGH")


_NEG_NUMBER = re.compile(r"-\d+|-\d*\.\d+")  # what argparse itself accepts as a value


def _glue_negative_range(argv: list[str]) -> list[str]:
    """``--range -10:-5``: argparse takes a value starting with '-' for an option unless it is a
    plain negative number (``--range -10 -5`` works as is), so such a value is attached as
    ``--range=-10:-5``."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if a == "--range" and re.match(r"-\d", nxt) and not _NEG_NUMBER.fullmatch(nxt):
            out.append(f"--range={argv[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out



def _prog() -> str:
    """``sieve`` when run as the console script, else ``python -m airflow_provider_lineage.sieve``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name and not name.endswith(".py") else "python -m airflow_provider_lineage.sieve"

def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(_glue_negative_range(list(sys.argv[1:] if argv is None else argv)))
    from . import build, compact, maintenance_status, open_index, rebuild, sync

    try:
        spark = None
        if args.command in ("build", "sync", "rebuild") and not args.no_spark:
            spark = _spark(args.master, args.conf)
        if args.command == "build":
            out: Any = build(spark, args.table, args.column, index_path=args.index_path,
                             error_bound=args.error_bound, max_segment_keys=args.max_segment_keys,
                             mode=args.mode, keep_versions=args.keep_versions, engine=args.engine,
                             structure=args.structure, fpp=args.fpp, freshness=args.freshness).to_dict()
        elif args.command == "sync":
            out = sync(spark, args.table, args.column, index_path=args.index_path,
                       freshness=args.freshness).to_dict()
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
            answer = idx.lookup(_predicate(args, idx), assume_fresh=args.assume_fresh, freshness=args.freshness)
            for path in answer.files:
                print(json.dumps({"file": path}))
            print(f"sieve: {answer.summary()}", file=sys.stderr)
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
