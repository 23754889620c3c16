"""int64 keys spread over the whole 64-bit range: no offset may wrap around (pyarrow only, seconds).

``key - s_min`` of two int64 keys needs 65 bits once the span reaches 2**63: such offsets are taken
in uint64 and a segment of int64 keys spans less than ``MAX_SEGMENT_SPAN`` keys, so every block,
hole and lookup is exact. Every lookup must hold each file of its exact answer (no false negative).
"""
from __future__ import annotations

import numpy as np
import pytest

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve.build_spark import FileHashes, _segment_run
from airflow_provider_lineage.sieve.model import (
    INT64_MAX,
    INT64_MIN,
    MAX_SEGMENT_SPAN,
    Segment,
    Segmenter,
    block_span,
    blocks_of_keys,
    key_offsets,
    make_segment_csr,
    segment_pairs,
)

from .helpers import write_file

EXTREMES = [INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX]


def _full_range_keys(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(INT64_MIN, INT64_MAX, n)


def test_offsets_and_blocks_are_exact_over_the_whole_range() -> None:
    keys = np.sort(np.unique(np.concatenate([_full_range_keys(2000), EXTREMES])))
    s_min = int(keys[0])
    assert s_min == INT64_MIN
    assert key_offsets(keys, s_min).tolist() == [int(k) - s_min for k in keys.tolist()]
    for b_size in (3, (1 << 32) + 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1, 1 << 64, 1 << 70):
        want = [(int(k) - s_min) // b_size for k in keys.tolist()]
        assert blocks_of_keys(keys, s_min, b_size).tolist() == want
        assert blocks_of_keys(keys.astype(object), s_min, b_size).tolist() == want


@pytest.mark.parametrize("r_changes", [0, 1, 2, 5, 100])
def test_make_segment_over_the_whole_range_has_exact_blocks(r_changes: int) -> None:
    keys = np.sort(np.unique(np.concatenate([_full_range_keys(500), EXTREMES])))
    fids = (np.arange(len(keys)) * 3 // len(keys)).astype(np.int64)  # three files, thirds of the range
    seg = make_segment_csr(keys, np.ones(len(keys), np.int64), fids, r_changes)
    for k, f in zip(keys.tolist(), fids.tolist()):
        assert seg.block_of(k) == (k - INT64_MIN) // seg.b_size
        assert f in seg.fids_for_range(k, k).tolist()


def test_segments_of_int64_keys_never_span_max_segment_span() -> None:
    keys = np.sort(np.unique(np.concatenate([_full_range_keys(3000), EXTREMES])))
    fids = (np.arange(len(keys)) * 3 // len(keys)).astype(np.int64)
    many: list[Segment] = []
    seg = Segmenter(50, 1 << 20, many.append)  # a large error bound: blocks would be wide
    seg.push_pairs(keys, fids)
    seg.finish()
    one_by_one = segment_pairs(zip(keys.tolist(), ((f,) for f in fids.tolist())), error_bound=50,
                               max_segment_keys=1 << 20)
    assert [(s.s_min, s.s_max, s.b_size) for s in many] == [(s.s_min, s.s_max, s.b_size) for s in one_by_one]
    assert all(s.s_max - s.s_min < MAX_SEGMENT_SPAN for s in many)
    assert sum(s.n_keys for s in many) == len(keys)
    for s in many:
        inside = (keys >= s.s_min) & (keys <= s.s_max)
        for k, f in zip(keys[inside].tolist(), fids[inside].tolist()):
            assert f in s.fids_for_range(k, k).tolist()


def test_a_segment_written_with_wrapped_offsets_answers_all_its_blocks() -> None:
    # What a build before the span rule wrote: one segment over the whole range, blocks from wrapped
    # int64 offsets (here: only block 0 holds anything). Its blocks are in doubt: every file answers.
    seg = Segment(INT64_MIN, INT64_MAX, 1 << 62, 4, np.asarray([0, 0], np.uint32), np.asarray([0, 1], np.uint32),
                  np.asarray([1, 1], np.uint32), 2)
    assert block_span(seg, 5, 5) == (0, 3)
    assert sorted(seg.fids_for_range(INT64_MAX, INT64_MAX).tolist()) == [0, 1]
    assert block_span(seg, INT64_MAX + 1, INT64_MAX + 5) is None  # outside the segment: still nothing


def test_spark_runs_reach_the_segmenter_without_wrapping() -> None:
    # The Spark engine sends (key, file hash) runs to the driver's segmenter (no key arithmetic in
    # Spark SQL for an int64 column): the same exact segments.
    keys = np.sort(np.unique(np.concatenate([_full_range_keys(2000), EXTREMES])))
    fids = (np.arange(len(keys)) * 3 // len(keys)).astype(np.int64)
    hashes = np.asarray([101, 202, 303], np.int64)
    segs: list[Segment] = []
    seg = Segmenter(50, 1 << 20, segs.append)
    _segment_run((keys, np.ones(len(keys), bool), hashes[fids]), seg, set(), FileHashes(hashes, np.arange(3)))
    seg.finish()
    assert all(s.s_max - s.s_min < MAX_SEGMENT_SPAN for s in segs)
    for s in segs:
        inside = (keys >= s.s_min) & (keys <= s.s_max)
        for k, f in zip(keys[inside].tolist(), fids[inside].tolist()):
            assert f in s.fids_for_range(k, k).tolist()


def _layout(n: int = 6000) -> dict[str, list[int]]:
    keys = np.unique(_full_range_keys(n)).tolist()
    third = len(keys) // 3
    return {  # the thirds of the range (a segment over all of them had 3 blocks > 2**62 wide), and a mix
        "a.parquet": keys[:third] + [INT64_MIN, -1],
        "b.parquet": keys[third:2 * third] + [0, 1],
        "c.parquet": keys[2 * third:] + [INT64_MAX],
        "d.parquet": keys[::97] + [INT64_MIN, INT64_MAX],
    }


def _ranges(keys: list[int], rng: np.random.Generator) -> list[S.Range]:
    out = [S.Range(-1000, 1000), S.Range(-(1 << 62), 1 << 62), S.Range(None, INT64_MIN), S.Range(INT64_MAX, None),
           S.Range(INT64_MIN, INT64_MIN + (1 << 40)), S.Range(INT64_MAX - (1 << 40), INT64_MAX),
           S.Range(INT64_MIN, INT64_MAX), S.Range(INT64_MIN, 0, True, False), S.Range(0, INT64_MAX, False, True),
           S.Range(None, -1), S.Range(1, None), S.Range(INT64_MIN + 1, INT64_MAX - 1, False, False),
           S.Range(INT64_MAX, None, False), S.Range(None, INT64_MIN, True, False), S.Range(-(1 << 70), 1 << 70)]
    for _ in range(40):  # between present keys (a range ending at a key or just inside it)
        a, b = sorted(rng.choice(keys, 2).tolist())
        out.append(S.Range(a, b, bool(rng.integers(2)), bool(rng.integers(2))))
    return out


def _exact_range(full: dict[str, np.ndarray], pred: S.Range) -> set[str]:
    lo = INT64_MIN if pred.low is None else pred.low + (0 if pred.low_inclusive else 1)
    hi = INT64_MAX if pred.high is None else pred.high - (0 if pred.high_inclusive else 1)
    if lo > hi or lo > INT64_MAX or hi < INT64_MIN:
        return set()
    lo, hi = max(lo, INT64_MIN), min(hi, INT64_MAX)
    return {p for p, ks in full.items() if bool(np.any((ks >= lo) & (ks <= hi)))}


def _check(root: str, layout: dict[str, list[int]], sample: int, seed: int, every_key: bool = True) -> None:
    """Every present key (IN lists; point lookups for a sample and the extremes) and ranges crossing
    0 or touching -2**63 / 2**63-1 answer at least their exact files (ground truth)."""
    idx = S.open_index(root, "k")
    holders: dict[int, set[str]] = {}
    for name, ks in layout.items():
        for k in ks:
            holders.setdefault(k, set()).add(f"{root}/{name}")
    keys = sorted(holders)
    rng = np.random.default_rng(seed)
    probe = sorted(set(EXTREMES) | set(rng.choice(keys, sample, replace=False).tolist()))
    for k in probe:
        assert set(idx.candidates(S.Eq(k), assume_fresh=True)) >= holders.get(k, set()), k
    listed = keys if every_key else sorted(rng.choice(keys, 1000, replace=False).tolist())
    for chunk in range(0, len(listed), 1000):  # every present key (or a sample), through IN lists
        values = listed[chunk:chunk + 1000]
        assert set(idx.candidates(S.In(tuple(values)), assume_fresh=True)) >= set().union(*(holders[k] for k in values))
    full = {f"{root}/{name}": np.asarray(ks, np.int64) for name, ks in layout.items()}
    for pred in _ranges(keys, rng):
        assert set(idx.candidates(pred, assume_fresh=True)) >= _exact_range(full, pred), pred


@pytest.mark.parametrize("structure", ["segments", "auto"])
def test_full_range_int64_keys_build_and_answer_exactly(tmp_path, structure: str) -> None:
    root = str(tmp_path / "t")
    one = {"a.parquet": _full_range_keys(10_000).tolist()}  # the reported case: one file, 10,000 keys
    write_file(f"{root}/a.parquet", one["a.parquet"])
    S.build(None, root, "k", structure=structure)
    idx = S.open_index(root, "k")
    assert idx.manifest.structure == "segments"  # one file: auto keeps segments (now exact)
    assert all(m.s_max - m.s_min < MAX_SEGMENT_SPAN for m in idx.metas)
    _check(root, one, 100, 2)


@pytest.mark.parametrize(("mode", "error_bound"), [("cow", 0), ("cow", 50), ("mor", 50)])
def test_full_range_int64_keys_several_files_and_sync_at_the_extremes(tmp_path, mode: str, error_bound: int) -> None:
    root = str(tmp_path / "t")
    layout = _layout()
    for name, ks in layout.items():
        write_file(f"{root}/{name}", ks)
    S.build(None, root, "k", structure="segments", mode=mode, error_bound=error_bound)
    _check(root, layout, 100, 3, every_key=False)
    layout["e.parquet"] = [INT64_MIN, INT64_MIN + 1, INT64_MIN + 2, INT64_MAX - 2, INT64_MAX - 1, INT64_MAX, 0]
    layout["f.parquet"] = _full_range_keys(500, seed=7).tolist() + [INT64_MIN + 1, INT64_MAX - 1]
    for name in ("e.parquet", "f.parquet"):
        write_file(f"{root}/{name}", layout[name])
    S.sync(None, root, "k")
    idx = S.open_index(root, "k")
    assert not idx.is_stale()
    if mode == "cow":
        assert all(m.s_max - m.s_min < MAX_SEGMENT_SPAN for m in idx.metas)
    _check(root, layout, 100, 4)
    for beyond in (S.Range(INT64_MAX, None, False), S.Range(None, INT64_MIN, True, False), S.Eq(1 << 63),
                   S.Eq(INT64_MIN - 1), S.Range(1 << 63, 1 << 70)):  # no int64 key: no file (deltas too)
        assert idx.candidates(beyond, assume_fresh=True) == [], beyond
    if mode == "mor":
        S.compact(root, "k")
        _check(root, layout, 50, 5, every_key=False)


def test_merge_on_read_charges_beyond_int64_then_compact(tmp_path) -> None:
    # Each merge-on-read sync charges b_size - 1 per new (block, file) pair: with blocks ~2**55 keys
    # wide the charges pass 2**63 after a few syncs; compacting must still read them (and stay exact).
    root = str(tmp_path / "t")
    rng = np.random.default_rng(3)
    layout: dict[str, list[int]] = {}
    for i in range(3):
        layout[f"a{i}.parquet"] = rng.integers(INT64_MIN, INT64_MAX, 300).tolist()
        write_file(f"{root}/a{i}.parquet", layout[f"a{i}.parquet"])
    S.build(None, root, "k", mode="mor", error_bound=50, structure="segments")
    for j in range(6):
        layout[f"b{j}.parquet"] = rng.integers(INT64_MIN, INT64_MAX, 300).tolist() + [INT64_MIN, INT64_MAX]
        write_file(f"{root}/b{j}.parquet", layout[f"b{j}.parquet"])
        S.sync(None, root, "k")
    assert max(m.used for m in S.open_index(root, "k").metas) >= 1 << 63
    S.compact(root, "k")
    _check(root, layout, 50, 6)


def test_budget_columns_beyond_int64_are_clamped() -> None:
    from airflow_provider_lineage.sieve.segment_update import _int64_column

    assert _int64_column([0, 5]).tolist() == [0, 5]
    assert _int64_column([0, 1 << 64]).tolist() == [0, 1 << 62]
