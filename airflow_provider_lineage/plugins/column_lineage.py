"""The ``AirflowPlugin`` of the column-lineage view (registered by the provider and by entry point).

* ``fastapi_apps``: the JSON API and the page under ``/column-lineage`` (Airflow 3.0+);
* ``external_views`` (Airflow 3.1+; 3.0 ignores them and the API still works): a "Column lineage"
  tab on DAG runs and on task instances, and a "Column lineage" entry in the navigation (the estate page:
  lineage across every DAG and back in time);
* ``listeners``: the scheduler updates the estate index when a DAG run finishes (:mod:`.dagrun_listener`);
* ``fastapi_root_middlewares``: only when ``[column_lineage] api_admission_limit`` > 0 (read when this module is
  imported), the api-server's admission limit for readers (:mod:`.admission`): it gates Airflow's own routes too,
  so it is opt-in.
"""
from __future__ import annotations

import logging
from typing import Any

from airflow.plugins_manager import AirflowPlugin

from airflow_provider_lineage import conf
from airflow_provider_lineage.plugins import dagrun_listener
from airflow_provider_lineage.plugins.admission import AdmissionLimit
from airflow_provider_lineage.plugins.api import URL_PREFIX, LazyApp

PLUGIN_NAME = "column_lineage"


def _fastapi_apps() -> list[dict[str, Any]]:
    # built on the first request: every Airflow process imports its plugins, only the api-server serves them
    return [{"app": LazyApp(), "url_prefix": URL_PREFIX, "name": "Column lineage"}]


def _external_views() -> list[dict[str, Any]]:
    icon = f"{URL_PREFIX}/static/icon.svg"
    run = f"{URL_PREFIX}/?dag_id={{DAG_ID}}&run_id={{RUN_ID}}"
    return [
        {"name": "Column lineage", "href": run, "destination": "dag_run", "url_route": "column-lineage-run",
         "icon": icon},
        {"name": "Column lineage", "href": f"{run}&task_id={{TASK_ID}}&map_index={{MAP_INDEX}}",
         "destination": "task_instance", "url_route": "column-lineage-task", "icon": icon},
        {"name": "Column lineage", "href": f"{URL_PREFIX}/estate", "destination": "nav", "category": "browse",
         "url_route": "column-lineage", "icon": icon},
    ]


def _root_middlewares() -> list[dict[str, Any]]:
    # a tuning value, not a policy: a bad one is logged (naming the fix) and the api-server runs without the
    # limit, rather than failing the plugin's import and with it the whole lineage UI
    try:
        limit = conf.api_admission_limit()
        kwargs = {"limit": limit, "wait_timeout": conf.api_admission_wait_timeout()} if limit > 0 else {}
    except ValueError as exc:
        logging.getLogger(__name__).error("%s; the api-server runs without the admission limit", exc)
        return []
    if limit <= 0:
        return []
    return [{"middleware": AdmissionLimit, "args": [], "kwargs": kwargs, "name": "Column lineage admission limit"}]


def _listeners() -> list[Any]:
    return [dagrun_listener]


class ColumnLineagePlugin(AirflowPlugin):
    """Column lineage view: JSON API + page (``fastapi_apps``) and tabs/nav entry (``external_views``)."""

    name = PLUGIN_NAME
    fastapi_apps = _fastapi_apps()
    external_views = _external_views()
    listeners = _listeners()
    fastapi_root_middlewares = _root_middlewares()
