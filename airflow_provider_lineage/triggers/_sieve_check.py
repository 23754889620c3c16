"""The Sieve maintenance checks of :mod:`.sieve`, and the child process that runs them for the trigger.

``python -m airflow_provider_lineage.triggers._sieve_check`` reads one JSON request a line on stdin
(``{"indexes", "thresholds", "update_strategy", "storage_options", "full_verify"}``) and answers one JSON line on
stdout: ``{"needs": [<Need as a dict>, ...]}`` or ``{"error": "<type>: <message>"}``; it exits at
the end of its input (so it never outlives the triggerer that feeds it). No Airflow import here:
the child only loads the index package.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_lineage.sieve.decisions import Need


def pending_work(indexes: Sequence[Mapping[str, Any]], thresholds: Mapping[str, Any] | None = None,
                 update_strategy: str | None = None, storage_options: Mapping[str, Any] | None = None,
                 full_verify: bool = True) -> list[Need]:
    """Every index's need (blocking: file listings and manifest reads). Raises on bad input.

    ``storage_options``: object-store options for tables/indexes on ``s3://`` etc. (see the core's
    ``sieve.fs``); None uses the store's usual environment. ``full_verify=False``: every segment
    file's checksum but only the header and last page of a hashed structure (the core's
    ``maintenance_status``), for checks repeated every ``poke_interval``.
    """
    from airflow_provider_lineage.sieve.decisions import Thresholds, check

    limits = Thresholds(**dict(thresholds or {}))
    return [check(str(i["table"]), str(i["column"]), index_path=i.get("index_path") or None, thresholds=limits,
                  update_strategy=update_strategy, storage_options=storage_options, full_verify=full_verify)
            for i in indexes]


def answer(request: Mapping[str, Any]) -> dict[str, Any]:
    """One request's answer (a failed check is an answer too, never an exit)."""
    try:
        needs = pending_work(request["indexes"], request.get("thresholds"), request.get("update_strategy"),
                             request.get("storage_options"), bool(request.get("full_verify", True)))
    except Exception as exc:  # noqa: BLE001 - reported to the trigger, which fires an error event
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"needs": [n.to_dict() for n in needs]}


def main() -> int:
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(json.dumps(answer(json.loads(line))) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
