from __future__ import annotations

import os

import pytest

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve.errors import CommitConflict
from airflow_provider_lineage.sieve.storage import IndexStore

from .helpers import race_two_commits, write_file


@pytest.fixture()
def table(tmp_path) -> str:
    root = str(tmp_path / "t")
    for i in range(4):
        write_file(f"{root}/f{i}.parquet", list(range(i * 10, i * 10 + 15)) + ([None] if i == 1 else []))
    S.build(None, root, "k", error_bound=2, max_segment_keys=8)
    return root


def _idx_dir(root: str) -> str:
    return os.path.join(root, "_sieve", "k")


def test_roundtrip_and_layout(table: str) -> None:
    names = os.listdir(_idx_dir(table))
    assert "manifest-00000001.json" in names
    assert any(n.startswith("seg-") for n in names) and any(n.startswith("segments-") for n in names)
    idx = S.open_index(table, "k")
    idx.verify()
    assert idx.candidates(S.IsNull()) == [f"{table}/f1.parquet"]
    # Spark ignores '_'-prefixed dirs: the listing skips the index.
    assert all("_sieve" not in f.path for f in S.list_table_files(table))


@pytest.mark.parametrize("victim", ["seg-", "segments-", "manifest-"])
def test_corruption_is_detected(table: str, victim: str) -> None:
    d = _idx_dir(table)
    name = min(n for n in os.listdir(d) if n.startswith(victim))
    pos = os.path.getsize(os.path.join(d, name)) // 2  # format-2 segments can be under 30 bytes
    with open(os.path.join(d, name), "r+b") as fh:
        fh.seek(pos)
        b = fh.read(1)
        fh.seek(pos)
        fh.write(bytes([b[0] ^ 0x55]))
    with pytest.raises(S.IndexUnavailable, match="corrupt|checksum|valid"):
        idx = S.open_index(table, "k")
        idx.verify()
        idx.candidates(S.Range(None, None))


def test_missing_index_is_unavailable(tmp_path) -> None:
    with pytest.raises(S.IndexUnavailable, match="no Sieve index"):
        S.open_index(str(tmp_path), "k")


def test_two_writers_same_base_one_wins(table: str) -> None:
    store = IndexStore(_idx_dir(table))
    results = race_two_commits(store.path, store.load_manifest().version)
    assert sorted(r for r in results if isinstance(r, int)) == [2]
    assert sum(isinstance(r, CommitConflict) for r in results) == 1
    assert "retry" in str(next(r for r in results if isinstance(r, CommitConflict)))


def test_sync_retries_after_losing_a_race(table: str, monkeypatch) -> None:
    write_file(f"{table}/new.parquet", [500, 501])
    store_cls = IndexStore
    real_commit = store_cls.commit
    calls = {"n": 0}

    def racing_commit(self, manifest, base_version):  # another writer commits first, once
        calls["n"] += 1
        if calls["n"] == 1:
            real_commit(store_cls(self.path), store_cls(self.path).load_manifest(base_version), base_version)
        return real_commit(self, manifest, base_version)

    monkeypatch.setattr(store_cls, "commit", racing_commit)
    report = S.sync(None, table, "k")
    assert report.attempts == 2 and report.version == 3
    assert S.open_index(table, "k").candidates(S.Eq(500)) == [f"{table}/new.parquet"]


def test_crash_mid_commit_leaves_previous_version(table: str) -> None:
    d = _idx_dir(table)
    # A crashed writer: segment files and a temp manifest written, never linked.
    with open(os.path.join(d, ".tmp-manifest-00000002.json-dead"), "w") as fh:
        fh.write('{"partial": ')
    with open(os.path.join(d, "seg-deadbeefdeadbeef.svs"), "wb") as fh:
        fh.write(b"garbage")
    idx = S.open_index(table, "k")
    assert idx.manifest.version == 1
    assert idx.candidates(S.Eq(0)) == [f"{table}/f0.parquet"]


