"""Building an index: distributed key -> location aggregation, then one ordered bounded-memory pass.

Stage 1 (Spark), integer keys: ``select(key, xxhash64(input_file_name())) -> distinct ->
range-partition by key, sort by (key, hash)``: the distinct is a code-generated hash aggregation on
two longs, partial in every scan task; the driver maps the hashes to file ids (a collision between
two listed files' hashes falls back to the URI join below). Decimal keys: ``select(key,
input_file_name()) -> distinct -> join a small broadcast file-id table -> group by key ->
sort_array(collect_list(file id)) -> range-partition by key and sort``. At most one range partition per
``rows_per_partition`` rows
(from the Parquet footers, read in threads), which adaptive query execution coalesces up to its
advisory partition size (so a low-cardinality key streams as one partition: one Spark job, not one
per million rows); the pipeline is JVM-only (no Python workers, so executors need neither this
package nor pyarrow).

Stage 2 (driver): integer keys arrive as Arrow record batches of (key, hash) pairs
(``collectAsArrowToPython``, up to :data:`ARROW_BATCH_ROWS` rows each, streamed as Spark's tasks
finish, so in no particular partition order). A key continued by the next batch is carried over,
so each run holds whole keys of one range partition, sorted; each run is grouped and segmented on
its own with :meth:`~.model.Segmenter.push_many` (vectorised; segments never cross a run, so they
never overlap), and the segment list is sorted at the end. Decimal keys and a PySpark without that
path use ``toLocalIterator(prefetchPartitions=False)``: one partition at a
time in key order into :meth:`~.model.Segmenter.push`. Each closed segment is cut into blocks,
appended to the open segment pack and dropped. Driver memory is bounded by one batch or partition
(``rows_per_partition`` rows, or AQE's advisory size when it coalesces) plus one segment
(``max_segment_keys`` keys) plus the small segment list.

The pyarrow engine reads each file's key column on the driver (a few threads), de-duplicates it
per file and segments every (key, file) pair at once: no Spark job, so it is the faster engine for
small tables (SF1 `l_orderkey`, 6 M rows: about 0.6 s against about 2.6 s through Spark), but its
memory grows with the table's distinct (key, file) pairs (16 bytes each, a few times over while
sorting). ``engine="auto"`` (the default) takes it for tables of at most
:data:`LOCAL_BUILD_MAX_ROWS` rows (from the Parquet footers) and Spark above; ``spark=None`` always
takes it. The hashed structure's driver build spills its sorted runs to a temporary directory
above :data:`.hashed.SPILL_PAIRS` pairs (driver memory: about one bucket plus the encoded index),
so ``auto`` builds it on the driver up to :data:`LOCAL_HASHED_MAX_ROWS` rows.
"""
from __future__ import annotations

import contextlib
import contextvars
import itertools
import math
import time
from array import array
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import hashed
from .errors import IndexUnavailable, SieveError
from .files import reading_as, resolve_columns, spark_read_conf
from .fingerprints import DEFAULT_FPP
from .fs import open_input
from .hashed import FUSE_MODES, check_structure, choose
from .keys import (
    BYTE_KINDS,
    HIGH_KEY,
    LEN_BITS,
    LOW_KEY,
    WINDOW,
    KeyType,
    _unscaled,
    key_type_from_arrow,
    key_type_from_spark,
    learn_alphabet,
    radix_tables,
    with_bounds,
)
from .model import Segment, Segmenter, budget_for
from .query import SieveIndex, check_freshness, index_location
from .records import IndexStats
from .storage import META_INTS, IndexStore, Manifest, SegmentList, SegmentMeta, commit_attempts, now_iso
from .table import (
    FileEntry,
    TableRef,
    list_table_files,
    local_path,
    num_rows,
    read_file_keys,
    read_schema,
    resolve_table,
    root_exists,
    spark_path,
    spark_uri,
    stamp_footers,
)

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
FOOTER_THREADS = 8
# Error bound e: how far R(k) may stray from a segment's straight line, and the update budget
# E = e * b_count. 0 (an exact cone) was chosen from the SF1 benchmark data: files read / exact
# files went 1.52x (e=8), 1.65x (e=4, e=2), 1.61x (e=1) -> 1.00x (e=0) on the adversarial layout,
# 1.69x -> 1.23x on l_orderkey, 1.00x on the others, with every index <= 0.36 % of the raw key
# column. The price: a sync that adds false positives to a segment rebuilds it from data at once
# (adversarial 1 % append: 0.43 s -> 0.65 s). Pass a larger e for cheaper syncs on busy tables.
DEFAULT_ERROR_BOUND = 0
MODES = ("cow", "mor")


