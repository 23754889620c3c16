from __future__ import annotations

import itertools

import numpy as np
import pytest

from airflow_provider_lineage.sieve.model import (
    Segmenter,
    budget_for,
    make_segment,
    over_budget,
    segment_pairs,
    sorted_pairs,
)


def test_flat_stretch_is_one_block() -> None:
    pairs = [(k, (1, 2)) for k in range(100)]
    (seg,) = segment_pairs(pairs, error_bound=4, max_segment_keys=1000)
    assert (seg.s_min, seg.s_max, seg.b_count, seg.b_size) == (0, 99, 1, 100)
    assert seg.block_locations(0) == {1: 100, 2: 100}


def test_steep_stretch_gets_a_block_per_change() -> None:
    pairs = [(k, (k % 5,)) for k in range(50)]
    segs = segment_pairs(pairs, error_bound=2, max_segment_keys=1000)
    assert sum(s.b_count for s in segs) == 50
    for s in segs:
        assert s.b_size == 1
        for k in range(s.s_min, s.s_max + 1):
            assert s.block_locations(s.block_of(k)) == {k % 5: 1}


def test_block_size_formula_and_counters() -> None:
    keys = [0, 1, 2, 3, 4, 5, 6, 7]
    locs = [(0,), (0,), (0,), (0,), (1,), (1,), (1,), (1,)]
    seg = make_segment(keys, locs, r_changes=1)  # R changes once -> 2 blocks of width 4
    assert (seg.b_count, seg.b_size) == (2, 4)
    assert seg.block_locations(0) == {0: 4} and seg.block_locations(1) == {1: 4}
    assert budget_for(8, seg.b_count) == 16


def test_size_cap_closes_segments() -> None:
    segs = segment_pairs([(k, (0,)) for k in range(100)], error_bound=4, max_segment_keys=10)
    assert [s.n_keys for s in segs] == [10] * 10
    assert all(a.s_max < b.s_min for a, b in itertools.pairwise(segs))


def test_gap_breaks_flat_segment() -> None:
    pairs = [(k, (0, 1)) for k in range(100)] + [(k, (0, 1)) for k in range(10_000, 10_100)]
    segs = segment_pairs(pairs, error_bound=4, max_segment_keys=1000)
    assert len(segs) == 2 and segs[0].s_max == 99 and segs[1].s_min == 10_000


def test_slope_cone_closes_on_error() -> None:
    # Flat then steep: the slope leaves the cone and a new segment starts.
    pairs = [(k, (0,)) for k in range(50)] + [(50 + k, (k % 3 + 1,)) for k in range(50)]
    segs = segment_pairs(pairs, error_bound=2, max_segment_keys=1000)
    # the cone tolerates e=2 changes past the flat part, then closes
    assert len(segs) >= 2 and 50 <= segs[0].s_max <= 53


def test_keys_must_ascend() -> None:
    seg = Segmenter(2, 10, lambda s: None)
    seg.push(5, (0,))
    with pytest.raises(ValueError, match="ascending"):
        seg.push(5, (0,))


def test_add_counts_new_pairs_and_budget() -> None:
    seg = make_segment([0, 9], [(0,), (0,)], r_changes=0)  # one block of width 10
    assert seg.add_keys(np.array([3, 4]), 7) == 1  # one new (block, fid) pair
    assert seg.block_locations(0) == {0: 2, 7: 2}
    assert seg.add_keys(np.array([5]), 7) == 0  # existing location: counter only
    assert seg.block_locations(0)[7] == 3
    assert not over_budget(0, 0) and over_budget(9, 8) and over_budget(8, 8)


def test_add_pairs_merge_equals_a_sorted_union() -> None:
    """The binary-search merge gives the same triples and new-pair count as sorting everything."""
    rng = np.random.default_rng(7)
    for _ in range(50):
        seg = make_segment(list(range(64)), [tuple(sorted(set(rng.integers(0, 6, 3).tolist()))) for _ in range(64)],
                           r_changes=40)
        before = {(int(b), int(f)): int(c) for b, f, c in zip(seg.blk, seg.fid, seg.cnt)}
        n = int(rng.integers(1, 12))
        blocks = rng.integers(0, seg.b_count, n)
        fids = rng.integers(0, 9, n)
        counts = rng.integers(1, 4, n)
        want = dict(before)
        for b, f, c in zip(blocks.tolist(), fids.tolist(), counts.tolist()):
            want[(b, f)] = want.get((b, f), 0) + c
        assert seg.add_pairs(blocks, fids, counts) == len(set(want) - set(before))
        assert list(zip(seg.blk.tolist(), seg.fid.tolist())) == sorted(want)
        assert seg.cnt.tolist() == [want[k] for k in sorted(want)]


def test_drop_and_decrement() -> None:
    seg = make_segment(list(range(4)), [(0, 1), (0,), (1,), (1, 2)], r_changes=3)
    assert seg.drop_locations([1])
    assert 1 not in seg.locations().tolist()
    assert not seg.drop_locations([42])
    seg.remove_pairs(np.array([seg.block_of(3)]), np.array([2]), np.array([1]))
    assert 2 not in seg.locations().tolist()


