"""Where closed segments go: written to the index's open pack, their segment-list entries kept.

:class:`ColumnSink` is a build's (entries kept as columns: no per-segment Python objects),
:class:`SegmentSink` a sync's and a compaction's (a :class:`~.storage.SegmentMeta` each).
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .model import Segment, budget_for
from .storage import META_INTS, IndexStore, SegmentList, SegmentMeta


@dataclass
class SegmentSink:
    """Receives closed segments, writes each to its own file and keeps only its list entry."""

    store: IndexStore
    error_bound: int
    metas: list[SegmentMeta] = field(default_factory=list)

    def __call__(self, seg: Segment) -> None:
        self.metas.append(meta_for(self.store, seg, self.error_bound))


class ColumnSink:
    """A build's sink: writes each closed segment to the open pack and keeps its list entry as
    columns (machine integers and one shared pack name; the location sets concatenated), not as
    a :class:`SegmentMeta` each, so a build over hundreds of thousands of segments holds no
    per-segment Python objects but its two key bounds."""

    def __init__(self, store: IndexStore, error_bound: int) -> None:
        self.store, self.error_bound = store, error_bound
        self.clear()

    def clear(self) -> None:
        self.s_min: list[Any] = []
        self.s_max: list[Any] = []
        self.ints: list[Any] = [array("q") for _ in META_INTS]
        self.names: list[str] = []
        self.locs = array("I")
        self.bounds = array("q", [0])

    def __len__(self) -> int:
        return len(self.s_min)

    def __call__(self, seg: Segment) -> None:
        meta = meta_for(self.store, seg, self.error_bound)  # dropped once stored as columns
        self.s_min.append(meta.s_min)
        self.s_max.append(meta.s_max)
        for k, get in enumerate(META_INTS):
            try:
                self.ints[k].append(get(meta))
            except OverflowError:  # a block over the whole 64-bit key space (string keys)
                self.ints[k] = [*self.ints[k], get(meta)]
        self.names.append(meta.file.name)
        self.locs.frombytes(meta.locations.astype(np.uint32).tobytes())
        self.bounds.append(len(self.locs))

    def segment_list(self) -> SegmentList:
        """The entries sorted by key range (Arrow batches arrive in no particular order)."""
        locs = np.frombuffer(self.locs, np.uint32) if len(self.locs) else np.empty(0, np.uint32)
        columns = SegmentList(self.s_min, self.s_max, self.ints, self.names, locs, np.frombuffer(self.bounds, np.int64))
        return columns.select(sorted(range(len(self.s_min)), key=self.s_min.__getitem__))


def meta_for(store: IndexStore, seg: Segment, error_bound: int, used: int = 0) -> SegmentMeta:
    """Write a segment to the open pack and return its segment-list entry (``used``: its spent budget)."""
    ref = store.write_segment(seg)
    return SegmentMeta(seg.s_min, seg.s_max, seg.b_size, seg.b_count, budget_for(error_bound, seg.b_count),
                       used, seg.n_keys, ref, seg.locations())

