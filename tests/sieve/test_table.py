"""Listing a table's files: the local walk (``os.scandir`` + a stat per file) against pyarrow's
selector listing, which object stores use and which earlier index versions recorded."""
from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from airflow_provider_lineage.sieve import table as T


def _write(path: Path, keys: list[int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"k": pa.array(keys, pa.int64())}), path)


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    _write(root / "a.parquet", [1])
    _write(root / "day=2024-01-01" / "shop=7" / "p0.parquet", [2])
    _write(root / "day=2024-01-01" / "shop=8" / "p1.parquet", [3])
    _write(root / "city=New%20York" / "p2.parquet", [4])
    _write(root / "city=__HIVE_DEFAULT_PARTITION__" / "p3.parquet", [5])
    _write(root / "nested.parquet" / "inner.parquet", [6])  # a folder may end in .parquet
    _write(root / "_sieve" / "x.parquet", [7])  # hidden folders and files are skipped
    _write(root / ".hidden" / "x.parquet", [8])
    _write(root / "day=2024-01-02" / "_tmp" / "x.parquet", [9])
    _write(root / "_SUCCESS.parquet", [10])
    _write(root / ".crc.parquet", [11])
    (root / "notes.txt").write_text("not data")
    (root / "empty").mkdir()
    return root


def _as_tuples(entries: list[T.FileEntry]) -> list[tuple]:
    return [(f.path, f.size, f.mtime_ns, f.partition) for f in entries]


def test_local_walk_lists_what_the_selector_lists(tree: Path) -> None:
    got = T.list_table_files(str(tree))
    selector = sorted(T._list_selector(pafs.LocalFileSystem(), str(tree), str(tree)), key=lambda f: f.path)
    assert _as_tuples(got) == _as_tuples(selector)  # same paths, sizes, mtimes (ns) and partitions
    rel = [os.path.relpath(f.path, tree) for f in got]
    assert rel == ["a.parquet", "city=New%20York/p2.parquet", "city=__HIVE_DEFAULT_PARTITION__/p3.parquet",
                   "day=2024-01-01/shop=7/p0.parquet", "day=2024-01-01/shop=8/p1.parquet",
                   "nested.parquet/inner.parquet"]
    by = {r: f.partition for r, f in zip(rel, got)}
    assert by["day=2024-01-01/shop=7/p0.parquet"] == {"day": "2024-01-01", "shop": "7"}
    assert by["city=New%20York/p2.parquet"] == {"city": "New York"}
    assert by["city=__HIVE_DEFAULT_PARTITION__/p3.parquet"] == {"city": T.HIVE_NULL}


def test_a_missing_root_or_a_file_root_lists_no_files(tmp_path: Path) -> None:
    assert T.list_table_files(str(tmp_path / "nope")) == []
    _write(tmp_path / "f.parquet", [1])
    assert T._list_local(str(tmp_path / "f.parquet")) == []


def test_a_file_that_vanishes_while_listing_is_left_out(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.stat

    def flaky(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if path == "a.parquet" and kwargs.get("dir_fd") is not None:
            raise FileNotFoundError(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(T.os, "stat", flaky)
    names = [os.path.basename(f.path) for f in T._list_local(str(tree))]
    assert "a.parquet" not in names and "p0.parquet" in names


def test_a_rewrite_in_place_changes_the_listed_version(tree: Path) -> None:
    before = {f.path: f for f in T.list_table_files(str(tree))}
    target = tree / "a.parquet"
    _write(target, [1, 2, 3])  # same name, new contents (a rewrite in place)
    os.utime(target, ns=(before[str(target)].mtime_ns + 10**9,) * 2)
    after = {f.path: f for f in T.list_table_files(str(tree))}
    assert not after[str(target)].same_version(before[str(target)])
    assert all(after[p].same_version(f) for p, f in before.items() if p != str(target))


def test_symbolic_links_are_followed_and_a_loop_is_walked_once(tmp_path: Path) -> None:
    root, other = tmp_path / "t", tmp_path / "other"
    _write(root / "a" / "x.parquet", [1])
    _write(other / "y.parquet", [2])
    os.symlink(other, root / "linked")  # a linked folder and a linked file are listed, as Spark reads them
    os.symlink(other / "y.parquet", root / "z.parquet")
    os.symlink(root, root / "a" / "loop")  # a link back up: the tree is walked once, no error
    rel = sorted(os.path.relpath(f.path, root) for f in T.list_table_files(str(root)))
    assert rel == ["a/x.parquet", "linked/y.parquet", "z.parquet"]
    assert sorted(os.path.relpath(p, root) for p in T.list_table_paths(str(root))) == rel
    assert sorted(os.path.relpath(p, root) for p, _, _ in T.list_table_versions(str(root))) == rel
