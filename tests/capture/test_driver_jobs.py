"""The Python-side hooks of :mod:`airflow_provider_lineage.capture.driver_jobs` next to the UDF registry's RDD hook
(no Spark session: only pyspark's classes)."""
from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_lineage.capture import driver_jobs
from airflow_provider_lineage.capture.rdds import RddFunctions

DataFrame = pytest.importorskip("pyspark.sql.classic.dataframe").DataFrame


@pytest.fixture
def pristine() -> Any:
    """DataFrame.rdd / toJSON as pyspark defines them, put back after the test."""
    saved = {name: DataFrame.__dict__[name] for name in ("rdd", "toJSON")}
    yield
    for name, attr in saved.items():
        setattr(DataFrame, name, attr)


def _hooked() -> bool:
    return driver_jobs._ours(DataFrame.__dict__["rdd"]) and driver_jobs._ours(DataFrame.__dict__["toJSON"])


def test_the_hook_survives_the_udf_registry_installed_first_and_removed(pristine: Any) -> None:
    # the launcher installs the UDF registry (which wraps DataFrame.rdd) before any session exists; the driver
    # jobs hook comes with the session; removing the registry restores the rdd it found, without this hook
    rdds = RddFunctions()
    rdds.install()
    driver_jobs.install_hooks()
    assert _hooked()
    rdds.uninstall()
    assert not driver_jobs._ours(DataFrame.__dict__["rdd"])
    driver_jobs.install_hooks()  # the next session's registration puts it back
    assert _hooked()


def test_the_hook_is_installed_once_and_seen_through_the_registry(pristine: Any) -> None:
    driver_jobs.install_hooks()
    first = DataFrame.__dict__["rdd"]
    rdds = RddFunctions()
    rdds.install()  # wraps this hook (functools.wraps keeps the chain)
    driver_jobs.install_hooks()
    assert DataFrame.__dict__["rdd"].func.__wrapped__ is first.func  # not wrapped a second time
    rdds.uninstall()
    assert DataFrame.__dict__["rdd"] is first
    driver_jobs.install_hooks()
    assert DataFrame.__dict__["rdd"] is first