@dataclass
class SegmentSink:
    """Receives closed segments, writes each to its own file and keeps only its list entry."""

    store: IndexStore
    error_bound: int
    metas: list[SegmentMeta] = field(default_factory=list)

    def __call__(self, seg: Segment) -> None:
        self.metas.append(meta_for(self.store, seg, self.error_bound))


class ColumnSink:
    """A build's sink: writes each closed segment to the open pack and keeps its list entry as
    columns (machine integers and one shared pack name; the location sets concatenated), not as
    a :class:`SegmentMeta` each, so a build over hundreds of thousands of segments holds no
    per-segment Python objects but its two key bounds."""

    def __init__(self, store: IndexStore, error_bound: int) -> None:
        self.store, self.error_bound = store, error_bound
        self.clear()

    def clear(self) -> None:
        self.s_min: list[Any] = []
        self.s_max: list[Any] = []
        self.ints: list[Any] = [array("q") for _ in META_INTS]
        self.names: list[str] = []
        self.locs = array("I")
        self.bounds = array("q", [0])

    def __len__(self) -> int:
        return len(self.s_min)

    def __call__(self, seg: Segment) -> None:
        meta = meta_for(self.store, seg, self.error_bound)  # dropped once stored as columns
        self.s_min.append(meta.s_min)
        self.s_max.append(meta.s_max)
        for k, get in enumerate(META_INTS):
            try:
                self.ints[k].append(get(meta))
            except OverflowError:  # a block over the whole 64-bit key space (string keys)
                self.ints[k] = [*self.ints[k], get(meta)]
        self.names.append(meta.file.name)
        self.locs.frombytes(meta.locations.astype(np.uint32).tobytes())
        self.bounds.append(len(self.locs))

    def segment_list(self) -> SegmentList:
        """The entries sorted by key range (Arrow batches arrive in no particular order)."""
        locs = np.frombuffer(self.locs, np.uint32) if len(self.locs) else np.empty(0, np.uint32)
        columns = SegmentList(self.s_min, self.s_max, self.ints, self.names, locs, np.frombuffer(self.bounds, np.int64))
        return columns.select(sorted(range(len(self.s_min)), key=self.s_min.__getitem__))


def meta_for(store: IndexStore, seg: Segment, error_bound: int, used: int = 0) -> SegmentMeta:
    ref = store.write_segment(seg)
    return SegmentMeta(seg.s_min, seg.s_max, seg.b_size, seg.b_count, budget_for(error_bound, seg.b_count),
                       used, seg.n_keys, ref, seg.locations())


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
            kt, nulls, _ = _local_build(files, column, seg, spark_kt)
            schema_json = None if schema is None else schema.json()  # the reader's schema
            stats.update(engine="pyarrow", rows=sum(f.num_rows or 0 for f in files))
        else:
            kt, nulls, schema_json = _spark_build(spark, ref, schema, files, column, seg, rows_per_partition, stats)
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
        got = _spark_hashed(spark, files, column, kt, fpp, rows_per_partition, store, stats)
    if got is None:
        got = hashed.build_local(store, files, column, kt, fpp, fuse_mode)
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


