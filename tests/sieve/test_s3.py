"""Sieve indexes on an object store: a real S3 API (moto's server) on 127.0.0.1, pyarrow build path.

The server runs in this process on a free loopback port for this module and is always stopped.
Credentials and the endpoint come from the environment (AWS_* variables), as they would in
production; one test passes them as ``storage_options`` instead.
"""
from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator

import pyarrow.fs as pafs
import pytest

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve import fs
from airflow_provider_lineage.sieve import storage as storage_mod
from airflow_provider_lineage.sieve.decisions import check
from airflow_provider_lineage.sieve.errors import CommitConflict
from airflow_provider_lineage.sieve.maintain import maintain
from airflow_provider_lineage.sieve.storage import IndexStore
from tests.support import s3 as s3_support
from tests.support.s3 import free_port as _free_port
from tests.support.s3 import new_bucket, put_parquet

from .helpers import exact_files, race_two_commits

pytest.importorskip("moto.server", reason="moto[server] is in the dev extra: ./dev.sh setup")
boto3 = pytest.importorskip("boto3")

s3_endpoint = s3_support.s3_endpoint  # the module's moto S3 server (a module-scoped fixture)


@pytest.fixture()
def bucket(s3_endpoint: str) -> str:
    return new_bucket()


def delete(uri: str) -> None:
    filesystem, inner = fs.resolve(uri)
    filesystem.delete_file(inner)


@pytest.fixture()
def table(bucket: str) -> tuple[str, dict[str, list[int | None]]]:
    """s3://<bucket>/sales: four files with overlapping key ranges, one with a NULL; index built."""
    root = f"s3://{bucket}/sales"
    layout: dict[str, list[int | None]] = {}
    for i in range(4):
        keys: list[int | None] = list(range(i * 10, i * 10 + 15)) + ([None] if i == 1 else [])
        path = f"{root}/day=2024-01-0{i + 1}/part-{i}.parquet"
        put_parquet(path, keys)
        layout[path] = keys
    S.build(None, root, "k", error_bound=2, max_segment_keys=8)
    return root, layout


def _assert_sound(root: str, layout: dict[str, list[int | None]], **lookup: object) -> None:
    idx = S.open_index(root, "k")
    for lo, hi in [(0, 0), (12, 12), (14, 21), (33, 44), (None, 5), (40, None), (100, 200)]:
        got = set(idx.candidates(S.Range(lo, hi), **lookup))  # type: ignore[arg-type]
        assert exact_files(layout, lo, hi) <= got <= set(layout), (lo, hi)
    assert set(idx.candidates(S.IsNull(), **lookup)) <= set(layout)  # type: ignore[arg-type]


def test_moto_honours_if_none_match(bucket: str) -> None:
    client = boto3.client("s3")
    client.put_object(Bucket=bucket, Key="once", Body=b"1", IfNoneMatch="*")
    with pytest.raises(client.exceptions.ClientError) as err:
        client.put_object(Bucket=bucket, Key="once", Body=b"2", IfNoneMatch="*")
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert err.value.response["Error"]["Code"] == "PreconditionFailed"
    assert client.get_object(Bucket=bucket, Key="once")["Body"].read() == b"1"
    assert fs.put_if_absent(f"s3://{bucket}/twice", b"a") is True
    assert fs.put_if_absent(f"s3://{bucket}/twice", b"b") is False
    # a retried put of the same bytes (its first reply lost) is this writer's own success
    assert fs.put_if_absent(f"s3://{bucket}/twice", b"a") is True


def test_build_and_lookup_on_s3(table: tuple[str, dict[str, list[int | None]]]) -> None:
    root, layout = table
    files = S.list_table_files(root)
    assert [f.path for f in files] == sorted(layout)
    assert files[0].partition == {"day": "2024-01-01"} and files[0].size > 0 and files[0].mtime_ns > 0
    names = set(IndexStore(f"{root}/_sieve/k")._listing())
    assert "manifest-00000001.json" in names and any(n.startswith("seg-") for n in names)
    assert not any(n.startswith(".tmp") for n in names)
    idx = S.open_index(root, "k")
    idx.verify()
    assert idx.candidates(S.Eq(0)) == [f"{root}/day=2024-01-01/part-0.parquet"]
    assert idx.candidates(S.IsNull()) == [f"{root}/day=2024-01-02/part-1.parquet"]
    assert idx.candidates(S.Eq(1000)) == []
    _assert_sound(root, layout)
    # s3a:// (how Spark spells it) and a trailing slash name the same table and index
    assert S.open_index(f"s3a://{root[5:]}/", "k").manifest.version == 1
    assert idx.stats().index_bytes > 0


