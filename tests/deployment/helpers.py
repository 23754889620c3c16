"""Checks the deployment tests share: tables and indexes on disk, events, processes (no Airflow imports)."""
from __future__ import annotations

import datetime as dt
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_provider_lineage import sieve as S

#: The indexes lineage_etl keeps (table folder under data_dir, column), as in dags/lineage_etl.py.
INDEXED = [("warehouse/transactions", "txn_date"), ("warehouse/transactions", "customer_id"),
           ("marts/transactions_enriched", "txn_date"), ("marts/customer_monthly", "customer_id")]
BLOCKED = "async thread was blocked"


def index_path(data_dir: Path, table: str, column: str) -> str:
    return str(data_dir / "indexes" / table.split("/")[-1] / column)


def values_by_file(root: str, column: str) -> dict[str, set[Any]]:
    return {f.path: set(pq.read_table(f.path, columns=[column]).column(column).to_pylist())
            for f in S.list_table_files(root)}


def false_negatives(data_dir: Path, table: str, column: str) -> list[tuple[Any, str]]:
    """(value, file) pairs where the index does not name a file that holds the value (must be none).

    Opens the index as a reader does (checksums verified); raises if it is unreadable.
    """
    root = str(data_dir / table)
    idx = S.open_index(root, column, index_path=index_path(data_dir, table, column))
    assert not idx.is_stale(), f"{table}.{column}: the index does not cover the table's current files"
    missing = []
    by_file = values_by_file(root, column)
    for value in sorted(set().union(*by_file.values())):
        got = set(idx.candidates(S.Eq(value)))
        missing += [(value, f) for f, vs in by_file.items() if value in vs and f not in got]
    return missing


def pruned_equals_full(data_dir: Path, table: str, column: str, pred: Any, arrow_filter: Any) -> int:
    """Rows of a read of only the index's candidate files == rows of a full read (pyarrow); their count."""
    root = str(data_dir / table)
    idx = S.open_index(root, column, index_path=index_path(data_dir, table, column))
    files = sorted(idx.candidates(pred))
    full = pq.ParquetDataset([f.path for f in S.list_table_files(root)]).read().filter(arrow_filter)
    pruned = pq.ParquetDataset(files).read().filter(arrow_filter) if files else full.slice(0, 0)
    key = sorted(full.column_names)

    def rows(t: pa.Table) -> list[tuple[Any, ...]]:
        return sorted(tuple(r[k] for k in key) for r in t.to_pylist())

    a, b = rows(pruned), rows(full)
    assert a == b, f"{table}.{column}: pruned read ({len(a)} rows of {len(files)} files) != full read ({len(b)} rows)"
    return len(b)


def day_filter(column: str, day: dt.date) -> Any:
    return pc.field(column) == pa.scalar(day, pa.date32())


def add_late_file(data_dir: Path, name: str, txn_id: int, day: dt.date = dt.date(2023, 12, 30)) -> Path:
    """A separate write: one row appended to warehouse/transactions by 'someone else' (pyarrow)."""
    folder = data_dir / "warehouse" / "transactions"
    schema = pq.read_schema(next(iter(S.list_table_files(str(folder)))).path)
    row = {"txn_id": txn_id, "customer_id": 7, "txn_date": day, "amount": 1.25, "currency": "EUR", "status": "BOOKED"}
    table = pa.table({f.name: pa.array([row.get(f.name)], f.type) for f in schema})
    path = folder / f"{name}.parquet"
    tmp = folder / f".{name}.tmp"
    pq.write_table(table, tmp)
    os.replace(tmp, path)  # appears whole, like a committed write
    return path


def wait_for(what: str, check: Callable[[], Any], timeout: float = 180, every: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def spark_drivers(dep: Any, app: str) -> list[int]:
    """The deployment's Spark driver JVMs (spark-submit's SparkSubmit) running ``app``."""
    return [pid for pid in dep.leftovers()
            if any("SparkSubmit" in a for a in cmdline(pid)) and any(a.endswith(app) for a in cmdline(pid))]


def sigkill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


#: Shared libraries whose initialisers hold the GIL for 0.3-0.6 s when loaded (issue 21): the
#: triggerer's event loop must never load them; the Sieve check child (``_sieve_check``) does.
HEAVY_LIBS = ("libarrow", "_multiarray_umath")


def heavy_in_triggerer(dep: Any) -> dict[int, list[str]]:
    """The triggerer's processes (its process groups; the Sieve check child left out) that mapped
    any of :data:`HEAVY_LIBS`, with those libraries (from ``/proc/<pid>/maps``)."""
    from dev.deploy import _proc_ids

    groups = set(dep.groups.get("triggerer", []))
    found: dict[int, list[str]] = {}
    seen = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        ids = _proc_ids(pid)
        if not ids or ids[0] not in groups or any("_sieve_check" in a for a in cmdline(pid)):
            continue
        try:
            maps = Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            continue
        seen += 1
        libs = sorted({line.rsplit("/", 1)[-1] for line in maps.splitlines() if any(h in line for h in HEAVY_LIBS)})
        if libs:
            found[pid] = libs
    assert seen, f"no live triggerer process in its process groups {sorted(groups)}"
    return found