def _spark_hashed(spark: Any, files: list[FileEntry], column: str, kt: KeyType, fpp: float,
                  rows_per_partition: int, store: IndexStore, stats: dict[str, Any]
                  ) -> tuple[Any, set[int], int, int] | None:
    """Spark computes the distinct (``xxhash64`` of the key, ``xxhash64`` of the file URI, NULL)
    triples, hash-partitioned by page (the hash's top bits; the de-duplication needs no shuffle of
    its own then, and no range sampling pass: 1.8-2x faster than distinct + repartitionByRange at
    2 M rows, the same structure byte for byte; rows are shuffled before they are de-duplicated,
    which costs little on the mostly distinct keys this structure is chosen for) and sorted; they
    stream to the driver as Arrow batches, a page's rows one after another, and each page is
    encoded as soon as it is whole.
    The driver holds one batch, one page and the encoded pages (the index itself). Fingerprint bits
    are sized for the table's row count (from the footers: at least the distinct keys). Each file's
    key range comes from its footer statistics. None when the Arrow path is unavailable."""
    from pyspark.sql import functions as F

    from .fingerprints import encode_page, fingerprint_bits, group_pairs, page_bits_for

    footer_rows([f for f in files if f.num_rows is None])
    rows = sum(f.num_rows or 0 for f in files)
    fp_bits = fingerprint_bits(rows, fpp)
    page_bits = page_bits_for(rows, fp_bits)
    low_bits = fp_bits - page_bits
    fid_width = max(1, (len(files) - 1).bit_length())
    c = F.col(f"`{column}`")
    h = F.xxhash64(c) if kt.kind in BYTE_KINDS else F.xxhash64(spark_key_expr(column, kt).cast("long"))
    page = F.shiftrightunsigned(h, 64 - page_bits) if page_bits else F.lit(0)
    key_df = spark.read.parquet(*[spark_path(f.path) for f in files]).select(c)
    agg = (key_df.select(page.alias("p"), h.alias("h"), F.xxhash64(F.input_file_name()).alias("f"),
                         c.isNull().alias("n"))
           .repartition(max(1, math.ceil(rows / max(1, rows_per_partition))), "p").distinct()
           .sortWithinPartitions("p"))
    conf = {"spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH_ROWS),
            "spark.sql.adaptive.coalescePartitions.enabled": "false"}
    uris = [(spark_uri(f.path), i) for i, f in enumerate(files)]
    pages: dict[int, bytes] = {}
    sizes = [0, 0]  # keys (fingerprints), pairs

    def emit(p: int, hs: np.ndarray, fids: np.ndarray) -> None:
        fps = hs.view(np.uint64) >> np.uint64(64 - fp_bits)
        g, counts, gf = group_pairs(fps, fids)
        sizes[0] += len(g)
        sizes[1] += len(gf)
        pages[p] = encode_page(g & np.uint64((1 << low_bits) - 1), low_bits, counts, gf, fid_width)

    for mapping in ("predicted", "observed"):
        table = FileHashes.of(spark, uris)
        if table is None:
            return None
        pages.clear()
        sizes[:] = [0, 0]
        nulls: set[int] = set()

        try:
            with session_conf(spark, conf):
                batches = arrow_batches(agg)
                if batches is None:
                    return None
                held: tuple[int, list[np.ndarray], list[np.ndarray]] | None = None
                with contextlib.closing(batches):
                    for batch in batches:
                        p = batch.column(0).to_numpy(zero_copy_only=False).astype(np.int64)
                        hs = batch.column(1).to_numpy(zero_copy_only=False).astype(np.int64)
                        fids = table.ids(batch.column(2).to_numpy(zero_copy_only=False).astype(np.int64))
                        isnull = batch.column(3).to_numpy(zero_copy_only=False).astype(bool)
                        if isnull.any():
                            nulls.update(fids[isnull].tolist())
                            p, hs, fids = p[~isnull], hs[~isnull], fids[~isnull]
                        if not len(p):
                            continue
                        cuts = [0, *(np.flatnonzero(p[1:] != p[:-1]) + 1).tolist(), len(p)]
                        for a, b in itertools.pairwise(cuts):
                            pid = int(p[a])
                            if held is not None and held[0] == pid:
                                held[1].append(hs[a:b])
                                held[2].append(fids[a:b])
                                continue
                            if held is not None:
                                emit(held[0], np.concatenate(held[1]), np.concatenate(held[2]))
                            held = (pid, [hs[a:b]], [fids[a:b]])
                    if held is not None:
                        emit(held[0], np.concatenate(held[1]), np.concatenate(held[2]))
        except _UnknownFile:
            if mapping == "observed":
                raise SieveError("files of the table changed during the build: build again") from None
            uris = _observed_uris(key_df, files)
            continue
        empty = encode_page(np.empty(0, np.uint64), low_bits, np.empty(0, np.int64), np.empty(0, np.uint32), fid_width)
        ordered = [pages.get(i, empty) for i in range(1 << page_bits)]
        ids, lo, hi = hashed.footer_ranges(files, column, kt)
        ref = store.write_hashed_pages(ordered, fp_bits, page_bits, fid_width, sizes[0], sizes[1], ids, lo, hi)
        stats.update(engine="spark", transfer="arrow", file_id_mapping=mapping)
        return ref, nulls, fp_bits, sizes[0], None
    raise AssertionError("unreachable")


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


