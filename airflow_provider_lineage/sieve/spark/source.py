"""The ``sieve`` Python data source (PySpark 4.1+): a Parquet table read through its Sieve indexes.

Planning (Spark's Python planner worker, on the driver):

* :meth:`SieveDataSource.schema` lists the table and gives :mod:`.schema`'s answer (what
  ``spark.read.parquet`` gives);
* :meth:`SieveReader.pushFilters` keeps the conjuncts on an **indexed column** (a folder under
  ``<root>/_sieve/``, or the ``indexPaths`` option) and on partition columns; the rest go back to Spark;
* :meth:`SieveReader.partitions` asks each index for the files its conditions can match
  (:meth:`.query.SieveIndex.lookup`: stale-safe, ``freshness`` as in :func:`..reader.read`),
  intersects the answers, drops files whose partition values fail a condition and packs the candidates
  into input partitions as Spark's file sources do (:func:`pack`: ``spark.sql.files.maxPartitionBytes``,
  ``openCostInBytes``, ``minPartitionNum``, the session's values or the read's options of the same names).
  An index that cannot be opened or read (missing, damaged, another
  format) prunes nothing: every file is read, and the reason is logged.

Listing, partition values and how a file's values are read follow Spark's Parquet source
(:mod:`..files`, the one module the index build, sync and readers share).

Reading (Spark's Python workers, the files of a task one after another): each file is read with :mod:`pyarrow.parquet`:
only the schema's columns (and those of the pushed conditions), only the row groups whose min/max
statistics can satisfy them (integer and date columns), the conditions applied to the rows read
(:func:`.filters.mask`), Arrow record batches cast to the schema's Arrow types, partition values added
as columns. A reader worker imports this module, pyarrow and :mod:`.filters` only (the index and
listing code stays in the planner), and drops the zip importers Spark's next task would re-read
(:func:`drop_zip_finders`): a task costs Spark's scheduling and the file's read, little else.
"""
from __future__ import annotations

import json
import logging
import os
import posixpath
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader
from pyspark.sql.types import DateType, DecimalType, IntegerType, LongType, StringType, StructType

from ..errors import IndexUnavailable, SieveError
from ..fs import is_local, normalize, options_from_env, relative, resolve, storage_options
from . import filters as F
from .plans import merge, new_relation, shares_read_info
from .source_arrow import _arrow_schema, _conform, _leaf_index, drop_zip_finders, pc_and
from .source_packing import (  # noqa: F401 - the constants and _byte_size: re-exported, tests import them from here
    PACKING_CONF,
    PACKING_DEFAULTS,
    FilePartition,
    FilesPartition,
    _byte_size,
    pack,
    packing_options,
)

# The planning modules (..query, ..table, .schema: the index, numpy, the listing) are imported where
# the planner uses them: a reader worker unpickles SieveReader, so it imports this module, and needs
# only pyarrow, ..fs and .filters to read a file.

log = logging.getLogger(__name__)
# In Spark's Python planner worker (which imports this module when it unpickles the data source, before
# it decodes the pushed filters): decode DECIMAL literals exactly, hand undecodable ones back to Spark.
F.exact_decoding()

NAME = "sieve"
INDEX_FOLDER = "_sieve"
BATCH_ROWS = 32_768
# Partition column types whose values a pushed condition is checked against on the driver (the
# comparison is Python's, which is Spark's for these types; DOUBLE NaN and time zones are not).
_PARTITION_PUSH = (IntegerType, LongType, DecimalType, DateType, StringType)
# At or above this share of the table's files the native Parquet reader is taken to be faster: each
# candidate file is a Spark task with a Python worker round trip, where Spark's reader packs many
# files into one task but opens every file's footer, so the break-even is a share of the files (a few
# per cent for small local files, more for large or remote ones: docs/sieve.md, "Where the native
# reader wins"); :func:`..spark.load` switches to it, and the planner warns for such scans.
NATIVE_SHARE = 0.1


