"""What the capture cannot see (issue 46): driver round trips, RDD and JSON round trips, Python data sources,
checkpoints. Each test runs the pattern on real Spark under the capture and asserts that the input the values
came from is present (with the reason in ``approximate_columns``) or that the column is marked unknown."""
from __future__ import annotations

import json

import pytest
from pyspark.sql import functions as F

from airflow_provider_lineage.lineage import analyze_record
from airflow_provider_lineage.lineage.model import UNKNOWN_INPUT
from tests.lineage.helpers import check_properties, direct, edges


def _fields(lin, column):
    return {(d, f) for d, f, _t, _s in edges(lin, column)}


def _reasons(lin, column):
    return lin.approximate_columns.get(column, [])


def _driver(lin, column):
    assert ("customers", "email") in _fields(lin, column), lin.columns[column]
    assert any(r.startswith("driver round trip") for r in _reasons(lin, column)), lin.approximate_columns


def test_udf_lookup_dict_filled_by_collect(env):
    rows = env.spark.read.parquet(env.customers).select("cust_id", "email").collect()
    lookup = {r.cust_id: r.email for r in rows}

    @F.udf("string")
    def email_of(cust_id):
        return lookup.get(cust_id)

    lin = analyze_record(env.plan_only(env.spark.read.parquet(env.orders).select("id", email_of("cust_id").alias("e"))))
    check_properties(lin)
    _driver(lin, "e")
    assert "id" not in lin.approximate_columns  # a plain column read from a file stays exact
    assert _fields(lin, "id") == {("orders", "id")}


def test_udf_reading_a_broadcast_built_from_collect(env):
    rows = env.spark.read.parquet(env.customers).collect()
    bc = env.spark.sparkContext.broadcast({r.cust_id: r.email for r in rows})

    @F.udf("string")
    def email_of(cust_id):
        return bc.value.get(cust_id)

    lin = analyze_record(env.plan_only(env.spark.read.parquet(env.orders).select(email_of("cust_id").alias("e"))))
    _driver(lin, "e")


def test_create_dataframe_of_collected_rows(env):
    rows = env.spark.read.parquet(env.customers).select("cust_id", "email").collect()
    lin = analyze_record(env.write_parquet(env.spark.createDataFrame(rows)))
    check_properties(lin)
    _driver(lin, "email")
    # what was returned: the columns the collect selected, not every column of the table
    assert ("customers", "name") not in _fields(lin, "email")


def test_literal_of_a_first_row_value(env):
    first = env.spark.read.parquet(env.customers).orderBy("cust_id").first()
    df = env.spark.read.parquet(env.orders).select("id", F.lit(first["email"]).alias("e"), F.lit("fixed").alias("k"))
    lin = analyze_record(env.write_parquet(df))
    check_properties(lin)
    _driver(lin, "e")
    assert lin.columns["k"] == []  # a constant of the code carries no driver value
    assert "k" not in lin.approximate_columns


def test_no_round_trip_no_edge(env):
    """Without a value returned to the driver, literals and local rows stay what they are: no input."""
    env.spark.read.parquet(env.customers).count()  # count returns no column value
    df = env.spark.createDataFrame([(1, "a")], ["i", "s"]).select("i", "s", F.lit("zz9").alias("z"))
    lin = analyze_record(env.write_parquet(df))
    assert lin.approximate_columns == {}
    assert all(lin.columns[c] == [] for c in ("i", "s", "z"))


def test_to_local_iterator_is_a_driver_round_trip(env):
    """``toLocalIterator()`` runs as an unnamed SQL execution: no ``QueryExecutionListener`` event."""
    rows = env.spark.read.parquet(env.customers).select("cust_id", "email").orderBy("cust_id").toLocalIterator()
    value = next(iter(rows))["email"]
    df = env.spark.read.parquet(env.orders).select("id", F.lit(value).alias("e"))
    lin = analyze_record(env.write_parquet(df))
    check_properties(lin)
    _driver(lin, "e")
    assert any("toPythonIterator" in r for r in _reasons(lin, "e"))
    assert ("customers", "name") not in _fields(lin, "e")  # the columns the iterator returned, not the table's


