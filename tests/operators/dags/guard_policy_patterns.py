"""A DAG whose tasks replay the lineage of writes that copy a ``pii`` column through patterns the capture cannot see
exactly (tests/operators/test_guard_policy.py): no Spark runs; each task hands the operator the
:class:`~airflow_provider_lineage.lineage.model.WriteLineage` the engine gives for its pattern (approximate columns
with reasons, an unknown input, a checkpoint cut, an untraced RDD), so the guard, the XComs and the asset events are
the real ones under ``dag.test()``.

Add a pattern: a builder in :data:`PATTERNS` (and its expectation in the test's table); add a declaration spelling: a
row of :data:`SPELLINGS`. Every task gets ``require_masked=["pii"]`` (spelt as its row says).
"""
from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from airflow.sdk import DAG

from airflow_provider_lineage.lineage import events
from airflow_provider_lineage.lineage.model import UNKNOWN_INPUT, FieldEdge, WriteLineage
from airflow_provider_lineage.lineage.naming import DatasetRef
from airflow_provider_lineage.operators.pyspark import PySparkLineageOperator

DAG_ID = "guard_policy_patterns"
CUSTOMERS = DatasetRef("file", "/w/customers")
ORDERS = DatasetRef("file", "/w/orders")
#: read by the ``inherited`` task: the estate map says its email carries pii from two datasets only DAG B names
MART = DatasetRef("file", "/w/mart")
OTHER_DAGS_DATASETS = ("/dag_b/landing", "/dag_b/stage")


def _e(ds: DatasetRef, field: str, sub: str = "IDENTITY", masking: bool = False) -> FieldEdge:
    return FieldEdge(ds, field, "DIRECT", sub, masking)


def _write(out: DatasetRef, cust: DatasetRef, contact: list[FieldEdge], **extra: Any) -> WriteLineage:
    return WriteLineage(
        output=out, output_fields=[("id", "int"), ("contact", "string"), ("n", "bigint")],
        inputs=[(cust, [("id", "int"), ("email", "string")]), (ORDERS, [("amount", "int")])],
        columns={"id": [_e(cust, "id")], "contact": contact, "n": [_e(ORDERS, "amount", "AGGREGATION")]},
        command="InsertIntoHadoopFsRelationCommand", mode="Overwrite", **extra)


#: pattern -> the lineage of a write of ``contact`` (the customers' email, in clear) to ``out``
PATTERNS: dict[str, Callable[[DatasetRef, DatasetRef], WriteLineage]] = {
    # the control: an exact copy, a plain violation
    "exact": lambda out, cust: _write(out, cust, [_e(cust, "email")]),
    # a UDF looks the email up in a dict filled from collect(): the over-approximation names the email (and a mask
    # on the way that an approximate edge can never prove)
    "driver_round_trip": lambda out, cust: _write(
        out, cust, [_e(cust, "email", "TRANSFORMATION", masking=True)],
        approximate_columns={"contact": ["driver round trip: a lookup built from collect() of customers"]}),
    # a Python data source or a value from the driver the capture could not name
    "unknown_input": lambda out, cust: _write(
        out, cust, [], approximate_columns={"contact": [f"{UNKNOWN_INPUT}: Python data source 'custfile'"]}),
    # what the engine gives today for checkpoint(): no edges, the write marked approximate with the reason
    "checkpoint": lambda out, cust: _write(
        out, cust, [], approximate=True,
        unknown=["LogicalRDD from checkpoint()/localCheckpoint(): the plan before the checkpoint is not in this plan"]),
    # an RDD the driver could not trace (df.rdd.map(f).toDF()): today a note only
    "rdd_untraced": lambda out, cust: _write(
        out, cust, [], notes=["LogicalRDD: an RDD the driver could not trace to files or tables (unknown input)"]),
    # approximate, but its inputs prove it clean: the email hashed on an exact path, ``n`` approximate from orders
    "approximate_clean": lambda out, cust: _write(
        out, cust, [_e(cust, "email", "TRANSFORMATION", masking=True)],
        approximate_columns={"n": ["driver round trip: a total collected to the driver"]}),
}

#: (task, declared namespace, declared name, declared tag, the dataset the lineage names, require_masked as spelt)
SPELLINGS: list[tuple[str, str, str, str, DatasetRef, Any]] = [
    ("s3a_relative", "s3a://bucket", "data/c1", "pii", DatasetRef("s3://bucket", "data/c1"), ["pii"]),
    ("trailing_slash_upper_tag", "s3://bucket", "/data/c2/", "PII", DatasetRef("s3://bucket", "data/c2"), ["pii"]),
    ("file_scheme_namespace", "file://", "/w/c3", " pii", DatasetRef("file", "/w/c3"), ["pii"]),
    ("file_uri_name", "file", "file:///w/c4/", "Pii", DatasetRef("file", "/w/c4"), ["pii"]),
    ("partition_folder", "file", "/w/c5/day=2024-01-01", "pii ", DatasetRef("file", "/w/c5"), ["pii"]),
    ("host_case", "hdfs://NameNode:8020", "/w/c6", "pii", DatasetRef("hdfs://namenode:8020", "/w/c6"), ["pii"]),
    ("required_spelt_upper", "file", "/w/c7", "pii", DatasetRef("file", "/w/c7"), " PII"),
]


