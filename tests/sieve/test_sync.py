"""Updates: diff, deletes without reads, budgets/rebuilds, new segments, cow and mor, and the
property that candidates are always a superset of the exact file set."""
from __future__ import annotations

import importlib
import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_lineage import sieve as S

from .helpers import apply_op, exact_files, replay_ops, write_file, write_layout

sync_mod = importlib.import_module("airflow_provider_lineage.sieve.sync")
update_mod = importlib.import_module("airflow_provider_lineage.sieve.segment_update")


def _table(tmp_path, layout) -> str:
    root = str(tmp_path / "t")
    for name, keys in layout.items():
        write_file(f"{root}/{name}", keys)
    return root


def test_removed_file_is_dropped_without_reading(tmp_path, monkeypatch) -> None:
    root = _table(tmp_path, {"a.parquet": list(range(100)), "b.parquet": list(range(50, 150))})
    S.build(None, root, "k", error_bound=2)
    os.remove(f"{root}/a.parquet")
    read: list[str] = []
    real = sync_mod.read_file_keys
    for mod in (sync_mod, update_mod):  # added files' keys (sync), segments rebuilt from data (segment_update)
        monkeypatch.setattr(mod, "read_file_keys", lambda p, *a: read.append(p) or real(p, *a))
    report = S.sync(None, root, "k")
    assert report.files_removed == 1 and read == []
    idx = S.open_index(root, "k")
    assert idx.candidates(S.Eq(10)) == []
    assert idx.candidates(S.Eq(60)) == [f"{root}/b.parquet"]


def test_keys_outside_segments_get_new_segments(tmp_path) -> None:
    root = _table(tmp_path, {"a.parquet": list(range(100, 200))})
    S.build(None, root, "k")
    write_file(f"{root}/low.parquet", [1, 2, 3])
    write_file(f"{root}/high.parquet", [10_000])
    write_file(f"{root}/mid.parquet", [150, 5000])
    report = S.sync(None, root, "k")
    assert report.segments_created >= 2  # one per gap touched
    idx = S.open_index(root, "k")
    assert idx.candidates(S.Eq(2)) == [f"{root}/low.parquet"]
    assert idx.candidates(S.Eq(10_000)) == [f"{root}/high.parquet"]
    assert idx.candidates(S.Eq(5000)) == [f"{root}/mid.parquet"]
    assert f"{root}/mid.parquet" in idx.candidates(S.Eq(150))
    mins = [m.s_min for m in idx.metas]
    assert mins == sorted(mins) and all(a.s_max < b.s_min for a, b in zip(idx.metas, idx.metas[1:]))


def test_budget_spent_rebuilds_segment(tmp_path) -> None:
    root = _table(tmp_path, {"a.parquet": list(range(1000))})
    S.build(None, root, "k", error_bound=1)  # one flat segment, one block of 1000 keys, E = 1
    write_file(f"{root}/b.parquet", [500])
    report = S.sync(None, root, "k")
    assert report.segments_rebuilt == 1
    idx = S.open_index(root, "k")
    assert idx.candidates(S.Eq(10)) == [f"{root}/a.parquet"]  # no false positive after the rebuild
    assert sorted(idx.candidates(S.Eq(500))) == [f"{root}/a.parquet", f"{root}/b.parquet"]


def test_exact_segment_is_resegmented_without_reading_data(tmp_path, monkeypatch) -> None:
    root = _table(tmp_path, {"a.parquet": list(range(0, 200, 2)), "b.parquet": list(range(0, 200, 2))})
    S.build(None, root, "k", error_bound=0)  # one flat segment, exact blocks
    write_file(f"{root}/c.parquet", [50, 51])
    read: list[str] = []
    real = sync_mod.read_file_keys
    for mod in (sync_mod, update_mod):  # added files' keys (sync), segments rebuilt from data (segment_update)
        monkeypatch.setattr(mod, "read_file_keys", lambda p, *a: read.append(p) or real(p, *a))
    report = S.sync(None, root, "k")
    assert read == [f"{root}/c.parquet"] and report.keys_read == 2  # only the new file was read
    idx = S.open_index(root, "k")
    assert idx.candidates(S.Eq(10)) == [f"{root}/a.parquet", f"{root}/b.parquet"]  # no false positive
    assert idx.candidates(S.Eq(50)) == [f"{root}/a.parquet", f"{root}/b.parquet", f"{root}/c.parquet"]
    assert idx.candidates(S.Eq(51)) == [f"{root}/c.parquet"]  # filled a hole
    assert idx.candidates(S.Eq(53)) == []


A_KEYS = [*range(40), *range(41, 100)]  # key 40 is a hole of the segment


