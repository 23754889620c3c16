"""Loaded at start by the api-server of ``./dev.sh up`` only (its ``PYTHONPATH`` starts with this folder; see
:meth:`dev.deployment.core.AirflowDeployment.start`): the GIL switch interval of its worker processes.

Airflow's list routes resolve each filter, sort and paging parameter as a synchronous dependency, one thread-pool
hop each (39 for a run's task-instance list); every hop resumes on the worker's event loop, which then waits for the
GIL behind the threads that run other requests' CPU-bound work (the lineage graphs, serialization), up to the switch
interval each time (CPython's default: 5 ms). A shorter interval (``APL_API_SWITCH_INTERVAL_S``, default
:data:`dev.deployment.settings.API_SWITCH_INTERVAL_S`) hands the GIL back sooner (issue 47,
``benchmarks/api_load/REPORT.md``). Another ``sitecustomize`` on the path still runs after this one.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

sys.setswitchinterval(float(os.environ.get("APL_API_SWITCH_INTERVAL_S") or "0.0005"))

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != _HERE])
if _spec is not None and _spec.loader is not None:  # the interpreter's own sitecustomize, if any
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