def test_changed_files_write_the_same_file_table(tmp_path) -> None:
    """A sync's files (its base's decoded table minus removed ids plus new entries) are written from
    the base's columns (the partition column spliced unparsed when nothing was removed), byte for
    byte the table a plain mapping of the same entries gives."""
    from airflow_provider_lineage.sieve.storage import ChangedFiles
    from airflow_provider_lineage.sieve.storage.files import _changed_columns
    from airflow_provider_lineage.sieve.table import FileEntry

    store = IndexStore(str(tmp_path / "idx"))
    root = "/data/t"
    files = {i: FileEntry(f"{root}/p={i % 3}/f{i}.parquet", 100 + i, 1_700_000_000_000_000_000 - 7 * i,
                          {"p": str(i % 3)} if i % 5 else {}, None if i == 4 else i * 10) for i in range(0, 40, 2)}
    ref = store.write_file_table(files, root)
    added = {40: FileEntry(f"{root}/p=9/new.parquet", 5, 3, {"p": "9é"}, None),
             41: FileEntry(f"{root}/é x.parquet", 0, 1_800_000_000_000_000_000, {}, 7)}
    for gone, new in (([], added), ([0, 6, 38], added), ([4], {}), ([], {}), ([], {40: added[40]})):
        changed = ChangedFiles(store.read_file_table(ref, root), gone + [999], new)
        assert _changed_columns(changed, root) is not None  # the columns' path, not an entry per file
        a = store.write_file_table(changed, root)
        plain = {fid: f for fid, f in files.items() if fid not in gone} | new
        b = store.write_file_table(plain, root)
        assert (a.bytes, a.crc32) == (b.bytes, b.crc32), (gone, sorted(new))
        assert store.read_file_table(a, root) == plain == dict(changed)
        assert len(changed) == len(plain) and (6 in changed) == (6 not in gone)
    empty = store.read_file_table(store.write_file_table({}, root), root)
    a = store.write_file_table(ChangedFiles(empty, [], added), root)
    assert store.read_file_table(a, root) == added
    changed = ChangedFiles(store.read_file_table(ref, root), [], added)
    added[40].num_rows = 12  # set by the sync after the mapping was made: written as it is then
    assert store.read_file_table(store.write_file_table(changed, root), root)[40].num_rows == 12
    base = store.read_file_table(ref, root)
    base[2].num_rows = 99  # an entry changed after it was read: the table is written from the entries
    changed = ChangedFiles(base, [], added)
    assert _changed_columns(changed, root) is None
    assert store.read_file_table(store.write_file_table(changed, root), root)[2].num_rows == 99
    with pytest.raises(ValueError, match="live in the base"):
        ChangedFiles(store.read_file_table(ref, root), [], {2: added[40]})


def test_pruning_goes_by_what_each_version_referenced_when_read(table: str) -> None:
    """A store remembers which files each version it read or committed references (pruning after a
    commit then reads no manifest twice); a caller changing a manifest it loaded changes nothing of
    that: pruning never deletes a file a kept version needs, and leaves exactly their files."""
    store = IndexStore(_idx_dir(table))
    for i in range(5):
        write_file(f"{table}/m{i}.parquet", [3000 + i])
        S.sync(None, table, "k")
        m = store.load_manifest()
        m.segment_list, m.packs, m.deltas, m.file_table = None, [], [], None  # a caller's change
        store.prune(3)
    assert store.versions() == [4, 5, 6]
    referenced = {store.manifest_name(v) for v in store.versions()}
    for v in store.versions():
        referenced |= IndexStore(store.path).load_manifest(v).referenced()
    assert set(os.listdir(store.path)) == referenced
    S.open_index(table, "k").verify()
    assert S.open_index(table, "k").candidates(S.Eq(3004)) == [f"{table}/m4.parquet"]


def test_keep_last_versions_and_delete_unreferenced(table: str) -> None:
    for i in range(5):
        write_file(f"{table}/n{i}.parquet", [1000 + i])
        S.sync(None, table, "k")
    store = IndexStore(_idx_dir(table))
    assert store.versions() == [4, 5, 6]
    referenced: set[str] = set()
    for v in store.versions():
        m = store.load_manifest(v)
        referenced |= m.referenced() | {s.file.name for s in store.read_segment_list(m.segment_list)}
        referenced.add(store.manifest_name(v))
    assert set(os.listdir(store.path)) == referenced


