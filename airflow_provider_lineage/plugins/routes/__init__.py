"""The run view's HTTP routes, one ``APIRouter`` a file, included by :func:`..api.create_app`.

``runs`` (a run's and a task's graph, a column's path, the Sieve badges), ``search`` (datasets and columns
of recent runs), ``tags`` (where tags reach unmasked), ``pages`` (the static pages and the API's own
description); the estate page's routes are :mod:`..estate.api` and :mod:`..estate.start`. The modules of
this package import the API stack (FastAPI, Airflow's ``api_fastapi``) at their top: only the api-server,
building the app, imports them; this ``__init__`` imports nothing.
"""
from pathlib import Path

#: The page's static files (HTML, JavaScript, CSS).
STATIC = Path(__file__).resolve().parent.parent / "static"
