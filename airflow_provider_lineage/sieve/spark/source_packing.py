"""Input partitions of the ``sieve`` data source (:mod:`.source`): a candidate file, and candidate files packed into
one Spark task the way Spark's file sources pack them (``spark.sql.files.maxPartitionBytes``, ``openCostInBytes``,
``minPartitionNum``). Imported by Spark's Python workers too (they unpickle the partitions): pyspark only.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import InputPartition

from ..errors import SieveError


class FilePartition(InputPartition):
    """One candidate file and its partition values (typed), read by one Spark task."""

    def __init__(self, path: str, values: tuple[Any, ...] = (), filter_rows: bool = True) -> None:
        super().__init__(path)
        self.path = path
        self.values = values
        # False: the plan read other scans' files too (.plans): the reader drops no row, Spark filters
        self.filter_rows = filter_rows


class FilesPartition(InputPartition):
    """Candidate files packed into one Spark task the way Spark's file sources pack them (:func:`pack`)."""

    def __init__(self, files: list[FilePartition]) -> None:
        super().__init__([f.path for f in files])
        self.files = files


#: Spark's file-source packing settings -> the source options that carry them to the planner (Spark's Python
#: planner has no session to ask): ``spark.sql.files.maxPartitionBytes``, ``openCostInBytes``, ``minPartitionNum``,
#: and the parallelism ``minPartitionNum`` defaults to (``spark.sql.leafNodeDefaultParallelism``, else the
#: SparkContext's ``defaultParallelism``).
PACKING_CONF = {"maxPartitionBytes": "spark.sql.files.maxPartitionBytes",
                "openCostInBytes": "spark.sql.files.openCostInBytes",
                "minPartitionNum": "spark.sql.files.minPartitionNum",
                "leafNodeDefaultParallelism": "spark.sql.leafNodeDefaultParallelism"}
PACKING_DEFAULTS = {"maxpartitionbytes": 128 * 1024 * 1024, "opencostinbytes": 4 * 1024 * 1024}
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30,
          "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50}


def _byte_size(value: Any) -> int:
    """A Spark byte size (``134217728``, ``128m``, ``128MB``; binary units as Spark's) as bytes."""
    text = str(value).strip().lower()
    digits = text.rstrip("abcdefghijklmnopqrstuvwxyz").strip()
    unit = text[len(digits):].strip()
    if not digits or unit not in _UNITS:
        raise SieveError(f"{value!r} is not a byte size: write e.g. 134217728, 128m or 128MB")
    return int(digits) * _UNITS[unit]


def packing_options(spark: Any) -> dict[str, str]:
    """The session's packing settings as source options (what is not set keeps Spark's default)."""
    out: dict[str, str] = {}
    for option, key in PACKING_CONF.items():
        try:
            value = spark.conf.get(key, None)
        except Exception:  # noqa: BLE001 - a setting this Spark does not know: its default
            value = None
        if value not in (None, ""):
            out[option] = str(value)
    if "leafNodeDefaultParallelism" not in out:
        try:
            out["leafNodeDefaultParallelism"] = str(int(spark.sparkContext.defaultParallelism))
        except Exception:  # noqa: BLE001 - a Spark Connect client has no SparkContext: spark.default.parallelism
            value = spark.conf.get("spark.default.parallelism", None)
            if value:
                out["leafNodeDefaultParallelism"] = str(value)
    return out


def pack(files: list[FilePartition], sizes: dict[str, int], options: dict[str, str]) -> list[FilesPartition]:
    """Spark's ``FilePartition.maxSplitBytes`` and ``getFilePartitions`` over whole files: the split size is
    ``min(maxPartitionBytes, max(openCostInBytes, total / minPartitionNum))`` with every file counted at its size
    plus ``openCostInBytes``; files, largest first, fill a task until the next would pass the split size.
    (Spark also splits a file larger than the split size; this reader reads a file in one task.)"""
    opts = {str(k).lower(): v for k, v in options.items()}
    max_bytes = _byte_size(opts.get("maxpartitionbytes", PACKING_DEFAULTS["maxpartitionbytes"]))
    open_cost = _byte_size(opts.get("opencostinbytes", PACKING_DEFAULTS["opencostinbytes"]))
    min_parts = int(opts.get("minpartitionnum") or opts.get("leafnodedefaultparallelism") or 1)
    total = sum(sizes.get(f.path, 0) + open_cost for f in files)
    split = min(max_bytes, max(open_cost, total // max(min_parts, 1)))
    out: list[FilesPartition] = []
    current: list[FilePartition] = []
    size = 0
    for f in sorted(files, key=lambda f: (-sizes.get(f.path, 0), f.path)):
        length = sizes.get(f.path, 0)
        if current and size + length > split:
            out.append(FilesPartition(current))
            current, size = [], 0
        current.append(f)
        size += length + open_cost
    if current:
        out.append(FilesPartition(current))
    return out
