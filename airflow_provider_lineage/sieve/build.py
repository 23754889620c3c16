"""Building an index: the public :func:`build`, its checks, and the choice of structure and engine.

Two engines build the same index: Spark (:mod:`.build_spark`: a distributed key -> location
aggregation, then one ordered bounded-memory pass on the driver) and pyarrow (:mod:`.build_pyarrow`:
keys read on the driver, no Spark job). ``engine="auto"`` (the default) takes pyarrow for tables of
at most :data:`LOCAL_BUILD_MAX_ROWS` rows (from the Parquet footers) and Spark above; ``spark=None``
always takes it. The hashed structure's driver build (:mod:`.hashed_build`) spills its sorted runs to
a temporary directory above :data:`.hashed_build.SPILL_PAIRS` pairs (driver memory: about one bucket
plus the encoded index), so ``auto`` builds it on the driver up to :data:`LOCAL_HASHED_MAX_ROWS` rows.
Closed segments go to a :class:`.sinks.ColumnSink`.
"""
from __future__ import annotations

import time
from typing import Any

from .build_pyarrow import arrow_key_type, learn_key_type, local_build
from .build_spark import spark_build, spark_hashed, spark_schema
from .errors import SieveError
from .files import reading_as, spark_read_conf
from .fingerprints import DEFAULT_FPP
from .hashed import FUSE_MODES, check_structure, choose
from .hashed_build import build_local
from .keys import KeyType, key_type_from_spark
from .model import Segmenter
from .query import SieveIndex, check_freshness, index_location
from .records import IndexStats
from .sinks import ColumnSink
from .storage import IndexStore, Manifest, commit_attempts, now_iso
from .table import FileEntry, TableRef, footer_rows, list_table_files, resolve_table, root_exists, stamp_footers

DEFAULT_MAX_SEGMENT_KEYS = 65_536
DEFAULT_ROWS_PER_PARTITION = 1_000_000
ENGINES = ("auto", "spark", "pyarrow")
# engine="auto": tables up to this many rows are read on the driver with pyarrow (at most this many
# (key, file) pairs: a few hundred MB of driver memory at worst), larger ones through Spark.
LOCAL_BUILD_MAX_ROWS = 8_000_000
# engine="auto", hashed structure: up to this many rows on the driver (pyarrow, runs spilled to TMPDIR
# above hashed.SPILL_PAIRS pairs: memory about one bucket plus the encoded pages, disk up to 16 bytes
# per pair). At K=100,000 (20 M rows, 200 files) the driver build took 2.8-5.9 s where the Spark
# engine took 23.7-31.0 s (local[2]); the driver reads at about 4-7 M rows/s, so 200 M rows is
# about 30-60 s: past that a cluster's parallel scan is the better bet.
LOCAL_HASHED_MAX_ROWS = 200_000_000
# Error bound e: how far R(k) may stray from a segment's straight line, and the update budget
# E = e * b_count. 0 (an exact cone) was chosen from the SF1 benchmark data: files read / exact
# files went 1.52x (e=8), 1.65x (e=4, e=2), 1.61x (e=1) -> 1.00x (e=0) on the adversarial layout,
# 1.69x -> 1.23x on l_orderkey, 1.00x on the others, with every index <= 0.36 % of the raw key
# column. The price: a sync that adds false positives to a segment rebuilds it from data at once
# (adversarial 1 % append: 0.43 s -> 0.65 s). Pass a larger e for cheaper syncs on busy tables.
DEFAULT_ERROR_BOUND = 0
MODES = ("cow", "mor")


def check_params(error_bound: int, max_segment_keys: int, mode: str, keep_versions: int) -> None:
    if mode not in MODES:
        raise SieveError(f"mode {mode!r} is unknown: use 'cow' (copy-on-write) or 'mor' (merge-on-read)")
    if error_bound < 0:
        raise SieveError(f"error_bound={error_bound} is negative: use 0 or more (default {DEFAULT_ERROR_BOUND})")
    if max_segment_keys < 2:
        raise SieveError(f"max_segment_keys={max_segment_keys} is too small: use 2 or more")
    if keep_versions < 1:
        raise SieveError(f"keep_versions={keep_versions}: keep at least 1 version")


