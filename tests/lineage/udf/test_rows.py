"""The analysis of functions over Rows of an RDD round trip (``df.rdd.map(f)``, ``flatMap``, ``mapPartitions``):
precise per output position or field where the body builds its output from known parts, else every output reads
every field with the reason; never bound by name."""
from __future__ import annotations

import hashlib

import pytest
from pyspark.sql import Row

from airflow_provider_lineage.lineage.udf.rows import ALL, RowFlow, analyse_row_function

FIELDS = ["cust_id", "name", "email"]


def flows(rf: RowFlow, out: str) -> dict[str, tuple[str | None, bool, bool]]:
    return {f: (a.direct, a.masking, a.conditional) for f, a in rf.fields_of(out).items()}


I, T, M = ("IDENTITY", False, False), ("TRANSFORMATION", False, False), ("TRANSFORMATION", True, False)


def test_map_to_a_tuple_is_precise_per_position() -> None:
    rf = analyse_row_function(lambda r: (r.cust_id, r.email.upper()), "map", FIELDS)
    assert rf.analysed and rf.widened == []
    assert flows(rf, "#0") == {"cust_id": I}
    assert flows(rf, "#1") == {"email": T}  # the email, not the same-named "name" column


def test_subscript_by_name_and_row_kwargs() -> None:
    rf = analyse_row_function(lambda r: Row(key=r["cust_id"], contact=r["email"]), "map", FIELDS)
    assert flows(rf, "key") == {"cust_id": I}
    assert flows(rf, "contact") == {"email": I}


def _tag(r):
    if r.name:
        return (r.cust_id, hashlib.sha256(r.email.encode()).hexdigest())
    return (r.cust_id, None)


def test_conditions_and_hashes() -> None:
    rf = analyse_row_function(_tag, "map", FIELDS)
    assert flows(rf, "#0") == {"cust_id": I, "name": (None, False, True)}
    assert flows(rf, "#1") == {"email": M, "name": (None, False, True)}


def _explode(r):
    for part in r.email.split("@"):
        yield (r.cust_id, part)


def _partitions(rows):
    for r in rows:
        yield (r.name, r.email)


def test_flat_map_and_map_partitions_analyse_one_output_element() -> None:
    rf = analyse_row_function(lambda r: [(r.cust_id, r.name)], "flatMap", FIELDS)
    assert flows(rf, "#0") == {"cust_id": I} and flows(rf, "#1") == {"name": I}
    rf = analyse_row_function(_explode, "flatMap", FIELDS)
    assert flows(rf, "#0") == {"cust_id": I, "email": (None, False, True)}
    assert flows(rf, "#1")["email"][0] == "TRANSFORMATION"
    rf = analyse_row_function(_partitions, "mapPartitions", FIELDS)
    assert flows(rf, "#0") == {"name": I} and flows(rf, "#1") == {"email": I}
    rf = analyse_row_function(lambda it: ((r.email, r.cust_id) for r in it), "mapPartitions", FIELDS)
    assert flows(rf, "#0") == {"email": I} and flows(rf, "#1") == {"cust_id": I}


@pytest.mark.parametrize(
    ("fn", "kind"),
    [
        (lambda r: r[1], "map"),  # a position of the Row: every field
        (lambda r: list(r), "map"),
        (lambda r: r.asDict(), "map"),
        (lambda it: map(lambda r: (r.cust_id, r.email), it), "mapPartitions"),  # noqa: C417 - the shape under test
    ],
)
def test_what_is_not_known_reads_every_field(fn, kind) -> None:
    rf = analyse_row_function(fn, kind, FIELDS)
    for out in rf.outputs:
        assert set(rf.fields_of(out)) <= set(FIELDS)
    assert set(rf.fields_of(ALL)) == set(FIELDS), rf.outputs


def test_unanalysable_functions_fall_back_with_the_reason() -> None:
    rf = analyse_row_function(len, "map", FIELDS)
    assert not rf.analysed and rf.reason == "built-in or C function"
    assert set(rf.fields_of("#0")) == set(FIELDS)
    rf = analyse_row_function(lambda r: eval("r.email"), "map", FIELDS)
    assert not rf.analysed and "eval" in (rf.reason or "")
    assert analyse_row_function(lambda r: r, "reduce", FIELDS).reason == "RDD method `reduce` not modelled"


def test_widening_is_kept_and_the_flow_round_trips_through_json() -> None:
    seen: list = []

    def keep(r):
        add = seen.append
        add(r.email)
        return (r.cust_id, len(seen))

    rf = analyse_row_function(keep, "map", FIELDS)
    assert rf.analysed and any("calls a value of unknown behaviour" in w for w in rf.widened)
    assert "email" in rf.fields_of("#1")  # never "unused"
    assert RowFlow.from_dict(rf.to_dict()) == rf
