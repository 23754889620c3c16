"""The plan walk (issue 36, items 1 and 2): a DAG of distinct JVM nodes in ``toJSON()``'s field shapes,
linear in the plan, a bounded number of py4j round trips, every JVM reference released.

Real Spark ``local[2]`` (the session fixture). The 200-step chain is built as JVM Catalyst objects through
py4j and walked directly: Spark's own analyzer and optimizer re-walk a shared sub-expression once per path,
so no DataFrame query can carry such a chain to a write; the walk and the engine get it as it would be.
"""
from __future__ import annotations

import gc
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from airflow_provider_lineage.capture import plan_walk
from airflow_provider_lineage.capture.config import CaptureBudget
from airflow_provider_lineage.capture.listener import WriteCaptureListener, drain
from airflow_provider_lineage.lineage import analyze_record
from airflow_provider_lineage.lineage.plan import TreeNode, load_dag, ref_ids
from airflow_provider_lineage.lineage.record import CaptureRecord, OutputInfo


def _expand(node: TreeNode) -> list[dict[str, Any]]:
    """A loaded DAG node back to Spark's flat pre-order ``toJSON()`` list (shared nodes repeated)."""
    out: list[dict[str, Any]] = []
    stack = [node]
    while stack:
        n = stack.pop()
        out.append({k: _value(v) for k, v in n.fields.items()})
        stack.extend(reversed(n.children))
    return out


def _value(v: Any) -> Any:
    if isinstance(v, TreeNode):
        return _expand(v)
    if isinstance(v, list):
        return [_value(x) for x in v]
    if isinstance(v, dict):
        return {k: _value(x) for k, x in v.items()}
    return v


@pytest.fixture(scope="module")
def source(spark, tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("walk") / "src")
    spark.range(20).selectExpr("id", "id % 3 AS k", "cast(id AS string) AS s").write.parquet(path)
    return path


def test_dag_reads_like_spark_tojson(spark, source):
    """Expanded again, the DAG is exactly Spark's ``toJSON()`` of both plans (field shapes, child indices,
    literals, data types, join types, sub-queries, set operations, windows, a UNION with a ``children`` field)."""
    src = spark.read.parquet(source)
    src.createOrReplaceTempView("walk_src")
    w = Window.partitionBy("k").orderBy("id")
    frames = [
        src.join(src.select(F.col("id").alias("id2"), F.col("s").alias("s2")), F.col("id") == F.col("id2"), "left")
           .groupBy("k").agg(F.sum("id").alias("t"), F.countDistinct("s2").alias("n")),
        src.withColumn("r", F.row_number().over(w)).where(F.col("s") != "x").union(src.withColumn("r", F.lit(1))),
        spark.sql("SELECT id, (SELECT max(id) FROM walk_src) AS m, CASE WHEN k > 1 THEN s ELSE 'z' END AS c "
                  "FROM walk_src WHERE id IN (SELECT id FROM walk_src WHERE k = 1)"),
    ]
    for df in frames:
        qe = df._jdf.queryExecution()
        plans = [qe.optimizedPlan(), qe.analyzed()]
        ex = plan_walk.extract(spark.sparkContext._gateway, plans)
        assert ex.stopped is None and ex.leaves
        roots = load_dag(ex.dag)
        for root, plan in zip(roots, plans):
            assert _expand(root) == json.loads(plan.toJSON())


def test_wide_deep_projects_share_their_attributes(spark, source):
    """Every ``Project`` of a ``withColumn`` chain holds its own copies of the same attributes: the walk writes
    each distinct attribute once (value-equal copies share a node), and ``CaseWhen`` branches refer to their
    trees instead of repeating them, so the extract grows with the plan's nodes, not width x depth copies."""
    df = spark.read.parquet(source).selectExpr("id", "k", "s", *[f"id + {i} AS c{i}" for i in range(30)])
    prev = "c0"
    for step in range(1, 21):
        p = F.col(prev)
        df = df.withColumn(f"d{step}", F.when(p > 0, p - 1).otherwise(p + 1))
        prev = f"d{step}"
    qe = df._jdf.queryExecution()
    plans = [qe.optimizedPlan(), qe.analyzed()]
    ex = plan_walk.extract(spark.sparkContext._gateway, plans)
    assert ex.stopped is None and ex.dag is not None
    attrs = [n for n in ex.dag["nodes"] if n["class"].endswith(".AttributeReference")]
    distinct = {json.dumps({k: v for k, v in n.items() if k != "$c"}, sort_keys=True) for n in attrs}
    assert len(attrs) == len(distinct)
    projects = [n for n in ex.dag["nodes"] if n["class"].endswith(".Project")]
    lists = [ref_ids(n["projectList"], len(ex.dag["nodes"])) for n in projects]
    assert all(ids is not None for ids in lists)  # a list of nested trees is one {"$ts": [...]}
    listed = sum(len(ids) for ids in lists)
    assert len(attrs) < listed / 10  # copies shared: far fewer attribute nodes than attribute uses
    # the copies come in the same order under every Project: runs of ids, not one number per column
    written = sum(len(n["projectList"]["$ts"]) for n in projects)
    assert written < listed / 5
    cases = [n for n in ex.dag["nodes"] if n["class"].endswith(".CaseWhen")]
    assert cases and all(set(b["_1"]) == {"$t"} and set(b["_2"]) == {"$t"} for n in cases for b in n["branches"])
    for root, plan in zip(load_dag(ex.dag), plans):  # still Spark's toJSON() once expanded
        assert _expand(root) == json.loads(plan.toJSON())


