"""``python -m airflow_provider_lineage.plugins.estate {reindex,sync}``: maintain the estate index.

Runs where Airflow's metadata DB is reachable (scheduler or api-server host, ``AIRFLOW_HOME`` set):

* ``reindex [--dag-id ID] [--batch N]``: rebuild the index (or one DAG's part) from the ``column_lineage``
  XCom records, applying the current dataset identity; datasets no record names any more are dropped (run
  it after an upgrade that renames dataset identities, so that old names leave no duplicates). The
  rebuild is one transaction: the live index is replaced when it commits, and a rebuild stopped half-way
  (killed, failed) leaves the old index whole. Progress (``indexed N of M``) goes to stderr;
* ``sync``: bring the index up to date now, in batches (what the scheduler and the api-server do on their own).
"""
from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m airflow_provider_lineage.plugins.estate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    re_ = sub.add_parser("reindex", help="rebuild the estate index from the XCom records")
    re_.add_argument("--dag-id", default=None, help="only this DAG's records")
    re_.add_argument("--batch", type=int, default=200, help="XCom rows read at a time (default 200)")
    sub.add_parser("sync", help="index new records and drop deleted ones now")
    args = parser.parse_args(argv)
    from airflow.utils.session import create_session

    from airflow_provider_lineage.plugins.estate import index

    def progress(done: int, total: int) -> None:
        print(f"indexed {done} of {total}", file=sys.stderr, flush=True)

    if args.command == "reindex":
        if args.batch < 1:
            parser.error("--batch must be 1 or more")
        with create_session() as session:
            out = index.reindex(session, dag_id=args.dag_id, batch=args.batch, progress=progress)
    else:
        out = index.sync_all(create_session)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