@pytest.mark.parametrize("added, outcome", [
    (A_KEYS, "rewritten"),  # every key of every block: the segment is rewritten as it is
    (list(range(25)), "rebuilt"),  # part of a block: re-segmented (no false positive for 25..49)
    ([*A_KEYS[:-1], 40], "rebuilt"),  # a key in a hole: re-segmented
    ([*A_KEYS, 40], "covered"),  # every key of the range: a full file, the segment is not rewritten
])
def test_a_file_covering_whole_blocks_is_added_without_resegmenting(tmp_path, monkeypatch, added, outcome) -> None:
    root = _table(tmp_path, {"a.parquet": A_KEYS, "b.parquet": A_KEYS})
    S.build(None, root, "k", error_bound=0)  # one segment, one exact block: {a, b} for 0..99 but 40
    assert len(S.open_index(root, "k").metas) == 1
    write_file(f"{root}/c.parquet", added)
    calls: list[int] = []
    real = update_mod.covers_whole_blocks
    monkeypatch.setattr(update_mod, "covers_whole_blocks", lambda seg, adds: calls.append(1) or real(seg, adds))
    report = S.sync(None, root, "k")
    assert bool(calls) == (outcome != "covered") and report.segments_created == 0
    got = {"covered": report.segments_covered, "rewritten": report.segments_rewritten,
           "rebuilt": report.segments_rebuilt}
    assert got == {k: int(k == outcome) for k in got}
    idx = S.open_index(root, "k")
    a, b, c = (f"{root}/{n}.parquet" for n in "abc")
    for key in range(-1, 101):
        want = {f for f, ks in ((a, A_KEYS), (b, A_KEYS), (c, added)) if key in ks}
        assert set(idx.candidates(S.Eq(key))) == want, key  # exact: no false positive either way
    assert idx.stats().budget_used == 0


def _answers(root: str, keys: range) -> dict[int, set[str]]:
    idx = S.open_index(root, "k")
    return {k: set(idx.candidates(S.Eq(k))) for k in keys}


def test_a_file_holding_every_key_of_a_segment_is_recorded_in_the_segment_list(tmp_path, monkeypatch) -> None:
    """A new file holding every key of a segment's range (a date every load covers) becomes one of
    the segment's full files: the segment list changes, the segment is not read or rewritten, and
    every key of the range answers the file besides what it answered before."""
    import numpy as np

    rng = np.random.default_rng(7)
    root = _table(tmp_path, {f"f{i}.parquet": sorted({*rng.choice(300, 120).tolist(), *range(i, 300, 8)})
                             for i in range(8)})  # every key 0..299 is in some file: no gap between segments
    S.build(None, root, "k", max_segment_keys=40)
    n = len(S.open_index(root, "k").metas)
    assert n > 3
    keys = range(-2, 303)
    before = _answers(root, keys)
    budget_before = S.open_index(root, "k").stats().budget_used
    full = f"{root}/full.parquet"
    write_file(full, list(range(300)))
    read: list[object] = []
    real = update_mod.IndexStore.read_segment
    monkeypatch.setattr(update_mod.IndexStore, "read_segment", lambda self, ref: read.append(ref) or real(self, ref))
    report = S.sync(None, root, "k")
    assert (report.segments_covered, report.segments_rewritten, report.segments_rebuilt,
            report.segments_created) == (n, 0, 0, 0) and read == []
    idx = S.open_index(root, "k")
    assert all(m.full.tolist() == [8] for m in idx.metas)
    assert _answers(root, keys) == {k: before[k] | ({full} if 0 <= k < 300 else set()) for k in keys}
    assert full in idx.candidates(S.Range(17, 18)) and full not in idx.candidates(S.Range(300, None))
    assert idx.stats().budget_used == budget_before  # no false positive charged
    # Deleting it touches the segment list only, and the answers are those of before.
    os.remove(full)
    report = S.sync(None, root, "k")
    assert (report.segments_covered, report.segments_rewritten, report.segments_dropped) == (0, 0, 0) and read == []
    assert all(len(m.full) == 0 for m in S.open_index(root, "k").metas)
    assert _answers(root, keys) == before


