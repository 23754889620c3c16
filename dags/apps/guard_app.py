"""The "lineage as a guard" example application: one small PySpark job whose shape changes between versions.

``spark-submit guard_app.py DATA_DIR STEP [VERSION]``:

* ``STEP=mart``: joins ``warehouse/orders`` with ``warehouse/customers`` into ``marts/orders_mart``.
  Version 1 joins on customer id *and* region and keeps the customer's email hashed (``sha2``);
  version 2 (a "refactor") joins on the customer id only, keeps the email as it is (the hash was
  removed) and adds the customer's ``segment``. The lineage diff of a version-2 run against a
  version-1 run is exactly: a column added, a join key dropped, a hash removed.
* ``STEP=contacts``: from ``warehouse/customers``, keeps the customers with an ``example.com``
  email (a filter on the email), with the email lower-cased (carries its tags) and hashed (stops ``pii``).
* ``STEP=report``: from ``marts/orders_mart`` (written by the other DAG), per order: the customer id
  as it is and the email hashed.

The two source tables are created with pyarrow on the first run (not through Spark: they are the
estate's sources, not writes of this job). Plain PySpark: it knows nothing about lineage.
"""
from __future__ import annotations

import sys
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def make_sources(warehouse: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not (warehouse / "customers").exists():
        (warehouse / "customers").mkdir(parents=True)
        pq.write_table(pa.table({
            "id": [1, 2, 3, 4], "region": ["eu", "eu", "us", "us"],
            "email": ["Ann@Example.com", "bob@example.com", "cy@other.org", "Dee@example.com"],
            "segment": ["retail", "pro", "retail", "pro"],
        }), warehouse / "customers" / "part-0.parquet")
    if not (warehouse / "orders").exists():
        (warehouse / "orders").mkdir(parents=True)
        pq.write_table(pa.table({
            "order_id": [10, 11, 12, 13, 14], "customer_id": [1, 2, 2, 3, 4],
            "region": ["eu", "eu", "eu", "us", "us"], "amount": [5, 7, 11, 13, 17],
        }), warehouse / "orders" / "part-0.parquet")


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or argv[1] not in ("mart", "contacts", "report"):
        print(__doc__, file=sys.stderr)
        return 2
    data_dir, step = argv[0], argv[1]
    version = int(argv[2]) if len(argv) == 3 else 1
    warehouse, marts = Path(data_dir) / "warehouse", Path(data_dir) / "marts"
    make_sources(warehouse)
    spark = SparkSession.builder.appName(f"guard_{step}").getOrCreate()
    if step == "mart":
        orders = spark.read.parquet(str(warehouse / "orders")).alias("o")
        customers = spark.read.parquet(str(warehouse / "customers")).alias("c")
        if version == 1:
            joined = orders.join(customers, (F.col("o.customer_id") == F.col("c.id"))
                                 & (F.col("o.region") == F.col("c.region")))
            email = F.sha2(F.col("c.email"), 256).alias("email")
            extra = []
        else:
            joined = orders.join(customers, F.col("o.customer_id") == F.col("c.id"))
            email = F.col("c.email").alias("email")
            extra = [F.col("c.segment").alias("segment")]
        out = joined.select(F.col("o.order_id").alias("order_id"), F.col("c.id").alias("customer_id"), email,
                            F.col("o.amount").alias("amount"), *extra)
        out.write.mode("overwrite").parquet(str(marts / "orders_mart"))
    elif step == "contacts":
        customers = spark.read.parquet(str(warehouse / "customers"))
        out = customers.where(F.lower("email").endswith("@example.com")).select(
            "id", F.lower("email").alias("email_lower"), F.sha2("email", 256).alias("email_hash"))
        out.write.mode("overwrite").parquet(str(marts / "contacts"))
    else:
        mart = spark.read.parquet(str(marts / "orders_mart"))
        out = mart.select("order_id", "customer_id", F.sha2("email", 256).alias("email_hash"))
        out.write.mode("overwrite").parquet(str(marts / "order_report"))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
