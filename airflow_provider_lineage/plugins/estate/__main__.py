"""``python -m airflow_provider_lineage.plugins.estate {reindex,sync}``: maintain the estate index.

Runs where Airflow's metadata DB is reachable (scheduler or api-server host, ``AIRFLOW_HOME`` set):

* ``reindex [--dag-id ID]``: rebuild the index (or one DAG's part) from the ``column_lineage`` XCom
  records, applying the current dataset identity; datasets no record names any more are dropped (run it
  after an upgrade that renames dataset identities, so that old names leave no duplicates);
* ``sync``: bring the index up to date now (what the scheduler and the api-server do on their own).
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
    sub.add_parser("sync", help="index new records and drop deleted ones now")
    args = parser.parse_args(argv)
    from airflow.utils.session import create_session

    from airflow_provider_lineage.plugins.estate import index

    with create_session() as session:
        out = index.reindex(session, dag_id=args.dag_id) if args.command == "reindex" else index.sync(session, force=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
