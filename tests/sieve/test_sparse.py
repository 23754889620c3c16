"""Issue 7.3: sparse keys (wide gaps inside segments) answer tight sets; never a false negative;
older index formats are refused (full read) and rebuilt by sync."""
from __future__ import annotations

import importlib
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_lineage import sieve as S

from .helpers import replay_ops, write_file
from .test_sync import exact

codec = importlib.import_module("airflow_provider_lineage.sieve.codec")
storage = importlib.import_module("airflow_provider_lineage.sieve.storage")


def _sparse_layout(root: str, n_files: int = 12, seed: int = 7) -> dict[str, list[int | None]]:
    rng = np.random.default_rng(seed)
    codes = np.cumsum(rng.integers(40, 4000, size=60))  # few codes, wide irregular gaps
    layout: dict[str, list[int | None]] = {}
    for i in range(n_files):
        mine = rng.choice(codes, size=int(rng.integers(3, 15)), replace=False)
        keys = [int(k) for k in rng.choice(mine, size=300)]  # many rows per code
        layout[f"{root}/f{i:02d}.parquet"] = keys
        write_file(f"{root}/f{i:02d}.parquet", keys)
    return layout


def test_sparse_codes_answer_tight_sets(spark, tmp_path) -> None:
    root = str(tmp_path / "sparse")
    layout = _sparse_layout(root)
    S.build(spark, root, "k", engine="spark")
    idx = S.open_index(root, "k")
    present = sorted({k for ks in layout.values() for k in ks if k is not None})
    lo, hi = present[0], present[-1]
    absent = [k for k in range(lo, hi, 97) if k not in set(present)]
    assert len(absent) > 100
    for k in absent:  # keys between codes, many of them inside a segment's blocks
        assert idx.candidates(S.Eq(k), assume_fresh=True) == [], k
    got = want = 0
    for k in present:
        c = set(idx.candidates(S.Eq(k), assume_fresh=True))
        e = exact(layout, S.Eq(k))
        assert c >= e
        got, want = got + len(c), want + len(e)
    for a, b in itertools.pairwise(present):  # ranges strictly between two codes: nothing
        if b - a > 2:
            assert idx.candidates(S.Range(a + 1, b - 1), assume_fresh=True) == []
    assert got <= 1.1 * want, (got, want)


KEY = st.one_of(st.sampled_from([-900, -37, 0, 5, 6, 400, 401, 977, 5000, 5003, 12000]), st.integers(-1000, 13000),
                st.none())
FILE = st.lists(KEY, min_size=1, max_size=20)
PRED = st.one_of(st.builds(S.Eq, st.integers(-1100, 13100)),
                 st.builds(S.Range, st.none() | st.integers(-1100, 13100), st.none() | st.integers(-1100, 13100)),
                 st.builds(S.In, st.lists(st.integers(-1100, 13100), max_size=3)))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial=st.lists(FILE, min_size=1, max_size=4),
       ops=st.lists(st.one_of(st.tuples(st.just("append"), FILE), st.tuples(st.just("delete"), st.integers(0, 9)),
                              st.tuples(st.just("compact"))), max_size=6),
       mode=st.sampled_from(["cow", "mor"]), e=st.integers(0, 4), cap=st.integers(2, 30),
       preds=st.lists(PRED, min_size=3, max_size=8))
def test_sparse_no_false_negative_after_updates(initial, ops, mode, e, cap, preds) -> None:
    for root, layout in replay_ops(initial, ops, prefix="sieve-sparse-", error_bound=e, max_segment_keys=cap,
                                   mode=mode):
        idx = S.open_index(root, "k")
        for pred in preds:
            got = set(idx.candidates(pred, assume_fresh=True))
            assert exact(layout, pred) <= got <= set(layout), (pred, layout)


def test_older_format_is_refused_then_rebuilt(spark, tmp_path, monkeypatch) -> None:
    root = str(tmp_path / "t")
    write_file(f"{root}/a.parquet", [1, 500])
    write_file(f"{root}/b.parquet", [2, 9000])
    monkeypatch.setattr(codec, "FORMAT_VERSION", 2)  # write an index as the previous release did
    monkeypatch.setattr(storage.manifest, "MANIFEST_VERSION", 2)
    S.build(None, root, "k")
    monkeypatch.undo()
    with pytest.raises(S.IndexUnavailable, match="v2"):
        S.open_index(root, "k")
    with pytest.warns(S.SieveFallbackWarning, match="rebuild"):
        assert S.read(spark, root, "k", S.Eq(500)).count() == 1
    assert S.maintenance_status(root, "k").recommendation == "build"
    with pytest.warns(UserWarning, match="unusable"):
        assert S.sync(None, root, "k").action == "build"
    assert S.open_index(root, "k").candidates(S.Eq(500)) == [f"{root}/a.parquet"]
    assert S.open_index(root, "k").candidates(S.Eq(501)) == []
