"""A sync's file-table step on tables of many files: the new version's table (the base's files, one or
two removed or not, two added) written from a plain mapping of entries -- one ``FileEntry`` made and
one relative path computed per file, as syncs did before -- against the ``ChangedFiles`` view a sync
now passes (written from the base's decoded columns; the partition column spliced unparsed when
nothing is removed). Both write the same bytes (checked). Prints; writes no report (figures quoted
in ``RANDOM_KEYS.md``).

    .venv/bin/python benchmarks/sieve/sync_file_table.py                  # 10,000 and 100,000 files
    .venv/bin/python benchmarks/sieve/sync_file_table.py --files 1000000 --repeats 3
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from airflow_provider_lineage.sieve.storage import ChangedFiles, IndexStore
from airflow_provider_lineage.sieve.table import FileEntry

ROOT = "/data/warehouse/events"


def table(n: int) -> dict[int, FileEntry]:
    """``n`` files of a table partitioned by day (hive style), as a listing gives them."""
    return {i: FileEntry(f"{ROOT}/day=2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}/part-{i:07d}.parquet", 40_000 + i,
                         1_700_000_000_000_000_000 + 977 * i, {"day": f"2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}"},
                         10_000 + i % 7) for i in range(n)}


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def case(store: IndexStore, ref: Any, gone: list[int], added: dict[int, FileEntry], repeats: int
         ) -> tuple[float, float]:
    """Seconds of the file-table write both ways (reading the base, the same in both, subtracted)."""
    def entries() -> Any:  # as before: every entry of the base made
        base = store.read_file_table(ref, ROOT)
        plain = {fid: base[fid] for fid in base if fid not in gone} | added
        return store.write_file_table(plain, ROOT)

    def view() -> Any:
        return store.write_file_table(ChangedFiles(store.read_file_table(ref, ROOT), gone, added), ROOT)

    read_s, _ = timed(lambda: store.read_file_table(ref, ROOT), repeats)
    before_s, a = timed(entries, repeats)
    after_s, b = timed(view, repeats)
    assert (a.bytes, a.crc32) == (b.bytes, b.crc32), "the two ways wrote different file tables"
    return before_s - read_s, after_s - read_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", default="10000,100000", help="table sizes (files), comma-separated")
    ap.add_argument("--repeats", type=int, default=5, help="timed writes per case (median)")
    args = ap.parse_args()
    store = IndexStore(tempfile.mkdtemp(prefix="sieve-file-table-"))
    print(f"{'files':>9} | {'removed':>7} | {'entries (before) s':>18} | {'ChangedFiles s':>14} | speed-up")
    for n in (int(x) for x in args.files.split(",")):
        files = table(n)
        ref = store.write_file_table(files, ROOT)
        added = {n + j: FileEntry(f"{ROOT}/day=2025-01-01/new-{j}.parquet", 1_000 + j, 2_000_000_000_000_000_000,
                                  {"day": "2025-01-01"}, 5) for j in range(2)}
        for gone in ([], [0, n // 2]):
            before_s, after_s = case(store, ref, gone, added, args.repeats)
            print(f"{n:>9,} | {len(gone):>7} | {before_s:>18.3f} | {after_s:>14.3f} | "
                  f"{before_s / max(after_s, 1e-9):.1f}x")
    print("(each: the write of the new version's file table; reading the base's table, the same in both, "
          "is subtracted)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
