"""Land one day of raw ``transactions`` and ``customers`` files for the ``lineage_etl`` example (pyarrow, no Spark).

``python etl_landing.py DATA_DIR`` writes the day after the last landed one (2024-01-01 first) under
``DATA_DIR/landing/{transactions,customers}/day=YYYY-MM-DD/`` and prints the day. Deterministic: the
same day always gets the same rows. Each day brings 20 new customers and 300 transactions of all
customers so far. ``DATA_DIR`` is a local folder or an object-store URI (``s3://bucket/prefix``; credentials and
endpoint from the store's usual environment, ``AWS_*``).
"""
from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

FIRST_DAY = dt.date(2024, 1, 1)
CUSTOMERS_PER_DAY = 20
TRANSACTIONS_PER_DAY = 300


def _store(data_dir: str | Path) -> tuple[Any, str]:
    """(pyarrow file system, ``data_dir`` inside it) of a local folder or an object-store URI."""
    from airflow_provider_lineage.sieve.fs import resolve

    return resolve(str(data_dir))


def next_day(data_dir: str | Path) -> dt.date:
    """The day after the last landed one (FIRST_DAY when nothing was landed yet)."""
    import pyarrow.fs as pafs

    fs, root = _store(data_dir)
    found = fs.get_file_info(pafs.FileSelector(f"{root}/landing/transactions", allow_not_found=True))
    days = sorted(dt.date.fromisoformat(name.removeprefix("day=")) for info in found
                  if info.type == pafs.FileType.Directory and (name := info.base_name).startswith("day="))
    return days[-1] + dt.timedelta(days=1) if days else FIRST_DAY


def land(data_dir: str | Path, day: dt.date | None = None) -> str:
    """Write the raw files of ``day`` (default: the next day); return it as ``YYYY-MM-DD``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    day = day or next_day(data_dir)
    n = (day - FIRST_DAY).days
    rng = np.random.default_rng(1000 + n)
    fs, root = _store(data_dir)
    first_id = n * CUSTOMERS_PER_DAY + 1
    customers = pa.table({
        "customer_id": pa.array(np.arange(first_id, first_id + CUSTOMERS_PER_DAY, dtype=np.int64)),
        "name": pa.array([f"customer {i}" for i in range(first_id, first_id + CUSTOMERS_PER_DAY)]),
        "segment": pa.array(np.array(["retail", "business", "private"])[rng.integers(0, 3, CUSTOMERS_PER_DAY)]),
        "country": pa.array(np.array(["NL", "DE", "BE", "FR"])[rng.integers(0, 4, CUSTOMERS_PER_DAY)]),
        "signup_date": pa.array([day] * CUSTOMERS_PER_DAY, pa.date32()),
    })
    n_customers = first_id + CUSTOMERS_PER_DAY - 1
    m = TRANSACTIONS_PER_DAY
    transactions = pa.table({
        "txn_id": pa.array(np.arange(n * m + 1, n * m + m + 1, dtype=np.int64)),
        "customer_id": pa.array(rng.integers(1, n_customers + 1, m, dtype=np.int64)),
        "txn_date": pa.array([day] * m, pa.date32()),
        "amount": pa.array(np.round(rng.gamma(2.0, 40.0, m), 2)),
        "currency": pa.array(np.array(["EUR", "USD"])[rng.integers(0, 2, m)]),
        "status": pa.array(np.array(["BOOKED", "BOOKED", "BOOKED", "PENDING"])[rng.integers(0, 4, m)]),
    })
    for name, table in (("customers", customers), ("transactions", transactions)):
        folder = f"{root}/landing/{name}/day={day.isoformat()}"
        if fs.type_name == "local":  # (object stores have no folders: no marker objects)
            fs.create_dir(folder, recursive=True)
        pq.write_table(table, f"{folder}/part-00000.parquet", filesystem=fs)
    return day.isoformat()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        raise SystemExit(2)
    print(land(sys.argv[1]))
