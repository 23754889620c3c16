"""Where closed segments go (sieve.sinks): a build's columnar entries and a sync's objects agree."""
from __future__ import annotations

from airflow_provider_lineage.sieve.sinks import ColumnSink, SegmentSink
from airflow_provider_lineage.sieve.storage import IndexStore


def test_column_sink_keeps_the_entries_a_segment_sink_would(tmp_path) -> None:
    """The build's columnar list gives the entries SegmentSink's objects give, sorted by key range,
    also for a block over the whole 64-bit key space and for segments arriving out of order."""
    import numpy as np

    from airflow_provider_lineage.sieve.model import make_segment

    segs = [make_segment([5, 6, 9], [(0, 2), (0, 2), (1,)], 1),
            make_segment([0, (1 << 64) - 1], [(3,), (3,)], 0),  # one block of 2**64 keys
            make_segment([100], [(4, 7, 9)], 0)]
    cols = ColumnSink(IndexStore(str(tmp_path / "c")), 8)
    objs = SegmentSink(IndexStore(str(tmp_path / "o")), 8)
    for seg in (segs[2], segs[0]):
        cols(seg)
        objs(seg)
    assert cols.segment_list().s_min == [5, 100]  # sorted
    cols(segs[1])
    objs(segs[1])
    got, want = list(cols.segment_list()), sorted(objs.metas, key=lambda m: m.s_min)
    assert [m.b_size for m in got] == [1 << 64, 3, 1]
    for a, b in zip(got, want, strict=True):
        assert (a.s_min, a.s_max, a.b_size, a.b_count, a.budget, a.used, a.n_keys) == \
            (b.s_min, b.s_max, b.b_size, b.b_count, b.budget, b.used, b.n_keys)
        assert (a.file.crc32, a.file.bytes) == (b.file.crc32, b.file.bytes)
        assert a.locations.dtype == np.uint32 and a.locations.tolist() == b.locations.tolist()
    store = IndexStore(str(tmp_path / "w"))
    back = IndexStore(store.path).read_segment_list(store.write_segment_list(cols.segment_list()))
    assert [(m.s_min, m.b_size, m.locations.tolist()) for m in back] == \
        [(m.s_min, m.b_size, m.locations.tolist()) for m in got]