def test_fids_for_range_clips() -> None:
    seg = make_segment(list(range(10)), [(k,) for k in range(10)], r_changes=9)
    assert seg.fids_for_range(3, 5).tolist() == [3, 4, 5]
    assert seg.fids_for_range(-5, 0).tolist() == [0]
    assert seg.fids_for_range(20, 30).tolist() == []


def test_holes_make_absent_keys_answer_no_file() -> None:
    # Two files of sparse codes: one segment at e=0 would answer a block for every absent key.
    keys = [10, 500, 503, 9000]
    seg = make_segment(keys, [(0,), (1,), (1,), (0, 1)], r_changes=2)
    assert seg.fids_for_range(11, 11).tolist() == [] and seg.fids_for_range(501, 502).tolist() == []
    assert seg.fids_for_range(504, 8999).tolist() == [] and seg.fids_for_range(9000, 9000).tolist() == [0, 1]
    assert 1 in seg.fids_for_range(503, 503).tolist() and 0 in seg.fids_for_range(0, 10).tolist()
    assert seg.fids_for_range(11, 499).tolist() == []
    # A key added inside a hole splits it (no false negative), its neighbours stay absent.
    seg.add_keys(np.array([700]), 2)
    assert 2 in seg.fids_for_range(700, 700).tolist()
    assert 2 not in seg.fids_for_range(699, 699).tolist() and 2 not in seg.fids_for_range(701, 701).tolist()
    assert seg.fids_for_range(701, 8999).tolist() == []


def test_holes_are_capped_longest_first() -> None:
    from airflow_provider_lineage.sieve.model import holes_of

    at, ln = holes_of([0, 2, 100, 103, 104], keys_per_hole=2)  # gaps 1, 97, 2 -> keep the 2 longest
    assert at.tolist() == [3, 101] and ln.tolist() == [97, 2]
    assert [x.tolist() for x in holes_of([5])] == [[], []]


def _segments(pairs, error_bound, max_keys, gap_factor, batches=None):
    out = []
    seg = Segmenter(error_bound, max_keys, out.append, gap_factor)
    if batches is None:
        for k, locs in pairs:
            seg.push(k, locs)
    else:
        i = 0
        for size in batches:
            chunk = pairs[i:i + size]
            i += size
            if not chunk:
                continue
            if size == 1:  # mix in the per-key path
                seg.push(*chunk[0])
                continue
            keys = np.asarray([k for k, _ in chunk], np.int64)
            lens = np.asarray([len(x) for _, x in chunk], np.int64)
            fids = np.asarray([f for _, x in chunk for f in x], np.int64)
            seg.push_many(keys, lens, fids)
    seg.finish()
    return out, seg.keys_seen


@pytest.mark.parametrize("error_bound", [0, 1, 4])
def test_push_many_segments_exactly_like_push(error_bound: int) -> None:
    """The vectorised batch path gives the same segments as pushing key by key, whatever the batch
    boundaries (including single keys in between), for runs, noise, gaps and the key limit."""
    rng = np.random.default_rng(error_bound)
    for trial in range(30):
        n = int(rng.integers(1, 900))
        keys = np.unique(rng.integers(0, 40 * n, n) if trial % 3 else np.arange(n) * int(rng.integers(1, 4)))
        if trial % 5 == 0 and len(keys) > 10:
            keys[len(keys) // 2:] += 10_000_000  # one huge gap
        pairs, cur = [], (0,)
        for k in keys.tolist():
            if rng.random() < (0.5 if trial % 2 else 0.05):
                cur = tuple(sorted(set(rng.integers(0, 8, int(rng.integers(1, 4))).tolist())))
            pairs.append((k, cur))
        max_keys = int(rng.integers(2, 300))
        want, n_want = _segments(pairs, error_bound, max_keys, 64.0)
        cuts = rng.integers(1, 120, 40).tolist()
        got, n_got = _segments(pairs, error_bound, max_keys, 64.0, cuts + [len(pairs)])
        assert n_got == n_want == len(pairs)
        assert len(got) == len(want), trial
        for a, b in zip(got, want):
            assert (a.s_min, a.s_max, a.b_size, a.b_count, a.n_keys) == (
                b.s_min,
                b.s_max,
                b.b_size,
                b.b_count,
                b.n_keys,
            )
            for f in ("blk", "fid", "cnt", "hole_at", "hole_len"):
                assert np.array_equal(getattr(a, f), getattr(b, f)), (trial, f)


@pytest.mark.parametrize("span", [1000, 1 << 40])  # one-code sort; lexsort for wide keys
def test_sorted_pairs_is_a_lexsort_without_repeats(span: int) -> None:
    rng = np.random.default_rng(span)
    keys = rng.integers(-span, span, 5000)
    fids = rng.integers(0, 300, 5000)
    keys, fids = np.concatenate([keys, keys[:700]]), np.concatenate([fids, fids[:700]])  # repeats
    got_k, got_f = sorted_pairs(keys, fids)
    want = sorted(set(zip(keys.tolist(), fids.tolist())))
    assert list(zip(got_k.tolist(), got_f.tolist())) == want
    assert got_k.dtype == np.int64 and got_f.dtype == np.int64
