"""The Spark engine: distributed key -> location aggregation, then one ordered bounded-memory pass.

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

The hashed structure (:func:`spark_hashed`): Spark hashes keys and file URIs, the driver encodes
fingerprint pages as they stream in.
"""
from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .build_pyarrow import learn_key_type
from .errors import IndexUnavailable, SieveError
from .fingerprints import encode_page, fingerprint_bits, group_pairs, page_bits_for
from .hashed import footer_ranges
from .keys import BYTE_KINDS, HIGH_KEY, LEN_BITS, LOW_KEY, WINDOW, KeyType, _unscaled, key_type_from_spark, radix_tables
from .model import Segmenter
from .sinks import ColumnSink
from .storage import IndexStore
from .table import FileEntry, TableRef, footer_rows, local_path, spark_path, spark_uri


def spark_hashed(spark: Any, files: list[FileEntry], column: str, kt: KeyType, fpp: float,
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
        ids, lo, hi = footer_ranges(files, column, kt)
        ref = store.write_hashed_pages(ordered, fp_bits, page_bits, fid_width, sizes[0], sizes[1], ids, lo, hi)
        stats.update(engine="spark", transfer="arrow", file_id_mapping=mapping)
        return ref, nulls, fp_bits, sizes[0], None
    raise AssertionError("unreachable")


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


def spark_build(spark: Any, ref: TableRef, schema: Any, files: list[FileEntry], column: str, seg: Segmenter,
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