# ---- pyarrow engine ---------------------------------------------------------------------------
def arrow_key_type(files: list[FileEntry], column: str, learn: bool = True) -> KeyType:
    for f in files:
        schema = read_schema(f.path)
        if column in schema.names:
            kt = key_type_from_arrow(schema.field(column).type, column)
            return learn_key_type(kt, files, column) if learn else kt
    names = sorted({n for f in files for n in read_schema(f.path).names})
    raise SieveError(f"no file of the table has a column {column!r}; its columns are {', '.join(names)}: "
                     "check the column name")


def learn_key_type(kt: KeyType, files: list[FileEntry], column: str) -> KeyType:
    """String/binary columns: the byte prefix every value shares and the mean value width, from the
    Parquet footers' min/max (a file without statistics has its column read, batch by batch)."""
    if not kt.shares_keys:
        return kt
    low: bytes | None = None
    high: bytes | None = None
    widths: list[int] = []
    for f in files:
        bounds = file_bounds(f.path, column)
        if bounds is None:
            continue
        low = bounds[0] if low is None else min(low, bounds[0])
        high = bounds[1] if high is None else max(high, bounds[1])
        widths += [len(bounds[0]), len(bounds[1])]
    kt = with_bounds(kt, low, high, round(sum(widths) / len(widths)) if widths else None)
    return learn_alphabet(kt, sample_column(files, column))


SAMPLE_VALUES = 100_000


