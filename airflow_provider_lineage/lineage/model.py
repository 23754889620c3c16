"""The engine's result types: :class:`WriteLineage` and :class:`FieldEdge`; :class:`ParentRun` of run events."""
from __future__ import annotations

from dataclasses import dataclass, field

from airflow_provider_lineage.lineage.naming import DatasetRef

#: Where dataset-wide INDIRECT edges go in the ``columnLineage`` facet: only the facet's ``dataset`` list,
#: once per output (default: openlineage-spark's ``datasetLineageEnabled=true``, the spec's recommended
#: compact form), every output field (the legacy form, the only one Marquez shows), or both.
#: (Here, not in ``facets``: the driver reads it without openlineage-python.)
INDIRECT_PLACEMENTS = ("dataset", "fields", "both")
#: The default placement (see :data:`INDIRECT_PLACEMENTS`).
DEFAULT_INDIRECT = "dataset"
#: How a reason in :attr:`WriteLineage.approximate_columns` starts when an input could not be named at all.
UNKNOWN_INPUT = "unknown input"


class LineageError(ValueError):
    """The capture record cannot be analysed at all (no plan, no output); the message says why."""


@dataclass(frozen=True, order=True)
class FieldEdge:
    """One input field's influence on an output column (or on the whole output dataset).

    :param dataset: the input dataset.
    :param field: the input field (top-level column name).
    :param type: ``DIRECT`` or ``INDIRECT``.
    :param subtype: ``IDENTITY``/``TRANSFORMATION``/``AGGREGATION`` or
        ``JOIN``/``FILTER``/``GROUP_BY``/``SORT``/``WINDOW``/``CONDITIONAL``.
    :param masking: the value was obfuscated on the way (hash, mask, count).
    """

    dataset: DatasetRef
    field: str
    type: str
    subtype: str
    masking: bool = False


@dataclass
class WriteLineage:
    """Column lineage of one write.

    :param output: the written dataset (``None`` for writes that persist nothing, e.g. ``noop``).
    :param output_fields: ``(name, spark simpleString type)`` in write order.
    :param inputs: every input dataset the write read, with its schema fields.
    :param columns: output column -> its edges (DIRECT and per-column INDIRECT: CONDITIONAL, WINDOW).
    :param dataset_edges: influences on the whole output (FILTER, JOIN, GROUP_BY, SORT ...).
    :param approximate: some node/expression was not understood and the conservative rule was used.
    :param unknown: the class names that fell back to the conservative rule.
    :param mode: the save mode (``Overwrite``, ``Append`` ...), when known.
    :param command: the write command class.
    :param notes: other analysis remarks (e.g. a relation whose identity was not captured).
    :param udfs: Python UDFs of the plan: one line each on what the body analysis found, or why the UDF
        was not analysed (then its edges are the conservative "every argument flows").
    :param udf_columns: output column -> the "not analysed" lines of the UDFs its value goes through.
    :param approximate_columns: output column -> why its inputs are not known exactly: each reason says what the
        capture could not see (``"driver round trip: ..."``, ``"checkpoint: ..."``, ``"UDF ...: ..."``). The column's
        edges are then a superset of the truth (every column the value could have come from, never masking); a reason
        that starts with :data:`UNKNOWN_INPUT` says some input could not be named at all, so no policy can prove the
        column clean. Empty when every column is exact.
    :param lifecycle: OpenLineage ``lifecycleStateChange`` of the output: ``CREATE`` (the write created
        it: CTAS, error-if-exists/ignore writes, ``saveAsTable`` of a new table), ``OVERWRITE``
        (overwrite mode, INSERT OVERWRITE, replace), else ``None`` (append, MERGE).
    """

    output: DatasetRef | None
    output_fields: list[tuple[str, str]]
    inputs: list[tuple[DatasetRef, list[tuple[str, str]]]]
    columns: dict[str, list[FieldEdge]]
    dataset_edges: list[FieldEdge] = field(default_factory=list)
    approximate: bool = False
    unknown: list[str] = field(default_factory=list)
    mode: str | None = None
    command: str = ""
    notes: list[str] = field(default_factory=list)
    lifecycle: str | None = None
    udfs: list[str] = field(default_factory=list)
    udf_columns: dict[str, list[str]] = field(default_factory=dict)
    approximate_columns: dict[str, list[str]] = field(default_factory=dict)

    def sources_of(self, column: str) -> set[tuple[str, str, str]]:
        """``{(namespace, name, field)}`` of every edge of ``column`` (handy in tests/benchmarks)."""
        return {(e.dataset.namespace, e.dataset.name, e.field) for e in self.columns.get(column, [])}


@dataclass
class ParentRun:
    """The run the driver's events hang under (the Airflow task run), plus its root (the DAG run)."""

    namespace: str
    name: str
    run_id: str
    root_namespace: str | None = None
    root_name: str | None = None
    root_run_id: str | None = None