@pytest.mark.parametrize("mode", ["cow", "mor"])
def test_sync_after_appends_and_deletes(bucket: str, mode: str) -> None:
    root = f"s3://{bucket}/t"
    layout: dict[str, list[int | None]] = {}
    for i in range(3):
        layout[f"{root}/f{i}.parquet"] = list(range(i * 100, i * 100 + 50))
        put_parquet(f"{root}/f{i}.parquet", layout[f"{root}/f{i}.parquet"])
    S.build(None, root, "k", mode=mode)
    # append two files (one inside existing key ranges, one beyond them), delete one
    layout[f"{root}/new-a.parquet"] = [5, 140, 141]
    layout[f"{root}/new-b.parquet"] = [5000, 5001]
    for p in (f"{root}/new-a.parquet", f"{root}/new-b.parquet"):
        put_parquet(p, layout[p])
    delete(f"{root}/f1.parquet")
    del layout[f"{root}/f1.parquet"]
    # before the sync: the stale index still answers soundly (unindexed files are candidates)
    answer = S.open_index(root, "k").lookup(S.Eq(5000))
    assert answer.stale and f"{root}/new-b.parquet" in answer.files
    assert f"{root}/f1.parquet" not in S.open_index(root, "k").candidates(S.Eq(120))
    _assert_sound(root, layout)
    report = S.sync(None, root, "k")
    assert (report.action, report.files_added, report.files_removed, report.version) == ("sync", 2, 1, 2)
    idx = S.open_index(root, "k")
    assert not idx.is_stale()
    assert idx.candidates(S.Eq(5000), assume_fresh=True) == [f"{root}/new-b.parquet"]
    assert set(idx.candidates(S.Eq(5), assume_fresh=True)) == {f"{root}/f0.parquet", f"{root}/new-a.parquet"}
    assert idx.candidates(S.Eq(120), assume_fresh=True) == []
    _assert_sound(root, layout, assume_fresh=True)
    if mode == "mor":
        assert S.compact(root, "k").action == "compact"
        _assert_sound(root, layout, assume_fresh=True)


def test_two_writers_same_base_one_wins_on_s3(table: tuple[str, dict[str, list[int | None]]]) -> None:
    root, _ = table
    store = IndexStore(f"{root}/_sieve/k")
    results = race_two_commits(store.path, store.load_manifest().version)
    assert sorted(r for r in results if isinstance(r, int)) == [2]
    conflicts = [r for r in results if isinstance(r, CommitConflict)]
    assert len(conflicts) == 1 and "retry" in str(conflicts[0])
    assert store.versions() == [1, 2]
    S.open_index(root, "k").verify()