#: written by two tasks (issue 46 item 10): ``writer_a`` copies the customers' email in, ``writer_b`` (later) a column
#: with no tag; ``reader_of_two_writers`` copies it out: the tags of both writers count, not the newest event's
SHARED = DatasetRef("file", "/w/shared")


def _copy(src: DatasetRef, field: str) -> WriteLineage:
    return WriteLineage(output=SHARED, output_fields=[("email", "string")], inputs=[(src, [(field, "string")])],
                        columns={"email": [_e(src, field)]}, command="InsertIntoHadoopFsRelationCommand")


def declaration() -> dict[str, Any]:
    """The tag declaration of the test (``lineage_column_tags``): every dataset spelt as a user may."""
    datasets = [{"namespace": "file", "name": CUSTOMERS.name, "columns": {"email": ["pii"]}}]
    datasets += [{"namespace": ns, "name": name, "columns": {"email": [tag]}} for _, ns, name, tag, _, _ in SPELLINGS]
    return {"datasets": datasets}


def estate_map() -> dict[str, Any]:
    """The estate tag map the scheduler would publish: MART's email carries pii through two datasets of DAG B."""
    path = [{"namespace": "file", "name": n, "column": "email"} for n in OTHER_DAGS_DATASETS]
    return {"generated": "2026-01-01T00:00:00+00:00", "cut": False, "omitted": [], "datasets": [
        {"namespace": "file", "name": MART.name, "columns": {"email": [
            {"tag": "pii", "source": "inherited", "masked": False,
             "path": [*path, {"namespace": "file", "name": MART.name, "column": "email"}]}]}}]}


class ReplayLineageOperator(PySparkLineageOperator):
    """:class:`PySparkLineageOperator` with no Spark: the lineage of its run is ``lineage`` (what the engine gives)."""

    def __init__(self, *, lineage: WriteLineage, **kwargs: Any) -> None:
        super().__init__(python_callable=lambda: None, lineage_emission="off", **kwargs)
        self.replayed = lineage

    def execute_callable(self) -> Any:
        return None

    def _lineage_of_run(self, error: BaseException | None) -> events.LineageResult:
        # the written dataset as the capture would report it (what the asset events are made of)
        written = SimpleNamespace(output=None, streaming=None, command=self.replayed.command)
        result = events.LineageResult(lineages=[self.replayed], analysed_pairs=[(written, self.replayed)])
        self.lineage_result = result
        self._ol_inputs, self._ol_outputs = events.datasets(result, indirect=self.resolved_indirect())
        self._ol_run_facets = {}
        return result


def out_of(task_id: str) -> DatasetRef:
    return DatasetRef("file", f"/w/out_{task_id}")


with DAG(DAG_ID, schedule=None):
    for name, build in PATTERNS.items():
        ReplayLineageOperator(task_id=name, lineage=build(out_of(name), CUSTOMERS), require_masked=["pii"])
    ReplayLineageOperator(task_id="unknown_input_warn", lineage=PATTERNS["unknown_input"](
        out_of("unknown_input_warn"), CUSTOMERS), require_masked=["pii"], on_policy_violation="warn")
    for task, _ns, _name, _tag, ref, required in SPELLINGS:
        ReplayLineageOperator(task_id=task, lineage=PATTERNS["exact"](out_of(task), ref), require_masked=required)
    ReplayLineageOperator(task_id="inherited", lineage=PATTERNS["exact"](out_of("inherited"), MART),
                          require_masked=["pii"])
    ReplayLineageOperator(task_id="inherited_warn", lineage=PATTERNS["exact"](out_of("inherited_warn"), MART),
                          require_masked=["pii"], on_policy_violation="warn")
    (
        ReplayLineageOperator(
            task_id="writer_a", lineage=_copy(CUSTOMERS, "email"), require_masked=["pii"], on_policy_violation="warn"
        )
        >> ReplayLineageOperator(task_id="writer_b", lineage=_copy(ORDERS, "amount"))
        >> ReplayLineageOperator(
            task_id="reader_of_two_writers",
            lineage=PATTERNS["exact"](out_of("reader_of_two_writers"), SHARED),
            require_masked=["pii"],
        )
    )
    ReplayLineageOperator(task_id="undeclared_tag", lineage=PATTERNS["exact"](out_of("undeclared_tag"), ORDERS),
                          require_masked=["pii", "secret"], on_policy_violation="warn")