def _options(options: dict[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in dict(options).items()}


def table_root(options: dict[str, str]) -> str:
    opts = _options(options)
    path = opts.get("path")
    if not path:
        raise SieveError('spark.read.format("sieve") needs the table\'s folder: .load("/data/sales") or '
                         '.option("path", "s3://bucket/sales")')
    if "," in path and not os.path.exists(path):
        raise SieveError(f"one table per read: load() got {path!r}")
    from ..table import table_path

    return table_path(path)  # load() takes a path, as spark.read.parquet: a bare "sales" is ./sales


def index_paths(root: str, options: dict[str, str]) -> dict[str, str]:
    """Indexed column -> index folder: every folder under ``<root>/_sieve/`` and the ``indexPaths``
    option (a JSON object ``{"column": "path"}``)."""
    out: dict[str, str] = {}
    base = root.rstrip("/") + "/" + INDEX_FOLDER
    if is_local(root):
        try:  # a folder is an index only once a build committed a manifest in it
            names = [e.name for e in os.scandir(base) if e.is_dir() and _has_manifest(e.path)]
        except (FileNotFoundError, NotADirectoryError):
            names = []
    else:
        import pyarrow.fs as pafs

        filesystem, inner = resolve(base)
        try:
            infos = filesystem.get_file_info(pafs.FileSelector(inner, allow_not_found=True))
        except OSError as exc:
            log.warning("Sieve: cannot list the indexes of %s (%s): no file is skipped", root, exc)
            infos = []
        names = [posixpath.basename(i.path) for i in infos if i.type == pafs.FileType.Directory]
    for name in names:
        if not name.startswith("."):  # "_x" is the index of column _x
            out[name] = f"{base}/{name}"
    text = _options(options).get("indexpaths")
    if text:
        try:
            extra = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SieveError(f"option indexPaths is not JSON ({exc.msg}): pass an object such as "
                             '{"customer_id": "/indexes/sales/customer_id"}') from None
        if not isinstance(extra, dict) or not all(isinstance(v, str) for v in extra.values()):
            raise SieveError('option indexPaths must be a JSON object of column -> index folder, e.g. '
                             '{"customer_id": "/indexes/sales/customer_id"}')
        out.update({str(k): normalize(v) for k, v in extra.items()})
    return out


def _has_manifest(folder: str) -> bool:
    """Whether a local index folder holds a committed version (a failed or running first build has none)."""
    try:
        return any(n.startswith("manifest-") and n.endswith(".json") for n in os.listdir(folder))
    except OSError:
        return False


def _columns_option(options: dict[str, str]) -> list[str] | None:
    text = _options(options).get("columns")
    if not text:
        return None
    return [c.strip() for c in text.split(",") if c.strip()]


class SieveDataSource(DataSource):
    """``spark.read.format("sieve").load(table_root)``. Options: ``freshness`` (``stat``, the default,
    ``names`` or ``none``; see :meth:`..query.SieveIndex.lookup`), ``columns`` (read only these
    columns, comma-separated), ``indexPaths`` (JSON: column -> index folder for indexes kept outside
    ``<root>/_sieve/``), and the read settings of :class:`..files.ReadConf` (``timeZone``,
    ``caseSensitive``, ``int96RebaseModeInRead``, ``datetimeRebaseModeInRead``,
    ``partitionColumnTypeInference``; default: the registering session's, :func:`session_source`)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    # Spark settings (``..files.ReadConf`` options) of the session this class was registered with
    # (:func:`session_source`); the read's own options win.
    session_options: ClassVar[dict[str, str]] = {}

    def __init__(self, options: dict[str, str]) -> None:
        given = {str(k).lower() for k in dict(options)}
        missing = {k: v for k, v in self.session_options.items() if k.lower() not in given}
        if missing:
            options = {**dict(options), **missing}
        super().__init__(options)
        from ..files import ReadConf
        from ..query import check_freshness

        check_freshness(_options(options).get("freshness", "stat"))
        ReadConf.from_options(options)  # a wrong setting is an error at load()
        self.relation = new_relation()  # one per load(): the plans of one relation (.plans)

    def schema(self) -> StructType:
        from pyspark.sql.types import StructField

        from ..files import ReadConf
        from ..table import list_table_files, root_exists
        from .schema import data_schema, partition_types

        conf = ReadConf.from_options(self.options)
        with storage_options(options_from_env()):
            root = table_root(self.options)
            if root_exists(root) is not True:
                raise SieveError(f"table path {root} does not exist or is not a folder: check the path")
            files = list_table_files(root)
            if not files:
                raise SieveError(f"{root} holds no Parquet data files: write the table first")
            data = data_schema(files[0].path)
        parts = partition_types([f.partition for f in files], conf)
        # Spark's mergeDataAndPartitionSchema: a partition column also stored in the files keeps the
        # data column's place and takes the partition's type; the other partition columns come last.
        key = (lambda n: n) if conf.case_sensitive else str.lower
        by_key = {key(n): (n, t) for n, t in parts}
        overlap = {key(f.name) for f in data.fields if key(f.name) in by_key}
        fields = [StructField(f.name, by_key[key(f.name)][1], True) if key(f.name) in overlap else f
                  for f in data.fields]
        all_fields = fields + [StructField(n, t, True) for n, t in parts if key(n) not in overlap]
        wanted = _columns_option(self.options)
        if wanted is not None:
            by_name = {f.name: f for f in all_fields}
            missing = [c for c in wanted if c not in by_name]
            if missing:
                raise SieveError(f"option columns names {', '.join(missing)}, which {root} does not have; its "
                                 f"columns are {', '.join(by_name)}")
            all_fields = [by_name[c] for c in wanted]
        drop_zip_finders()  # this planner worker's next call starts cheaper
        return StructType(all_fields)

    def reader(self, schema: StructType) -> SieveReader:
        return SieveReader(self.options, schema, relation=getattr(self, "relation", None))


def session_source(spark: Any) -> type[SieveDataSource]:
    """:class:`SieveDataSource` carrying ``spark``'s settings that change what a Parquet read returns
    (``spark.sql.caseSensitive``, the rebase modes, partition type inference, the session time zone):
    Spark's Python planner has no session to ask, so :func:`..register` registers this class (a
    change of those settings takes effect at the next ``register``; :func:`..load` passes the
    current ones with each read)."""
    from ..files import ReadConf

    class SessionSieveDataSource(SieveDataSource):
        session_options: ClassVar[dict[str, str]] = {**ReadConf.from_spark(spark).to_options(),
                                                     **packing_options(spark)}

    SessionSieveDataSource.__qualname__ = "session_source.<locals>.SessionSieveDataSource"  # pickled by value
    return SessionSieveDataSource


class SieveReader(DataSourceReader):
    """Plans the files to read from the pushed filters and reads each one with pyarrow."""

    def __init__(self, options: dict[str, str], schema: StructType, relation: str | None = None) -> None:
        import pyspark

        from ..files import ReadConf
        from ..query import check_freshness

        self.started = time.time()
        self.relation = relation
        self.plan = new_relation()
        # Spark 4.1 reads every scan of a relation with the read planned last (.plans): then this plan
        # claims no filter and reads the files of the relation's other recent plans too
        self.shared = relation is not None and shares_read_info(pyspark.__version__)
        from ..table import list_table_files
        from .schema import partition_types

        opts = _options(options)
        self.options = dict(options)
        self.root = table_root(options)
        self.freshness = check_freshness(opts.get("freshness", "stat"))
        self.conf = ReadConf.from_options(options)  # Spark's settings (load() passes the session's)
        self.time_zone = self.conf.time_zone
        self.schema_json = schema.json()
        # partition columns: their names and types (from the schema when it has them, else inferred)
        with storage_options(options_from_env()):
            self.indexes = index_paths(self.root, options)
            self._listing = list_table_files(self.root)
        inferred = dict(partition_types([f.partition for f in self._listing], self.conf))
        declared = {f.name: f.dataType for f in schema.fields}
        if not self.conf.case_sensitive:
            declared.update({n.lower(): t for n, t in list(declared.items())})
        self.partition_cols = [(n, declared.get(n, declared.get(n.lower(), t))) for n, t in inferred.items()]
        names = {n for n, _ in self.partition_cols}
        self.data_cols = [f.name for f in schema.fields if f.name not in names]
        self.conds: list[F.Cond] = []

    # ---- planning ----------------------------------------------------------------------------------
    def pushFilters(self, filters: list[Any]) -> list[Any]:
        """Keep the conditions on indexed and partition columns; return the others to Spark."""
        parts = dict(self.partition_cols)
        types = {f.name: f.dataType for f in StructType.fromJson(json.loads(self.schema_json)).fields}
        keep: list[Any] = []
        for f in filters:
            cond = F.from_spark(f)
            # only what is decided exactly as Spark decides it (F.exact: types, literals, ranges)
            if cond is not None and cond.column in parts:
                t = parts[cond.column]
                if (isinstance(t, _PARTITION_PUSH) and cond.op != "starts_with" or isinstance(t, StringType)) \
                        and F.exact(cond, t):
                    self.conds.append(cond)
                    continue
            elif cond is not None and cond.column in self.indexes and cond.column in self.data_cols \
                    and F.exact(cond, types.get(cond.column)):
                self.conds.append(cond)
                continue
            keep.append(f)
        if self.conds:
            log.info("Sieve: %s: pushed %s; Spark keeps %d filter(s)", self.root,
                     ", ".join(f"{c.column} {c.op} {c.value!r}" for c in self.conds),
                     len(filters) if self.shared else len(keep))
        if self.shared:  # the conditions choose the files; Spark evaluates every filter (.plans)
            return list(filters)
        return keep

    def _candidates(self) -> tuple[set[str] | None, int]:
        """Paths the indexes allow (None: every file), and the number of index answers used."""
        from ..query import open_index

        by_col: dict[str, list[F.Cond]] = {}
        for c in self.conds:
            if c.column in self.indexes and c.column in self.data_cols:
                by_col.setdefault(c.column, []).append(c)
        allowed: set[str] | None = None
        used = 0
        for column, conds in by_col.items():
            try:
                idx = open_index(self.root, column, index_path=self.indexes[column])
                mine: set[str] | None = None
                for pred in F.predicates(conds):
                    # "stat": the listing this plan made (one snapshot, no second listing)
                    answer = idx.lookup(pred, listing=self._listing) if self.freshness == "stat" else \
                        idx.lookup(pred, freshness=self.freshness)
                    log.info("Sieve: %s: %s %r: %s", self.root, column, pred, answer.summary())
                    mine = set(answer.files) if mine is None else mine & set(answer.files)
            except Exception as exc:  # noqa: BLE001 - an index in doubt prunes nothing: a full read, never a wrong answer
                kind = "" if isinstance(exc, (IndexUnavailable, SieveError, OSError)) else f"{type(exc).__name__}: "
                log.warning("Sieve: full read of %s for %s (%s%s)", self.root, column, kind, exc)
                continue
            if mine is not None:
                allowed = mine if allowed is None else allowed & mine
                used += 1
        return allowed, used

    def partitions(self) -> list[FilesPartition]:
        """The candidate files (:meth:`candidate_files`) packed into Spark tasks as Spark's file sources pack
        theirs (:func:`pack`, with the session's ``spark.sql.files.*`` settings or the read's options)."""
        files = self.candidate_files()
        sizes = getattr(self, "_sizes", {})
        return pack(files, sizes, self.options) if files else []

    def candidate_files(self) -> list[FilePartition]:
        """Each file this scan reads, with its partition values."""
        from ..table import partition_values
        from .schema import partition_value

        with storage_options(options_from_env()):
            allowed, _ = self._candidates()
        listing = {f.path: f.partition for f in self._listing}
        self._sizes = {f.path: int(f.size or 0) for f in self._listing}
        if allowed is None:
            paths = sorted(listing)
        else:
            paths = sorted(allowed)
        out = []
        part_conds = [c for c in self.conds if c.column in dict(self.partition_cols)]
        for path in paths:
            raw = listing.get(path)
            if raw is None:  # a file the index knows but the listing above has not seen (added meanwhile)
                rel = relative(path, self.root)
                raw = partition_values(posixpath.dirname(rel)) if "/" in rel else {}
            values = tuple(partition_value(raw[n], t, self.time_zone) if n in raw else None
                           for n, t in self.partition_cols)
            if part_conds:
                by_name = dict(zip((n for n, _ in self.partition_cols), values))
                if not all(F.matches_value(c, by_name.get(c.column)) for c in part_conds):
                    continue
            out.append(FilePartition(path, values))
        if self.shared:
            out = self._with_other_plans(out, listing)
        total = len(self._listing)
        log.info("Sieve: %s: reading %d of %d files", self.root, len(out), total)
        if total and len(out) >= NATIVE_SHARE * total and len(out) < total and self.conds:
            log.info("Sieve: %s: the filters keep %d of %d files; at this share spark.read.parquet is "
                     "usually faster (airflow_provider_lineage.sieve.spark.load switches to it by itself)",
                     self.root, len(out), total)
        drop_zip_finders()
        return out

    def _with_other_plans(self, out: list[FilePartition], listing: dict[str, Any]) -> list[FilePartition]:
        """``out`` and the files of the relation's other recent plans (:func:`.plans.merge`); every file
        when the record cannot be kept."""
        from ..table import partition_values
        from .schema import partition_value

        mine = {p.path for p in out}
        try:
            others = merge(self.relation, self.plan, self.started, sorted(mine)) - mine
        except OSError as exc:
            log.warning("Sieve: %s: cannot record this plan (%s): every file is read", self.root, exc)
            others = set(listing) - mine
        if not others:
            return out
        # Spark pickles the read function before it asks for the partitions: the partitions say it
        out = [FilePartition(p.path, p.values, filter_rows=False) for p in out]
        log.info("Sieve: %s: the relation is scanned more than once (Spark 4.1 reads every scan with the "
                 "last plan): %d more file(s) of its other scans are read", self.root, len(others))
        for path in sorted(others):
            raw = listing.get(path)
            if raw is None:
                rel = relative(path, self.root)
                raw = partition_values(posixpath.dirname(rel)) if "/" in rel else {}
            values = tuple(partition_value(raw[n], t, self.time_zone) if n in raw else None
                           for n, t in self.partition_cols)
            out.append(FilePartition(path, values, filter_rows=False))
        return sorted(out, key=lambda p: p.path)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_listing", None)  # planning only: the workers get their files in the partition
        state.pop("_sizes", None)
        return state

    # ---- reading -----------------------------------------------------------------------------------
    def read(self, partition: FilesPartition | FilePartition | None) -> Iterator[pa.RecordBatch]:
        drop_zip_finders()
        if partition is None:  # Spark's one empty partition when no file can match
            return iter(())
        if isinstance(partition, FilesPartition):
            return self._read_files(partition.files)
        return self._read_and_drop(partition)

    def _read_files(self, files: list[FilePartition]) -> Iterator[pa.RecordBatch]:
        for f in files:
            yield from self._read_and_drop(f)

    def _read_and_drop(self, partition: FilePartition) -> Iterator[pa.RecordBatch]:
        try:
            yield from self._read_file(partition)
        finally:  # the first read of a worker imports modules, and imports make zip importers again
            drop_zip_finders()

    def _read_file(self, partition: FilePartition) -> Iterator[pa.RecordBatch]:
        """The file's rows that satisfy the pushed conditions, as record batches of the schema, read as
        Spark reads the file (:mod:`..files`: columns matched under ``spark.sql.caseSensitive``, INT96
        in microseconds, legacy dates and timestamps rebased, an empty file holds no rows): only the
        needed columns, only the row groups whose statistics can match
        (:func:`.filters.row_group_may_match`, on columns stored as the schema's type), the columns
        cast to the schema's types and then the conditions applied (:func:`.filters.mask`)."""
        from ..files import int96_columns, open_parquet, rebase_array, rebase_of, resolve_columns

        target = _arrow_schema(self.schema_json)
        target_types = {f.name: f.type for f in target}
        parts = {n: v for (n, _), v in zip(self.partition_cols, partition.values)}
        conf = self.conf
        with storage_options(options_from_env()):
            filesystem, inner = resolve(partition.path)
            with filesystem.open_input_file(inner) as handle:
                if handle.size() == 0:  # an empty file is no data for Spark either
                    return
                pf = open_parquet(handle)
                physical = pf.schema_arrow
                names = [n for n in self.data_cols if n not in parts]
                names += [c.column for c in self.conds if c.column not in parts and c.column not in names]
                found = resolve_columns(names, physical.names, conf.case_sensitive)  # schema -> file column
                rebase = rebase_of(pf.metadata.metadata, conf)
                int96 = int96_columns(pf) if rebase.any else set()
                conds, prune = [], []
                for c in self.conds if getattr(partition, "filter_rows", True) else []:  # else Spark filters (.plans)
                    if c.column in parts:
                        continue  # checked on the partition's values when planning
                    if c.column not in found:  # schema evolution: the file holds NULLs only
                        if c.op != "is_null":
                            return
                        continue
                    conds.append(c)
                    stored = physical.field(found[c.column]).type
                    temporal = pa.types.is_date(stored) or pa.types.is_timestamp(stored)
                    if found[c.column] == c.column and stored == target_types.get(c.column) and \
                            not (rebase.any and temporal):
                        prune.append(c)  # statistics in the schema's own type and calendar
                meta = pf.metadata
                leaves = _leaf_index(physical)
                types = {f.name: f.type for f in physical}
                groups = [i for i in range(meta.num_row_groups)
                          if F.row_group_may_match(prune, meta.row_group(i), leaves, types)]
                if not groups:
                    return
                wanted = list(dict.fromkeys(found.values()))
                back = {}  # file column -> schema columns it feeds
                for n, p in found.items():
                    back.setdefault(p, []).append(n)
                for batch in pf.iter_batches(batch_size=BATCH_ROWS, row_groups=groups, columns=wanted,
                                             use_threads=False):
                    cols: dict[str, Any] = {}
                    for p, col in zip(batch.schema.names, batch.columns):
                        if rebase.any:
                            col = rebase_array(col, rebase, p in int96)
                        for n in back.get(p, ()):
                            cols[n] = col
                    out = _conform(cols, batch.num_rows, target, parts)
                    if conds:
                        keep = None
                        for c in conds:
                            # in the column's Spark type (_conform cast it: u8, INT32 under BIGINT)
                            col = out.column(out.schema.get_field_index(c.column)) if c.column in target_types \
                                else cols[c.column]
                            if pa.types.is_dictionary(col.type):
                                col = col.dictionary_decode()
                            m = F.mask(c, col)
                            keep = m if keep is None else pc_and(keep, m)
                        out = out.filter(keep, null_selection_behavior="drop")
                    if out.num_rows:
                        yield out