def test_sync_retries_after_losing_a_race_on_s3(table: tuple[str, dict[str, list[int | None]]],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    root, layout = table
    put_parquet(f"{root}/day=2024-01-09/late.parquet", [500, 501])
    layout[f"{root}/day=2024-01-09/late.parquet"] = [500, 501]
    real_put = storage_mod.store.put_if_absent
    calls = {"n": 0}

    def racing_put(path: str, data: bytes) -> bool:  # another writer publishes the same version first
        calls["n"] += 1
        if calls["n"] == 1:
            other = IndexStore(f"{root}/_sieve/k")
            assert other.commit(other.load_manifest(1), 1) == 2  # its own put goes through (call 2)
        return real_put(path, data)

    monkeypatch.setattr(storage_mod.store, "put_if_absent", racing_put)
    report = S.sync(None, root, "k")
    assert report.attempts == 2 and report.version == 3
    assert S.open_index(root, "k").candidates(S.Eq(500)) == [f"{root}/day=2024-01-09/late.parquet"]


def test_crash_mid_commit_leaves_previous_version(table: tuple[str, dict[str, list[int | None]]],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root, layout = table
    put_parquet(f"{root}/day=2024-01-09/late.parquet", [7, 900])
    layout[f"{root}/day=2024-01-09/late.parquet"] = [7, 900]
    store = IndexStore(f"{root}/_sieve/k")
    before = set(store._listing())

    def crash(path: str, data: bytes) -> bool:
        raise KeyboardInterrupt("the writer died before publishing its manifest")

    monkeypatch.setattr(storage_mod.store, "put_if_absent", crash)
    monkeypatch.setattr(IndexStore, "discard_written", lambda self: None)  # a dead process cleans nothing
    with pytest.raises(KeyboardInterrupt):
        S.sync(None, root, "k")
    monkeypatch.undo()
    left = set(store._listing()) - before
    assert left and not any(n.startswith("manifest-") for n in left)  # data files written, no manifest
    assert store.versions() == [1]
    idx = S.open_index(root, "k")
    assert idx.manifest.version == 1
    assert idx.candidates(S.Eq(7)) == sorted([f"{root}/day=2024-01-01/part-0.parquet",
                                              f"{root}/day=2024-01-09/late.parquet"])  # the late file: unindexed
    _assert_sound(root, layout)
    # the next writer commits on top; orphans survive the grace period, then pruning removes them
    assert S.sync(None, root, "k").version == 2
    assert left <= set(store._listing())
    monkeypatch.setattr(storage_mod.store, "ORPHAN_GRACE_SECONDS", -1.0)
    removed = store.prune(3)
    assert left <= set(removed)
    S.open_index(root, "k").verify()
    _assert_sound(root, layout)


def test_corrupt_index_on_s3_means_full_read_then_rebuild(table: tuple[str, dict[str, list[int | None]]]) -> None:
    root, layout = table
    store = IndexStore(f"{root}/_sieve/k")
    seg = min(n for n in store._listing() if n.startswith("seg-"))
    filesystem, inner = fs.resolve(f"{root}/_sieve/k/{seg}")
    with filesystem.open_output_stream(inner) as out:
        out.write(b"garbage")
    with pytest.raises(S.IndexUnavailable, match="corrupt|checksum|valid"):
        S.open_index(root, "k").verify()
    st = S.maintenance_status(root, "k")
    assert st.recommendation == "rebuild"
    assert check(root, "k").action == "rebuild"
    with pytest.warns(UserWarning, match="unusable"):
        assert S.sync(None, root, "k").action == "build"
    S.open_index(root, "k").verify()
    _assert_sound(root, layout)


def test_maintenance_checks_on_s3(table: tuple[str, dict[str, list[int | None]]], bucket: str) -> None:
    root, _ = table
    st = S.maintenance_status(root, "k")
    assert (st.present, st.version, st.recommendation) == (True, 1, "none")
    assert check(root, "k").action == "none"
    put_parquet(f"{root}/day=2024-01-09/late.parquet", [800])
    st = S.maintenance_status(root, "k")
    assert (st.recommendation, st.files_added) == ("sync", 1)
    need = check(root, "k")
    assert (need.action, need.files_added, need.version) == ("sync", 1, 1)
    res = maintain(None, root, "k")  # what the Spark job runs, here on the pyarrow path
    assert (res.status, res.action, res.version, res.table_root) == ("ok", "sync", 2, root)
    assert check(root, "k").action == "none"
    # no table yet: nothing to do; a table but no index: build
    assert check(f"s3://{bucket}/nothing-here", "k").action == "none"
    put_parquet(f"s3://{bucket}/fresh/a.parquet", [1, 2])
    assert check(f"s3://{bucket}/fresh", "k").action == "build"
    assert maintain(None, f"s3://{bucket}/fresh", "k").action == "build"
    assert S.open_index(f"s3://{bucket}/fresh", "k").candidates(S.Eq(2)) == [f"s3://{bucket}/fresh/a.parquet"]


def test_index_path_elsewhere_and_storage_options(table: tuple[str, dict[str, list[int | None]]],
                                                  s3_endpoint: str, bucket: str, tmp_path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = table
    # an index in another bucket prefix, and one on local disk for a table on S3
    for where in (f"s3://{bucket}/indexes/sales_k", str(tmp_path / "local_idx")):
        S.build(None, root, "k", index_path=where)
        assert S.open_index(root, "k", index_path=where).candidates(S.Eq(0)) == [
            f"{root}/day=2024-01-01/part-0.parquet"]
    # credentials and endpoint passed as storage_options instead of the environment
    for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(k)
    opts = {"access_key": "testing", "secret_key": "testing", "region": "us-east-1",
            "endpoint_override": s3_endpoint.split("://")[1], "scheme": "http"}
    assert check(root, "k", storage_options=opts).action == "none"
    assert S.maintenance_status(root, "k", storage_options=opts).present
    with fs.storage_options(opts):
        put_parquet(f"{root}/day=2024-01-09/late.parquet", [77])
        assert S.sync(None, root, "k").version == 2
        assert S.open_index(root, "k").candidates(S.Eq(77)) == [f"{root}/day=2024-01-09/late.parquet"]


def test_unreachable_store_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{_free_port()}")  # nothing listens there
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with fs.storage_options({"retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=1),
                             "connect_timeout": 1, "request_timeout": 1}):
        with pytest.raises(fs.StoreError, match="AWS_ENDPOINT_URL"):
            check("s3://sieve-nowhere/t", "k")
        with pytest.raises(S.IndexUnavailable):  # a reader falls back to a full read on this
            S.open_index("s3://sieve-nowhere/t", "k")


def test_bad_input_is_named() -> None:
    with pytest.raises(S.SieveError, match=r"ftp:// is not supported.*s3://"):
        S.list_table_files("ftp://host/t")
    with pytest.raises(S.SieveError, match="names no bucket"):
        fs.normalize("s3:///t")
    with pytest.raises(fs.UnsafeCommit, match="SIEVE_ALLOW_UNSAFE_COMMITS"):
        fs.check_commit_supported("abfs://c@acct.dfs.core.windows.net/t/_sieve/k")
    with pytest.raises(fs.UnsafeCommit, match="conditional"):
        fs.put_if_absent("hdfs://namenode:8020/t/_sieve/k/manifest-00000001.json", b"{}")


def test_unsafe_store_is_refused_before_any_work(table: tuple[str, dict[str, list[int | None]]],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = table
    with pytest.raises(fs.UnsafeCommit, match="hdfs://.*SIEVE_ALLOW_UNSAFE_COMMITS"):
        S.build(None, root, "k", index_path="hdfs://namenode:8020/indexes/sales_k")
    # the opt-in's check-then-write, exercised on S3 (where the conditional put is used otherwise)
    assert fs._check_then_write(f"{root}/_probe/once", b"1") is True
    assert fs._check_then_write(f"{root}/_probe/once", b"2") is False


def test_missing_boto3_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(S.SieveError, match=r"needs boto3.*pip install"):
        fs.check_commit_supported("s3://b/t/_sieve/k")


def test_unsafe_opt_in_and_registered_put_if_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fs.UNSAFE_COMMITS_ENV, "1")
    fs.check_commit_supported("hdfs://namenode:8020/t/_sieve/k")  # opted in: no error
    monkeypatch.delenv(fs.UNSAFE_COMMITS_ENV)
    seen: list[str] = []
    monkeypatch.setitem(fs._put_if_absent, "abfs", lambda p, d: seen.append(p) or True)
    assert fs.put_if_absent("abfs://c@acct.dfs.core.windows.net/x/manifest-00000001.json", b"{}") is True
    assert seen == ["abfs://c@acct.dfs.core.windows.net/x/manifest-00000001.json"]


def test_gcs_put_if_absent_is_a_generation_match_upload(monkeypatch: pytest.MonkeyPatch) -> None:
    """No GCS emulator here: a stand-in client checks the call (if_generation_match=0) and its outcomes."""
    import sys
    import types

    class PreconditionFailed(Exception):
        pass

    objects: dict[tuple[str, str], bytes] = {}

    class Blob:
        def __init__(self, bucket: str, key: str) -> None:
            self.where = (bucket, key)

        def upload_from_string(self, data: bytes, if_generation_match: int | None = None) -> None:
            assert if_generation_match == 0
            if self.where in objects:
                raise PreconditionFailed("412")
            objects[self.where] = data

    class Client:
        def bucket(self, name: str) -> types.SimpleNamespace:
            return types.SimpleNamespace(blob=lambda key: Blob(name, key))

    google = types.ModuleType("google")
    cloud = types.ModuleType("google.cloud")
    api_core = types.ModuleType("google.api_core")
    exceptions = types.ModuleType("google.api_core.exceptions")
    exceptions.PreconditionFailed = PreconditionFailed  # type: ignore[attr-defined]
    cloud.storage = types.SimpleNamespace(Client=Client)  # type: ignore[attr-defined]
    for name, mod in {"google": google, "google.cloud": cloud, "google.api_core": api_core,
                      "google.api_core.exceptions": exceptions}.items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr(fs, "_holds", lambda path, data: objects.get(("lake", path[len("gs://lake/"):])) == data)
    assert fs.put_if_absent("gs://lake/t/_sieve/k/manifest-00000002.json", b"one") is True
    assert fs.put_if_absent("gs://lake/t/_sieve/k/manifest-00000002.json", b"two") is False
    assert objects == {("lake", "t/_sieve/k/manifest-00000002.json"): b"one"}


def test_cli_on_s3(table: tuple[str, dict[str, list[int | None]]], capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from airflow_provider_lineage.sieve.__main__ import main

    root, _ = table
    put_parquet(f"{root}/day=2024-01-09/late.parquet", [9999])
    assert main(["status", root, "k"]) == 0
    assert json.loads(capsys.readouterr().out)["recommendation"] == "sync"
    assert main(["sync", root, "k", "--no-spark"]) == 0
    capsys.readouterr()
    assert main(["query", root, "k", "--eq", "9999"]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(line)["file"] for line in out.splitlines()] == [f"{root}/day=2024-01-09/late.parquet"]
    assert "1 of 5 files" in err


def test_job_takes_storage_options_from_its_environment(table: tuple[str, dict[str, list[int | None]]],
                                                       s3_endpoint: str, tmp_path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The job the operator submits reads ``$SIEVE_STORAGE_OPTIONS`` (never its command line): with
    no AWS_* credentials or endpoint in the environment it syncs an index on S3, and logs only the
    option names. A malformed value fails every job with the fix named."""
    import json

    from airflow_provider_lineage.sieve import job

    root, _ = table
    put_parquet(f"{root}/day=2024-01-09/late.parquet", [4242])
    for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(k)
    opts = {"access_key": "testing", "secret_key": "testing", "region": "us-east-1",
            "endpoint_override": s3_endpoint.split("://")[1], "scheme": "http"}
    monkeypatch.setenv(fs.STORAGE_OPTIONS_ENV, json.dumps(opts))
    spec = job.spec_to_json([job.IndexJob(table=root, column="k", mode="auto")])
    assert job.main([spec, str(tmp_path / "r.json"), "--no-spark"]) == 0
    (res,) = job.read_results(str(tmp_path / "r.json"))
    assert (res.status, res.action) == ("ok", "sync")
    out = capsys.readouterr().out
    assert "object-store options from $SIEVE_STORAGE_OPTIONS: access_key, endpoint_override, region" in out
    assert "testing" not in out
    with fs.storage_options(opts):
        assert S.open_index(root, "k").candidates(S.Eq(4242)) == [f"{root}/day=2024-01-09/late.parquet"]
    monkeypatch.setenv(fs.STORAGE_OPTIONS_ENV, "{region: eu}")
    assert job.main([spec, str(tmp_path / "r2.json"), "--no-spark"]) == 1
    (res,) = job.read_results(str(tmp_path / "r2.json"))
    assert res.status == "error" and "is not JSON" in res.error and "JSON object" in res.error


def test_spark_paths_for_s3() -> None:
    from airflow_provider_lineage.sieve.table import spark_path, spark_uri, table_path

    assert spark_path("s3://b/t/x.parquet") == "s3a://b/t/x.parquet"
    assert spark_path("/data/t/x.parquet") == "/data/t/x.parquet"
    assert spark_uri("s3://b/t/p=a b/x.parquet") == "s3a://b/t/p=a%20b/x.parquet"
    assert table_path("s3a://b/t/p=a%20b/x.parquet") == "s3://b/t/p=a b/x.parquet"
    assert table_path("gcs://b/t/") == "gs://b/t"


def test_hashed_point_lookup_reads_one_range_of_the_structure(bucket: str) -> None:
    """On S3 a hashed index answers a point from one ranged GET of its structure (after the open's
    listing, manifest and file table); a sync and compact work there too."""
    import logging

    import numpy as np

    rng = np.random.default_rng(8)
    keys = rng.integers(0, 2**62, 30_000)
    root = f"s3://{bucket}/rk"
    for i in range(6):
        put_parquet(f"{root}/part-{i}.parquet", keys[i::6].tolist())
    S.build(None, root, "k", structure="hashed")
    requests: list[str] = []

    class Count(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            requests.append(record.getMessage())

    log = logging.getLogger("werkzeug")
    handler, level = Count(), log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        idx = S.open_index(root, "k")
        opened = len(requests)
        assert idx.candidates(S.Eq(int(keys[7])), assume_fresh=True) == [f"{root}/part-1.parquet"]
        structure = [r for r in requests[opened:] if "hkeys-" in r and "GET" in r]
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
    assert len(structure) == 1, requests
    put_parquet(f"{root}/part-9.parquet", [5, 6])
    assert S.sync(None, root, "k").files_added == 1
    assert S.compact(root, "k").action == "compact"
    assert S.open_index(root, "k").candidates(S.Eq(6)) == [f"{root}/part-9.parquet"]


class _Requests(logging.Handler):
    """The S3 requests moto's server answers (its werkzeug access log: method, path, status)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = re.sub(r"\x1b\[[0-9;]*m", "", record.getMessage())  # werkzeug colours some lines
        m = re.search(r'"(\w+) (\S+) HTTP/[\d.]+" (\d+)', msg)
        if m:
            self.lines.append(f"{m.group(1)} {m.group(2).split('?')[0]} {m.group(3)}")


@contextlib.contextmanager
def _counting() -> Iterator[_Requests]:
    log = logging.getLogger("werkzeug")
    handler, level = _Requests(), log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


def _three_files(root: str) -> dict[str, list[int | None]]:
    """Three Parquet files of 300 distinct keys each under ``root`` (no key in two files)."""
    layout: dict[str, list[int | None]] = {}
    for i in range(3):
        keys: list[int | None] = [(i * 7919 + j * 104729) % 1_000_003 for j in range(300)]
        path = f"{root}/part-{i}.parquet"
        put_parquet(path, keys)
        layout[path] = keys
    return layout


def test_hashed_lookup_reads_one_ranged_get_on_s3(bucket: str) -> None:
    """Issue 30: a point lookup on a hashed index on S3 is ONE request: a ranged GET (206) of one
    page of the structure; the page table travels in the manifest (no header, no HEAD). Opening
    costs the folder listing, the manifest and the file table."""
    root = f"s3://{bucket}/ids"
    layout = _three_files(root)
    assert S.build(None, root, "k", structure="hashed").structure == "hashed"
    with _counting() as opened:
        idx = S.open_index(root, "k")
    assert [line.split()[0] for line in opened.lines] == ["GET", "GET", "GET"], opened.lines  # list, manifest, files
    with _counting() as req:
        got = idx.candidates(S.Eq(layout[f"{root}/part-1.parquet"][5]), assume_fresh=True)
    assert f"{root}/part-1.parquet" in got
    assert len(req.lines) == 1, req.lines
    method, path, status = req.lines[0].split()
    assert method == "GET" and status == "206" and "/_sieve/k/hkeys-" in path, req.lines


def test_retrieval_lookup_reads_one_ranged_get_on_s3(bucket: str) -> None:
    """Issue 30: with the one-file keys in a retrieval structure, a point lookup is ONE ranged GET of
    four consecutive segments (their place comes from the manifest); an absent key reads nothing more
    once its check bits fail."""
    root = f"s3://{bucket}/uids"
    layout = _three_files(root)
    assert S.build(None, root, "k", structure="fuse").fuse_keys == 900
    idx = S.open_index(root, "k")
    with _counting() as req:
        got = idx.candidates(S.Eq(layout[f"{root}/part-2.parquet"][7]), assume_fresh=True)
    assert got == [f"{root}/part-2.parquet"]
    assert len(req.lines) == 1, req.lines
    method, path, status = req.lines[0].split()
    assert method == "GET" and status == "206" and "/_sieve/k/fuse-" in path, req.lines


def test_a_streamed_write_that_fails_leaves_no_object(bucket: str) -> None:
    """A hashed structure is streamed to the store part by part: when the parts fail half way, the
    object that closing the upload may have completed is removed (an object appears whole or not at all)."""
    store = IndexStore(f"s3://{bucket}/idx/k")

    def parts() -> Iterator[bytes]:
        yield b"x" * (6 << 20)  # past one multipart part
        raise S.SieveError("the spool could not be read")  # what PageSink.chunks raises

    with pytest.raises(S.SieveError, match="spool"):
        store._write("hkeys", ".svh", parts())
    assert not [n for n in store._listing() if n.startswith("hkeys-")]
