"""WriteLineage -> OpenLineage input/output datasets with ``schema``, ``columnLineage`` and ``symlinks``.

Rules the events follow (so that Marquez keeps every edge):

* every output column that has lineage is a field of the output's ``schema`` facet;
* every input field an edge names belongs to an input dataset of the same event whose ``schema``
  facet lists that field (fields referenced but missing from a captured schema are added);
* dataset-wide influences (FILTER, JOIN, GROUP_BY, SORT) go, by default (``indirect="dataset"``), once
  into the facet's top-level ``dataset`` list (facet 1-2-0; openlineage-spark's
  ``datasetLineageEnabled=true``): an event grows with output columns x their own inputs, not x the
  shared filter/join keys. ``"fields"`` copies them onto every output field instead (the legacy shape,
  openlineage-spark's default, the only one Marquez shows), ``"both"`` does both. Per-column INDIRECT
  edges that only concern one column (CONDITIONAL, WINDOW) stay under that column. Readers of either
  form: :mod:`.column_facet`;
* every field of every ``fields`` entry also carries the deprecated ``transformationType`` /
  ``transformationDescription`` (what Marquez displays; it does not read ``transformations``);
* every schema field has a ``type`` (Marquez keys field rows on name + type: a missing type makes a
  new row per event): the Spark type, else :data:`UNKNOWN_TYPE`;
* several writes of the same output within one job are merged (union of fields and edges);
* an approximate lineage (some plan node fell back to the conservative rule) says so in every
  transformation's ``description``: ``"approximate: conservative rule for <classes>"`` — the
  schema-valid place for it (the facet's Python class carries no extra keys); a column computed by a
  Python UDF whose body was not analysed says ``"conservative: UDF `f` not analysed (no source): ..."``;
* a column whose inputs are over-approximated or include an unknown input (``WriteLineage.approximate_columns``:
  a driver round trip, an RDD round trip, a Python data source, a checkpoint the capture did not see) says
  ``"approximate: <reason>; ..."`` on every transformation of its ``fields`` entry (docs/engine.md).
"""
from __future__ import annotations

from collections import OrderedDict

from openlineage.client.event_v2 import InputDataset, OutputDataset
from openlineage.client.generated import column_lineage_dataset as cl
from openlineage.client.generated import lifecycle_state_change_dataset as lc
from openlineage.client.generated import schema_dataset as sd
from openlineage.client.generated import symlinks_dataset as sy
from openlineage.client.generated.base import DatasetFacet

from airflow_provider_lineage import PRODUCER as _PRODUCER
from airflow_provider_lineage.lineage.model import (
    DEFAULT_INDIRECT,
    INDIRECT_PLACEMENTS,
    FieldEdge,
    WriteLineage,
)
from airflow_provider_lineage.lineage.naming import (
    DatasetRef,
    symlink_namespace,
    table_name_without_catalog,
)

#: ``_producer`` of every facet (the package's one producer URI, also the events' ``producer``).
PRODUCER = _PRODUCER
#: Schema type of a field whose type was not captured (a stable value: Marquez keys fields on name + type).
UNKNOWN_TYPE = "unknown"
_DIRECT_RANK = {"IDENTITY": 0, "TRANSFORMATION": 1, "AGGREGATION": 2}

def _edge_key(e: FieldEdge) -> tuple[str, str, str]:
    return (e.dataset.namespace, e.dataset.name, e.field)


class _Out:
    def __init__(self, ref: DatasetRef) -> None:
        self.ref = ref
        self.fields: OrderedDict[str, str] = OrderedDict()
        self.columns: dict[str, set[FieldEdge]] = {}
        self.dataset: set[FieldEdge] = set()
        self.unknown: list[str] = []
        self.lifecycle: str | None = None
        self.udf_columns: dict[str, list[str]] = {}
        self.approximate: dict[str, list[str]] = {}


def _input_fields(edges: set[FieldEdge], description: str | None) -> list[cl.InputField]:
    grouped: OrderedDict[tuple[str, str, str], list[FieldEdge]] = OrderedDict()
    for e in sorted(edges, key=lambda x: (_edge_key(x), x.type, x.subtype, x.masking)):
        grouped.setdefault(_edge_key(e), []).append(e)
    out = []
    for (ns, name, field), es in grouped.items():
        out.append(
            cl.InputField(
                namespace=ns,
                name=name,
                field=field,
                transformations=[
                    cl.Transformation(type=e.type, subtype=e.subtype, description=description or "", masking=e.masking)
                    for e in es
                ],
            )
        )
    return out


