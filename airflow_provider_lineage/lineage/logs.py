"""One log prefix for everything the provider says in a user's job or task log.

Our lines sit among Spark's and Airflow's own; ``airflow-provider-lineage:`` in front of each makes
them easy to find (and to grep for) without typing the prefix at every call.
"""
from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

PREFIX = "airflow-provider-lineage"


class PrefixedLogger(logging.LoggerAdapter):
    """A logger adapter that puts ``airflow-provider-lineage:`` in front of every message."""

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        return f"{PREFIX}: {msg}", kwargs


def get_logger(name_or_logger: str | logging.Logger | logging.LoggerAdapter) -> PrefixedLogger:
    """The prefixed logger for a module name, or around an existing logger (e.g. an operator's ``self.log``)."""
    logger = logging.getLogger(name_or_logger) if isinstance(name_or_logger, str) else name_or_logger
    return PrefixedLogger(logger, {})
