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
    """A partitioned table with everything Spark's listing leaves out (tests/sieve/test_files.py
    checks each rule against Spark itself)."""
    root = tmp_path / "t"
    _write(root / "a.parquet", [1])  # a root file beside partition folders: not read
    _write(root / "day=2024-01-01" / "shop=7" / "p0.parquet", [2])
    _write(root / "day=2024-01-01" / "shop=7" / "000001_0", [12])  # no suffix needed (Hive)
    _write(root / "day=2024-01-01" / "shop=8" / "p1.parquet", [3])
    _write(root / "day=2024-01-02" / "shop=New%20York" / "p2.parquet", [4])
    _write(root / "day=2024-01-02" / "shop=__HIVE_DEFAULT_PARTITION__" / "p3.parquet", [5])
    _write(root / "day=2024-01-03" / "shop=9" / "nested.parquet" / "inner.parquet", [6])  # a folder below a partition
    _write(root / "_sieve" / "x.parquet", [7])  # hidden folders and files are skipped
    _write(root / ".hidden" / "x.parquet", [8])
    _write(root / "day=2024-01-02" / "_tmp" / "x.parquet", [9])
    _write(root / "day=2024-01-01" / "shop=7" / "_SUCCESS.parquet", [10])
    _write(root / "day=2024-01-01" / "shop=7" / ".crc.parquet", [11])
    (root / "day=2024-01-01" / "shop=8" / "empty.parquet").write_bytes(b"")  # empty: no data
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
    assert rel == ["day=2024-01-01/shop=7/000001_0", "day=2024-01-01/shop=7/p0.parquet",
                   "day=2024-01-01/shop=8/p1.parquet", "day=2024-01-02/shop=New%20York/p2.parquet",
                   "day=2024-01-02/shop=__HIVE_DEFAULT_PARTITION__/p3.parquet",
                   "day=2024-01-03/shop=9/nested.parquet/inner.parquet"]
    by = {r: f.partition for r, f in zip(rel, got)}
    assert by["day=2024-01-01/shop=7/p0.parquet"] == {"day": "2024-01-01", "shop": "7"}
    assert by["day=2024-01-02/shop=New%20York/p2.parquet"] == {"day": "2024-01-02", "shop": "New York"}
    assert by["day=2024-01-02/shop=__HIVE_DEFAULT_PARTITION__/p3.parquet"]["shop"] == T.HIVE_NULL
    assert by["day=2024-01-03/shop=9/nested.parquet/inner.parquet"] == {"day": "2024-01-03", "shop": "9"}
    assert sorted(os.path.relpath(p, tree) for p, _, _ in T.list_table_versions(str(tree))) == rel
    # names only (no stat): an empty file is listed too, and readers skip it as Spark does
    empty = "day=2024-01-01/shop=8/empty.parquet"
    assert sorted(os.path.relpath(p, tree) for p in T.list_table_paths(str(tree))) == sorted([*rel, empty])


def test_a_missing_root_or_a_file_root_lists_no_files(tmp_path: Path) -> None:
    assert T.list_table_files(str(tmp_path / "nope")) == []
    _write(tmp_path / "f.parquet", [1])
    assert T._list_local(str(tmp_path / "f.parquet")) == []