def field_summary(edges: set[FieldEdge], approximate: str | None = None) -> tuple[str, str]:
    """The deprecated field-level ``(transformationType, transformationDescription)`` of one output field.

    Type (the spec's ``IDENTITY|MASKED`` vocabulary, extended): ``MASKED`` when a DIRECT input is masked,
    else the strongest DIRECT subtype (``IDENTITY`` < ``TRANSFORMATION`` < ``AGGREGATION``), else
    ``INDIRECT`` (only influences, e.g. ``count(*)`` under a filter). Description: every
    ``type/subtype`` with its input fields, e.g. ``DIRECT/TRANSFORMATION: amount, fx_rate; INDIRECT/FILTER: status``.
    """
    direct = [e for e in edges if e.type == "DIRECT"]
    if any(e.masking for e in direct):
        kind = "MASKED"
    elif direct:
        kind = max((e.subtype for e in direct), key=lambda s: _DIRECT_RANK.get(s, 1))
    else:
        kind = "INDIRECT"
    several = len({e.dataset for e in edges}) > 1
    groups: OrderedDict[str, list[str]] = OrderedDict()
    for e in sorted(edges, key=lambda x: (x.type != "DIRECT", x.type, x.subtype, _edge_key(x))):
        label = f"{e.type}/{e.subtype}" + (" masked" if e.masking else "")
        name = f"{_short(e.dataset)}.{e.field}" if several else e.field
        if name not in groups.setdefault(label, []):
            groups[label].append(name)
    text = "; ".join(f"{label}: {', '.join(names)}" for label, names in groups.items())
    return kind, f"{approximate}; {text}" if approximate else text


def _short(ref: DatasetRef) -> str:
    if ref.table:
        return table_name_without_catalog(ref.table)
    return ref.name.rstrip("/").rsplit("/", 1)[-1] or ref.name


def lifecycle_of(lin: WriteLineage) -> str | None:
    """The ``lifecycleStateChange`` of the write (computed by the engine, see :func:`.engine.lifecycle_for`)."""
    return lin.lifecycle


def _symlinks(ref: DatasetRef) -> sy.SymlinksDatasetFacet | None:
    if not ref.table:
        return None
    return sy.SymlinksDatasetFacet(
        identifiers=[
            sy.Identifier(namespace=symlink_namespace(ref), name=table_name_without_catalog(ref.table), type="TABLE")
        ],
        producer=PRODUCER,
    )