def test_full_files_move_into_the_blocks_when_a_segment_is_rewritten(tmp_path) -> None:
    """A later file that does not cover the segment makes the sync rewrite it: the full files go
    into its blocks first, so nothing is lost whatever path the rewrite takes."""
    import numpy as np

    rng = np.random.default_rng(3)
    layout = {f"f{i}.parquet": sorted({*rng.choice(200, 80).tolist(), *range(i, 200, 6)}) for i in range(6)}
    root = _table(tmp_path, layout)
    S.build(None, root, "k", error_bound=0)
    write_file(f"{root}/full.parquet", list(range(200)))
    layout["full.parquet"] = list(range(200))
    assert S.sync(None, root, "k").segments_covered == len(S.open_index(root, "k").metas)
    write_file(f"{root}/some.parquet", [3, 77, 150, 250])
    layout["some.parquet"] = [3, 77, 150, 250]
    report = S.sync(None, root, "k")
    assert report.segments_rewritten + report.segments_rebuilt >= 1
    idx = S.open_index(root, "k")
    for key in range(-1, 252):
        want = {f"{root}/{name}" for name, ks in layout.items() if key in ks}
        assert set(idx.candidates(S.Eq(key))) == want, key  # error bound 0: exact, before and after
    # Rewritten in place with fewer keys: a dead full file and an added one that is not full.
    write_file(f"{root}/full.parquet", [5])
    layout["full.parquet"] = [5]
    S.sync(None, root, "k")
    idx = S.open_index(root, "k")
    assert all(len(m.full) == 0 for m in idx.metas)
    for key in range(-1, 252):
        want = {f"{root}/{name}" for name, ks in layout.items() if key in ks}
        assert set(idx.candidates(S.Eq(key))) == want, key


def test_compaction_folds_full_files_into_the_segment_list(tmp_path) -> None:
    root = _table(tmp_path, {"a.parquet": list(range(0, 100, 2)), "b.parquet": list(range(1, 100, 2))})
    S.build(None, root, "k", mode="mor", max_segment_keys=10)
    write_file(f"{root}/c.parquet", list(range(100)))
    S.sync(None, root, "k")
    report = S.compact(root, "k")
    assert report.segments_covered == len(S.open_index(root, "k").metas) and report.segments_rewritten == 0
    idx = S.open_index(root, "k")
    assert not idx.deltas and idx.candidates(S.Eq(42)) == [f"{root}/a.parquet", f"{root}/c.parquet"]


def test_mor_deltas_then_compact(tmp_path) -> None:
    root = _table(tmp_path, {"a.parquet": list(range(100)), "b.parquet": list(range(100, 200))})
    S.build(None, root, "k", mode="mor", error_bound=1000)
    write_file(f"{root}/c.parquet", [5, 300])
    os.remove(f"{root}/b.parquet")
    r = S.sync(None, root, "k")
    assert r.deltas_written == 1 and r.segments_rewritten == 0
    idx = S.open_index(root, "k")
    assert idx.manifest.dead_files and len(idx.manifest.deltas) == 1
    assert idx.candidates(S.Eq(300)) == [f"{root}/c.parquet"]
    assert idx.candidates(S.Eq(150)) == []
    status = S.maintenance_status(root, "k")
    assert status.recommendation == "none" and status.delta_count == 1 and status.dead_files == 1
    c = S.compact(root, "k")
    assert c.deltas_folded == 1
    idx = S.open_index(root, "k")
    assert not idx.manifest.deltas and not idx.manifest.dead_files
    assert idx.candidates(S.Eq(300)) == [f"{root}/c.parquet"]
    assert sorted(idx.candidates(S.Eq(5))) == [f"{root}/a.parquet", f"{root}/c.parquet"]
    assert S.compact(root, "k").action == "none"


def test_sync_without_index_builds(tmp_path) -> None:
    root = _table(tmp_path, {"a.parquet": [1, 2]})
    assert S.sync(None, root, "k").action == "build"
    assert S.sync(None, root, "k").action == "none"


def test_table_overwrite_deleting_the_index_means_no_index(tmp_path) -> None:
    root = _table(tmp_path, {"a.parquet": [1, 2]})
    S.build(None, root, "k")
    shutil.rmtree(root)
    write_file(f"{root}/b.parquet", [3])
    with pytest.raises(S.IndexUnavailable):
        S.open_index(root, "k")
    assert S.maintenance_status(root, "k").recommendation == "build"


# ---- property test ------------------------------------------------------------------------------
KEY = st.one_of(st.integers(-20, 120), st.integers(1000, 1040), st.none())
FILE = st.lists(KEY, min_size=1, max_size=25)
OP = st.one_of(
    st.tuples(st.just("append"), FILE),
    st.tuples(st.just("overwrite"), st.integers(0, 50), FILE),
    st.tuples(st.just("delete"), st.integers(0, 50)),
    st.tuples(st.just("copy"), st.integers(-1, 50)),  # keys every file holds: whole blocks
    st.tuples(st.just("span"), st.integers(-20, 120), st.integers(0, 60)),  # every key of a range: full files
    st.tuples(st.just("compact")),
)
PRED = st.one_of(
    st.builds(S.Eq, st.integers(-25, 1045)),
    st.builds(S.In, st.lists(st.integers(-25, 1045), max_size=4)),
    st.builds(S.Range, st.none() | st.integers(-25, 1045), st.none() | st.integers(-25, 1045),
              st.booleans(), st.booleans()),
    st.just(S.IsNull()),
)