def _rdd_value(c, how):
    """An email the driver got back from an RDD action over ``c`` (cust_id, email)."""
    if how == "collect":
        return c.rdd.collect()[0]["email"]
    if how == "take":
        return c.rdd.take(1)[0]["email"]
    if how == "first":
        return c.rdd.first()["email"]
    if how == "map_collect":
        return c.rdd.map(lambda r: r.email.upper()).collect()[0]
    if how == "filter_union_reduce":
        rdd = c.rdd.filter(lambda r: r.cust_id >= 0).map(lambda r: r.email)
        return rdd.union(rdd).reduce(lambda a, b: min(a, b))
    if how == "to_local_iterator":
        return next(iter(c.rdd.toLocalIterator()))["email"]
    if how == "to_json_collect":
        return json.loads(c.toJSON().collect()[0])["email"]
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["collect", "take", "first", "map_collect", "filter_union_reduce",
                                 "to_local_iterator", "to_json_collect"])
def test_rdd_action_is_a_driver_round_trip(env, how):
    """An RDD action over ``df.rdd`` (or ``df.toJSON()``) is a plain Spark job, outside any SQL execution: no
    ``QueryExecutionListener`` event. The value it returned, written back as a literal, keeps its input."""
    c = env.spark.read.parquet(env.customers).select("cust_id", "email")
    value = _rdd_value(c, how)
    df = env.spark.read.parquet(env.orders).select("id", F.lit(value).alias("e"))
    lin = analyze_record(env.write_parquet(df))
    check_properties(lin)
    _driver(lin, "e")
    assert any("RDD action" in r for r in _reasons(lin, "e")), lin.approximate_columns
    assert ("customers", "name") not in _fields(lin, "e")  # the RDD's DataFrame's columns only
    assert _fields(lin, "id") == {("orders", "id")} and "id" not in lin.approximate_columns


