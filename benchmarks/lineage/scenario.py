"""What a scenario is, and the context it runs in."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.lineage.reference import Expect

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass
class Ctx:
    """Handed to every scenario: the session, the input Parquet folders, where outputs go."""

    spark: SparkSession
    inputs: dict[str, str]
    out_root: Path

    def read(self, name: str) -> DataFrame:
        return self.spark.read.parquet(self.inputs[name])

    def out(self, name: str) -> str:
        return str(self.out_root / name)

    def sql(self, text: str) -> DataFrame:
        return self.spark.sql(text)


@dataclass
class Scenario:
    """One pipeline with its hand-labelled reference.

    :param sid: id; also the output dataset's name (folder or table) unless ``expects`` says otherwise.
    :param api: ``"sql"`` or ``"df"`` (how the query is written).
    :param covers: the coverage item it exercises (``Join (left semi)``, ``Window`` ...).
    :param run: performs the write(s); runs inside a ``CaptureSession``.
    :param setup: runs before, outside the capture (create target tables ...).
    :param teardown: runs after, outside the capture.
    :param notes: labelling decisions worth stating in the report.
    """

    sid: str
    api: str
    covers: str
    run: Callable[[Ctx], None]
    expects: list[Expect]
    setup: Callable[[Ctx], None] | None = None
    teardown: Callable[[Ctx], None] | None = None
    notes: str = ""
    group: str = "coverage"
    paper: tuple[int, int] | None = None  # the seed paper's (precision, recall), for C1-C3
    tags: list[str] = field(default_factory=list)
