"""Predicates on one indexed column: ``Eq``, ``In``, ``Range`` and ``IsNull``.

Values are Python values of the column's domain: ``int`` for integer columns, ``datetime.date`` for
DATE, ``datetime.datetime`` for TIMESTAMP (a naive datetime is taken as UTC for TIMESTAMP and as the
wall-clock value for TIMESTAMP_NTZ), ``decimal.Decimal`` (or ``int``) for DECIMAL, ``str`` for
STRING and ``bytes`` for BINARY (both compared by their bytes, UTF-8 for strings, as Spark does).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Eq:
    """``column = value``."""

    value: Any


@dataclass(frozen=True)
class In:
    """``column IN (values...)``; an empty list matches nothing."""

    values: tuple[Any, ...]

    def __init__(self, values: Iterable[Any]) -> None:
        object.__setattr__(self, "values", tuple(values))


@dataclass(frozen=True)
class Range:
    """``low <(=) column <(=) high``; ``None`` bounds are unbounded."""

    low: Any = None
    high: Any = None
    low_inclusive: bool = True
    high_inclusive: bool = True


@dataclass(frozen=True)
class IsNull:
    """``column IS NULL``."""


Predicate = Eq | In | Range | IsNull