def test_a_file_that_vanishes_while_listing_is_left_out(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.stat

    def flaky(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if path == "p1.parquet" and kwargs.get("dir_fd") is not None:
            raise FileNotFoundError(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(T.os, "stat", flaky)
    names = [os.path.basename(f.path) for f in T._list_local(str(tree))]
    assert "p1.parquet" not in names and "p0.parquet" in names


def test_a_rewrite_in_place_changes_the_listed_version(tree: Path) -> None:
    before = {f.path: f for f in T.list_table_files(str(tree))}
    target = tree / "day=2024-01-01" / "shop=7" / "p0.parquet"
    _write(target, [1, 2, 3])  # same name, new contents (a rewrite in place)
    os.utime(target, ns=(before[str(target)].mtime_ns + 10**9,) * 2)
    after = {f.path: f for f in T.list_table_files(str(tree))}
    assert not after[str(target)].same_version(before[str(target)])
    assert all(after[p].same_version(f) for p, f in before.items() if p != str(target))


def test_symbolic_links_are_followed_and_a_loop_is_walked_once(tmp_path: Path) -> None:
    root, other = tmp_path / "t", tmp_path / "other"
    _write(root / "p=1" / "x.parquet", [1])
    _write(other / "y.parquet", [2])
    os.symlink(other, root / "p=2")  # a linked folder and a linked file are listed, as Spark reads them
    (root / "p=3").mkdir()
    os.symlink(other / "y.parquet", root / "p=3" / "z.parquet")
    os.symlink(root, root / "p=1" / "loop")  # a link back up: the tree is walked once, no error
    rel = sorted(os.path.relpath(f.path, root) for f in T.list_table_files(str(root)))
    assert rel == ["p=1/x.parquet", "p=2/y.parquet", "p=3/z.parquet"]
    assert sorted(os.path.relpath(p, root) for p in T.list_table_paths(str(root))) == rel
    assert sorted(os.path.relpath(p, root) for p, _, _ in T.list_table_versions(str(root))) == rel


# ---- footer checksums (freshness="footer") ------------------------------------------------------------
def _plain(path: str, keys: list[int], **extra: list[int]) -> None:
    """A Parquet file whose size depends on the row count only (no compression, no dictionary)."""
    cols = {"k": pa.array(keys, pa.int64()), **{n: pa.array(v, pa.int64()) for n, v in extra.items()}}
    pq.write_table(pa.table(cols), path, compression="none", use_dictionary=False)


def test_footer_checksum_sees_a_same_size_rewrite_not_a_touch(tmp_path) -> None:
    path = str(tmp_path / "f.parquet")
    _plain(path, list(range(100)))
    before, size = T.footer_checksum(path), os.path.getsize(path)
    assert 0 <= before < 1 << 62
    os.utime(path, ns=(1, 2))  # only the mtime: same footer
    assert T.footer_checksum(path) == before
    _plain(path, list(range(99)) + [5000])  # same size, another max in the footer's statistics
    assert os.path.getsize(path) == size
    assert T.footer_checksum(path) != before
    (tmp_path / "x.bin").write_bytes(b"not parquet at all")  # checksummed over its bytes, no error
    assert T.footer_checksum(str(tmp_path / "x.bin")) != T.footer_checksum(path)
    with pytest.raises(FileNotFoundError):
        T.footer_checksum(str(tmp_path / "gone.parquet"))


def test_footer_checksum_of_a_footer_longer_than_one_read(tmp_path) -> None:
    path = str(tmp_path / "wide.parquet")
    wide = {f"c{i:04d}": [i] for i in range(1500)}
    _plain(path, [1], **wide)
    n = int.from_bytes(Path(path).read_bytes()[-8:-4], "little")
    assert n > T.FOOTER_TAIL  # the second read of the local path is taken
    first = T.footer_checksum(path)
    _plain(path, [2], **wide)
    assert T.footer_checksum(path) != first
    # the object-store reads (pyarrow's file system, here the local one) give the local reads' bytes
    narrow = str(tmp_path / "narrow.parquet")
    _plain(narrow, [1, 2, 3])
    for p in (path, narrow):
        assert T._store_footer(p) == T._local_footer(p)


def test_stamp_footers_sets_each_entry_and_none_for_a_vanished_file(tmp_path) -> None:
    _plain(str(tmp_path / "a.parquet"), [1, 2])
    _plain(str(tmp_path / "b.parquet"), [3])
    entries = T.list_table_files(str(tmp_path))
    os.remove(tmp_path / "b.parquet")
    T.stamp_footers(entries)
    assert entries[0].footer == T.footer_checksum(str(tmp_path / "a.parquet")) and entries[1].footer is None


# ---- a column's min/max from the footer: one reader for the build's key bounds and a hashed index's ranges --------
def test_footer_min_max_skips_null_row_groups_and_names_missing_statistics(tmp_path) -> None:
    """Row groups of NULLs only are skipped; a file without the column, or with NULLs only, has no bounds;
    a row group without statistics raises. Both callers keep their answer for that: the build's string bounds
    read the values, a hashed index's file range is "any key" (sound either way)."""
    from airflow_provider_lineage.sieve.build_pyarrow import file_bounds
    from airflow_provider_lineage.sieve.hashed import UNKNOWN_RANGE, footer_range
    from airflow_provider_lineage.sieve.keys import KeyType

    def raw(st):
        return bytes(st.min_raw), bytes(st.max_raw)

    path = tmp_path / "a.parquet"
    table = pa.table({"S": pa.array(["m", "b", None, None, "z", "c"]), "n": pa.array([None] * 6, pa.int64()),
                      "k": pa.array([5, 3, None, None, 9, -2], pa.int64())})
    pq.write_table(table, path, row_group_size=2)  # row groups: (m, b), (None, None), (z, c)
    pf = pq.ParquetFile(path)
    assert T.footer_min_max(pf, "s", raw) == (b"b", b"z")  # Spark's case rule finds "S"
    assert T.footer_min_max(pf, "k", lambda st: (st.min, st.max)) == (-2, 9)
    assert T.footer_min_max(pf, "n", raw) is None  # NULLs only
    assert T.footer_min_max(pf, "absent", raw) is None  # schema evolution: NULLs
    assert file_bounds(str(path), "S") == (b"b", b"z")
    assert footer_range(str(path), "k", KeyType("int", "int64", width=8)) == (-2, 9)
    assert footer_range(str(path), "n", KeyType("int", "int64", width=8)) == UNKNOWN_RANGE

    bare = tmp_path / "bare.parquet"
    pq.write_table(table, bare, row_group_size=2, write_statistics=False)
    with pytest.raises(T.NoFooterStatistics):
        T.footer_min_max(pq.ParquetFile(bare), "S", raw)
    assert file_bounds(str(bare), "S") == (b"b", b"z")  # read from the values
    assert footer_range(str(bare), "k", KeyType("int", "int64", width=8)) == UNKNOWN_RANGE
