"""Write a deterministic ``transactions`` Parquet table (15 columns) for the C1 example.

Plain Python + pyarrow (no Spark needed): ``python generate_transactions.py OUT_DIR [ROWS] [SEED]``.
The same seed always gives the same rows.
"""
from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

COLUMNS = (
    "txn_id", "account_id", "customer_id", "txn_date", "txn_ts", "amount", "currency", "fx_rate",
    "fee", "channel", "merchant_id", "mcc", "country", "status", "is_refund",
)


def generate(out_dir: str | Path, rows: int = 5000, seed: int = 7) -> Path:
    """Write ``rows`` transactions as one Parquet file in ``out_dir`` (replaced); return the folder."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    start = dt.date(2024, 1, 1)
    day = rng.integers(0, 366, rows)
    seconds = rng.integers(0, 86_400, rows)
    currency = np.array(["EUR", "USD", "GBP"])[rng.integers(0, 3, rows)]
    fx = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17}
    table = pa.table(
        {
            "txn_id": pa.array(np.arange(1, rows + 1, dtype=np.int64)),
            "account_id": pa.array(rng.integers(10_000, 11_000, rows, dtype=np.int64)),
            "customer_id": pa.array(rng.integers(1, 500, rows, dtype=np.int64)),
            "txn_date": pa.array([start + dt.timedelta(days=int(d)) for d in day], pa.date32()),
            "txn_ts": pa.array(
                [
                    dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=int(d), seconds=int(s))
                    for d, s in zip(day, seconds)
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "amount": pa.array(np.round(rng.gamma(2.0, 150.0, rows), 2)),
            "currency": pa.array(currency),
            "fx_rate": pa.array([fx[c] for c in currency]),
            "fee": pa.array(np.round(rng.uniform(0, 3, rows), 2)),
            "channel": pa.array(np.array(["card", "online", "atm", "transfer"])[rng.integers(0, 4, rows)]),
            "merchant_id": pa.array(rng.integers(1, 2000, rows, dtype=np.int64)),
            "mcc": pa.array(np.array(["5411", "5812", "5999", "4111", "6011"])[rng.integers(0, 5, rows)]),
            "country": pa.array(np.array(["NL", "DE", "BE", "FR", "US"])[rng.integers(0, 5, rows)]),
            "status": pa.array(
                np.array(["BOOKED", "BOOKED", "BOOKED", "PENDING", "REVERSED"])[rng.integers(0, 5, rows)]
            ),
            "is_refund": pa.array(rng.random(rows) < 0.05),
        }
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.parquet"):
        old.unlink()
    pq.write_table(table, out / "part-00000.parquet")
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        print("usage: generate_transactions.py OUT_DIR [ROWS] [SEED]", file=sys.stderr)
        raise SystemExit(2)
    generate(args[0], int(args[1]) if len(args) > 1 else 5000, int(args[2]) if len(args) > 2 else 7)
