"""What each ``freshness`` check of a stale-safe lookup costs, per 1,000 files (issue 48, item 6).

A table of ``--files`` small Parquet files in 10 partition folders (local disk) is indexed with
``freshness="footer"``; then one point lookup is timed under each check: ``names`` (paths only),
``stat`` (the default: path, size and mtime of every file) and ``footer`` (stat, and every file's
Parquet footer checksum read from the file's end). "Warm" runs follow each other (the folders and
the files' last pages are in the page cache); "cold" runs first drop that cache for the table's files
(``posix_fadvise(DONTNEED)``, no root needed: an approximation of a first read on a local disk; an
object store pays one ranged GET per file instead). Build time with and without footer checksums is
measured as well. Prints and writes ``FRESHNESS.md``.

    .venv/bin/python benchmarks/sieve/freshness_cost.py                       # 1,000 and 10,000 files
    .venv/bin/python benchmarks/sieve/freshness_cost.py --files 1000 --repeats 5 --note "quiet machine"
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_lineage import sieve as S

MODES = ("names", "stat", "footer")


def make_table(root: str, n: int) -> None:
    """``n`` files of 200 rows in 10 partition folders (hive style)."""
    for i in range(n):
        folder = f"{root}/day={i % 10}"
        os.makedirs(folder, exist_ok=True)
        keys = pa.array(range(i * 200, i * 200 + 200), pa.int64())
        pq.write_table(pa.table({"k": keys, "v": keys}), f"{folder}/part-{i:06d}.parquet")


def drop_cache(root: str) -> None:
    """Ask the kernel to drop the table files' cached pages (best effort, no root needed)."""
    for folder, _, names in os.walk(root):
        for name in names:
            try:
                fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def time_lookups(root: str, mode: str, repeats: int, cold: bool) -> list[float]:
    idx = S.open_index(root, "k")
    out = []
    for _ in range(repeats):
        if cold:
            drop_cache(root)
        t0 = time.perf_counter()
        idx.lookup(S.Eq(5), freshness=mode)
        out.append(time.perf_counter() - t0)
    return out


def time_builds(root: str, repeats: int) -> dict[str, float]:
    out = {}
    for mode in ("stat", "footer"):
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            S.build(None, root, "k", freshness=mode)
            ts.append(time.perf_counter() - t0)
        out[mode] = statistics.median(ts)
    return out


def load() -> str:
    try:
        return ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", default="1000,10000", help="comma list of table sizes (default 1000,10000)")
    p.add_argument("--repeats", type=int, default=7, help="lookups per (size, check, cache state)")
    p.add_argument("--build-repeats", type=int, default=3, help="builds per (size, freshness)")
    p.add_argument("--note", default="", help="a sentence on the run's conditions, added to the report")
    p.add_argument("--report", default=str(HERE / "FRESHNESS.md"))
    args = p.parse_args()
    sizes = [int(x) for x in args.files.split(",")]
    load_before = load()
    rows = []
    with tempfile.TemporaryDirectory(prefix="sieve-freshness-") as tmp:
        for n in sizes:
            root = f"{tmp}/t{n}"
            make_table(root, n)
            builds = time_builds(root, args.build_repeats)
            res: dict[str, dict[str, float]] = {}
            for mode in MODES:
                time_lookups(root, mode, 1, False)  # warm-up
                res[mode] = {
                    "warm": statistics.median(time_lookups(root, mode, args.repeats, False)),
                    "cold": statistics.median(time_lookups(root, mode, args.repeats, True)),
                }
            per = {
                m: {k: v * 1000 / n * 1000 for k, v in r.items()} for m, r in res.items()
            }  # ms per 1,000 files
            rows.append((n, res, per, builds))
            print(f"{n} files: build {builds['stat']:.2f} s (stat) / {builds['footer']:.2f} s (footer)")
            for mode in MODES:
                print(
                    f"  {mode:7s} lookup: warm {per[mode]['warm']:.1f} ms, cold {per[mode]['cold']:.1f} ms "
                    "per 1,000 files"
                )
    load_after = load()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE, check=False
    ).stdout.strip()
    lines = [
        "# Sieve: what each freshness check costs",
        "",
        (
            f"Generated by `benchmarks/sieve/freshness_cost.py` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC at "
            f"{commit or 'an unknown commit'}: Python {platform.python_version()}, {os.cpu_count()} CPUs, local disk, "
            f"load average {load_before} before and {load_after} after the run (1, 5, 15 min)."
        ),
        *([f"{args.note}", ""] if args.note else [""]),
        (
            'One point lookup on an index built with `freshness="footer"`, checked against the table under each '
            f"mode; the median of {args.repeats} lookups, in **milliseconds per 1,000 files** (the whole lookup: "
            "listing, check, index answer). Warm: one after another (page cache warm); cold: the table files' "
            "cached pages dropped before each (`posix_fadvise`), an approximation of a first read on a local disk."
        ),
        "",
        "| files | check | warm (ms / 1,000 files) | cold (ms / 1,000 files) | footer ÷ stat (warm / cold) |",
        "|---:|---|---:|---:|---:|",
    ]
    for n, _, per, _ in rows:
        for mode in MODES:
            ratio = (
                (
                    f"{per['footer']['warm'] / per['stat']['warm']:.1f}× / "
                    f"{per['footer']['cold'] / per['stat']['cold']:.1f}×"
                )
                if mode == "footer"
                else ""
            )
            lines.append(
                f"| {n:,} | `{mode}` | {per[mode]['warm']:.1f} | {per[mode]['cold']:.1f} | {ratio} |"
            )
    lines += [
        "",
        (
            f"Build (pyarrow engine, median of {args.build_repeats}), with and without recording the "
            "footer checksums:"
        ),
        "",
        '| files | `freshness="stat"` | `freshness="footer"` |',
        "|---:|---:|---:|",
    ]
    for n, _, _, builds in rows:
        lines.append(f"| {n:,} | {builds['stat']:.2f} s | {builds['footer']:.2f} s |")
    lines += [
        "",
        (
            "Reproduce: `.venv/bin/python benchmarks/sieve/freshness_cost.py` (about a minute on a quiet "
            "machine). On an object store the footer check is one ranged GET per file per lookup (two for a "
            "footer over 64 KiB), made 16 at a time: budget its latency, not these local figures."
        ),
        "",
    ]
    Path(args.report).write_text("\n".join(lines))
    print(f"wrote {args.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