@pytest.mark.parametrize("how", ["collect", "first", "to_local_iterator", "to_json_collect", "dataframe_first"])
def test_a_returned_value_equal_to_a_constant_of_a_loaded_module(env, how, tmp_path, monkeypatch):
    """The order gap of issue 46: after another module holding the same values as constants was loaded (in the full
    run: ``test_expressions.py`` asserts on ``"x1@m"``; in a user's driver: an ``ADMIN_EMAIL``, a list of codes), a
    value the driver received was taken for a constant of the code and its literal lost its edge."""
    import importlib
    import sys

    (tmp_path / "lin_emails_mod.py").write_text('EMAILS = ("x0@m", "x1@m", "x2@m")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "lin_emails_mod", importlib.import_module("lin_emails_mod"))
    from airflow_provider_lineage.capture import driver

    assert {"x0@m", "x1@m", "x2@m"} <= driver.code_constants()  # the preceding pattern: the values are constants
    c = env.spark.read.parquet(env.customers).select("cust_id", "email")
    value = c.first()["email"] if how == "dataframe_first" else _rdd_value(c, how)
    lin = analyze_record(env.write_parquet(env.spark.read.parquet(env.orders).select("id", F.lit(value).alias("e"),
                                                                                    F.lit("fixed").alias("k"))))
    check_properties(lin)
    _driver(lin, "e")
    assert lin.columns["k"] == [] and "k" not in lin.approximate_columns  # a constant no return held stays one


def test_broadcast_built_from_an_rdd_action(env):
    """The enrichment pattern through the RDD API: a broadcast of ``collectAsMap()`` read by a UDF."""
    c = env.spark.read.parquet(env.customers)
    bc = env.spark.sparkContext.broadcast(c.rdd.map(lambda r: (r.cust_id, r.email)).collectAsMap())

    @F.udf("string")
    def email_of(cust_id):
        return bc.value.get(cust_id)

    lin = analyze_record(env.plan_only(env.spark.read.parquet(env.orders).select(email_of("cust_id").alias("e"))))
    _driver(lin, "e")


def test_rdd_action_over_driver_data_only_adds_no_edge(env):
    """An RDD action over ``parallelize``d data returns nothing read from a dataset: later literals stay
    edge-free (the hook adds no edge where no DataFrame went through the driver)."""
    env.spark.sparkContext.parallelize([("a", 1)]).collect()
    df = env.spark.createDataFrame([(1, "a")], ["i", "s"]).select("i", F.lit("zz9").alias("z"))
    lin = analyze_record(env.write_parquet(df))
    assert lin.approximate_columns == {}


def test_session_variable_set_from_a_query(env):
    """``SET VAR`` from a query (a ``DECLARE ... DEFAULT`` cannot hold a sub-query: Spark refuses it)."""
    env.spark.sql("DECLARE OR REPLACE VARIABLE lin_var_email STRING")
    env.spark.sql("SET VAR lin_var_email = (SELECT max(email) FROM customers)")
    lin = analyze_record(env.write_parquet(env.spark.sql("SELECT id, lin_var_email AS e FROM orders")))
    check_properties(lin)
    _driver(lin, "e")
    assert any("SetVariable" in r for r in _reasons(lin, "e"))


@pytest.mark.parametrize("how", ["toDF", "createDataFrame"])
def test_rdd_map_to_df_is_never_bound_by_name(env, how):
    c = env.spark.read.parquet(env.customers)
    rdd = c.rdd.map(lambda r: (r.cust_id, r.email))
    df = rdd.toDF(["cust_id", "name"]) if how == "toDF" else env.spark.createDataFrame(rdd, ["cust_id", "name"])
    lin = analyze_record(env.plan_only(df))
    check_properties(lin)
    # the values of "name" are emails: the same-named column alone would be a subset of the truth
    assert ("customers", "email") in _fields(lin, "name"), lin.columns["name"]
    assert any(r.startswith("RDD round trip") for r in _reasons(lin, "name"))


def test_read_json_of_to_json(env):
    c = env.spark.read.parquet(env.customers).select("cust_id", "email")
    df = env.spark.read.json(c.toJSON()).select(F.col("email").alias("contact"))
    lin = analyze_record(env.plan_only(df))
    assert ("customers", "email") in _fields(lin, "contact"), lin.columns["contact"]
    assert any(r.startswith("RDD round trip") for r in _reasons(lin, "contact"))


def _register_source(spark, name):
    from pyspark.sql.datasource import DataSource, DataSourceReader

    class Reader(DataSourceReader):
        def __init__(self, options):
            self.path = options.get("path")

        def read(self, partition):
            with open(self.path) as fh:
                for line in fh:
                    yield (line.strip(),)

    class Source(DataSource):
        @classmethod
        def name(cls):
            return name

        def schema(self):
            return "email string"

        def reader(self, schema):
            return Reader(self.options)

    spark.dataSource.register(Source)


def test_python_data_source_named_by_its_path(env):
    _register_source(env.spark, "lin_custfile")
    path = env.base / "emails.txt"
    path.write_text("a@b\n")
    lin = analyze_record(env.plan_only(env.spark.read.format("lin_custfile").load(str(path))))
    check_properties(lin)
    assert {(e.dataset.namespace, e.dataset.name, e.field) for e in lin.columns["email"]} == {
        ("file", str(path), "email")}
    assert any(r.startswith("Python data source `lin_custfile`") for r in _reasons(lin, "email"))


def test_python_data_source_without_a_path_is_an_unknown_input(env):
    _register_source(env.spark, "lin_custnopath")
    lin = analyze_record(env.plan_only(env.spark.read.format("lin_custnopath").load()))
    assert lin.columns["email"] == []
    assert any(r.startswith(UNKNOWN_INPUT) for r in _reasons(lin, "email")), lin.approximate_columns


@pytest.mark.parametrize("kind", ["localCheckpoint", "checkpoint"])
def test_checkpoint_traced_through_the_checkpointed_plan(env, kind):
    env.spark.sparkContext.setCheckpointDir(str(env.base / "checkpoints"))
    o = env.spark.read.parquet(env.orders).where("cust_id > 0").select("id", (F.col("amount") * 2).alias("a2"))
    cut = o.localCheckpoint() if kind == "localCheckpoint" else o.checkpoint()
    lin = analyze_record(env.write_parquet(cut.select("id", "a2")))
    check_properties(lin)
    assert direct(lin, "a2") == {("orders", "amount", "TRANSFORMATION")}
    assert direct(lin, "id") == {("orders", "id", "IDENTITY")}
    assert ("orders", "cust_id", "FILTER") in {(d[0], d[1], d[2]) for d in
                                                 {(e.dataset.name.rsplit("/", 1)[-1], e.field, e.subtype)
                                                  for e in lin.dataset_edges}}
    assert lin.approximate_columns == {}


def test_lazy_checkpoint_is_traced_too(env):
    env.spark.sparkContext.setCheckpointDir(str(env.base / "checkpoints"))
    o = env.spark.read.parquet(env.orders).select("id")
    cut = o.checkpoint(eager=False)
    lin = analyze_record(env.write_parquet(cut))
    # Spark 4.1 plans a lazy checkpoint as an action too (funcName "checkpoint"): traced, exact
    assert _fields(lin, "id") == {("orders", "id")}, lin
    assert lin.approximate_columns == {}


def test_visible_in_record_status_facet_and_cli(env, tmp_path, capsys):
    """Items 7/11: the run record says ``approximate`` with the columns and reasons (no longer dropped), the
    facet's transformations say ``approximate: <reason>`` and still validate, ``analyze`` lists the columns."""
    from airflow_provider_lineage.capture.listener import drain
    from airflow_provider_lineage.lineage import run_record
    from airflow_provider_lineage.lineage.__main__ import main
    from airflow_provider_lineage.lineage.events import LineageResult
    from airflow_provider_lineage.lineage.facets import datasets_for
    from airflow_provider_lineage.lineage.record import CaptureRecord
    from tests.lineage.test_facets import event
    from tests.support.ol_validate import validate_event

    c = env.spark.read.parquet(env.customers)
    df = c.rdd.map(lambda r: (r.cust_id, r.email)).toDF(["cust_id", "name"])
    # toDF() inferred the schema from the RDD's first row, a driver round trip (test_rdd_action_is_a_driver_round_trip):
    # forgotten here, this test is about the RDD round trip's reason alone
    drain(env.spark)
    env.session.listener.driver.clear()
    rec = env.write_parquet(df)
    path = tmp_path / "record.json"
    path.write_text(rec.to_json())
    lin = analyze_record(CaptureRecord.from_json(path.read_text()))  # the record's new fields survive JSON
    assert set(lin.approximate_columns) == {"cust_id", "name"}

    built = run_record.build(LineageResult(lineages=[lin]), job_namespace="ns", job_name="j", run_id="r",
                             emission="test")
    assert built["status"] == "approximate"
    assert {(col, reasons[0].split(":")[0]) for _o, col, reasons in built["approximate"]} == {
        ("cust_id", "RDD round trip"), ("name", "RDD round trip")}
    exact = run_record.build(LineageResult(lineages=[analyze_record(env.write_parquet(c.select("email")))]),
                             job_namespace="ns", job_name="j", run_id="r", emission="test")
    assert exact["status"] == "ok" and exact["approximate"] == []

    ins, outs = datasets_for([lin])
    ev = event(ins, outs)
    assert validate_event(ev) == []
    descs = {t["description"] for i in ev["outputs"][0]["facets"]["columnLineage"]["fields"]["name"]["inputFields"]
             for t in i["transformations"]}
    assert descs and all(d.startswith("approximate: RDD round trip") for d in descs)

    assert main(["analyze", str(path)]) == 0
    text = capsys.readouterr().out
    assert "[approximate] name: RDD round trip" in text
    assert main(["explain", str(path), "name"]) == 0
    text = capsys.readouterr().out
    assert "(RDD round trip: " in text and "customers.email" in text.replace("/customers", "customers")
    assert "approximate: RDD round trip" in text
    assert main(["analyze", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (cols,) = data["approximate"].values()
    assert cols["name"][0].startswith("RDD round trip")
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps(ev) + "\n")
    assert main(["analyze", str(events)]) == 0
    assert "[approximate] name: RDD round trip" in capsys.readouterr().out


def test_checkpoint_the_capture_did_not_see_is_an_unknown_input(env):
    """A checkpoint made before the capture started (the driver log forgets it here): an unknown input, never
    zero edges presented as exact."""
    from airflow_provider_lineage.capture.listener import drain

    env.spark.sparkContext.setCheckpointDir(str(env.base / "checkpoints"))
    cut = env.spark.read.parquet(env.orders).select("id").localCheckpoint()
    drain(env.spark)
    env.session.listener.driver.clear()
    lin = analyze_record(env.write_parquet(cut))
    assert lin.columns["id"] == []
    assert any(r.startswith(f"{UNKNOWN_INPUT}: checkpoint") for r in _reasons(lin, "id")), lin.approximate_columns
    assert lin.approximate  # the task log summary says why the lineage stops


# -- RDD functions over Rows the driver analysed (capture/rdds.py) ------------------------------------------------
@pytest.fixture
def rdd_functions():
    from airflow_provider_lineage.capture.udfs import UdfRegistry

    reg = UdfRegistry()
    reg.install()
    try:
        yield reg
    finally:
        reg.uninstall()


def _typed(lin, column):
    return {(f, t, s) for d, f, t, s in edges(lin, column)}


def test_rdd_map_over_rows_is_precise_per_position(env, rdd_functions):
    c = env.spark.read.parquet(env.customers)
    df = c.rdd.map(lambda r: (r.cust_id, r.email.upper())).toDF(["id", "e"])
    rec = env.plan_only(df)
    rdd_functions.enrich(rec)
    assert rec.rdd_functions, "the driver registered the analysed function"
    lin = analyze_record(rec)
    check_properties(lin)
    assert _typed(lin, "id") == {("cust_id", "DIRECT", "IDENTITY")}, lin.columns["id"]
    assert _typed(lin, "e") == {("email", "DIRECT", "TRANSFORMATION")}, lin.columns["e"]
    assert not any(r.startswith("RDD round trip") for rs in lin.approximate_columns.values() for r in rs)


def test_rdd_flat_map_and_map_partitions_with_conditions(env, rdd_functions):
    c = env.spark.read.parquet(env.customers)

    def parts(rows):
        for r in rows:
            if r.name:
                yield (r.email, r.cust_id)

    df = c.rdd.mapPartitions(parts).toDF(["contact", "k"])
    rec = env.plan_only(df)
    rdd_functions.enrich(rec)
    lin = analyze_record(rec)
    assert _typed(lin, "contact") == {("email", "DIRECT", "IDENTITY"), ("name", "INDIRECT", "CONDITIONAL")}
    assert ("name", "DIRECT") not in {(f, t) for f, t, _s in _typed(lin, "k")}
    df = c.rdd.flatMap(lambda r: [(r.cust_id, r.name)]).toDF(["a", "b"])
    rec = env.plan_only(df)
    rdd_functions.enrich(rec)
    lin = analyze_record(rec)
    assert _typed(lin, "b") == {("name", "DIRECT", "IDENTITY")}


@pytest.mark.parametrize("shape", ["computed_source", "chained", "positional_row_access", "unanalysable"])
def test_rdd_functions_the_driver_cannot_make_precise_keep_every_column(env, rdd_functions, shape):
    c = env.spark.read.parquet(env.customers)
    if shape == "computed_source":  # the Row's "name" holds emails: binding it to customers.name would miss them
        rdd = c.select("cust_id", F.col("email").alias("name")).rdd.map(lambda r: (r.cust_id, r.name))
    elif shape == "chained":
        rdd = c.rdd.map(lambda r: (r.cust_id, r.email)).map(lambda t: (t[0], t[1]))
    elif shape == "positional_row_access":
        rdd = c.rdd.map(lambda r: (r[0], r[2]))
    else:
        rdd = c.rdd.map(lambda r: eval("(r.cust_id, r.email)"))
    rec = env.plan_only(rdd.toDF(["cust_id", "name"]))
    rdd_functions.enrich(rec)
    lin = analyze_record(rec)
    check_properties(lin)
    assert ("customers", "email") in _fields(lin, "name"), lin.columns["name"]
    reasons = _reasons(lin, "name")
    if shape == "positional_row_access":  # analysed: every field, as the Row read by position may be any of them
        assert {("customers", "cust_id"), ("customers", "email")} <= _fields(lin, "name")
    else:
        assert any(r.startswith("RDD round trip") for r in reasons), lin.approximate_columns


def test_rdd_function_widening_says_why(env, rdd_functions):
    seen: list = []

    def keep(r):
        add = seen.append
        add(r.email)
        return (r.cust_id, len(seen))

    c = env.spark.read.parquet(env.customers)
    rec = env.plan_only(c.rdd.map(keep).toDF(["id", "n"]))
    rdd_functions.enrich(rec)
    lin = analyze_record(rec)
    assert ("customers", "email") in _fields(lin, "n")
    assert any("widened: `add(...)` calls a value of unknown behaviour" in r for r in _reasons(lin, "n"))