def exact(layout: dict[str, list[int | None]], pred: object) -> set[str]:
    if isinstance(pred, S.IsNull):
        return {p for p, ks in layout.items() if None in ks}
    if isinstance(pred, S.Eq):
        return exact_files(layout, pred.value, pred.value)
    if isinstance(pred, S.In):
        return set().union(*[exact_files(layout, v, v) for v in pred.values]) if pred.values else set()
    lo = None if pred.low is None else pred.low + (0 if pred.low_inclusive else 1)
    hi = None if pred.high is None else pred.high - (0 if pred.high_inclusive else 1)
    if lo is not None and hi is not None and lo > hi:
        return set()
    return exact_files(layout, lo, hi)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial=st.lists(FILE, min_size=1, max_size=5), ops=st.lists(OP, max_size=6),
       mode=st.sampled_from(["cow", "mor"]), e=st.integers(0, 6), cap=st.integers(2, 40),
       preds=st.lists(PRED, min_size=3, max_size=8))
def test_candidates_superset_of_exact(initial, ops, mode, e, cap, preds) -> None:
    for root, layout in replay_ops(initial, ops, prefix="sieve-prop-", error_bound=e, max_segment_keys=cap,
                                   mode=mode):
        idx = S.open_index(root, "k")
        assert not idx.is_stale()
        for pred in preds:
            got = set(idx.candidates(pred))
            assert got >= exact(layout, pred), (pred, layout)
            assert got <= set(layout)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial=st.lists(st.lists(st.integers(0, 60), min_size=1, max_size=40), min_size=1, max_size=4),
       ops=st.lists(st.one_of(st.tuples(st.just("copy"), st.integers(-1, 9)),
                              st.tuples(st.just("span"), st.integers(0, 60), st.integers(0, 60)),
                              st.tuples(st.just("append"), FILE),
                              st.tuples(st.just("delete"), st.integers(0, 9))), min_size=1, max_size=5),
       preds=st.lists(PRED, min_size=3, max_size=8))
def test_recurring_values_stay_a_superset_of_exact(initial, ops, preds) -> None:
    """Appends that repeat the table's values (whole blocks) at the default error bound."""
    root = tempfile.mkdtemp(prefix="sieve-recur-")
    try:
        layout: dict[str, list[int | None]] = write_layout(root, initial)
        S.build(None, root, "k")
        for j, op in enumerate(ops):
            apply_op(root, layout, op, j)
            S.sync(None, root, "k")
        idx = S.open_index(root, "k")
        assert not idx.is_stale()
        for pred in preds:
            got = set(idx.candidates(pred))
            assert exact(layout, pred) <= got <= set(layout), (pred, layout)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_sync_of_a_footer_index_rereads_a_same_size_rewrite(tmp_path) -> None:
    from .test_stale import _plain_table, _same_size_rewrite

    root = _plain_table(tmp_path)
    b = f"{root}/p=1/b.parquet"
    _same_size_rewrite(b, list(range(100, 199)) + [5000])
    rep = S.sync(None, root, "k")  # the index records footers: the sync compares them
    assert (rep.action, rep.files_changed, rep.files_added) == ("sync", 1, 0)
    idx = S.open_index(root, "k")
    assert idx.candidates(S.Eq(5000), freshness="footer") == [b]
    assert idx.lookup(S.Eq(199), freshness="footer").files == () and not idx.is_stale(freshness="footer")
    assert S.sync(None, root, "k").action == "none"


def test_sync_with_footer_freshness_rebuilds_an_index_without_checksums(tmp_path) -> None:
    from .test_stale import _plain_table, _same_size_rewrite

    root = _plain_table(tmp_path, freshness="stat")
    _same_size_rewrite(f"{root}/p=1/b.parquet", list(range(100, 199)) + [5000])
    assert S.sync(None, root, "k").action == "none"  # stat cannot see it
    rep = S.sync(None, root, "k", freshness="footer")
    assert rep.action == "build" and "records no footer checksums" in rep.reason
    idx = S.open_index(root, "k")
    assert idx.manifest.files.records_footers and idx.candidates(S.Eq(5000), freshness="footer") == \
        [f"{root}/p=1/b.parquet"]
    assert S.rebuild(None, root, "k").files == 3
    assert S.open_index(root, "k").manifest.files.records_footers  # a rebuild keeps the index's freshness