def sample_column(files: list[FileEntry], column: str, limit: int = SAMPLE_VALUES) -> pa.ChunkedArray:
    """About ``limit`` values of a column, the first ones of every file (to learn a key alphabet:
    any sample gives correct answers, a representative one gives finer keys)."""
    per_file = max(1_000, limit // max(1, len(files)))
    chunks: list[pa.Array] = []
    seen = 0
    for f in files:
        pf = pq.ParquetFile(open_input(f.path))
        name = resolve_columns([column], pf.schema_arrow.names).get(column)  # Spark's case rule
        if name is None:
            continue
        batch = next(pf.iter_batches(columns=[name], batch_size=per_file), None)
        if batch is not None:
            chunks.append(pc.cast(batch.column(0), pa.large_binary()))
            seen += len(batch)
        if seen >= limit:
            break
    return pa.chunked_array(chunks, pa.large_binary())


def file_bounds(path: str, column: str) -> tuple[bytes, bytes] | None:
    """(min, max) of a string/binary column's non-null values in one file (unsigned byte order)."""
    pf = pq.ParquetFile(open_input(path))
    md = pf.metadata
    column = resolve_columns([column], pf.schema_arrow.names).get(column, column)  # Spark's case rule
    leaf = next((i for i in range(md.num_columns) if md.schema.column(i).path == column), None)
    if leaf is None:
        return None
    low: bytes | None = None
    high: bytes | None = None
    for rg in range(md.num_row_groups):
        chunk = md.row_group(rg).column(leaf)
        st = chunk.statistics if chunk.is_stats_set else None
        if st is not None and st.has_null_count and st.null_count >= chunk.num_values:
            continue  # only NULLs
        if st is None or not st.has_min_max:
            return _read_bounds(pf, column)
        lo, hi = bytes(st.min_raw), bytes(st.max_raw)
        low = lo if low is None else min(low, lo)
        high = hi if high is None else max(high, hi)
    return None if low is None or high is None else (low, high)


def _read_bounds(pf: pq.ParquetFile, column: str) -> tuple[bytes, bytes] | None:
    low: bytes | None = None
    high: bytes | None = None
    for batch in pf.iter_batches(columns=[column], batch_size=65_536):
        col = pc.cast(batch.column(0), pa.large_binary()).drop_null()  # string_view cannot drop_null
        if len(col):
            mm = pc.min_max(col)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            low = lo if low is None else min(low, lo)
            high = hi if high is None else max(high, hi)
    return None if low is None or high is None else (low, high)


def _small(files: list[FileEntry], limit: int | None = None) -> bool:
    """Whether the table has at most ``limit`` (default :data:`LOCAL_BUILD_MAX_ROWS`) rows (Parquet footers)."""
    footer_rows([f for f in files if f.num_rows is None])
    return sum(f.num_rows or 0 for f in files) <= (LOCAL_BUILD_MAX_ROWS if limit is None else limit)


LOCAL_READ_THREADS = 4


def _local_build(files: list[FileEntry], column: str, seg: Segmenter,
                 kt: KeyType | None = None) -> tuple[KeyType, set[int], None]:
    """Keys read with pyarrow on this machine (``kt``: the key type, else learned from the files)."""
    if not files:
        raise SieveError("the table has no Parquet files: write data first (an empty table needs no index)")
    kt = kt or arrow_key_type(files, column)
    parts: list[np.ndarray] = []
    nulls: set[int] = set()
    ctx = contextvars.copy_context()  # each read in a copy: the caller's storage options hold
    with ThreadPoolExecutor(max_workers=min(LOCAL_READ_THREADS, len(files))) as pool:
        got = pool.map(lambda p: ctx.copy().run(read_file_keys, p, column, kt), [f.path for f in files])
        for fid, (f, (keys, n_null, rows)) in enumerate(zip(files, got)):  # unique keys of each file
            f.num_rows = rows
            if n_null:
                nulls.add(fid)
            parts.append(keys)
    if any(p.dtype == object for p in parts):  # keys beyond int64: Python ints, key by key
        agg: dict[int, list[int]] = {}
        for fid, keys in enumerate(parts):
            for k in keys.tolist():
                agg.setdefault(k, []).append(fid)
        for k in sorted(agg):
            seg.push(k, tuple(agg[k]))
        return kt, nulls, None
    keys = np.concatenate(parts).astype(np.int64) if parts else np.empty(0, np.int64)
    seg.push_pairs(keys, np.repeat(np.arange(len(parts), dtype=np.int64), [len(p) for p in parts]))
    return kt, nulls, None


# ---- Spark engine -----------------------------------------------------------------------------
class _UnknownFile(Exception):
    pass


ARROW_BATCH_ROWS = 200_000  # keys per Arrow batch sent to the driver (one segmenter pass each)


def arrow_batches(df: Any) -> Iterator[pa.RecordBatch] | None:
    """The rows of a DataFrame as Arrow record batches, streamed as Spark's tasks finish (so
    partitions in no particular order; a partition's batches in its order). None when this PySpark
    lacks the path (it uses PySpark internals, pinned with PySpark). Closing the generator early
    drains the stream, so Spark's serving thread never blocks on a full socket."""
    try:
        from pyspark.errors.exceptions.captured import unwrap_spark_exception
        from pyspark.sql.pandas.serializers import ArrowCollectSerializer
        from pyspark.traceback_utils import SCCallSiteSync
        from pyspark.util import _load_from_socket
    except ImportError:  # pragma: no cover - another PySpark layout
        return None
    if not hasattr(df, "_jdf"):  # Spark Connect
        return None
    with SCCallSiteSync(df._sc):
        port, secret, server = df._jdf.collectAsArrowToPython()

    def stream() -> Iterator[pa.RecordBatch]:
        items = iter(_load_from_socket((port, secret), ArrowCollectSerializer()))
        try:
            for item in items:
                if isinstance(item, pa.RecordBatch):  # the last item is the batch order: not needed
                    yield item
        finally:
            for _ in items:  # stopped early: read the rest so that Spark's writer can finish
                pass
            with unwrap_spark_exception():
                server.getResult()

    return stream()


def _key_runs(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(keys, valid, hashes) of the (key, file hash) rows of the batches, cut so that no key's rows
    are split between two runs. A key lives in one range partition and a partition's batches come
    one after another, so a key continued by the next batch is the first key of that batch."""
    held: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    for batch in batches:
        k, h = batch.column(0), batch.column(1)
        if not pa.types.is_integer(k.type):
            raise SieveError(f"the index key expression gave {k.type}, not an integer (a bug): report it")
        valid = k.is_valid().to_numpy(zero_copy_only=False)
        keys = k.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        hashes = h.to_numpy(zero_copy_only=False).astype(np.int64)
        if not len(keys):
            continue
        if held is not None:
            hk, hv, hh = held
            if hv[-1] == valid[0] and (not valid[0] or hk[-1] == keys[0]):  # the held key goes on
                n = int(np.argmax((keys != keys[0]) | (valid != valid[0]))) or len(keys)  # its rows here
                held = (np.concatenate([hk, keys[:n]]), np.concatenate([hv, valid[:n]]),
                        np.concatenate([hh, hashes[:n]]))
                keys, valid, hashes = keys[n:], valid[n:], hashes[n:]
                if not len(keys):
                    continue
            yield held
        held = (keys, valid, hashes)
    if held is not None:
        yield held


def _segment_run(run: tuple[np.ndarray, np.ndarray, np.ndarray], seg: Segmenter, nulls: set[int],
                 files: FileHashes) -> None:
    """One sorted run of (key, file hash) rows into the segmenter, as its own segments."""
    keys, valid, hashes = run
    fids = files.ids(hashes)
    if not valid.all():
        nulls.update(fids[~valid].tolist())
        keys, fids = keys[valid], fids[valid]
        if not len(keys):
            return
    seg.push_pairs(keys, fids)
    seg.restart()  # runs arrive in any order: a segment never spans two


@dataclass(frozen=True)
class FileHashes:
    """Spark's ``xxhash64`` of every file URI, sorted, with the file ids (the driver maps the hashes
    a Spark aggregation collected back to file ids)."""

    hashes: np.ndarray
    fids: np.ndarray

    @classmethod
    def of(cls, spark: Any, uris: list[tuple[str, int]]) -> FileHashes | None:
        """The table of ``(uri, file id)`` pairs; None when two URIs share a hash."""
        from pyspark.sql import functions as F

        rows = (spark.createDataFrame(uris, "f string, fid int").select(F.xxhash64("f").alias("h"), "fid")
                .collect())
        h = np.asarray([r.h for r in rows], np.int64)
        f = np.asarray([r.fid for r in rows], np.int64)
        order = np.argsort(h, kind="stable")
        h, f = h[order], f[order]
        if len(h) > 1 and bool(np.any(h[1:] == h[:-1])):
            return None
        return cls(h, f)

    def ids(self, hashes: np.ndarray) -> np.ndarray:
        """File ids of these hashes; raises _UnknownFile for a hash of no listed file."""
        hashes = np.asarray(hashes, np.int64)
        pos = np.searchsorted(self.hashes, hashes)
        pos = np.minimum(pos, len(self.hashes) - 1)
        if len(hashes) and (not len(self.hashes) or bool(np.any(self.hashes[pos] != hashes))):
            raise _UnknownFile()
        return self.fids[pos]


def spark_key_expr(column: str, kt: KeyType) -> Any:
    """Spark expression of the integer key (decimals stay decimal; unscaled on the driver)."""
    from pyspark.sql import functions as F

    c = F.col(f"`{column}`")
    if kt.kind == "int":
        return c.cast("long")
    if kt.kind == "date":
        return F.unix_date(c)
    if kt.kind == "timestamp":
        return F.unix_micros(c)
    if kt.kind == "timestamp_ntz":  # wall-clock micros, independent of the session time zone
        return (F.unix_date(c.cast("date")).cast("long") * 86_400_000_000
                + (F.hour(c) * 3600 + F.minute(c) * 60).cast("long") * 1_000_000
                + (F.expr(f"extract(SECOND FROM `{column}`)") * 1_000_000).cast("long"))
    if kt.shares_keys and kt.alphabet:
        return spark_radix_key(column, kt.prefix_bytes, bytes.fromhex(kt.alphabet))
    if kt.shares_keys:
        return spark_window_key(c.cast("binary"), kt.prefix_bytes)
    return c


def spark_radix_key(column: str, prefix: bytes, alphabet: bytes) -> Any:
    """:func:`~.keys.radix_key` as a JVM-only Spark SQL expression (a fold over the digits)."""
    from pyspark.sql import functions as F

    code, mode, r, w = radix_tables(alphabet)
    p = len(prefix)
    raw = f"CAST(`{column}` AS BINARY)"
    rest = f"substring({raw}, {p + 1}, {w})"
    byte = f"(CAST(conv(hex(substring({rest}, j + 1, 1)), 16, 10) AS INT) + 1)"
    codes = "array(" + ", ".join(str(int(x)) for x in code) + ")"
    modes = "array(" + ", ".join(str(int(x)) for x in mode) + ")"
    fold = (f"aggregate(sequence(0, {w - 1}), named_struct('k', CAST(0 AS BIGINT), 'm', 0), (acc, j) -> CASE "
            f"WHEN acc.m = 1 THEN named_struct('k', acc.k * {r} + {r - 1}, 'm', 1) "
            f"WHEN acc.m = 2 OR j >= octet_length({rest}) THEN named_struct('k', acc.k * {r}, 'm', 2) "
            f"ELSE named_struct('k', acc.k * {r} + element_at({codes}, {byte}), 'm', element_at({modes}, {byte})) "
            "END, acc -> acc.k + 1)")
    if not p:
        return F.expr(f"CASE WHEN `{column}` IS NULL THEN NULL ELSE {fold} END")
    pre = f"unhex('{prefix.hex()}')"
    return F.expr(f"CASE WHEN `{column}` IS NULL THEN NULL WHEN substring({raw}, 1, {p}) = {pre} THEN {fold} "
                  f"WHEN {raw} < {pre} THEN CAST({LOW_KEY} AS BIGINT) ELSE CAST({HIGH_KEY} AS BIGINT) END")


def spark_window_key(raw: Any, prefix: bytes) -> Any:
    """:func:`~.keys.window_key` as a JVM-only Spark expression over a binary column."""
    from pyspark.sql import functions as F

    p = len(prefix)
    rest = F.substring(raw, p + 1, WINDOW)
    big_endian = F.conv(F.rpad(F.hex(rest), 2 * WINDOW, "0"), 16, 10).cast("long")
    length = F.least(F.octet_length(raw) - F.lit(p), F.lit(WINDOW)).cast("long")
    key = F.lit(1).cast("long") + F.shiftleft(big_endian, LEN_BITS) + length
    if not p:
        return key
    pre = F.unhex(F.lit(prefix.hex()))
    return (F.when(raw.isNull(), F.lit(None).cast("long"))
            .when(F.substring(raw, 1, p) == pre, key)
            .when(raw < pre, F.lit(LOW_KEY).cast("long"))
            .otherwise(F.lit(HIGH_KEY).cast("long")))


def table_schema(spark: Any, ref: TableRef) -> Any:
    if ref.kind == "catalog":
        return spark.table(ref.name).schema
    return spark.read.parquet(spark_path(ref.root)).schema


def footer_rows(files: list[FileEntry]) -> None:
    """Set every file's row count from its Parquet footer (read in a few threads: it is I/O)."""
    if not files:
        return
    # Each read runs in a copy of this context: the caller's storage options (a context variable) hold.
    ctx = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=min(FOOTER_THREADS, len(files))) as pool:
        for f, n in zip(files, pool.map(lambda p: ctx.copy().run(num_rows, p), [f.path for f in files])):
            f.num_rows = n


