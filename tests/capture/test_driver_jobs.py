"""The Python-side hooks of :mod:`airflow_provider_lineage.capture.driver_jobs` next to the UDF registry's RDD hook
(no Spark session: only pyspark's classes)."""
from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_lineage.capture import driver_jobs
from airflow_provider_lineage.capture.rdds import RddFunctions

DataFrame = pytest.importorskip("pyspark.sql.classic.dataframe").DataFrame


def _innermost(fn: Any) -> Any:
    while getattr(fn, "__wrapped__", None) is not None:
        fn = fn.__wrapped__
    return fn


@pytest.fixture
def pristine() -> Any:
    """DataFrame.rdd / toJSON as pyspark defines them (whatever hooks earlier tests of this process left on), then
    what was there before the test."""
    import functools

    saved = {name: DataFrame.__dict__[name] for name in ("rdd", "toJSON")}
    prop = functools.cached_property(_innermost(saved["rdd"].func))
    prop.__set_name__(DataFrame, "rdd")
    DataFrame.rdd = prop
    DataFrame.toJSON = _innermost(saved["toJSON"])
    assert not driver_jobs._ours(DataFrame.__dict__["rdd"]) and not driver_jobs._ours(DataFrame.toJSON)
    yield
    for name, attr in saved.items():
        setattr(DataFrame, name, attr)


def _hooked() -> bool:
    return driver_jobs._ours(DataFrame.__dict__["rdd"]) and driver_jobs._ours(DataFrame.__dict__["toJSON"])


def test_the_hook_survives_the_udf_registry_installed_first_and_removed(pristine: Any) -> None:
    # the launcher installs the UDF registry (which wraps DataFrame.rdd) before any session exists; the driver jobs
    # hook comes with the session, over it; removing the registry leaves that hook in place (a long-lived capture
    # session registers once: a lost hook would hide every later RDD action)
    rdds = RddFunctions()
    rdds.install()
    driver_jobs.install_hooks()
    assert _hooked()
    rdds.uninstall()
    assert _hooked()
    driver_jobs.install_hooks()  # idempotent
    assert _hooked()
    assert not hasattr(DataFrame.__dict__["rdd"].func.__wrapped__, "__wrapped__") or not driver_jobs._ours(
        DataFrame.__dict__["rdd"].func.__wrapped__)  # wrapped once


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
