"""The estate index's tables (SQLAlchemy Core, a ``MetaData`` of their own, never Airflow's ``Base``).

The index is *derived* data: every row comes from a ``column_lineage`` XCom record and can be rebuilt
from them (:func:`.index.reindex`). So there are no migrations: :data:`SCHEMA_VERSION` is kept in
``apl_estate_meta``; a different version found at start drops and rebuilds the tables.

One row of ``apl_estate_task_run`` per lineage XCom row (key: ``dag_run_id, task_id, map_index``, the
XCom's own primary key), with the task instance's state and end time. Its lineage -- datasets read and
written (``_io``) and column edges (``_edge``, ``target_col`` ``''`` for a dataset-wide edge) -- is an
``_edge_set`` shared by every run whose lineage is the same (keyed by a digest): a task that runs daily
with the same code stores its edges once, not once per run.
Datasets are keyed by OpenLineage (namespace, name) only: the one identity the lineage gives them, the
namespace's host lower-cased (:func:`.validate.canonical`; schema 7: schema 6 kept ``s3a://Bucket`` apart from
``s3a://bucket``).
The columns a record names are kept per edge set (``_set_field``), so that a dataset's field list can
be read as of an instant and for the DAGs a user may read; ``_field`` is every column ever seen (the
union, with the newest type), ``_column_name`` each distinct name once (what the search scans).
A dataset's display label (the catalog table a record names it by) is kept per edge set too
(``_set_label``): a user sees, and searches, only the labels records of DAGs they may read give
(``_dataset.table_name`` is no longer written: a label set by whichever record came first was served to
everyone).

Sizes: :data:`MAX_NAMESPACE`, :data:`MAX_NAME`, :data:`MAX_TABLE`, :data:`MAX_COLUMN` are the longest
values the columns hold; the write side refuses longer ones (and NUL bytes, which PostgreSQL's text
cannot hold) with a problem noted on the record, never a truncation that would merge two names.
"""
from __future__ import annotations

from airflow.utils.sqlalchemy import UtcDateTime
from sqlalchemy import Boolean, Column, Index, Integer, MetaData, String, Table, Text, UniqueConstraint

SCHEMA_VERSION = "7"
PREFIX = "apl_estate_"
metadata = MetaData()
_ID = 250
MAX_NAMESPACE = 500
MAX_NAME = 1000
MAX_TABLE = 500
MAX_COLUMN = 500
MAX_TYPE = 200
_DT = UtcDateTime

meta = Table(
    f"{PREFIX}meta", metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=True),
)

task_run = Table(
    f"{PREFIX}task_run", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("dag_run_id", Integer, nullable=False),
    Column("dag_id", String(_ID), nullable=False),
    Column("task_id", String(_ID), nullable=False),
    Column("run_id", String(_ID), nullable=False),
    Column("map_index", Integer, nullable=False, default=-1),
    Column("state", String(20), nullable=True),
    Column("start_date", _DT, nullable=True),
    Column("end_date", _DT, nullable=True),
    Column("xcom_ts", _DT, nullable=True),
    Column("set_ref", Integer, nullable=True),
    Column("status", String(20), nullable=False),
    Column("job", String(1000), nullable=True),
    Column("owner", String(500), nullable=True),
    Column("note", Text, nullable=True),
    #: the record could not be indexed, or parts of it were left out (``note`` says what)
    Column("problem", Boolean, nullable=False, default=False),
    UniqueConstraint("dag_run_id", "task_id", "map_index", name=f"{PREFIX}task_run_xcom"),
    Index(f"{PREFIX}task_run_last", "dag_id", "task_id", "map_index", "state", "end_date"),
    Index(f"{PREFIX}task_run_ts", "xcom_ts"),
    Index(f"{PREFIX}task_run_end", "end_date"),
    Index(f"{PREFIX}task_run_set", "set_ref", "dag_id", "task_id", "map_index"),  # covers Producers._tasks
    Index(f"{PREFIX}task_run_problem", "problem", "dag_id"),
)

edge_set = Table(
    f"{PREFIX}edge_set", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("digest", String(64), nullable=False),
    UniqueConstraint("digest", name=f"{PREFIX}edge_set_digest"),
)

dataset = Table(
    f"{PREFIX}dataset", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("namespace", String(500), nullable=False),
    Column("name", String(1000), nullable=False),
    Column("table_name", String(500), nullable=True),
    UniqueConstraint("namespace", "name", name=f"{PREFIX}dataset_identity"),
    Index(f"{PREFIX}dataset_name", "name"),
)

field = Table(
    f"{PREFIX}field", metadata,
    Column("dataset_id", Integer, primary_key=True),
    Column("name", String(500), primary_key=True),
    Column("type", String(200), nullable=True),
    Index(f"{PREFIX}field_name", "name", "dataset_id"),
)

#: the columns (and types) each edge set's record names, per dataset: the field list of a dataset as of
#: an instant is the union of these over the sets of the runs current at that instant, of the DAGs the
#: user may read (columns time-travel, and a column only hidden DAGs name is never listed)
set_field = Table(
    f"{PREFIX}set_field", metadata,
    Column("set_ref", Integer, nullable=False),
    Column("dataset_id", Integer, nullable=False),
    Column("name", String(500), nullable=False),
    Column("type", String(200), nullable=True),
    Index(f"{PREFIX}set_field_set", "set_ref"),
    Index(f"{PREFIX}set_field_dataset", "dataset_id", "name"),
    Index(f"{PREFIX}set_field_name", "name", "dataset_id"),
)

#: every distinct column name of ``_field`` once: the search scans these (few: names repeat across
#: datasets), then finds their fields through ``_field_name``
column_name = Table(
    f"{PREFIX}column_name", metadata,
    Column("name", String(500), primary_key=True),
)

#: the catalog table name (display label) each edge set's record gives a dataset: served only from the sets of
#: runs of DAGs the user may read
set_label = Table(
    f"{PREFIX}set_label", metadata,
    Column("set_ref", Integer, nullable=False),
    Column("dataset_id", Integer, nullable=False),
    Column("table_name", String(500), nullable=False),
    Index(f"{PREFIX}set_label_set", "set_ref"),
    Index(f"{PREFIX}set_label_dataset", "dataset_id", "set_ref"),
)

io = Table(
    f"{PREFIX}io", metadata,
    Column("set_ref", Integer, nullable=False),
    Column("dataset_id", Integer, nullable=False),
    Column("output", Boolean, nullable=False),
    Index(f"{PREFIX}io_set", "set_ref"),
    Index(f"{PREFIX}io_dataset", "dataset_id", "output"),
)

edge = Table(
    f"{PREFIX}edge", metadata,
    Column("set_ref", Integer, nullable=False),
    Column("target_id", Integer, nullable=False),
    Column("target_col", String(500), nullable=False),
    Column("source_id", Integer, nullable=False),
    Column("source_col", String(500), nullable=False),
    Column("type", String(20), nullable=False),
    Column("subtype", String(40), nullable=True),
    Column("masking", Boolean, nullable=False),
    Index(f"{PREFIX}edge_set_ref", "set_ref"),
    Index(f"{PREFIX}edge_source", "source_id", "source_col"),
    Index(f"{PREFIX}edge_target", "target_id", "target_col"),
)