def build(spark: Any, table: str, column: str, *, index_path: str | None = None, error_bound: int = DEFAULT_ERROR_BOUND,
          max_segment_keys: int = DEFAULT_MAX_SEGMENT_KEYS, mode: str = "cow", keep_versions: int = 3,
          gap_factor: float = 64.0, rows_per_partition: int = DEFAULT_ROWS_PER_PARTITION,
          engine: str = "auto", structure: str = "auto", fpp: float = DEFAULT_FPP,
          freshness: str = "stat") -> IndexStats:
    """Build a new index version from the table's current files and commit it.

    With a SparkSession, files read on the driver follow its read settings as Spark's reader does
    (``spark.sql.caseSensitive``, ``spark.sql.parquet.int96RebaseModeInRead``,
    ``datetimeRebaseModeInRead``, the session time zone: :class:`.files.ReadConf`); without one,
    Spark's defaults.

    ``freshness``: ``"footer"`` records every file's Parquet footer checksum (read from each file's
    end before its keys: :func:`.table.footer_checksum`) so that lookups, syncs and maintenance with
    ``freshness="footer"`` see a file rewritten with the same size and its mtime set back; the syncs
    of such an index keep recording them. ``"stat"`` (default), ``"names"`` and ``"none"`` record
    paths, sizes and mtimes only (every index does).

    ``structure``: ``segments`` (ordered keys), ``hashed`` (keys without order: UUIDs, random ids;
    ``fpp`` is the share of absent keys that may read a file) or ``auto`` (chosen from a sample of
    the column, see :mod:`.hashed`). A hashed index keeps the keys that are in one file each in a
    retrieval structure (:mod:`.fuse`) when numba is installed and that is smaller; ``fuse`` forces
    it (numpy's slower peel without numba), ``pages`` forbids it (fingerprint pages only).

    ``engine``: ``spark`` (distributed aggregation, bounded driver memory), ``pyarrow`` (keys read
    on the driver: no Spark job) or ``auto`` (pyarrow up to :data:`LOCAL_BUILD_MAX_ROWS` rows, or
    :data:`LOCAL_HASHED_MAX_ROWS` for the hashed structure, else Spark). ``spark`` may be None for path
    tables: keys are then read with pyarrow.
    """
    check_params(error_bound, max_segment_keys, mode, keep_versions)
    check_structure(structure, fpp)
    if structure == "fuse" and engine == "spark":
        raise SieveError("structure='fuse' is built on the driver: pass engine='auto' or 'pyarrow', or "
                         "structure='hashed' to build fingerprint pages with Spark")
    if engine not in ENGINES:
        raise SieveError(f"engine={engine!r} is unknown: use one of {', '.join(ENGINES)}")
    if spark is None and engine == "spark":
        raise SieveError("engine='spark' needs a SparkSession: pass one, or build with engine='pyarrow'")
    check_freshness(freshness)
    t0 = time.monotonic()
    ref = resolve_table(table, spark)
    require_root(ref)
    files = list_table_files(ref)
    for f in files:
        if column in f.partition:
            raise SieveError(f"{column!r} is a partition column of {table}: Spark already prunes partitions "
                             "by it; index a data column instead")
    store = IndexStore(index_location(ref, column, index_path))
    footer = freshness == "footer"
    # files read as the session reads them (spark.sql.caseSensitive, the rebase modes, its time zone)
    with reading_as(spark_read_conf(spark)), store.removing_new_folder_on_error():  # a failed build: no folder left
        if footer:  # before the keys are read: a rewrite after this is a changed checksum, never a stale one
            store.check_writable()
            stamp_footers(files)
        return _build_segments_or_hashed(spark, ref, files, column, store, structure, engine, error_bound,
                                         max_segment_keys, mode, keep_versions, gap_factor, rows_per_partition,
                                         fpp, t0, footer)