def test_manifest_names_its_packs_and_pruning_trusts_them(table: str) -> None:
    """Each manifest lists the packs of its segment list (pruning reads no segment list); a manifest
    without that list (an older writer) is pruned from its segment list as before."""
    import json
    import zlib

    store = IndexStore(_idx_dir(table))
    m = store.load_manifest()
    assert m.packs == sorted({s.file.name for s in store.read_segment_list(m.segment_list)})
    assert set(m.packs) <= m.referenced()
    path = os.path.join(store.path, store.manifest_name(1))  # as an older writer left it
    with open(path) as fh:
        body = json.loads(fh.read())
    del body["packs"], body["checksum"]
    body["checksum"] = zlib.crc32(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
    with open(path, "w") as fh:
        fh.write(json.dumps(body))
    assert IndexStore(store.path).load_manifest(1).packs is None
    for i in range(4):
        write_file(f"{table}/more{i}.parquet", [6000 + i])
        S.sync(None, table, "k")
    store = IndexStore(store.path)
    assert store.versions() == [3, 4, 5]
    referenced = {store.manifest_name(v) for v in store.versions()}
    for v in store.versions():
        referenced |= store.load_manifest(v).referenced()
    assert set(os.listdir(store.path)) == referenced  # version 1's packs went with it
    idx = S.open_index(table, "k")
    idx.verify()
    assert idx.candidates(S.Eq(6003)) == [f"{table}/more3.parquet"]


def test_old_format_version_is_refused_clearly(table: str) -> None:
    import struct
    import zlib

    from airflow_provider_lineage.sieve.codec import seal, unseal
    from airflow_provider_lineage.sieve.errors import IndexUnavailable

    body = bytearray(seal(b"SVS1", b"payload"))[:-4]
    body[4] = 1  # a format-1 file, correctly checksummed
    old = bytes(body) + struct.pack(">I", zlib.crc32(bytes(body)))
    with pytest.raises(IndexUnavailable, match="format version 1.*rebuild"):
        unseal(b"SVS1", old, "seg-x.svs")
    # A format-1 manifest (file list inline) is refused too, so readers fall back to a full read.
    path = os.path.join(_idx_dir(table), "manifest-00000001.json")
    import json

    with open(path) as fh:
        doc = json.loads(fh.read())
    doc.pop("checksum")
    doc["format_version"] = 1
    canon = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    doc["checksum"] = zlib.crc32(canon.encode())
    with open(path, "w") as fh:
        json.dump(doc, fh)
    with pytest.raises(IndexUnavailable, match="v1.*rebuild"):
        S.open_index(table, "k")
    assert S.sync(None, table, "k").action == "build"
    assert S.open_index(table, "k").candidates(S.Eq(0)) == [f"{table}/f0.parquet"]


def test_file_table_roundtrip(tmp_path) -> None:
    from airflow_provider_lineage.sieve.table import FileEntry

    store = IndexStore(str(tmp_path / "idx"))
    root = "/data/t"
    files = {0: FileEntry(f"{root}/p=1/a b.parquet", 10, 1_700_000_000_123_456_789, {"p": "1"}, 5),
             3: FileEntry(f"{root}/é.parquet", 0, 5, {}, None),
             7: FileEntry(f"{root}/z.parquet", 2**40, 1_600_000_000_000_000_000, {}, 0)}
    ref = store.write_file_table(files, root)
    assert store.read_file_table(ref, root) == files
    assert store.read_file_table(store.write_file_table({}, root), root) == {}


def test_segment_pages_answer_like_the_whole_segment(tmp_path) -> None:
    """A segment of many blocks is stored in pages (some blocks larger than a page): every point and
    range answers as the decoded segment does, a point reads one page, and the round trip is exact."""
    import numpy as np

    from airflow_provider_lineage.sieve import storage
    from airflow_provider_lineage.sieve.model import Segment

    rng = np.random.default_rng(7)
    triples = []
    for b in range(900):
        n = 3000 if b in (5, 400) else int(rng.integers(0, 12))  # two blocks larger than a page
        for f in sorted(rng.choice(5000, size=n, replace=False).tolist()):
            triples.append((b, f, int(rng.integers(1, 4))))
    blk, fid, cnt = (np.asarray(c, np.uint32) for c in zip(*triples))
    seg = Segment(1000, 1000 + 900 * 3 - 1, 3, 900, blk, fid, cnt, 2000,
                  np.asarray([30, 600], np.int64), np.asarray([4, 2], np.int64))
    store = IndexStore(str(tmp_path / "idx"))
    ref = store.write_segment(seg)
    paged = store.open_segment(ref)
    assert len(paged.page_first) > 5
    back = store.read_segment(ref)
    for a in ("blk", "fid", "cnt", "hole_at", "hole_len"):
        assert np.array_equal(getattr(back, a), getattr(seg, a)), a
    assert (back.s_min, back.s_max, back.b_size, back.b_count, back.n_keys) == (1000, 3699, 3, 900, 2000)
    for lo in [990, 1000, 1015, 1031, 1032, 1600, 1800, 2200, 3699, 3700, *rng.integers(1000, 3700, 40).tolist()]:
        for width in (0, 1, 7, 300):
            hi = lo + width
            fresh = store.open_segment(ref)
            assert np.array_equal(fresh.fids_for_range(lo, hi), seg.fids_for_range(lo, hi)), (lo, hi)
            if width == 0:
                assert fresh.pages_read <= 1
    assert storage.PAGE_TRIPLES < 3000


@pytest.mark.parametrize("base", [-50, (1 << 62) + 5, -(1 << 63) + 1])
def test_segment_list_roundtrip(tmp_path, base: int) -> None:
    """The columnar segment list gives back every field, for no segment, empty location sets and
    keys beyond int64 deltas (string keys use the whole 64-bit space)."""
    import numpy as np

    from airflow_provider_lineage.sieve.storage import FileRef, SegmentMeta, segment_files

    rng = np.random.default_rng(base & 0xFFFF)
    store = IndexStore(str(tmp_path / "idx"))
    assert IndexStore(store.path).read_segment_list(store.write_segment_list([])) == []  # a new store decodes
    metas, k = [], base
    for i in range(40):
        lo, hi = k, k + int(rng.integers(0, 1 << 20))
        k = hi + 1 + int(rng.integers(0, 5))
        locs = np.unique(rng.integers(0, 70_000, int(rng.integers(0, 90)))).astype(np.uint32)
        metas.append(SegmentMeta(lo, hi, int(rng.integers(1, 1 << 40)), int(rng.integers(1, 5000)), 7, 3,
                                 int(rng.integers(1, 9999)), FileRef(f"seg-{i:04x}.svs", 99 + i, 2**32 - 1 - i, i),
                                 locs))
    metas[3].b_size = 1 << 64  # one block over the whole 64-bit key space
    for i in (0, 5, 6, 39):  # empty sets first, in a row and last
        metas[i].locations = np.empty(0, np.uint32)
    for i in (1, 2, 17, 38):  # full files: a few segments, next to each other too
        metas[i].full = metas[i].locations[::2].copy()
    ref = store.write_segment_list(metas)
    back = IndexStore(store.path).read_segment_list(ref)
    lazy = IndexStore(store.path).segment_list(ref)  # what an open uses: entries built on access
    assert len(lazy) == 40 and lazy.s_min == [m.s_min for m in metas]
    assert segment_files(lazy) == segment_files(metas) == [m.file for m in metas]
    for got in (back, list(lazy), [lazy[i - 40] for i in range(40)], lazy[0:20] + lazy[20:]):
        for a, b in zip(metas, got, strict=True):
            assert (a.s_min, a.s_max, a.b_size, a.b_count, a.budget, a.used, a.n_keys, a.file) == \
                (b.s_min, b.s_max, b.b_size, b.b_count, b.budget, b.used, b.n_keys, b.file)
            assert a.locations.tolist() == b.locations.tolist() and a.full.tolist() == b.full.tolist()
    with pytest.raises(IndexError):
        lazy[40]
    rewritten = IndexStore(store.path).write_segment_list(back)  # a list read back keeps its full files
    assert [m.full.tolist() for m in IndexStore(store.path).read_segment_list(rewritten)] == \
        [m.full.tolist() for m in metas]


def test_format_5_index_is_read_and_synced_to_format_6(tmp_path) -> None:
    """An index written before full files (manifest v5, segment list SVL5) still answers, and its
    next sync writes format 6."""
    import json
    import zlib

    from airflow_provider_lineage.sieve import storage
    from airflow_provider_lineage.sieve.codec import Reader, seal, unseal

    root = str(tmp_path / "t")
    for i in range(4):
        write_file(f"{root}/f{i}.parquet", list(range(i * 10, i * 10 + 15)))
    S.build(None, root, "k", error_bound=2, max_segment_keys=8)
    folder = _idx_dir(root)
    path = os.path.join(folder, "manifest-00000001.json")
    with open(path) as fh:
        doc = json.load(fh)
    ref = doc["segment_list"]
    with open(os.path.join(folder, ref["name"]), "rb") as fh:
        payload = unseal(b"SVL6", fh.read(), ref["name"])
    r = Reader(payload)  # the format-5 columns are the format-6 list without its last two
    r.uvarint()
    r.keys(), r.keys()
    for _ in storage.META_INTS:
        storage.segments._read_big_uints(r)
    r.blob(), r.uints(), r.uints()
    old = seal(b"SVL5", payload[:r.pos])
    with open(os.path.join(folder, "segments-format5.svl"), "wb") as fh:
        fh.write(old)
    doc.pop("checksum")
    doc["format_version"] = 5
    doc["segment_list"] = {**ref, "name": "segments-format5.svl", "bytes": len(old), "crc32": zlib.crc32(old)}
    doc["checksum"] = zlib.crc32(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode())
    with open(path, "w") as fh:
        json.dump(doc, fh)
    idx = S.open_index(root, "k")
    assert idx.store.segment_list(idx.manifest.segment_list) is not None
    assert all(len(m.full) == 0 for m in idx.metas)
    assert idx.candidates(S.Eq(12)) == [f"{root}/f0.parquet", f"{root}/f1.parquet"]
    write_file(f"{root}/g.parquet", list(range(45)))  # every key: full files where it can
    assert S.sync(None, root, "k").action == "sync"
    with open(os.path.join(folder, "manifest-00000002.json")) as fh:
        assert json.load(fh)["format_version"] == storage.MANIFEST_VERSION == 6
    assert S.open_index(root, "k").candidates(S.Eq(44)) == [f"{root}/f3.parquet", f"{root}/g.parquet"]


def _segment_packs(root: str) -> list[str]:
    return sorted(n for n in os.listdir(_idx_dir(root)) if n.startswith("seg-"))


def test_segments_share_one_pack_per_write_and_sparse_packs_are_repacked(tmp_path) -> None:
    """A build writes its segments into one pack; updates that rewrite a few segments write a new
    pack each, and packs left mostly dead are copied out of, so the folder stays small however many
    updates ran, while every answer stays a superset of the exact one."""
    from .helpers import exact_files, write_layout

    root = str(tmp_path / "t")
    layout = write_layout(root, [list(range(i * 20, i * 20 + 20)) for i in range(30)])
    stats = S.build(None, root, "k")
    assert stats.segments >= 20 and len(_segment_packs(root)) == 1
    for step in range(40):  # each append touches one segment: one small pack per sync
        key = (step * 7919) % 600
        path = f"{root}/a{step}.parquet"
        write_file(path, [key])
        layout[path] = [key]
        S.sync(None, root, "k")
    idx = S.open_index(root, "k")
    idx.verify()
    live = {m.file.name for m in idx.metas}
    assert set(_segment_packs(root)) <= live | _names_of_kept_versions(root)
    from airflow_provider_lineage.sieve.storage import MAX_SMALL_PACKS

    assert len(live) <= MAX_SMALL_PACKS + 1, f"{len(live)} packs alive for {len(idx.metas)} segments"
    assert len(_segment_packs(root)) <= 3 * (MAX_SMALL_PACKS + 1)  # kept versions' packs, at most
    for lo in range(-5, 610, 13):
        want = exact_files(layout, lo, lo + 3)
        assert want <= set(idx.candidates(S.Range(lo, lo + 3)))


def _names_of_kept_versions(root: str) -> set[str]:
    store = IndexStore(_idx_dir(root))
    names: set[str] = set()
    for v in store.versions():
        names |= {s.file.name for s in store.read_segment_list(store.load_manifest(v).segment_list)}
    return names


def test_small_pack_limit_splits_packs_and_reads_unflushed_segments(tmp_path, monkeypatch) -> None:
    """A pack is written out when it reaches PACK_BYTES; segments still in the open pack are read
    from memory (a cow sync that folds old merge-on-read deltas re-reads what it just wrote)."""
    from airflow_provider_lineage.sieve import storage

    from .helpers import exact_files, write_layout

    monkeypatch.setattr(storage.segments, "PACK_BYTES", 64)
    root = str(tmp_path / "t")
    layout = write_layout(root, [list(range(i * 20, i * 20 + 20)) for i in range(12)])
    S.build(None, root, "k", mode="mor")
    assert len(_segment_packs(root)) > 3
    write_file(f"{root}/x.parquet", [5, 105, 205])
    layout[f"{root}/x.parquet"] = [5, 105, 205]
    S.sync(None, root, "k")  # a delta
    store = IndexStore(_idx_dir(root))
    m = store.load_manifest()
    m.mode = "cow"  # switch: the next sync folds the delta into segments written in the same pass
    write_file(f"{root}/y.parquet", [7, 307])
    layout[f"{root}/y.parquet"] = [7, 307]
    from airflow_provider_lineage.sieve.sync import _update

    store.commit(_update(store, m, [f for f in S.list_table_files(root) if f.path.endswith("y.parquet")], [],
                         S.SyncReport(table=root, column="k", mode="cow", version=0, action="sync")), m.version)
    idx = S.open_index(root, "k")
    idx.verify()
    assert not idx.manifest.deltas
    for k in (5, 7, 105, 205, 307, 150):
        assert exact_files(layout, k, k) <= set(idx.candidates(S.Eq(k)))


def _sync_in_child(root: str) -> None:
    S.sync(None, root, "k")


def test_a_forked_child_commits_with_its_own_fsync_threads(table: str) -> None:
    """The fsync thread pool lives per process: a child forked after the parent committed (an
    Airflow task runner forks) must not wait on the parent's threads, which do not exist in it."""
    import multiprocessing

    write_file(f"{table}/more.parquet", [7, 8])
    S.sync(None, table, "k")  # the parent's pool exists now
    write_file(f"{table}/more2.parquet", [9])
    child = multiprocessing.get_context("fork").Process(target=_sync_in_child, args=(table,))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert f"{table}/more2.parquet" in S.open_index(table, "k").candidates(S.Eq(9))


# ---- file table formats: SVF1 (no footer checksums) and SVF2 ----------------------------------------------
def _file_table_magic(store: IndexStore) -> bytes:
    m = store.load_manifest()
    with open(os.path.join(store.path, m.file_table.name), "rb") as fh:
        return fh.read(4)


def test_file_table_v1_still_written_and_read_v2_records_footer_checksums(tmp_path) -> None:
    from airflow_provider_lineage.sieve.storage.files import FILE_TABLE_V1, FILE_TABLE_V2
    from airflow_provider_lineage.sieve.table import footer_checksum

    old, new = str(tmp_path / "old"), str(tmp_path / "new")
    for root in (old, new):
        write_file(f"{root}/p=1/a.parquet", [1, 2, 3])
        write_file(f"{root}/p=2/b.parquet", [4, 5])
    S.build(None, old, "k")  # an index without checksums: the format every earlier version wrote and reads
    S.build(None, new, "k", freshness="footer")
    old_store, new_store = IndexStore(f"{old}/_sieve/k"), IndexStore(f"{new}/_sieve/k")
    assert _file_table_magic(old_store) == FILE_TABLE_V1 and _file_table_magic(new_store) == FILE_TABLE_V2
    files = old_store.load_manifest().files
    assert not files.records_footers and all(files[f].footer is None for f in files)
    assert [(e.path, e.partition, e.num_rows) for e in files.values()] == \
        [(f"{old}/p=1/a.parquet", {"p": "1"}, 3), (f"{old}/p=2/b.parquet", {"p": "2"}, 2)]
    files = new_store.load_manifest().files
    assert files.records_footers
    assert [files.footer_of(f) for f in files] == [files[f].footer for f in files] == \
        [footer_checksum(f"{new}/p=1/a.parquet"), footer_checksum(f"{new}/p=2/b.parquet")]
    # syncs keep each format: the stat index stays SVF1, the footer index records the added file's checksum
    for root in (old, new):
        write_file(f"{root}/p=3/c.parquet", [6])
        S.sync(None, root, "k")
    assert _file_table_magic(old_store) == FILE_TABLE_V1 and _file_table_magic(new_store) == FILE_TABLE_V2
    files = new_store.load_manifest().files
    assert sorted(files[f].footer for f in files) == sorted(
        footer_checksum(f"{new}/p={i}/{n}.parquet") for i, n in ((1, "a"), (2, "b"), (3, "c")))
    os.remove(f"{new}/p=1/a.parquet")  # a removal (rows dropped from the decoded columns) keeps them too
    S.sync(None, new, "k")
    files = new_store.load_manifest().files
    assert [files[f].path for f in files] == [f"{new}/p=2/b.parquet", f"{new}/p=3/c.parquet"]
    assert [files[f].footer for f in files] == [footer_checksum(files[f].path) for f in files]


def test_corrupt_v2_file_table_is_unavailable(tmp_path) -> None:
    root = str(tmp_path / "t")
    write_file(f"{root}/a.parquet", [1, 2, 3])
    S.build(None, root, "k", freshness="footer")
    store = IndexStore(f"{root}/_sieve/k")
    path = os.path.join(store.path, store.load_manifest().file_table.name)
    with open(path, "rb") as fh:
        data = bytearray(fh.read())
    data[-6] ^= 0xFF
    with open(path, "wb") as fh:
        fh.write(bytes(data))
    with pytest.raises(S.IndexUnavailable):
        _ = IndexStore(store.path).load_manifest().files
