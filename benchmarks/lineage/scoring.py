"""Compare an engine's lineage with the hand-labelled reference.

Edge keys:

* DIRECT: ``(input dataset.column, output dataset.column)``; precision/recall on the keys, subtype
  and masking agreement reported separately over the keys both sides have.
* INDIRECT: ``(input dataset.column, output dataset)``; the engine's per-field INDIRECT edges and its
  dataset-wide ``dataset_edges`` are unioned (dataset-wide influence, OpenLineage's top-level
  ``dataset`` list). Precision/recall on the keys, subtype-set agreement separately.

The scorer reads the engine's result only through attributes (``output``, ``columns``,
``dataset_edges``, ``approximate``), so it can score anything shaped like ``WriteLineage``;
:func:`facet_edges` scores an emitted ``columnLineage`` facet instead (any INDIRECT placement).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.lineage.reference import Expect

DirectMap = dict[tuple[str, str], set[tuple[str, bool]]]
IndirectMap = dict[tuple[str, str], set[str]]


def dataset_key(ref: Any) -> str:
    """Short, stable name of a dataset: the table name when known, else the path's last segment."""
    if ref is None:
        return "<none>"
    table = getattr(ref, "table", None)
    if table:
        return str(table).replace("`", "").split(".")[-1].lower()
    name = str(getattr(ref, "name", ref) or "")
    name = name.rstrip("/")
    return (name.rsplit("/", 1)[-1] or name).lower()


@dataclass
class EngineEdges:
    """An engine's lineage of one output, in the scorer's key space."""

    output: str
    direct: DirectMap = field(default_factory=dict)
    indirect: IndirectMap = field(default_factory=dict)
    approximate: bool = False


def engine_edges(lin: Any, output_name: str | None = None) -> EngineEdges:
    """Flatten a ``WriteLineage`` into DIRECT and INDIRECT edge maps."""
    out = output_name or dataset_key(getattr(lin, "output", None))
    res = EngineEdges(output=out, approximate=bool(getattr(lin, "approximate", False)))
    for col, edges in (getattr(lin, "columns", None) or {}).items():
        for e in edges:
            inp = f"{dataset_key(e.dataset)}.{e.field}"
            if str(e.type).upper() == "DIRECT":
                res.direct.setdefault((inp, f"{out}.{col}"), set()).add((str(e.subtype).upper(), bool(e.masking)))
            else:
                res.indirect.setdefault((inp, out), set()).add(str(e.subtype).upper())
    for e in getattr(lin, "dataset_edges", None) or []:
        inp = f"{dataset_key(e.dataset)}.{e.field}"
        res.indirect.setdefault((inp, out), set()).add(str(e.subtype).upper())
    return res


def facet_edges(output: dict[str, Any], output_name: str | None = None) -> EngineEdges:
    """Flatten an emitted OpenLineage output dataset (JSON) into the same maps, whatever the INDIRECT placement.

    DIRECT transformations under ``fields`` are DIRECT edges; INDIRECT ones under ``fields`` and every
    entry of the top-level ``dataset`` list are ``(input column, output dataset)`` INDIRECT edges, so the
    ``"both"``, ``"fields"`` and ``"dataset"`` placements of
    :func:`~airflow_provider_lineage.lineage.facets.datasets_for`
    score the same. Datasets are named by the last segment of their name (the facet's inputs carry no table).
    """
    def key(ns_name: dict[str, Any]) -> str:
        return dataset_key(_Named(str(ns_name.get("name", ""))))

    out = output_name or key(output)
    facet = (output.get("facets") or {}).get("columnLineage") or {}
    res = EngineEdges(output=out, approximate=any(
        str(t.get("description", "")).startswith("approximate:")
        for spec in (facet.get("fields") or {}).values() for i in spec.get("inputFields") or []
        for t in i.get("transformations") or []))
    for col, spec in (facet.get("fields") or {}).items():
        for i in spec.get("inputFields") or []:
            inp = f"{key(i)}.{i['field']}"
            for t in i.get("transformations") or []:
                if str(t.get("type")).upper() == "DIRECT":
                    res.direct.setdefault((inp, f"{out}.{col}"), set()).add(
                        (str(t.get("subtype")).upper(), bool(t.get("masking"))))
                else:
                    res.indirect.setdefault((inp, out), set()).add(str(t.get("subtype")).upper())
    for i in facet.get("dataset") or []:
        for t in i.get("transformations") or []:
            res.indirect.setdefault((f"{key(i)}.{i['field']}", out), set()).add(str(t.get("subtype")).upper())
    return res


@dataclass
class _Named:
    name: str
    table: str | None = None


def expect_edges(exp: Expect) -> EngineEdges:
    """The reference in the same shape (used by the scorer's self-test)."""
    return EngineEdges(output=exp.output, direct=exp.direct_edges(), indirect=exp.indirect_edges())