def _build_segments_or_hashed(spark: Any, ref: TableRef, files: list[FileEntry], column: str, store: IndexStore,
                              structure: str, engine: str, error_bound: int, max_segment_keys: int, mode: str,
                              keep_versions: int, gap_factor: float, rows_per_partition: int, fpp: float,
                              t0: float, footer: bool = False) -> IndexStats:
    store.check_writable()  # before any Spark work
    sink = ColumnSink(store, error_bound)
    seg = Segmenter(error_bound, max_segment_keys, sink, gap_factor)
    stats: dict[str, Any] = {"freshness": "footer"} if footer else {}
    with store.discarding_on_error():
        schema = None if spark is None else spark_schema(spark, ref, files, column)
        if structure != "segments":
            if not files:
                raise SieveError("the table has no Parquet files: write data first (an empty table needs no index)")
            # unlearned (no string prefix or alphabet): hashes need none, and ranges stay correct
            kt = arrow_key_type(files, column, learn=False) if schema is None else \
                key_type_from_spark(schema[column].dataType, column)
            if structure != "auto" or choose(files, column, kt) == "hashed":
                return _build_hashed(spark, engine, rows_per_partition, store, ref, files, column, kt, schema,
                                     fpp, t0, FUSE_MODES.get(structure, "auto"), footer, mode=mode,
                                     error_bound=error_bound, max_segment_keys=max_segment_keys,
                                     gap_factor=gap_factor, keep_versions=keep_versions)
        if schema is None or engine == "pyarrow" or (engine == "auto" and _small(files)):
            # With Spark, the key type (and its type name in lineage facets) is Spark's, as a Spark build's.
            spark_kt = None if schema is None else learn_key_type(
                key_type_from_spark(schema[column].dataType, column), files, column)
            kt, nulls, _ = local_build(files, column, seg, spark_kt)
            schema_json = None if schema is None else schema.json()  # the reader's schema
            stats.update(engine="pyarrow", rows=sum(f.num_rows or 0 for f in files))
        else:
            kt, nulls, schema_json = spark_build(spark, ref, schema, files, column, seg, rows_per_partition, stats)
            stats["engine"] = "spark"
        seg.finish()
        metas = sink.segment_list()
        stats.update(keys=seg.keys_seen, segments=len(metas), seconds=round(time.monotonic() - t0, 3))
        manifest = Manifest(
            version=0, created=now_iso(), table=ref, column=column, key_type=kt, mode=mode,
            error_bound=error_bound, max_segment_keys=max_segment_keys, gap_factor=gap_factor,
            keep_versions=keep_versions, files=dict(enumerate(files)), next_file_id=len(files),
            null_files=sorted(nulls), segment_list=store.write_segment_list(metas),
            schema_json=schema_json, build_stats=stats)
        commit_retrying(store, manifest)
    return SieveIndex(store, manifest).stats()


def _build_hashed(spark: Any, engine: str, rows_per_partition: int, store: IndexStore, ref: TableRef,
                  files: list[FileEntry], column: str, kt: KeyType, schema: Any, fpp: float, t0: float,
                  fuse_mode: str, footer: bool = False, **params: Any) -> IndexStats:
    """A hashed-key index: keys read on the driver with pyarrow (up to :data:`LOCAL_HASHED_MAX_ROWS`
    rows, or no Spark; runs spilled to a temporary directory), or hashed by a Spark job whose pairs
    stream to the driver page by page (both: bounded driver memory)."""
    got = None
    stats: dict[str, Any] = {"structure": "hashed", "fuse_mode": fuse_mode}
    if footer:
        stats["freshness"] = "footer"
    if spark is not None and engine != "pyarrow" and kt.kind != "decimal" and fuse_mode != "always" and (
            engine == "spark" or not _small(files, LOCAL_HASHED_MAX_ROWS)):
        got = spark_hashed(spark, files, column, kt, fpp, rows_per_partition, store, stats)
    if got is None:
        got = build_local(store, files, column, kt, fpp, fuse_mode)
        stats["engine"] = "pyarrow"
    href, nulls, fp_bits, n_keys, rt = got
    stats.update(
        rows=sum(f.num_rows or 0 for f in files),
        keys=n_keys,
        pairs=href.pairs + (rt.one_file if rt is not None else 0),
        fuse_keys=rt.one_file if rt is not None else 0,
        segments=0,
        seconds=round(time.monotonic() - t0, 3),
    )
    manifest = Manifest(
        version=0, created=now_iso(), table=ref, column=column, key_type=kt, files=dict(enumerate(files)),
        next_file_id=len(files), null_files=sorted(nulls), segment_list=None,
        schema_json=None if schema is None else schema.json(), build_stats=stats, structure="hashed",
        hashed=[href], fpp=fpp, fp_bits=fp_bits, fuse=rt, **params)
    commit_retrying(store, manifest)
    return SieveIndex(store, manifest).stats()


def require_root(ref: TableRef) -> None:
    """A table whose root directory is missing is an error (not an empty table)."""
    found = root_exists(ref.root)  # a local directory, or a prefix with objects on a store
    if not found:
        what = "is not a directory" if found is None else "does not exist"
        raise SieveError(f"table path {ref.root} {what}: pass the table's root directory")


def commit_retrying(store: IndexStore, manifest: Manifest) -> int:
    """Commit a manifest that does not depend on its base (a full build) at the next free version."""
    for attempt in commit_attempts("the build", store.path):
        with attempt:
            return store.commit(manifest, store.latest_version())
    raise AssertionError("unreachable: commit_attempts raises when every attempt lost")


def _small(files: list[FileEntry], limit: int | None = None) -> bool:
    """Whether the table has at most ``limit`` (default :data:`LOCAL_BUILD_MAX_ROWS`) rows (Parquet footers)."""
    footer_rows([f for f in files if f.num_rows is None])
    return sum(f.num_rows or 0 for f in files) <= (LOCAL_BUILD_MAX_ROWS if limit is None else limit)
