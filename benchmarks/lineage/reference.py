"""Hand-labelled reference lineage: the vocabulary the scenarios are written in.

Conventions (they agree with the OpenLineage column-lineage facet spec):

* An input column is written ``"dataset.column"``; ``dataset`` is the last segment of the dataset's
  path or table name (``transactions``, ``c3_mart``).
* DIRECT edges are labelled per output column with a subtype: IDENTITY (value taken as is),
  TRANSFORMATION (value computed from the input on the same row), AGGREGATION (computed from
  several rows). ``masked=True`` for hashes and counts.
* INDIRECT edges (JOIN, FILTER, GROUP_BY, SORT, WINDOW, CONDITIONAL) are dataset-wide influences:
  a set of ``(input column, subtype)`` pairs per output dataset, whether an engine attaches them to
  fields or to the dataset.
* Labels follow the SEMANTICS of the query, not what a given engine prints.
"""
from __future__ import annotations

from dataclasses import dataclass, field

DIRECT_SUBTYPES = ("IDENTITY", "TRANSFORMATION", "AGGREGATION")
INDIRECT_SUBTYPES = ("JOIN", "FILTER", "GROUP_BY", "SORT", "WINDOW", "CONDITIONAL")


@dataclass(frozen=True)
class Direct:
    """One DIRECT input of an output column."""

    input: str
    subtype: str
    masked: bool = False

    def __post_init__(self) -> None:
        if self.subtype not in DIRECT_SUBTYPES:
            raise ValueError(f"DIRECT subtype {self.subtype!r} is not one of {DIRECT_SUBTYPES}")
        if "." not in self.input:
            raise ValueError(f"input {self.input!r} must be written 'dataset.column'")


def I(col: str, masked: bool = False) -> Direct:
    """DIRECT IDENTITY."""
    return Direct(col, "IDENTITY", masked)


def T(col: str, masked: bool = False) -> Direct:
    """DIRECT TRANSFORMATION."""
    return Direct(col, "TRANSFORMATION", masked)


def A(col: str, masked: bool = False) -> Direct:
    """DIRECT AGGREGATION."""
    return Direct(col, "AGGREGATION", masked)


@dataclass
class Expect:
    """Reference lineage of one output dataset.

    :param output: dataset name (last path segment or table name).
    :param direct: ``{output column: [Direct, ...]}``; list every output column, even with no inputs.
    :param indirect: ``{subtype: [input column, ...]}``, dataset-wide.
    """

    output: str
    direct: dict[str, list[Direct]]
    indirect: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for sub, cols in self.indirect.items():
            if sub not in INDIRECT_SUBTYPES:
                raise ValueError(f"INDIRECT subtype {sub!r} is not one of {INDIRECT_SUBTYPES}")
            for c in cols:
                if "." not in c:
                    raise ValueError(f"indirect input {c!r} must be written 'dataset.column'")

    def direct_edges(self) -> dict[tuple[str, str], set[tuple[str, bool]]]:
        """``{(input, output.column): {(subtype, masked)}}``."""
        out: dict[tuple[str, str], set[tuple[str, bool]]] = {}
        for col, edges in self.direct.items():
            for e in edges:
                out.setdefault((e.input, f"{self.output}.{col}"), set()).add((e.subtype, e.masked))
        return out

    def indirect_edges(self) -> dict[tuple[str, str], set[str]]:
        """``{(input, output dataset): {subtype}}``."""
        out: dict[tuple[str, str], set[str]] = {}
        for sub, cols in self.indirect.items():
            for c in cols:
                out.setdefault((c, self.output), set()).add(sub)
        return out


def cols(dataset: str, *names: str) -> list[str]:
    """``cols("t", "a", "b") -> ["t.a", "t.b"]``."""
    return [f"{dataset}.{n}" for n in names]


def identity(dataset: str, *names: str) -> dict[str, list[Direct]]:
    """Output columns copied unchanged from ``dataset`` under the same names."""
    return {n: [I(f"{dataset}.{n}")] for n in names}
