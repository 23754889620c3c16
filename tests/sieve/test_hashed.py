"""The hashed structure (keys without order): hashes, fingerprints, choice, build, sync, compact,
corruption. Pure Python (pyarrow builds), except one Spark query checking the hashes are Spark's."""
from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve import fingerprints as F
from airflow_provider_lineage.sieve import hashed as H
from airflow_provider_lineage.sieve import hashed_build as HB
from airflow_provider_lineage.sieve.hashing import hash_of_value, xxh64_binary, xxh64_longs
from airflow_provider_lineage.sieve.keys import key_type_from_arrow
from airflow_provider_lineage.sieve.maintain import maintain
from airflow_provider_lineage.sieve.storage import hashed as storage_hashed

from .helpers import write_file


def test_xxh64_reference_vectors() -> None:
    got = [int(xxh64_binary(pa.array([s], pa.binary()), seed=0)[0]) for s in (b"", b"a", b"abc")]
    assert got == [0xEF46DB3751D8E999, 0xD24EC4F1A98C6E5B, 0x44BC2CF5AD770999]
    # lengths across every branch (stripes of 32, lanes of 8 and 4, single bytes) agree with one another
    values = [bytes(range(n)) for n in range(80)]
    batch = xxh64_binary(pa.array(values, pa.binary()))
    one_by_one = [int(xxh64_binary(pa.array([v], pa.binary()))[0]) for v in values]
    assert batch.tolist() == one_by_one
    assert len(set(one_by_one)) == len(values)


def test_hashes_match_spark_xxhash64(spark) -> None:
    """The driver's hashes are Spark's xxhash64 (seed 42) of the bytes / of the key as a bigint."""
    strings = ["", "a", "abc", "C-000123", "x" * 31, "y" * 32, "z" * 45, "é漢字", str(uuid.UUID(int=7))]
    longs = [0, 1, -1, 2**62, -(2**63), 2**63 - 1, 123456789]
    df = spark.createDataFrame([(s, i) for s, i in zip(strings, longs + [0] * (len(strings) - len(longs)),
                                                           strict=True)], "s string, l bigint")
    rows = df.selectExpr("xxhash64(s) AS hs", "xxhash64(l) AS hl").collect()
    mine_s = xxh64_binary(pa.array(strings, pa.string())).view(np.int64).tolist()
    mine_l = xxh64_longs(np.asarray(longs + [0] * (len(strings) - len(longs)), np.int64)).view(np.int64).tolist()
    assert [r.hs for r in rows] == mine_s
    assert [r.hl for r in rows] == mine_l


def test_hash_values_are_pinned() -> None:
    """The hash is part of the stored format: these values must never change (a changed hash
    function needs a new format version, see sieve/hashing.py)."""
    strings = ["", "a", "C-000123", "x" * 31, "y" * 32, "z" * 45, str(uuid.UUID(int=7)), "é漢字"]
    assert [hex(h) for h in xxh64_binary(pa.array(strings)).tolist()] == [
        "0x98b1582b0977e704", "0x88e4fe59adf7b0cc", "0xbccf45bae8cdee3b", "0xe82de6c821df41de",
        "0x483153de51881da4", "0xb2174350585849e9", "0x328c9a2c65a1b94a", "0x6cd56f1ed85c11b"]
    longs = [0, 1, -1, 2**62, -(2**63), 2**63 - 1, 123456789]
    assert [hex(h) for h in xxh64_longs(np.asarray(longs)).tolist()] == [
        "0xb71b47ebda15746c", "0x9ed50fd59358d232", "0x358ae035bfb46fd2", "0x7c88b9a3e4139759",
        "0x88608019c494c1f4", "0xd2f1c616ae7eb306", "0x2f64f8f3490def3f"]
    # whole arrays, in blocks, one length or mixed lengths: the same as value by value
    rng = np.random.default_rng(5)
    many = rng.integers(-(2**63), 2**63 - 1, 70_000, dtype=np.int64)
    assert xxh64_longs(many)[[0, 65_535, 65_536, 69_999]].tolist() == [
        int(xxh64_longs(many[[i]])[0]) for i in (0, 65_535, 65_536, 69_999)]
    ids = [str(uuid.UUID(int=int(x))) for x in rng.integers(0, 2**62, 70_000)]
    got = xxh64_binary(pa.array(ids).slice(3))  # an offset array of one length
    assert got[[0, 65_536, 69_996]].tolist() == [int(xxh64_binary(pa.array([ids[i]]))[0]) for i in (3, 65_539, 69_999)]


