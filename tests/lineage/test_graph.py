"""Composition of transformation types along a path, and resolution on cyclic / shared graphs."""
from __future__ import annotations

from airflow_provider_lineage.lineage.graph import (
    AGGREGATION,
    CONDITIONAL,
    FILTER,
    IDENTITY,
    TRANSFORMATION,
    ColumnGraph,
    Trans,
    compose,
)
from airflow_provider_lineage.lineage.naming import DatasetRef


def test_indirect_step_wins_and_outer_indirect_wins_over_inner():
    assert compose(FILTER, TRANSFORMATION) == FILTER
    assert compose(TRANSFORMATION, CONDITIONAL) == CONDITIONAL
    assert compose(FILTER, CONDITIONAL) == FILTER


def test_direct_takes_the_strongest_and_masking_is_sticky():
    assert compose(IDENTITY, AGGREGATION) == AGGREGATION
    assert compose(TRANSFORMATION, IDENTITY) == TRANSFORMATION
    assert compose(IDENTITY, TRANSFORMATION.masked()) == Trans("DIRECT", "TRANSFORMATION", True)
    assert compose(FILTER, TRANSFORMATION.masked()).masking


def test_resolve_survives_cycles_and_shares_work():
    g = ColumnGraph()
    ds = DatasetRef("file", "/t")
    g.add_source(1, ds, "a")
    g.add(2, 1, TRANSFORMATION)
    g.add(3, 2, IDENTITY)
    g.add(2, 3, IDENTITY)  # cycle 2 <-> 3
    assert g.resolve(3) == {(ds, "a"): frozenset({TRANSFORMATION})}
