"""The example pipelines' events replayed through Marquez's column-lineage rules: no edge may be dropped.

Marquez itself is MOCKED (it cannot run here): :mod:`tests.support.marquez_rules` applies its
ingestion rules (edges only from outputs' ``fields``, output column in the same event's schema, input
field a known field of an input of the same run, exact name or ``symlinks`` alias, typed fields,
field-level type/description, namespaces, ``eventTime``, ``_producer``/``_schemaURL``). Everything
else is real: the DAGs ``lineage_c1_transactions_mart`` and ``lineage_etl`` (twice: the second run
appends a day) run under ``dag.test()`` with local Spark, and their operators self-emit to
``$AIRFLOW_HOME/lineage/events.jsonl``, which is replayed in order.
"""
from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.operators.ol_schema import validate_or_skip
from tests.support.marquez_rules import MarquezModel

# slow tier: the example pipelines (several spark-submits, shared with the modules of EXAMPLE_PIPELINE_MODULES)
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DAGS = ROOT / "dags"






#: Set to a file written by an earlier run (``<pytest basetemp>/marquez-replay.json``) to replay it
#: without running the DAGs again (for working on the checker).
RECORDED = "APL_MARQUEZ_REPLAY"


@pytest.fixture(scope="module")
def pipeline_events(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The events of the example pipelines (C1 once, ETL twice), in order: the session's shared runs
    (``example_c1`` / ``example_etl`` in tests/conftest.py), or a recording (``$APL_MARQUEZ_REPLAY``)."""
    if os.environ.get(RECORDED):
        saved = json.loads(Path(os.environ[RECORDED]).read_text())
        return {"events": saved["events"], "etl_dir": Path(saved["etl_dir"]), "c1_dir": Path(saved["c1_dir"])}
    c1, etl = request.getfixturevalue("example_c1"), request.getfixturevalue("example_etl")
    for dr in [*c1["runs"], *etl["runs"]]:
        assert "success" in str(dr.state), dr
    out = {"events": c1["events"] + etl["events"], "etl_dir": etl["data_dir"], "c1_dir": c1["data_dir"]}
    (tmp_path_factory.getbasetemp() / "marquez-replay.json").write_text(json.dumps(out, default=str))
    return out


SIEVE_JOB = "COMPLETE lineage_etl.index:"


def _completes(events: list[dict[str, Any]], job_suffix: str) -> list[dict[str, Any]]:
    return [e for e in events if e["eventType"] == "COMPLETE" and e["job"]["name"].endswith(job_suffix)]


class TestExamplePipelinesInMarquez:
    def test_every_edge_is_stored_and_no_rule_is_broken(self, pipeline_events: dict[str, Any]) -> None:
        events = pipeline_events["events"]
        model = MarquezModel().ingest_all(events)
        assert [v for v in model.violations if not v.startswith(SIEVE_JOB)] == []
        assert model.dropped == []
        assert model.lost() == []
        # C1 + two marts + load + indexes; the every-row edges are stated once per output (the default form):
        # Marquez does not show them (hidden), it drops none
        assert len(model.stored) > 30 and len(model.stored) + len(model.hidden()) > 50
        assert model.type_conflicts() == {}

    def test_sieve_index_edges_carry_a_field_level_type(self, pipeline_events: dict[str, Any]) -> None:
        model = MarquezModel().ingest_all(pipeline_events["events"])
        assert [v for v in model.violations if v.startswith(SIEVE_JOB)] == []

    def test_types_on_the_mart_and_dataset_wide_edges_stated_once(self, pipeline_events: dict[str, Any]) -> None:
        model = MarquezModel().ingest_all(pipeline_events["events"])
        mart = str(pipeline_events["c1_dir"] / "mart" / "transactions_c1")
        up = model.upstream("file", mart, "amount_eur")
        src = str(pipeline_events["c1_dir"] / "transactions")
        assert {e.input for e in up} == {("file", src, f) for f in ("amount", "fx_rate")}
        [edge] = {e for e in up if e.input[2] == "amount"}
        assert edge.type == "TRANSFORMATION"
        assert edge.description == "DIRECT/TRANSFORMATION: amount, fx_rate"
        assert {e.type for e in model.upstream("file", mart, "account_hash")} == {"MASKED"}
        # the default form states the period/status filter once, in the facet's dataset list, which Marquez
        # ignores: the checker reports it as hidden (indirect_lineage="fields"/"both" shows it, see below)
        hidden = {i for i, o in model.hidden() if o == ("file", mart, "amount_eur")}
        assert hidden == {("file", src, f) for f in ("txn_date", "status")}

    def test_one_dataset_per_table_across_tasks_and_runs(self, pipeline_events: dict[str, Any]) -> None:
        events, data = pipeline_events["events"], pipeline_events["etl_dir"]

        def names(job: str, side: str, run: int) -> set[str]:
            return {d["name"] for d in _completes(events, f"lineage_etl.{job}")[run][side]}

        for run in (0, 1):
            loaded = names("load", "outputs", run)
            assert loaded == {str(data / "warehouse" / t) for t in ("transactions", "customers")}
            assert loaded <= names("build_marts", "inputs", run)  # written by one task, read by the next
            marts = names("build_marts", "outputs", run)
            assert {str(data / "marts" / m) for m in ("transactions_enriched", "customer_monthly")} == marts
            assert names("index", "inputs", run) == {str(data / "warehouse" / "transactions")} | marts
        for job in ("load", "build_marts", "index"):  # stable across runs
            for side in ("inputs", "outputs"):
                assert names(job, side, 0) == names(job, side, 1), (job, side)
        # each run of ``load`` reads that day's landing folder (``landing/transactions/day=...``): the
        # partition folder folds into its table, so every run reads the same two landing datasets
        assert names("load", "inputs", 0) == {str(data / "landing" / t) for t in ("transactions", "customers")}
        namespaces = {d["namespace"] for e in events for side in ("inputs", "outputs") for d in e.get(side) or []}
        assert namespaces == {"file"}

    def test_each_index_links_to_its_table(self, pipeline_events: dict[str, Any]) -> None:
        events, data = pipeline_events["events"], pipeline_events["etl_dir"]
        model = MarquezModel().ingest_all(events)
        written = {(d["namespace"], d["name"]) for e in _completes(events, "lineage_etl.build_marts") + _completes(
            events, "lineage_etl.load") for d in e["outputs"]}
        for table, column in [("warehouse/transactions", "txn_date"), ("warehouse/transactions", "customer_id"),
                              ("marts/transactions_enriched", "txn_date"), ("marts/customer_monthly", "customer_id")]:
            index = str(data / "indexes" / table.rsplit("/", 1)[-1] / column)
            [edge] = model.upstream("file", index, column)
            assert edge.input == ("file", str(data / table), column)
            assert edge.input[:2] in written  # the same Marquez dataset the Spark task wrote

    def test_events_validate_against_the_spec(self, pipeline_events: dict[str, Any]) -> None:
        validate_or_skip(pipeline_events["events"])


# -- issue 51: the README's Marquez line alone shows every edge ------------------------------------------------------
def test_the_readme_marquez_line_alone_shows_every_row_edges(tmp_path: Path) -> None:
    """``./dev.sh demo``'s DAG with exactly the transport the README shows for Marquez and no lineage setting: Airflow's
    OpenLineage provider sends the events to the loopback receiver at ``api/v1/lineage``; the every-row edges (the
    period/status FILTER) are on the mart's fields, so Marquez's rules hide none of them; the task log says once which
    form was chosen and why."""
    import subprocess
    import sys

    from tests.lineage.test_transport_faults import FakeMarquez

    receiver = FakeMarquez("ok")  # stands in for Marquez (which cannot run here): answers 201, records each POST
    try:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OPENLINEAGE", "AIRFLOW__OPENLINEAGE__", "AIRFLOW__COLUMN_LINEAGE__"))}
        env.update(
            AIRFLOW_HOME=str(tmp_path / "home"),
            # the README's line, pointed at the receiver
            AIRFLOW__OPENLINEAGE__TRANSPORT=json.dumps(
                {"type": "http", "url": receiver.url, "endpoint": "api/v1/lineage"}),
            AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD="False",  # the harness: every event sent before dag.test() returns
            LINEAGE_DEMO_DATA_DIR=str(tmp_path / "data"),
            PYTHONPATH=str(ROOT),
        )
        env.pop("AIRFLOW__CORE__DAGS_FOLDER", None)
        proc = subprocess.run([sys.executable, str(ROOT / "dev" / "demo.py")], env=env, cwd=str(tmp_path),
                              capture_output=True, text=True, timeout=900, check=False)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, output[-5000:]
    finally:
        receiver.close()
    assert receiver.received and {path for path, _ in receiver.received} == {"/api/v1/lineage"}
    events = [json.loads(body) for _, body in receiver.received]
    mart = str(tmp_path / "data" / "mart" / "transactions_c1")
    [complete] = [e for e in events if e["eventType"] == "COMPLETE" and any(o["name"] == mart for o in e["outputs"])]
    model = MarquezModel().ingest_all(events)
    assert (model.dropped, model.lost()) == ([], [])
    assert [h for h in model.hidden() if h[1][1] == mart] == []  # nothing Marquez would not show
    src = str(tmp_path / "data" / "transactions")
    for column in ("amount_eur", "txn_id", "size_band"):  # the period/status filter, on every field Marquez shows
        shown = {e.input for e in model.upstream("file", mart, column)}
        assert {("file", src, f) for f in ("txn_date", "status")} <= shown, (column, shown)
    facet = next(o for o in complete["outputs"] if o["name"] == mart)["facets"]["columnLineage"]
    assert {d["field"] for d in facet.get("dataset") or []} >= {"txn_date", "status"}  # "both": the list stays too
    said = [line for line in output.splitlines() if "every-row edges" in line and "placed 'both'" in line]
    assert said and "api/v1/lineage" in said[0] and "Marquez" in said[0], output[-3000:]
    validate_or_skip(events)


# -- the checker itself (no Spark): it must catch what Marquez would drop --------------------------
def _event(fields: dict[str, Any], dataset: list[dict[str, Any]] | None = None, in_fields: list[str] = ("a", "b"),
           out_schema: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    facet = {"_producer": "p", "_schemaURL": "s"}
    return {
        "eventType": "COMPLETE", "eventTime": "2026-01-01T00:00:00+00:00", "run": {"runId": "r1", "facets": {}},
        "job": {"namespace": "default", "name": "j", "facets": {}},
        "inputs": [{"namespace": "file", "name": "/in", "facets": {"schema": {
            **facet, "fields": [{"name": n, "type": "int"} for n in in_fields]}}}],
        "outputs": [{"namespace": "file", "name": "/out", "facets": {
            "schema": {**facet, "fields": out_schema if out_schema is not None else [{"name": "x", "type": "int"}]},
            "columnLineage": {**facet, "fields": fields, "dataset": dataset or []}}}],
    }


def _inp(field: str, subtype: str = "IDENTITY") -> dict[str, Any]:
    kind = "DIRECT" if subtype in ("IDENTITY", "TRANSFORMATION", "AGGREGATION") else "INDIRECT"
    return {"namespace": "file", "name": "/in", "field": field, "transformations": [{"type": kind, "subtype": subtype}]}


FIELD = {
    "inputFields": [_inp("a")],
    "transformationType": "IDENTITY",
    "transformationDescription": "DIRECT/IDENTITY: a",
}


class TestMarquezRulesChecker:
    def test_a_good_event_stores_every_edge(self) -> None:
        m = MarquezModel().ingest_all([_event({"x": {**FIELD, "inputFields": [_inp("a"), _inp("b", "FILTER")]}},
                                              dataset=[_inp("b", "FILTER")])])
        assert (m.violations, m.dropped, m.lost()) == ([], [], [])
        assert {e.input[2] for e in m.upstream("file", "/out", "x")} == {"a", "b"}

    def test_dataset_list_only_edges_are_hidden_not_lost(self) -> None:
        m = MarquezModel().ingest_all([_event({"x": FIELD}, dataset=[_inp("b", "FILTER")])])
        assert m.lost() == [] and m.dropped == []
        assert m.hidden() == [(("file", "/in", "b"), ("file", "/out", "x"))]

    @pytest.mark.parametrize(("indirect", "shown"), [("dataset", {"a"}), ("fields", {"a", "b"}), ("both", {"a", "b"})])
    def test_each_placement_of_the_operator(self, indirect: str, shown: set[str]) -> None:
        """The facets the operator builds (``datasets_for``), in each ``indirect_lineage`` placement: Marquez
        shows the dataset-wide FILTER edge only when it is on the fields; nothing else is ever lost."""
        from tests.lineage.test_dataset_level import event_dict, filter_lineage

        m = MarquezModel().ingest_all([event_dict([filter_lineage()], indirect)])
        assert (m.violations, m.dropped, m.lost()) == ([], [], [])
        out = next(iter(m.datasets - {("file", "/in")}))
        assert {e.input[2] for e in m.upstream(*out, "a")} == shown
        assert {i[2] for i, _o in m.hidden()} == ({"b"} - shown)

    def test_drops_and_violations(self) -> None:
        ev = _event({"x": {"inputFields": [_inp("zz")]}, "y": FIELD}, out_schema=[{"name": "x"}])
        ev["eventTime"] = "2026-01-01 00:00:00"
        ev["job"]["namespace"] = "my namespace"
        del ev["outputs"][0]["facets"]["schema"]["_producer"]
        m = MarquezModel().ingest_all([ev])
        reasons = {(d.output[2], d.reason.split(" ")[0] + " " + d.reason.split(" ")[1]) for d in m.dropped}
        assert reasons == {("x", "input field"), ("y", "output column")}
        text = "\n".join(m.violations)
        for needle in (
            "eventTime",
            "'my namespace'",
            "lacks _producer",
            "has no type",
            "no field-level transformationType",
        ):
            assert needle in text

    def test_input_of_another_run_is_not_enough_but_a_symlink_alias_is(self) -> None:
        first = _event({"x": FIELD})
        second = copy.deepcopy(first)
        second["run"]["runId"] = "r2"
        second["inputs"] = []
        m = MarquezModel().ingest_all([first, second])
        assert [d.reason for d in m.dropped] == ["input dataset is not an input of this run"]
        aliased = _event({"x": {**FIELD, "inputFields": [{**_inp("a"), "namespace": "file:/wh", "name": "db.t"}]}})
        aliased["inputs"][0]["facets"]["symlinks"] = {"_producer": "p", "_schemaURL": "s", "identifiers": [
            {"namespace": "file:/wh", "name": "db.t", "type": "TABLE"}]}
        m = MarquezModel().ingest_all([aliased])
        assert m.dropped == [] and m.lost() == []