def test_bit_packing_and_packed_grouping() -> None:
    rng = np.random.default_rng(4)
    for width in (1, 3, 7, 8, 9, 20, 31, 32, 33, 63, 64):
        for n in (1, 2, 7, 100, 2049):
            top = (1 << width) - 1
            v = rng.integers(0, min(top, 2**63 - 1), n, dtype=np.int64).astype(np.uint64)
            v[0] = np.uint64(top)
            data = F.pack_bits(v, width)
            assert len(data) == (n * width + 7) // 8
            bits = np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little")[:n * width]
            assert bits.reshape(n, width).tolist() == [[(int(x) >> b) & 1 for b in range(width)] for x in v]
            assert F.unpack_bits(data, width, n).tolist() == v.tolist()
    for n, n_files, fp_bits in ((0, 3, None), (1, 1, None), (5000, 7, None), (20_000, 300, 12), (20_000, 1, 12),
                                (20_000, 2, 62)):
        hashes = rng.integers(0, 2**63, n, dtype=np.int64).view(np.uint64) * np.uint64(2)
        hashes = np.concatenate([hashes, hashes[: n // 3]])  # keys in several files, and repeated
        idx = rng.integers(0, n_files, len(hashes)).astype(np.uint64)
        idx_bits = (n_files - 1).bit_length()
        packed = (hashes & ~np.uint64((1 << idx_bits) - 1)) | idx
        g, counts, gi, n_keys, bits = F.group_packed(packed.copy(), idx_bits, fp_bits, 0.01)
        assert bits == (fp_bits or min(F.fingerprint_bits(n_keys, 0.01), 64 - idx_bits))
        want = F.group_pairs(F.fingerprints(hashes, bits), idx.astype(np.uint32))
        assert [x.tolist() for x in (g, counts, gi)] == [x.tolist() for x in want]
        assert n_keys == len(np.unique(hashes >> np.uint64(idx_bits)))


def test_pages_round_trip() -> None:
    rng = np.random.default_rng(3)
    for n in (0, 1, 5, 3000, 20_000):
        hashes = rng.integers(0, 2**63, n, dtype=np.int64).view(np.uint64) * np.uint64(2)
        fids = rng.integers(0, 300, n).astype(np.uint32)
        bits = F.fingerprint_bits(n, 0.01)
        fps = F.fingerprints(hashes, bits)
        g, counts, gf = F.group_pairs(fps, fids)
        pb = F.page_bits_for(len(g), bits)
        pages = F.encode_pages(g, counts, gf, bits, pb, 9)
        assert len(pages) == 1 << pb
        low_bits = bits - pb
        back = []
        for p, data in enumerate(pages):
            page = F.decode_page(data, 9, "t")
            back += [((p << low_bits) | int(lo), page.fids[page.starts[i]:page.starts[i + 1]].tolist())
                     for i, lo in enumerate(page.low.tolist())]
        want = [(int(f), gf[a:b].tolist()) for f, a, b in
                zip(g.tolist(), np.cumsum(counts) - counts, np.cumsum(counts), strict=True)]
        assert back == want


def _table(root: str, per_file: list[list], typ: pa.DataType) -> dict[str, list]:
    layout = {}
    for i, keys in enumerate(per_file):
        path = os.path.join(root, f"part-{i:04d}.parquet")
        write_file(path, keys, typ)
        layout[path] = list(keys)
    return layout


def _exact(layout: dict[str, list], value) -> set[str]:
    return {p for p, ks in layout.items() if value in ks}


KEYS = {
    "int": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "string": (pa.string(), st.text(min_size=0, max_size=40)),
}


@pytest.mark.parametrize("kind", sorted(KEYS))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_false_negative_through_appends_deletes_rewrites(kind, data) -> None:
    typ, values = KEYS[kind]
    pool = data.draw(st.lists(values, min_size=1, max_size=60, unique=True))
    files = data.draw(st.lists(st.lists(st.sampled_from(pool), max_size=25), min_size=1, max_size=6))
    root = tempfile.mkdtemp()
    try:
        layout = _table(root, files, typ)
        S.build(None, root, "k", structure="hashed")
        ops = data.draw(st.lists(st.tuples(st.sampled_from(["append", "delete", "rewrite", "compact"]),
                                           st.integers(0, 99), st.lists(st.sampled_from(pool), max_size=15)),
                                 max_size=5))
        n = len(files)
        for step, (op, i, keys) in enumerate(ops):
            paths = sorted(layout)
            if op == "append":
                path = os.path.join(root, f"part-{n + step:04d}.parquet")
                write_file(path, keys, typ)
                layout[path] = list(keys)
            elif op == "delete" and paths:
                os.unlink(paths[i % len(paths)])
                del layout[paths[i % len(paths)]]
            elif op == "rewrite" and paths:
                write_file(paths[i % len(paths)], keys, typ)
                layout[paths[i % len(paths)]] = list(keys)
            idx = S.open_index(root, "k")  # before the sync: stale-safe answers
            for v in pool[:10]:
                assert _exact(layout, v) <= set(idx.candidates(S.Eq(v))), (v, op)
            if op == "compact":
                S.compact(root, "k")
            else:
                S.sync(None, root, "k")
            idx = S.open_index(root, "k")
            assert idx.manifest.structure == "hashed"
            for v in pool:
                assert _exact(layout, v) <= set(idx.candidates(S.Eq(v), assume_fresh=True)), (v, op)
            wanted = pool[: 1 + i % len(pool)]
            assert set().union(*(_exact(layout, v) for v in wanted)) <= set(idx.candidates(S.In(wanted)))
            assert set(idx.candidates(S.Eq(pool[0]))) <= set(layout)  # never a removed file
        if kind == "int":  # ranges: the files whose min/max overlap, a superset of the exact files
            lo, hi = sorted(data.draw(st.lists(values, min_size=2, max_size=2)))
            want = {p for p, ks in layout.items() if any(lo <= k <= hi for k in ks)}
            assert want <= set(S.open_index(root, "k").candidates(S.Range(lo, hi)))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_false_positive_rate_within_its_bound(tmp_path) -> None:
    rng = np.random.default_rng(11)
    keys = rng.integers(0, 2**62, 40_000, dtype=np.int64)
    per_file = [keys[i::20].tolist() for i in range(20)]
    root = str(tmp_path / "t")
    _table(root, per_file, pa.int64())
    stats = S.build(None, root, "k", structure="hashed", fpp=0.01)
    assert stats.structure == "hashed" and 39_900 <= stats.pairs <= 40_000  # (fingerprint, file): a few merge
    idx = S.open_index(root, "k")
    present = set(keys.tolist())
    absent = [int(v) for v in rng.integers(2**62, 2**63 - 1, 4000, dtype=np.int64) if int(v) not in present]
    hits = sum(1 for v in absent if idx.candidates(S.Eq(v), assume_fresh=True))
    share = hits / len(absent)
    assert share <= 0.01 + 3 * (0.01 / len(absent)) ** 0.5, share
    # present keys: exactly one file each here (a second file only on a fingerprint collision)
    extra = sum(len(idx.candidates(S.Eq(int(v)), assume_fresh=True)) - 1 for v in keys[:2000])
    assert 0 <= extra <= 2000 * 0.01 * 19 / 20 + 10
    assert stats.index_bytes / stats.pairs < 2.0  # bytes per (key, file) pair, every index file included


def test_auto_chooses_by_the_key_distribution(tmp_path) -> None:
    rng = np.random.default_rng(5)
    random_keys = rng.integers(0, 2**40, 30_000)
    _table(str(tmp_path / "random"), [random_keys[i::10].tolist() for i in range(10)], pa.int64())
    _table(str(tmp_path / "sorted"), [list(range(i * 3000, (i + 1) * 3000)) for i in range(10)], pa.int64())
    _table(str(tmp_path / "few"), [rng.integers(0, 50, 3000).tolist() for _ in range(10)], pa.int64())
    phones = [f"{rng.integers(10, 35)}-{rng.integers(100, 999)}-{rng.integers(100, 999)}-{rng.integers(1000, 9999)}"
              for _ in range(20_000)]
    _table(str(tmp_path / "phones"), [phones[i::10] for i in range(10)], pa.string())
    got = {name: S.build(None, str(tmp_path / name), "k").structure for name in ("random", "sorted", "few", "phones")}
    assert got == {"random": "hashed", "sorted": "segments", "few": "segments", "phones": "hashed"}
    idx = S.open_index(str(tmp_path / "phones"), "k")
    layout = {p: phones[i::10] for i, p in enumerate(sorted(idx.manifest.files[f].path for f in idx.manifest.files))}
    ratio = np.mean([len(idx.candidates(S.Eq(p), assume_fresh=True)) / len(_exact(layout, p)) for p in phones[:300]])
    assert ratio <= 1.1  # c_phone-like codes
    kt = key_type_from_arrow(pa.int64(), "k")
    assert hash_of_value(kt, 1.5) is None and hash_of_value(kt, 2) == hash_of_value(kt, 2.0)


def test_structure_option_is_checked(tmp_path) -> None:
    root = str(tmp_path / "t")
    write_file(f"{root}/a.parquet", [1, 2])
    with pytest.raises(S.SieveError, match="structure='bloom' is unknown"):
        S.build(None, root, "k", structure="bloom")
    with pytest.raises(S.SieveError, match="fpp=0.9"):
        S.build(None, root, "k", structure="hashed", fpp=0.9)
    stats = S.build(None, root, "k", structure="hashed")  # a tiny table: forced, still answers
    assert stats.structure == "hashed"
    assert S.open_index(root, "k").candidates(S.Eq(2)) == [f"{root}/a.parquet"]
    assert S.open_index(root, "k").candidates(S.Eq(3)) == []
    assert S.open_index(root, "k").candidates(S.IsNull()) == []


def test_sync_adds_a_small_structure_and_compact_merges(tmp_path) -> None:
    root = str(tmp_path / "t")
    rng = np.random.default_rng(2)
    keys = rng.integers(0, 2**50, 20_000)
    _table(root, [keys[i::20].tolist() for i in range(20)], pa.int64())
    S.build(None, root, "k", structure="hashed", mode="mor")
    write_file(f"{root}/new.parquet", [7, 8, 9, None])
    os.unlink(f"{root}/part-0000.parquet")
    rep = S.sync(None, root, "k")
    assert (rep.files_added, rep.files_removed, rep.deltas_written) == (1, 1, 1)
    idx = S.open_index(root, "k")
    assert len(idx.manifest.hashed) == 2
    assert idx.candidates(S.Eq(8)) == [f"{root}/new.parquet"]
    assert idx.candidates(S.IsNull()) == [f"{root}/new.parquet"]
    assert idx.candidates(S.Eq(int(keys[0]))) == []  # its file was removed
    assert S.open_index(root, "k").stats().structures == 2
    rep = S.compact(root, "k")
    assert rep.action == "compact" and rep.deltas_folded == 1
    idx = S.open_index(root, "k")
    assert len(idx.manifest.hashed) == 1 and idx.manifest.dead_files == []
    assert idx.candidates(S.Eq(8)) == [f"{root}/new.parquet"]
    assert idx.candidates(S.Eq(int(keys[1]))) == [f"{root}/part-0001.parquet"]
    assert S.compact(root, "k").action == "none"


def _hkeys(root: str) -> str:
    d = os.path.join(root, "_sieve", "k")
    return os.path.join(d, next(n for n in os.listdir(d) if n.startswith("hkeys-")))


@pytest.mark.parametrize("damage", ["flip-page", "flip-middle-page", "flip-header", "truncate"])
def test_corrupt_or_truncated_structure_is_never_a_wrong_answer(tmp_path, damage) -> None:
    root = str(tmp_path / "t")
    keys = list(range(0, 50_000, 7))
    _table(root, [keys[i::4] for i in range(4)], pa.int64())
    S.build(None, root, "k", structure="hashed")
    path = _hkeys(root)
    size = os.path.getsize(path)
    idx = S.open_index(root, "k")
    starts = idx.hashed.header(idx.manifest.hashed[0]).page_start
    assert len(starts) > 2  # two pages at least: the first is not the last
    with open(path, "r+b") as fh:
        if damage == "truncate":
            fh.truncate(size - 100)
        else:
            fh.seek(
                {"flip-page": size - 50, "flip-middle-page": (int(starts[0]) + int(starts[1])) // 2}.get(damage, 12)
            )
            b = fh.read(1)
            fh.seek(-1, 1)
            fh.write(bytes([b[0] ^ 0xFF]))
    idx = S.open_index(root, "k")
    raised = None
    for v in keys:  # a lookup answers right or reaches the damaged part and refuses, never wrong
        try:
            got = idx.candidates(S.Eq(v), assume_fresh=True)
        except S.IndexUnavailable as exc:
            raised = exc
            break
        assert f"{root}/part-{keys.index(v) % 4:04d}.parquet" in got
    if damage == "flip-header":  # points read pages only (the page table is in the manifest); ranges need it
        assert raised is None
        with pytest.raises(S.IndexUnavailable, match="rebuild the index"):
            idx.candidates(S.Range(0, 10), assume_fresh=True)
    else:
        assert raised is not None and "rebuild the index" in str(raised)
    cli = subprocess.run([sys.executable, "-m", "airflow_provider_lineage.sieve", "query", root, "k", "--eq",
                          str(keys[-1])], check=False, capture_output=True, text=True)
    # the CLI either answers from an undamaged page or refuses with one clear line; never a wrong answer
    assert (cli.returncode == 0 and len(cli.stdout.splitlines()) == 1) or (
        cli.returncode == 2 and cli.stdout == "" and "rebuild the index" in cli.stderr), cli
    assert S.maintenance_status(root, "k").recommendation == "rebuild"
    if damage == "flip-middle-page":  # a sync checks the header and last page only: a page in the middle is left to
        assert S.sync(None, root, "k").action == "none"  # the readers (above) and maintenance_status
        assert S.maintenance_status(root, "k", full_verify=False).recommendation == "none"  # the watcher's repeats
        assert S.maintenance_status(root, "k").recommendation == "rebuild"
        rep = maintain(None, root, "k")  # what the operator and the sensor's maintain task run
        assert rep.action == "rebuild" and "unusable" in rep.reason
    else:
        with pytest.warns(UserWarning, match="unusable"):
            rep = S.sync(None, root, "k")  # repairs it with the same parameters
        assert rep.action == "build"
    assert S.open_index(root, "k").manifest.structure == "hashed"
    assert S.maintenance_status(root, "k").recommendation == "none"


def test_cli_build_structure_and_query(tmp_path) -> None:
    root = str(tmp_path / "t")
    values = [str(uuid.UUID(int=i * 7919)) for i in range(3000)]
    _table(root, [values[i::3] for i in range(3)], pa.string())
    run = [sys.executable, "-m", "airflow_provider_lineage.sieve"]
    out = subprocess.run([*run, "build", root, "k", "--no-spark", "--structure", "hashed", "--fpp", "0.001"],
                         capture_output=True, text=True, check=True)
    stats = json.loads(out.stdout)
    assert stats["structure"] == "hashed" and stats["fpp"] == 0.001
    q = subprocess.run([*run, "query", root, "k", "--in", f"{values[4]},{values[5]}"], capture_output=True,
                       text=True, check=True)
    assert sorted(json.loads(line)["file"] for line in q.stdout.splitlines()) == [
        f"{root}/part-0001.parquet", f"{root}/part-0002.parquet"]
    assert "2 of 3 files" in q.stderr


def test_hashed_lookup_reads_one_page(tmp_path) -> None:
    root = str(tmp_path / "t")
    rng = np.random.default_rng(9)
    keys = rng.integers(0, 2**60, 60_000)
    _table(root, [keys[i::30].tolist() for i in range(30)], pa.int64())
    S.build(None, root, "k", structure="hashed")
    idx = S.open_index(root, "k")
    assert idx.hashed is not None
    idx.candidates(S.Eq(int(keys[0])), assume_fresh=True)
    assert idx.hashed.pages_read == 1
    header = idx.hashed.header(idx.manifest.hashed[0])
    assert header.page_bits >= 3  # 60,000 keys in pages of about PAGE_KEYS


def test_chooser_thresholds_are_documented() -> None:
    assert 0 < H.CHOOSER_SPAN < 1 and 0 < H.CHOOSER_DISTINCT <= 1


def test_spark_engine_builds_the_same_answers(spark, tmp_path, monkeypatch) -> None:
    """The Spark path (hashes computed by Spark, pages streamed to the driver) answers as the
    pyarrow path: every present key finds its files, NULLs are tracked, ranges use the footers.
    ``engine="auto"`` builds the hashed structure on the driver up to LOCAL_HASHED_MAX_ROWS rows
    (past the segments' LOCAL_BUILD_MAX_ROWS), with Spark above."""
    build_mod = importlib.import_module("airflow_provider_lineage.sieve.build")
    rng = np.random.default_rng(21)
    strings = [str(uuid.UUID(int=int(x))) for x in rng.integers(0, 2**62, 3000)]
    root = str(tmp_path / "t")
    layout = {}
    for i in range(6):
        path = f"{root}/part-{i}.parquet"
        keys = strings[i::6] + strings[(i + 1) % 6::6][:50] + ([None] if i == 2 else [])
        write_file(path, keys, pa.string())
        layout[path] = keys
    ints = str(tmp_path / "i")
    int_layout = _table(ints, [rng.integers(-(2**62), 2**62, 500).tolist() for _ in range(5)], pa.int64())
    for table, lay in ((root, layout), (ints, int_layout)):
        st = S.build(spark, table, "k", structure="hashed", engine="spark", index_path=f"{table}-spark")
        assert st.structure == "hashed"
        idx = S.open_index(table, "k", index_path=f"{table}-spark")
        assert idx.manifest.build_stats["engine"] == "spark"
        for v in {v for ks in lay.values() for v in ks if v is not None}:
            assert _exact(lay, v) <= set(idx.candidates(S.Eq(v), assume_fresh=True)), v
        nulls = {p for p, ks in lay.items() if None in ks}
        assert set(idx.candidates(S.IsNull(), assume_fresh=True)) == nulls
    monkeypatch.setattr(build_mod, "LOCAL_BUILD_MAX_ROWS", 0)
    for limit, engine in ((10**9, "pyarrow"), (0, "spark")):
        monkeypatch.setattr(build_mod, "LOCAL_HASHED_MAX_ROWS", limit)
        S.build(spark, ints, "k", structure="hashed", index_path=f"{ints}-auto{limit}")
        assert S.open_index(ints, "k", index_path=f"{ints}-auto{limit}").manifest.build_stats["engine"] == engine
    idx = S.open_index(ints, "k", index_path=f"{ints}-spark")
    lo, hi = sorted(int_layout[min(int_layout)])[:2]
    assert {min(int_layout)} <= set(idx.candidates(S.Range(lo, hi), assume_fresh=True))


@pytest.mark.parametrize("typ", [pa.int64(), pa.string()])
def test_bucketed_build_writes_the_reference_structure(tmp_path, monkeypatch, typ) -> None:
    """The build groups pairs bucket by bucket and encodes each bucket's pages on its own; the
    structure must be the one a single grouping of all pairs writes (small buckets and pages here,
    so that several buckets each hold whole pages)."""
    from airflow_provider_lineage.sieve.build_pyarrow import arrow_key_type
    from airflow_provider_lineage.sieve.storage import IndexStore
    from airflow_provider_lineage.sieve.table import list_table_files

    monkeypatch.setattr(HB, "BUCKET_PAIRS", 1000)
    monkeypatch.setattr(F, "PAGE_KEYS", 64)
    rng = np.random.default_rng(11)
    keys = rng.integers(-(2**63), 2**63 - 1, 12_000, dtype=np.int64)
    present: set[int] = set()
    for i in range(6):
        part = keys[rng.random(len(keys)) < 0.3]  # each key in about 2 of the 6 files
        present.update(part.tolist())
        write_file(str(tmp_path / "t" / f"part-{i}.parquet"),
                   part.tolist() if typ == pa.int64() else [f"id-{k:x}" for k in part.tolist()], typ)
    files = list_table_files(str(tmp_path / "t"))
    kt = arrow_key_type(files, "k", learn=False)
    got = HB._read_grouped(IndexStore(str(tmp_path / "a")), files, files, range(len(files)), "k", kt, None, 0.01)
    want = HB._read_grouped_wide(IndexStore(str(tmp_path / "b")), files, files, range(len(files)), "k", kt, got[2])
    assert got[0] is not None and want[0] is not None
    assert F.page_bits_for(got[0].keys, got[2]) >= 5  # several pages per bucket, several buckets
    a = (tmp_path / "a" / got[0].name).read_bytes()
    b = (tmp_path / "b" / want[0].name).read_bytes()
    assert a == b and (got[0].keys, got[0].pairs) == (want[0].keys, want[0].pairs)
    assert got[3] == len(present)  # distinct keys


def test_threaded_and_serial_reads_write_the_same_structure(tmp_path, monkeypatch) -> None:
    """Files under SERIAL_READ_BYTES in all (a small sync's) are read in the calling thread, larger
    tables in READ_THREADS threads: the structure is the same byte for byte either way."""
    rng = np.random.default_rng(12)
    keys = rng.integers(-(2**63), 2**63 - 1, 6000, dtype=np.int64)
    for i in range(5):
        write_file(str(tmp_path / "t" / f"part-{i}.parquet"), keys[rng.random(len(keys)) < 0.4].tolist(), pa.int64())
    root = str(tmp_path / "t")
    out = []
    for limit in (1 << 40, 0):  # serial, then threaded
        monkeypatch.setattr(HB, "SERIAL_READ_BYTES", limit)
        shutil.rmtree(os.path.join(root, "_sieve"), ignore_errors=True)
        S.build(None, root, "k", structure="hashed")
        with open(_hkeys(root), "rb") as fh:
            out.append(fh.read())
    assert out[0] == out[1]


def _spill_table(tmp_path, typ, n_files: int = 6, seed: int = 13):
    from airflow_provider_lineage.sieve.build_pyarrow import arrow_key_type
    from airflow_provider_lineage.sieve.table import list_table_files

    rng = np.random.default_rng(seed)
    keys = rng.integers(-(2**63), 2**63 - 1, 12_000, dtype=np.int64)
    for i in range(n_files):
        part = keys[rng.random(len(keys)) < 0.3].tolist()
        write_file(str(tmp_path / "t" / f"part-{i}.parquet"),
                   part if typ == pa.int64() else [f"id-{k:x}" for k in part], typ)
    files = list_table_files(str(tmp_path / "t"))
    return files, arrow_key_type(files, "k", learn=False)


@pytest.mark.parametrize("typ", [pa.int64(), pa.string()])
@pytest.mark.parametrize("page_keys", [64, 1 << 20])  # pages per bucket; fewer pages than buckets
def test_spilled_build_writes_the_in_memory_structure(tmp_path, monkeypatch, typ, page_keys) -> None:
    """Above SPILL_PAIRS pairs the sorted runs go to a temporary directory and buckets are read back
    from it: the structure must be byte for byte the in-memory path's."""
    from airflow_provider_lineage.sieve.storage import IndexStore

    monkeypatch.setattr(HB, "BUCKET_PAIRS", 1000)
    monkeypatch.setattr(F, "PAGE_KEYS", page_keys)
    files, kt = _spill_table(tmp_path, typ)
    out = []
    for name, limit, spool in (("a", 1 << 40, 1 << 40), ("b", 5000, 1 << 40), ("c", 5000, 100)):
        # in memory; runs spilled from the 2nd file on; and the sealed pages spooled to a file from the 1st on
        monkeypatch.setattr(HB, "SPILL_PAIRS", limit)
        monkeypatch.setattr(storage_hashed, "SPOOL_BYTES", spool)
        got = HB._read_grouped(IndexStore(str(tmp_path / name)), files, files, range(len(files)), "k", kt, None, 0.01)
        out.append(((tmp_path / name / got[0].name).read_bytes(), got[0].keys, got[0].pairs, got[2], got[3]))
    assert out[0] == out[1] == out[2]


def test_page_spool_error_names_the_fix_and_writes_no_structure(tmp_path, monkeypatch) -> None:
    from airflow_provider_lineage.sieve.errors import SieveError
    from airflow_provider_lineage.sieve.storage import IndexStore

    files, kt = _spill_table(tmp_path, pa.int64(), n_files=3)
    monkeypatch.setattr(storage_hashed, "SPOOL_BYTES", 100)

    def refuse(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(storage_hashed.tempfile, "TemporaryFile", refuse)
    with pytest.raises(SieveError, match="spool its pages .*No space left on device.*TMPDIR"):
        HB._read_grouped(IndexStore(str(tmp_path / "a")), files, files, range(len(files)), "k", kt, None, 0.01)
    assert not (tmp_path / "a").exists() or not [n for n in os.listdir(tmp_path / "a") if n.startswith("hkeys-")]


def test_spill_directory_is_removed_after_success_and_error(tmp_path, monkeypatch) -> None:
    from airflow_provider_lineage.sieve.errors import SieveError
    from airflow_provider_lineage.sieve.storage import IndexStore

    files, kt = _spill_table(tmp_path, pa.int64(), n_files=3)
    spill_root = tmp_path / "tmp"
    spill_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spill_root))  # what TMPDIR sets
    monkeypatch.setattr(HB, "SPILL_PAIRS", 0)
    made: list[str] = []
    real_open = HB._Spill._open

    def spy(self, name):
        fh = real_open(self, name)
        made.append(self._dir.name)
        return fh

    monkeypatch.setattr(HB._Spill, "_open", spy)
    got = HB._read_grouped(IndexStore(str(tmp_path / "a")), files, files, range(len(files)), "k", kt, None, 0.01)
    assert got[0] is not None and made and all(m.startswith(str(spill_root)) for m in made)
    assert not list(spill_root.iterdir())

    def full(self, fh, a):
        raise SieveError("disk full")  # as _write reports an OSError

    made.clear()
    monkeypatch.setattr(HB._Spill, "_write", full)
    with pytest.raises(SieveError, match="disk full"):
        HB._read_grouped(IndexStore(str(tmp_path / "b")), files, files, range(len(files)), "k", kt, None, 0.01)
    assert made and not list(spill_root.iterdir())


def test_spill_write_error_is_a_clear_error(tmp_path) -> None:
    from airflow_provider_lineage.sieve.errors import SieveError

    class Full:
        def tell(self):
            return 0

        def write(self, view):
            raise OSError(28, "No space left on device")

    with HB._Spill() as spill, pytest.raises(SieveError, match="No space left.*TMPDIR"):
        spill._write(Full(), np.arange(4, dtype=np.uint64))


# ---- keys beyond int64 hash the same in the build and the query (issue 48) -----------------------------
@pytest.mark.slow
def test_keys_beyond_int64_are_found_through_both_apis(spark, tmp_path) -> None:
    """uint64 and DECIMAL(38, 0) keys beyond BIGINT: every structure, built with and without Spark, answers
    as ``spark.read.parquet`` through ``S.read`` and ``format("sieve")`` (the build and the lookup hash
    the same low 64 bits)."""
    import decimal

    import pyarrow.parquet as pq

    from airflow_provider_lineage.sieve import spark as sieve_spark

    sieve_spark.register(spark)
    big = 2**63 + 1
    tables = {
        "x": (pa.uint64(), [[1, 2**64 - 1], [3, 4, big]], [2**64 - 1, big]),
        "g": (pa.decimal128(38, 0), [[decimal.Decimal(big), decimal.Decimal(5)], [decimal.Decimal(7)]], [big, 7]),
    }
    for column, (typ, files, values) in tables.items():
        root = str(tmp_path / column)
        os.makedirs(root)
        for i, keys in enumerate(files):
            pq.write_table(pa.table({column: pa.array(keys, typ)}), f"{root}/f{i}.parquet")
        for session in (None, spark):
            for structure in ("segments", "hashed"):
                shutil.rmtree(f"{root}/_sieve", ignore_errors=True)
                S.build(session, root, column, structure=structure)
                for v in values:
                    where = f"{column} = {v}"
                    expected = sorted(map(repr, spark.read.parquet(root).where(where).collect()))
                    assert expected, where
                    assert sorted(map(repr, S.read(spark, root, column, S.Eq(v)).collect())) == expected, \
                        (session, structure, where)
                    got = spark.read.format("sieve").load(root).where(where)
                    assert sorted(map(repr, got.collect())) == expected, (session, structure, where)
