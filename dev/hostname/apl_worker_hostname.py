"""``AIRFLOW__CORE__HOSTNAME_CALLABLE=apl_worker_hostname.hostname`` of the Celery variant's workers (dev/deploy.py).

Both workers run on one host here; each gets its own loopback address (``APL_WORKER_HOST``: 127.0.0.2,
127.0.0.3), which Airflow records as the task's hostname and where the worker's log server listens, so the
api-server fetches a running or finished task's log from the worker that ran it, as it would from two hosts.
"""
from __future__ import annotations

import os
import socket


def hostname() -> str:
    """The worker's own address, or the machine's name outside the Celery variant."""
    return os.environ.get("APL_WORKER_HOST") or socket.getfqdn()