@dataclass
class PR:
    """Counts for one edge kind; ``subtype_ok``/``masking_ok`` count over true positives."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    subtype_ok: int = 0
    masking_ok: int = 0
    misses: list[str] = field(default_factory=list)  # human-readable, for the report

    @property
    def precision(self) -> float:
        return 1.0 if self.tp + self.fp == 0 else self.tp / (self.tp + self.fp)

    @property
    def recall(self) -> float:
        return 1.0 if self.tp + self.fn == 0 else self.tp / (self.tp + self.fn)

    @property
    def subtype_agreement(self) -> float:
        return 1.0 if self.tp == 0 else self.subtype_ok / self.tp

    @property
    def masking_agreement(self) -> float:
        return 1.0 if self.tp == 0 else self.masking_ok / self.tp

    def add(self, other: PR) -> None:
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn
        self.subtype_ok += other.subtype_ok
        self.masking_ok += other.masking_ok


@dataclass
class Score:
    """Score of one scenario."""

    direct: PR = field(default_factory=PR)
    indirect: PR = field(default_factory=PR)
    problems: list[str] = field(default_factory=list)  # missing outputs, engine errors ...
    approximate: bool = False

    @property
    def perfect(self) -> bool:
        d, i = self.direct, self.indirect
        return (d.fp, d.fn, i.fp, i.fn) == (0, 0, 0, 0) and not self.problems

    def add(self, other: Score) -> None:
        self.direct.add(other.direct)
        self.indirect.add(other.indirect)


def _fmt_direct(subs: set[tuple[str, bool]]) -> str:
    return "/".join(sorted(f"{s}{'+masked' if m else ''}" for s, m in subs))


def score_direct(ref: DirectMap, got: DirectMap) -> PR:
    pr = PR()
    for key in sorted(set(ref) | set(got)):
        inp, out = key
        if key in ref and key in got:
            pr.tp += 1
            r_sub = {s for s, _ in ref[key]}
            g_sub = {s for s, _ in got[key]}
            if r_sub == g_sub:
                pr.subtype_ok += 1
            else:
                pr.misses.append(
                    f"subtype {inp} -> {out}: expected {'/'.join(sorted(r_sub))}, got {'/'.join(sorted(g_sub))}"
                )
            if any(m for _, m in ref[key]) == any(m for _, m in got[key]):
                pr.masking_ok += 1
            else:
                pr.misses.append(
                    f"masking {inp} -> {out}: expected {_fmt_direct(ref[key])}, got {_fmt_direct(got[key])}"
                )
        elif key in got:
            pr.fp += 1
            pr.misses.append(f"extra DIRECT {inp} -> {out} ({_fmt_direct(got[key])})")
        else:
            pr.fn += 1
            pr.misses.append(f"missing DIRECT {inp} -> {out} ({_fmt_direct(ref[key])})")
    return pr


def score_indirect(ref: IndirectMap, got: IndirectMap) -> PR:
    pr = PR()
    for key in sorted(set(ref) | set(got)):
        inp, out = key
        if key in ref and key in got:
            pr.tp += 1
            pr.masking_ok += 1
            if ref[key] == got[key]:
                pr.subtype_ok += 1
            else:
                pr.misses.append(
                    f"subtype {inp} ~> {out}: expected {'/'.join(sorted(ref[key]))}, got {'/'.join(sorted(got[key]))}"
                )
        elif key in got:
            pr.fp += 1
            pr.misses.append(f"extra INDIRECT {inp} ~> {out} ({'/'.join(sorted(got[key]))})")
        else:
            pr.fn += 1
            pr.misses.append(f"missing INDIRECT {inp} ~> {out} ({'/'.join(sorted(ref[key]))})")
    return pr


def score_outputs(expects: Iterable[Expect], results: Iterable[EngineEdges]) -> Score:
    """Score every expected output against the engine's result for the same dataset.

    When exactly one output is expected and the engine produced exactly one under another name, they
    are compared anyway (the name mismatch is recorded as a problem), so a naming difference does not
    hide the column lineage.
    """
    expects = list(expects)
    results = list(results)
    by_name: dict[str, EngineEdges] = {}
    for r in results:
        if r.output in by_name:  # several writes to one dataset: merge them
            prev = by_name[r.output]
            for k, v in r.direct.items():
                prev.direct.setdefault(k, set()).update(v)
            for k, v in r.indirect.items():
                prev.indirect.setdefault(k, set()).update(v)
        else:
            by_name[r.output] = r
    score = Score()
    if len(expects) == 1 and expects[0].output == "*" and len(by_name) == 1:
        by_name = {"*": _rename(next(iter(by_name.values())), "*")}
    elif len(expects) == 1 and len(by_name) == 1 and expects[0].output not in by_name:
        only = next(iter(by_name.values()))
        score.problems.append(f"output named {only.output!r}, expected {expects[0].output!r}")
        by_name = {expects[0].output: _rename(only, expects[0].output)}
    for exp in expects:
        got = by_name.pop(exp.output, None)
        if got is None:
            score.problems.append(f"no lineage for output {exp.output!r}")
            got = EngineEdges(output=exp.output)
        score.approximate = score.approximate or got.approximate
        ref = expect_edges(exp)
        d = score_direct(ref.direct, got.direct)
        i = score_indirect(ref.indirect, got.indirect)
        score.direct.add(d)
        score.indirect.add(i)
        score.direct.misses += d.misses
        score.indirect.misses += i.misses
    for name, extra in by_name.items():
        d = score_direct({}, extra.direct)
        i = score_indirect({}, extra.indirect)
        score.problems.append(f"unexpected output {name!r}")
        score.direct.add(d)
        score.indirect.add(i)
        score.direct.misses += d.misses
        score.indirect.misses += i.misses
    return score


def _rename(e: EngineEdges, name: str) -> EngineEdges:
    old = e.output
    return EngineEdges(
        output=name,
        direct={(i, name + o[len(old):] if o.startswith(old + ".") else o): v for (i, o), v in e.direct.items()},
        indirect={(i, name): v for (i, _), v in e.indirect.items()},
        approximate=e.approximate,
    )
