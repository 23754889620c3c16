"""The engine's leaves it cannot see into: driver round trips, RDD round trips, checkpoints, Python data sources.

A mixin of :class:`~.engine.Analysis` (kept apart for size): each method binds a leaf's attributes to every
column their values can come from, and marks the vertices with the reason (lineage/approximate.py; docs/engine.md,
"What the capture cannot see, and what it does then").
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_lineage.lineage.approximate import (
    CHECKPOINT,
    PYTHON_DATA_SOURCE,
    RDD_ROUND_TRIP,
    DriverFlow,
    Marks,
    checkpoint_ref,
    checkpoint_trans,
)
from airflow_provider_lineage.lineage.graph import INDIRECT, TRANSFORMATION, ColumnGraph, Vertex
from airflow_provider_lineage.lineage.model import UNKNOWN_INPUT
from airflow_provider_lineage.lineage.naming import DatasetRef
from airflow_provider_lineage.lineage.record import CaptureRecord, RelationInfo
from airflow_provider_lineage.lineage.sources import relation_sources
from airflow_provider_lineage.lineage.udf.analysis import ArgFlow

if TYPE_CHECKING:
    from airflow_provider_lineage.lineage.rules import Attr


class UnseenInputs:
    """Leaves whose values the plan cannot trace (a mixin: the attributes are :class:`~.engine.Analysis`'s)."""

    record: CaptureRecord
    graph: ColumnGraph
    marks: Marks
    driver: DriverFlow
    inputs: dict[DatasetRef, dict[str, str]]
    notes: list[str]
    scope: Vertex

    def note_unknown(self, what: str) -> None:  # pragma: no cover - Analysis's
        raise NotImplementedError

    def driver_vertex(self) -> Vertex:
        """The vertex of every column returned to the driver before this write (its datasets become inputs)."""
        v = self.driver.vertex(self.graph, self.marks)
        for ds, fields in self.driver.inputs().items():
            known = self.inputs.setdefault(ds, {})
            for f, t in fields.items():
                known.setdefault(f, t)
        return v

    def driver_local(self, out: list[Attr]) -> None:
        """Driver-local data (rows, a pandas frame, an RDD function's closure): after a driver round trip, every
        column may hold what was returned."""
        if not self.driver.active:
            return
        v = self.driver_vertex()
        for a in out:
            self.graph.add(a.id, v, TRANSFORMATION)

    def _all_to_all(self, key: str, out: list[Attr], datasets: list[DatasetRef], columns: list[tuple[str, str]],
                    reason: str) -> None:
        """Every attribute of ``out`` <- every ``columns`` field of every dataset (DIRECT), marked with ``reason``."""
        v: Vertex = f"{key}:{out[0].id if out else 0}"
        for ds in datasets:
            fields = self.inputs.setdefault(ds, {})
            for name, typ in columns:
                fields.setdefault(name, typ)
                self.graph.add_source(v, ds, name)
        self.marks.add(v, reason)
        for a in out:
            self.graph.add(a.id, v, TRANSFORMATION)

    def _rdd_leaf(self, rel: RelationInfo, out: list[Attr]) -> bool:
        """An RDD leaf: a checkpoint, driver-local data or an RDD round trip; never bound by column name."""
        env = self.record.environment
        if (rel.options or {}).get("checkpoint") == "true" or rel.origin == "checkpoint":
            self._checkpoint(out)
            return True
        if rel.origin == "local":
            self.driver_local(out)
            return True
        if "url" in {k.lower() for k in (rel.options or {})}:
            return False
        datasets = relation_sources(rel, env).datasets if rel.locations else []
        where = ", ".join(ds.name for ds in datasets[:3]) or "no file or table"
        if datasets and rel.read_columns:
            types = {c.get("name", ""): c.get("type", "") for c in rel.columns}
            if len(datasets) == 1 and self._rdd_function(rel, out, datasets[0], types):
                self.driver_local(out)  # the function may read values returned to the driver
                return True
            self._all_to_all("rdd", out, datasets, [(c, types.get(c, "")) for c in rel.read_columns],
                             f"{RDD_ROUND_TRIP}: the values went through functions Spark cannot see into "
                             f"(df.rdd / toJSON / mapPartitions over {where}); every output column is given "
                             f"every column read ({len(rel.read_columns)})")
        else:
            for ds in datasets:
                self.inputs.setdefault(ds, {})
            note = (f"{rel.node_class}: an RDD the driver could not trace to files or tables" if not datasets else
                    f"{rel.node_class}: an RDD over {where} whose columns read are not known")
            if note not in self.notes:
                self.notes.append(note + " (unknown input)")
            for a in out:
                self.marks.add(a.id, f"{UNKNOWN_INPUT}: {RDD_ROUND_TRIP}: {note}")
        self.driver_local(out)  # the RDD's functions may read values returned to the driver
        return True

    def _rdd_function(self, rel: RelationInfo, out: list[Attr], ds: DatasetRef, types: dict[str, str]) -> bool:
        """An RDD round trip through one function the driver analysed (``df.rdd.map(f).toDF(...)``,
        :mod:`airflow_provider_lineage.capture.rdds`): each output column from the source columns the function
        reads for it, with the flow's transformation types. Only when every column the file scans read is a column
        of the Rows (nothing read by a filter or join before ``.rdd`` is left out); ``False``: the caller's rule."""
        ids = {a.id for a in out}
        entry = next((e for e in self.record.rdd_functions if ids <= {int(i) for i in e.get("expr_ids") or []}), None)
        if entry is None or not set(rel.read_columns) <= set(entry.get("fields") or []):
            return False
        columns = entry.get("columns") or {}
        if any(a.name not in columns for a in out):
            return False
        fields = self.inputs.setdefault(ds, {})
        for a in out:
            for name, raw in columns[a.name].items():
                v: Vertex = f"rddfn:{a.id}:{name}"
                fields.setdefault(name, types.get(name, ""))
                self.graph.add_source(v, ds, name)
                for step in ArgFlow(**raw).steps():
                    self.graph.add(a.id, v, step)
            for why in entry.get("widened") or []:
                self.marks.add(a.id, f"RDD function `{entry.get('function', '?')}` widened: {why}")
        return True

    def _checkpoint(self, out: list[Attr]) -> None:
        """``checkpoint()``/``localCheckpoint()``: the checkpointed plan's lineage, which the capture analysed when
        the checkpoint ran (its columns keep their exprIds), else an unknown input."""
        untraced = [a for a in out if a.id not in self.driver.checkpoints]
        for a in out:
            for i, edge in enumerate(self.driver.checkpoints.get(a.id, [])):
                ds, name = checkpoint_ref(edge)
                trans = checkpoint_trans(edge)
                v: Vertex = f"ckpt:{a.id}:{i}"
                self.graph.add_source(v, ds, name)
                self.inputs.setdefault(ds, {}).setdefault(name, "")
                if trans.type == INDIRECT and trans.subtype not in ("CONDITIONAL", "WINDOW"):
                    self.graph.add(self.scope, v, trans)  # the checkpointed plan's filters/joins: every row
                else:
                    self.graph.add(a.id, v, trans)
        if untraced:
            self.note_unknown(
                "LogicalRDD from checkpoint()/localCheckpoint(): the plan before the checkpoint is not "
                "part of this write's plan and the capture did not see it run; lineage stops there"
            )
            for a in untraced:
                self.marks.add(a.id, f"{UNKNOWN_INPUT}: {CHECKPOINT}: the checkpointed plan was not seen by the "
                                     "capture (a lazy checkpoint(eager=False), or one made before the capture started)")

    def _python_data_source(self, rel: RelationInfo, out: list[Attr]) -> None:
        """A Python data source (``pyspark.sql.datasource``): the dataset its ``path`` option names, every column
        from every column (its reader is Python code Spark cannot see into), else an unknown input."""
        datasets = relation_sources(rel, self.record.environment).datasets if rel.locations else []
        name = (rel.format or "python").removeprefix("python:")
        if datasets:
            self._all_to_all("pyds", out, datasets, [(c.get("name", ""), c.get("type", "")) for c in rel.columns],
                             f"{PYTHON_DATA_SOURCE} `{name}` reads {datasets[0].name} in Python code: every "
                             "output column is given every column of the source")
        else:
            for a in out:
                self.marks.add(a.id, f"{UNKNOWN_INPUT}: {PYTHON_DATA_SOURCE} `{name}` has no `path` option naming "
                                     "what it reads")
        self.driver_local(out)  # its reader may use values returned to the driver

