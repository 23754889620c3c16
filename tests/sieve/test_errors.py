"""Issue 7.5: clear errors (SieveError; CLI one line, exit 2), never a traceback; a corrupt index is
reported by status and repaired by sync; CLI --conf, negative ranges and the stderr summary."""
from __future__ import annotations

import importlib
import json
import os

import pytest

from airflow_provider_lineage import sieve as S

from .helpers import write_file
from .test_cli import run

storage_mod = importlib.import_module("airflow_provider_lineage.sieve.storage")
cli_mod = importlib.import_module("airflow_provider_lineage.sieve.__main__")


def _unwritable_index_path(tmp_path) -> str:
    """A folder no one can create or write: chmod 0555 for users, /sys (EPERM even for root) for root."""
    if os.geteuid() == 0:
        return "/sys/sieve-test-index"
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    return str(d / "idx")


def test_read_only_index_folder_is_a_clear_error(tmp_path) -> None:
    root = str(tmp_path / "t")
    write_file(f"{root}/a.parquet", [1, 2])
    ro = _unwritable_index_path(tmp_path)
    for call in (lambda: S.build(None, root, "k", index_path=ro), lambda: S.sync(None, root, "k", index_path=ro),
                 lambda: S.rebuild(None, root, "k", index_path=ro)):
        with pytest.raises(S.IndexNotWritable, match="cannot write the Sieve index folder .*writable"):
            call()
    for cmd in ("build", "sync", "rebuild"):
        r = run(cmd, root, "k", "--no-spark", "--index-path", ro)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert r.stderr.startswith("sieve: error: cannot write the Sieve index folder") and ro in r.stderr


def test_existing_index_folder_turned_read_only(tmp_path, monkeypatch) -> None:
    root = str(tmp_path / "t")
    write_file(f"{root}/a.parquet", [1, 2])
    S.build(None, root, "k")
    write_file(f"{root}/b.parquet", [3])
    real_open = open

    def ro_open(path, mode="r", *a, **kw):  # what a read-only mount does to writes (root ignores chmod)
        if "w" in mode:
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, mode, *a, **kw)

    for module in (storage_mod.folder, storage_mod.store):  # where the index files are written
        monkeypatch.setattr(module, "open", ro_open, raising=False)
    with pytest.raises(S.IndexNotWritable, match=os.path.join(root, "_sieve", "k")):
        S.sync(None, root, "k")
    with pytest.raises(S.IndexNotWritable):
        S.rebuild(None, root, "k")
    monkeypatch.undo()
    assert S.sync(None, root, "k").files_added == 1


def _corrupt_segments(root: str) -> None:
    d = os.path.join(root, "_sieve", "k")
    for n in os.listdir(d):
        if n.startswith("seg-"):
            with open(os.path.join(d, n), "r+b") as fh:
                fh.seek(10)
                fh.write(b"\xff\xff")


def test_corrupt_segment_status_recommends_rebuild_and_sync_repairs(tmp_path) -> None:
    root = str(tmp_path / "t")
    write_file(f"{root}/a.parquet", list(range(100)))
    write_file(f"{root}/b.parquet", list(range(1000, 1100)))
    S.build(None, root, "k", mode="mor", error_bound=3)
    _corrupt_segments(root)
    st = S.maintenance_status(root, "k")
    assert st.present and st.recommendation == "rebuild" and "checksum" in st.reason
    r = run("status", root, "k")
    assert json.loads(r.stdout)["recommendation"] == "rebuild"
    with pytest.warns(UserWarning, match="unusable"):
        rep = S.sync(None, root, "k")
    assert rep.action == "build"
    idx = S.open_index(root, "k")
    assert idx.manifest.mode == "mor" and idx.manifest.error_bound == 3  # parameters kept
    assert idx.candidates(S.Eq(1050)) == [f"{root}/b.parquet"]
    assert S.maintenance_status(root, "k").recommendation == "none"
    assert S.sync(None, root, "k").action == "none"


def test_read_missing_column_and_build_missing_path(spark, tmp_path) -> None:
    root = str(tmp_path / "t")
    write_file(f"{root}/a.parquet", [1, 2])
    with pytest.raises(S.SieveError, match=r"has no column 'nope'; its columns are k, v"):
        S.read(spark, root, "nope", S.Eq(1))
    S.build(spark, root, "k")
    with pytest.raises(S.SieveError, match=r"has no column 'nope'; its columns are k, v"):
        S.build(spark, root, "nope")
    with pytest.raises(S.SieveError, match="no file of the table has a column 'nope'; its columns are k, v"):
        S.build(None, root, "nope")
    missing = str(tmp_path / "missing")
    for call in (lambda: S.build(spark, missing, "k"), lambda: S.build(None, missing, "k"),
                 lambda: S.sync(None, missing, "k"), lambda: S.read(spark, missing, "k", S.Eq(1))):
        with pytest.raises(S.SieveError, match=f"table path {missing} does not exist"):
            call()
    assert not os.path.exists(missing)
    r = run("build", missing, "k", "--no-spark")
    assert r.returncode == 2 and "does not exist" in r.stderr and r.stderr.count("\n") == 1


def test_cli_negative_ranges_and_summary(tmp_path) -> None:
    root = str(tmp_path / "t")
    write_file(f"{root}/neg.parquet", list(range(-20, -4)))
    write_file(f"{root}/pos.parquet", list(range(20)))
    write_file(f"{root}/far.parquet", [-1000])
    assert run("build", root, "k", "--no-spark").returncode == 0
    for args in (["--range", "-10", "-5"], ["--range=-10,-5"], ["--range", "-10:-5"], ["--range=-10:-5"],
                 ["--range", "-10..-5"]):
        r = run("query", root, "k", *args)
        assert r.returncode == 0, (args, r.stderr)
        assert [json.loads(x)["file"] for x in r.stdout.splitlines()] == [f"{root}/neg.parquet"], args
        assert r.stderr == "sieve: 1 of 3 files (1 from the index, 0 unindexed)\n", args
    r = run("query", root, "k", "--range", "", "-1000")
    assert [json.loads(x)["file"] for x in r.stdout.splitlines()] == [f"{root}/far.parquet"]
    r = run("query", root, "k", "--eq", "-3")
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "sieve: 0 of 3 files (0 from the index, 0 unindexed)\n"
    assert "--range -10 -5" in run("query", "--help").stdout


def test_cli_conf_is_applied_and_checked(spark, tmp_path) -> None:
    root = str(tmp_path / "t")
    write_file(f"{root}/a.parquet", [1, 2])
    key = "spark.sql.files.openCostInBytes"
    before = spark.conf.get(key)
    try:
        assert (
            cli_mod.main(["build", root, "k", "--conf", f"{key}=1234", "--conf", "spark.sql.shuffle.partitions=2"]) == 0
        )
        assert spark.conf.get(key) == "1234"  # the CLI's session got the setting
    finally:
        spark.conf.set(key, before)
    r = run("build", root, "k", "--conf", "novalue")
    assert r.returncode == 2 and "KEY=VALUE" in r.stderr and r.stderr.count("\n") == 1