def _chain(spark, source: str, steps: int) -> tuple[Any, Any]:
    """``Project([If(e > 0, e, 0) ... AS out], relation)`` with each level using the previous one twice (JVM
    objects)."""
    jvm = spark._jvm
    expr = jvm.org.apache.spark.sql.catalyst.expressions
    analyzed = spark.read.parquet(source).select("id")._jdf.queryExecution().analyzed()
    project = analyzed  # Project([id], Relation)
    relation = project.children().head()
    e = project.output().head()
    zero = expr.Literal.create(0, jvm.org.apache.spark.sql.types.DataTypes.IntegerType)  # never evaluated
    for _ in range(steps):
        e = expr.If(expr.GreaterThan(e, zero), e, zero)
    alias = spark.read.parquet(source).select(F.col("id").alias("out"))._jdf.queryExecution().analyzed() \
        .expressions().head()  # Alias(id, out)

    def seq(item: Any) -> Any:
        items = jvm.java.util.ArrayList()
        items.add(item)
        return jvm.org.apache.spark.api.python.PythonUtils.toSeq(items)

    alias = alias.withNewChildren(seq(e))
    return jvm.org.apache.spark.sql.catalyst.plans.logical.Project(seq(alias), relation), relation


def test_200_step_chain_is_linear_in_capture_and_engine(spark, source, tmp_path):
    """A chain that is 2^200 nodes as a tree: the walk writes ~4 nodes a step, the engine visits each once,
    and the output's lineage is complete."""
    plan, _relation = _chain(spark, source, 200)
    ex = plan_walk.extract(spark.sparkContext._gateway, [plan])
    assert ex.stopped is None
    assert ex.nodes < 4 * 200 + 50  # as a tree: more than 2^200
    listener = WriteCaptureListener(spark, lambda r: None)
    relations = [listener._relation(leaf) for leaf in ex.leaves]
    assert [r.node_class for r in relations] == ["LogicalRelation"]
    ex.dag["roots"] = [ex.dag["roots"][0], -1]
    rec = CaptureRecord(command="InsertIntoHadoopFsRelationCommand", status="success", plans=ex.dag,
                        relations=relations, output=OutputInfo(command="InsertIntoHadoopFsRelationCommand",
                                                               location=f"file:{tmp_path}/out", columns=["out"]))
    assert len(rec.to_json()) < 200_000
    rec = CaptureRecord.from_json(rec.to_json())
    lin = analyze_record(rec)
    got = {(e.dataset.name.rsplit("/", 1)[-1], e.field, e.type, e.subtype) for e in lin.columns["out"]}
    assert got == {("src", "id", "DIRECT", "TRANSFORMATION"), ("src", "id", "INDIRECT", "CONDITIONAL")}
    assert not lin.approximate


class _Counting(WriteCaptureListener):
    """Counts the py4j commands the capture of each write sends (from the capturing thread only)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.round_trips: list[int] = []
        #: ids of the JVM objects py4j handed to the capturing thread, and of every object released (any thread)
        self.created: set[str] = set()
        self.released: set[str] = set()

    def _capture(self, func_name: str, qe: Any, duration_ns: int | None, exception: Any) -> CaptureRecord | None:
        client = self._gateway._gateway_client
        me = threading.get_ident()
        count = [0]
        original = client.send_command

        def counted(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == me:
                count[0] += 1
            return original(*args, **kwargs)

        def counted_and_noted(*args: Any, **kwargs: Any) -> Any:
            answer = counted(*args, **kwargs)
            if threading.get_ident() == me and isinstance(answer, str) and answer.startswith("yr"):
                self.created.add(answer[2:].strip())  # "yro123": a new reference held for Python
            return answer

        client.send_command = counted_and_noted
        try:
            record = super()._capture(func_name, qe, duration_ns, exception)
        finally:
            del client.send_command
        self.round_trips.append(count[0])
        return record


def test_round_trips_do_not_grow_with_plan_nodes(spark, tmp_path: Path):
    """A write whose plans have several thousand nodes: the py4j round trips of its capture stay a small
    constant plus a few per relation (the old per-node walk sent tens of thousands)."""
    from pyspark.java_gateway import ensure_callback_server_started

    ensure_callback_server_started(spark.sparkContext._gateway)
    records: list[CaptureRecord] = []
    listener = _Counting(spark, records.append, budget=CaptureBudget(), asynchronous=True)
    client = spark.sparkContext._gateway._gateway_client
    release = client.garbage_collect_object

    def released(target_id: str, *args: Any, **kwargs: Any) -> Any:
        listener.released.add(target_id)
        return release(target_id, *args, **kwargs)

    client.garbage_collect_object = released
    spark._jsparkSession.listenerManager().register(listener)
    try:
        df = spark.range(5).select([(F.col("id") + i).alias(f"c{i}") for i in range(1500)])
        df.write.mode("overwrite").parquet(str(tmp_path / "wide"))
        assert drain(spark, 120)
    finally:
        spark._jsparkSession.listenerManager().unregister(listener)
        listener.close()
        gc.collect()
        del client.garbage_collect_object
    assert records, listener.errors
    rec = next(r for r in records if r.command == "InsertIntoHadoopFsRelationCommand")
    nodes = len(rec.plans["nodes"])
    assert nodes > 4000
    trips = listener.round_trips[-1]
    assert trips < 200, trips  # a constant, not proportional to the 4,000+ nodes
    assert trips < nodes / 20
    # every JVM reference the capture took was released (py4j detach): the gateway keeps none of them alive
    assert listener.created, "no JVM reference seen: the count does not work"
    assert listener.created <= listener.released, sorted(listener.created - listener.released)[:20]
    lin = analyze_record(rec)
    assert lin.columns["c1499"] == [] and len(lin.columns) == 1500  # spark.range: local data, no dataset