def datasets_for(
    lineages: list[WriteLineage], indirect: str = DEFAULT_INDIRECT
) -> tuple[list[InputDataset], list[OutputDataset]]:
    """Input and output datasets (with facets) for one job run covering ``lineages``.

    :param indirect: where the dataset-wide influences (FILTER, JOIN, GROUP_BY, SORT) go:
        ``"dataset"`` (default): once, in the facet's top-level ``dataset`` list (facet 1-2-0,
        openlineage-spark's ``datasetLineageEnabled=true``); ``"fields"``: into every output field
        (the legacy form, openlineage-spark's default ``datasetLineageEnabled=false``, the only place
        Marquez reads); ``"both"``: both places. Copying into fields costs one edge per (output field x
        influencing input field): 1,200 columns x 6 join/filter keys are 7,200 more entries.
    """
    if indirect not in INDIRECT_PLACEMENTS:
        raise ValueError(f"indirect={indirect!r} is not one of {INDIRECT_PLACEMENTS}")
    ins: OrderedDict[DatasetRef, OrderedDict[str, str]] = OrderedDict()
    tables: dict[DatasetRef, str] = {}
    outs: OrderedDict[DatasetRef, _Out] = OrderedDict()
    for lin in lineages:
        for ref, fields in lin.inputs:
            bucket = ins.setdefault(ref, OrderedDict())
            if ref.table:
                tables.setdefault(ref, ref.table)
            for name, typ in fields:
                bucket.setdefault(name, typ)
        if lin.output is None:
            continue
        o = outs.get(lin.output)
        if o is None:
            o = outs[lin.output] = _Out(lin.output)
        if lin.output.table and not o.ref.table:
            o.ref = lin.output
        for name, typ in lin.output_fields:
            o.fields[name] = typ or o.fields.get(name, "")
        for col, edges in lin.columns.items():
            o.columns.setdefault(col, set()).update(edges)
        if indirect != "fields":
            o.dataset.update(lin.dataset_edges)
        if indirect != "dataset":
            for name, _typ in lin.output_fields:
                o.columns.setdefault(name, set()).update(lin.dataset_edges)
        for u in lin.unknown:
            if u not in o.unknown:
                o.unknown.append(u)
        o.lifecycle = lifecycle_of(lin) or o.lifecycle
        for col, notes in lin.udf_columns.items():
            bucket = o.udf_columns.setdefault(col, [])
            bucket.extend(n for n in notes if n not in bucket)
        for col, reasons in lin.approximate_columns.items():
            bucket = o.approximate.setdefault(col, [])
            bucket.extend(r for r in reasons if r not in bucket)
    # every field an edge names must be in its input dataset's schema
    for o in outs.values():
        for e in [x for es in o.columns.values() for x in es] + list(o.dataset):
            bucket = ins.setdefault(e.dataset, OrderedDict())
            if e.dataset.table:
                tables.setdefault(e.dataset, e.dataset.table)
            bucket.setdefault(e.field, "")
    inputs = []
    for ref, fields in ins.items():
        ref = DatasetRef(ref.namespace, ref.name, tables.get(ref, ref.table))
        facets: dict[str, DatasetFacet] = {
            "schema": sd.SchemaDatasetFacet(
                fields=[sd.SchemaDatasetFacetFields(name=n, type=t or UNKNOWN_TYPE) for n, t in fields.items()],
                producer=PRODUCER,
            )
        }
        sym = _symlinks(ref)
        if sym is not None:
            facets["symlinks"] = sym
        inputs.append(InputDataset(namespace=ref.namespace, name=ref.name, facets=facets))
    outputs = []
    for o in outs.values():
        outputs.append(OutputDataset(namespace=o.ref.namespace, name=o.ref.name, facets=output_facets(o)))
    return inputs, outputs


def _fields_entry(edges: set[FieldEdge], desc: str | None) -> cl.Fields:
    kind, text = field_summary(edges, desc)
    return cl.Fields(inputFields=_input_fields(edges, desc), transformationType=kind, transformationDescription=text)


def _column_description(desc: str | None, udf_notes: list[str] | None, reasons: list[str] | None = None) -> str | None:
    """The approximation remark plus the column's unanalysed UDFs ("conservative: UDF `f` not analysed ..."); a
    column with reasons of its own (``approximate_columns``) starts with ``approximate: <reasons>``."""
    own = [r for r in reasons or [] if r not in (udf_notes or [])]  # an unanalysed UDF keeps its "conservative:"
    if own:
        desc = "approximate: " + "; ".join(own) + (f"; {desc.removeprefix('approximate: ')}" if desc else "")
    if not udf_notes:
        return desc
    text = "conservative: " + "; ".join(udf_notes)
    return f"{desc}; {text}" if desc else text


def output_facets(o: _Out) -> dict[str, DatasetFacet]:
    desc = f"approximate: conservative rule for {', '.join(o.unknown)}" if o.unknown else None
    facets: dict[str, DatasetFacet] = {
        "schema": sd.SchemaDatasetFacet(
            fields=[sd.SchemaDatasetFacetFields(name=n, type=t or UNKNOWN_TYPE) for n, t in o.fields.items()],
            producer=PRODUCER,
        ),
        "columnLineage": cl.ColumnLineageDatasetFacet(
            fields={
                col: _fields_entry(edges, _column_description(desc, o.udf_columns.get(col), o.approximate.get(col)))
                for col, edges in o.columns.items() if edges and col in o.fields
            },
            dataset=_input_fields(o.dataset, desc),
            producer=PRODUCER,
        ),
    }
    sym = _symlinks(o.ref)
    if sym is not None:
        facets["symlinks"] = sym
    if o.lifecycle:
        facets["lifecycleStateChange"] = lc.LifecycleStateChangeDatasetFacet(
            lifecycleStateChange=lc.LifecycleStateChange(o.lifecycle), producer=PRODUCER
        )
    return facets
