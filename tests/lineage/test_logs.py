"""One prefix on every line the provider logs."""
from __future__ import annotations

import logging

import pytest

from airflow_provider_lineage.lineage.logs import get_logger


def test_prefix_on_module_and_wrapped_loggers(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    get_logger("tests.logs").info("hello %s", "world")
    get_logger(logging.getLogger("tests.wrapped")).warning("careful")
    assert [r.getMessage() for r in caplog.records] == [
        "airflow-provider-lineage: hello world", "airflow-provider-lineage: careful"]
