"""The lineage record's ``approximate`` list (issue 46 items 7 and 11): what the engine marks, carried to the XCom
``column_lineage`` the guard and the run tab read. Hand-made :class:`WriteLineage` objects as the engine gives them."""
from __future__ import annotations

from airflow_provider_lineage.lineage import run_record
from airflow_provider_lineage.lineage.events import LineageResult
from airflow_provider_lineage.lineage.model import UNKNOWN_INPUT, FieldEdge, WriteLineage
from airflow_provider_lineage.lineage.naming import DatasetRef

CUST, OUT = DatasetRef("file", "/w/customers"), DatasetRef("file", "/w/out")


def _lin(**extra: object) -> WriteLineage:
    return WriteLineage(output=OUT, output_fields=[("id", "int"), ("contact", "string")],
                        inputs=[(CUST, [("id", "int"), ("email", "string")])],
                        columns={"id": [FieldEdge(CUST, "id", "DIRECT", "IDENTITY")], "contact": []}, **extra)


def _approx(lin: WriteLineage) -> dict[tuple[str, str], list[str]]:
    rec = run_record.build(LineageResult(lineages=[lin]), job_namespace="n", job_name="j", run_id="r", emission="off")
    return {(rec["datasets"][i]["name"], c): rs for i, c, rs in rec["approximate"]}


def test_an_exact_write_has_no_approximate_column() -> None:
    assert _approx(_lin()) == {}


def test_the_engines_approximate_columns_reach_the_record_with_their_reasons() -> None:
    reasons = [f"{UNKNOWN_INPUT}: Python data source 'custfile'", "driver round trip: collect() of customers"]
    assert _approx(_lin(approximate_columns={"contact": reasons})) == {("/w/out", "contact"): reasons}


def test_what_the_engine_marks_today_at_the_write_level_marks_every_column() -> None:
    """A checkpoint cut (``unknown``) and an untraced RDD (a note) are unknown inputs; a class with no rule is an
    over-approximation (its inputs known)."""
    cut = _approx(_lin(approximate=True, unknown=["LogicalRDD from checkpoint()/localCheckpoint(): the plan is gone"]))
    assert set(cut) == {("/w/out", "id"), ("/w/out", "contact")}
    assert all(r.startswith(UNKNOWN_INPUT) and "checkpoint" in r for rs in cut.values() for r in rs)
    rdd = _approx(_lin(notes=["LogicalRDD: an RDD the driver could not trace to files or tables (unknown input)"]))
    assert all(r.startswith(UNKNOWN_INPUT) for rs in rdd.values() for r in rs) and len(rdd) == 2
    rule = _approx(_lin(approximate=True, unknown=["SomeNewNode"]))
    assert all(r.startswith("approximate: no rule for SomeNewNode") for rs in rule.values() for r in rs)


def test_a_record_over_its_bound_keeps_its_approximate_columns_first() -> None:
    lin = _lin(approximate_columns={"contact": ["driver round trip: " + "x" * 250] * 5})
    rec = run_record.build(LineageResult(lineages=[lin]), job_namespace="n", job_name="j", run_id="r", emission="off",
                           limit=1200)
    assert run_record.size(rec) <= 1200 and rec["truncated"]
    assert [c for _, c, _ in rec["approximate"]] == ["contact"]  # the edges and schemas went first