@contextlib.contextmanager
def session_conf(spark: Any, settings: dict[str, str]) -> Iterator[None]:
    """Set Spark session settings inside the block and restore the caller's values after it."""
    old = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def spark_schema(spark: Any, ref: TableRef, files: list[FileEntry], column: str) -> Any:
    """The table's Spark schema, after checking that there are files and that it has the column."""
    if not files:
        raise SieveError(f"{ref.name} has no Parquet files: write data first (an empty table needs no index)")
    schema = table_schema(spark, ref)
    if column not in schema.names:
        raise SieveError(f"{ref.name} has no column {column!r}; its columns are {', '.join(schema.names)}: "
                         "check the column name")
    key_type_from_spark(schema[column].dataType, column)  # an unsupported type fails here, named
    return schema


def _spark_build(spark: Any, ref: TableRef, schema: Any, files: list[FileEntry], column: str, seg: Segmenter,
                 rows_per_partition: int, stats: dict[str, Any]) -> tuple[KeyType, set[int], str]:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    kt = learn_key_type(key_type_from_spark(schema[column].dataType, column), files, column)
    footer_rows([f for f in files if f.num_rows is None])
    total_rows = sum(f.num_rows or 0 for f in files)
    n_parts = max(1, math.ceil(total_rows / max(1, rows_per_partition)))
    stats.update(rows=total_rows, partitions=n_parts)
    key_df = spark.read.schema(T.StructType([schema[column]])).parquet(*[spark_path(f.path) for f in files])
    conf = {"spark.sql.shuffle.partitions": str(n_parts),
            "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH_ROWS)}
    if kt.kind != "decimal":
        nulls_or_none = _arrow_build(spark, key_df, column, kt, files, seg, conf, stats)
        if nulls_or_none is not None:
            return kt, nulls_or_none, schema.json()

    def run(file_ids: list[tuple[str, int]]) -> set[int]:
        fid_df = spark.createDataFrame(file_ids, "f string, fid int")
        # distinct (key, file) pairs first (a partial aggregation in every scan task), so the file id
        # join runs once per pair, not once per row; the ids of distinct pairs are distinct.
        agg = (key_df.select(spark_key_expr(column, kt).alias("k"), F.input_file_name().alias("f"))
               .distinct()
               .join(F.broadcast(fid_df), "f", "left")
               .groupBy("k").agg(F.sort_array(F.collect_list(F.coalesce(F.col("fid"), F.lit(-1)))).alias("fids"))
               .repartitionByRange("k").sortWithinPartitions("k"))
        nulls: set[int] = set()
        decimal = kt.kind == "decimal"
        push = seg.push
        # JVM-only pipeline (no Python workers): rows stream to the driver partition by partition.
        # At most n_parts range partitions, which adaptive execution coalesces (one Spark job each).
        with session_conf(spark, conf):
            rows = agg.toLocalIterator(prefetchPartitions=False)  # plans and runs the shuffles now
        for k, fs in rows:
            if fs and fs[0] == -1:
                raise _UnknownFile()
            if k is None:
                nulls.update(fs)
                continue
            push(_unscaled(k, kt.scale) if decimal else k, tuple(fs))
        return nulls

    stats["transfer"] = "rows"
    try:
        nulls = run([(spark_uri(f.path), i) for i, f in enumerate(files)])
        stats["file_id_mapping"] = "predicted"
    except _UnknownFile:
        # Spark spelled some file URI differently: map the URIs Spark reports (one extra scan).
        _reset(seg)
        try:
            nulls = run(_observed_uris(key_df, files))
        except _UnknownFile:
            raise SieveError("files of the table changed during the build: build again") from None
        stats["file_id_mapping"] = "observed"
    return kt, nulls, schema.json()


def _arrow_build(spark: Any, key_df: Any, column: str, kt: KeyType, files: list[FileEntry], seg: Segmenter,
                 conf: dict[str, str], stats: dict[str, Any]) -> set[int] | None:
    """Integer keys: distinct ``(key, xxhash64(file URI))`` pairs (combined in every scan task),
    range-partitioned by key and sorted, streamed to the driver as Arrow batches; the driver groups
    each key's pairs, maps hashes to file ids and segments each run vectorised. None when this path
    is unavailable (then nothing was pushed)."""
    from pyspark.sql import functions as F

    agg = (key_df.select(spark_key_expr(column, kt).alias("k"), F.xxhash64(F.input_file_name()).alias("h"))
           .distinct()  # codegen'd hash aggregation on two longs, partial in every scan task
           .repartitionByRange("k").sortWithinPartitions("k", "h"))
    uris = [(spark_uri(f.path), i) for i, f in enumerate(files)]
    # One job whose tasks each send a whole partition to the driver's heap: keep the range
    # partitions at rows_per_partition (no coalescing), so the heap holds a few small partitions.
    conf = {**conf, "spark.sql.adaptive.coalescePartitions.enabled": "false"}
    for mapping in ("predicted", "observed"):
        table = FileHashes.of(spark, uris)
        if table is None:  # two file URIs with one hash: the row path joins on the URIs themselves
            return None
        nulls: set[int] = set()
        with session_conf(spark, conf):  # held while the batches stream: the job runs meanwhile
            batches = arrow_batches(agg)
            if batches is None:
                return None
            try:
                with contextlib.closing(batches):
                    for run in _key_runs(batches):
                        _segment_run(run, seg, nulls, table)
            except _UnknownFile:
                if mapping == "observed":
                    raise SieveError("files of the table changed during the build: build again") from None
                _reset(seg)  # Spark spelled some file URI differently: map the URIs it reports
                uris = _observed_uris(key_df, files)
                continue
        stats.update(transfer="arrow", file_id_mapping=mapping)
        return nulls
    raise AssertionError("unreachable")


def _reset(seg: Segmenter) -> None:
    """Forget everything a failed pass pushed (its segments and their pack)."""
    seg.__init__(seg.error_bound, seg.max_segment_keys, seg.emit, seg.gap_factor)  # type: ignore[misc]
    sink = seg.emit
    if isinstance(sink, ColumnSink):
        sink.store.discard_written()
        sink.clear()


def _observed_uris(key_df: Any, files: list[FileEntry]) -> list[tuple[str, int]]:
    """(URI as Spark spells it, file id) of every file Spark reads (one extra scan)."""
    from pyspark.sql import functions as F

    by_path = {f.path: i for i, f in enumerate(files)}
    mapping = []
    for (u,) in key_df.select(F.input_file_name()).distinct().collect():
        fid = by_path.get(local_path(u))
        if fid is None:
            raise IndexUnavailable(f"Spark read a file not in the listing ({u}): the table changed "
                                   "during the build; build again") from None
        mapping.append((u, fid))
    return mapping
