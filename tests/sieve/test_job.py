"""sieve.decisions and sieve.maintain (auto decisions, explicit modes, error records) and sieve.job (spec -> results).

Mostly the pyarrow engine (``spark=None``); one run of the job through Spark (``local[2]``)."""
from __future__ import annotations

import json
import os
import threading

import pyarrow as pa
import pytest

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve import job as J
from airflow_provider_lineage.sieve.decisions import Thresholds, check
from airflow_provider_lineage.sieve.maintain import MaintainResult, maintain, maintain_safely

from .helpers import write_file


def _table(tmp_path, n_files: int = 3, name: str = "t") -> str:
    root = str(tmp_path / name)
    for i in range(n_files):
        write_file(f"{root}/part-{i}.parquet", list(range(i * 100, i * 100 + 100)))
    return root


class TestMaintain:
    def test_auto_builds_then_nothing_then_sync(self, tmp_path) -> None:
        root = _table(tmp_path)
        r = maintain(None, root, "k")
        assert (r.action, r.status, r.previous_version) == ("build", "ok", None)
        assert r.version == 1 and r.files == 3 and r.index_bytes > 0 and r.bytes_per_key > 0
        assert r.index_path == os.path.join(root, "_sieve", "k")
        r = maintain(None, root, "k")
        assert r.action == "none" and r.version == 1 and "current" in r.reason
        write_file(f"{root}/part-9.parquet", [5000, 5001])
        r = maintain(None, root, "k")
        assert (r.action, r.files_added, r.previous_version, r.version) == ("sync", 1, 1, 2)
        assert r.segments_created >= 1
        assert S.open_index(root, "k").candidates(S.Eq(5000)) == [f"{root}/part-9.parquet"]
        json.dumps(r.to_dict())
        assert MaintainResult.from_dict(r.to_dict()) == r

    def test_auto_compacts_merge_on_read_deltas_over_threshold(self, tmp_path) -> None:
        root = _table(tmp_path)
        maintain(None, root, "k", mode="build", update_strategy="merge_on_read")
        write_file(f"{root}/part-7.parquet", [7000])
        r = maintain(None, root, "k", thresholds=Thresholds(max_deltas=1))
        assert r.action == "sync" and r.deltas == 1 and r.update_strategy == "mor"
        r = maintain(None, root, "k", thresholds=Thresholds(max_deltas=1))
        assert r.action == "compact" and "1 merge-on-read deltas" in r.reason
        assert r.deltas == 0 and r.deltas_folded == 1

    def test_auto_rebuilds_when_strategy_changes_or_index_corrupt(self, tmp_path) -> None:
        root = _table(tmp_path)
        maintain(None, root, "k")
        r = maintain(None, root, "k", update_strategy="mor")
        assert r.action == "rebuild" and "cow -> mor" in r.reason and r.update_strategy == "mor"
        path = f"{root}/_sieve/k/{S.open_index(root, 'k').metas[0].file.name}"  # a segment of the latest version
        with open(path, "r+b") as fh:
            data = bytearray(fh.read())
            data[len(data) // 2] ^= 0xFF
            fh.seek(0)
            fh.write(bytes(data))
        assert check(root, "k").action == "rebuild"
        r = maintain(None, root, "k")
        assert r.action == "rebuild" and "unusable" in r.reason
        assert S.open_index(root, "k").candidates(S.Eq(150)) == [f"{root}/part-1.parquet"]

    def test_explicit_modes_and_custom_index_path(self, tmp_path) -> None:
        root = _table(tmp_path)
        where = str(tmp_path / "idx" / "k")
        assert maintain(None, root, "k", mode="sync", index_path=where).action == "build"
        assert maintain(None, root, "k", mode="rebuild", index_path=where, error_bound=2).error_bound == 2
        assert maintain(None, root, "k", mode="compact", index_path=where).action == "none"
        assert not os.path.exists(f"{root}/_sieve")

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"mode": "fast"}, "use one of auto"),
            ({"update_strategy": "append"}, "copy_on_write"),
            ({"colour": 3}, "unknown index setting"),
        ],
    )
    def test_bad_arguments_name_the_fix(self, tmp_path, kwargs, match) -> None:
        root = _table(tmp_path, 1)
        with pytest.raises(S.SieveError, match=match):
            maintain(None, root, "k", **kwargs)

    def test_bad_input_becomes_an_error_record(self, tmp_path) -> None:
        root = _table(tmp_path, 1)
        r = maintain_safely(None, str(tmp_path / "nope"), "k")
        assert r.status == "error" and "does not exist" in r.error and "check the table" in r.error
        r = maintain_safely(None, root, "nope")
        assert r.status == "error" and "check the column name" in r.error
        write_file(f"{tmp_path}/s/a.parquet", [1], pa.int64())
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"s": pa.array([0.5])}), f"{tmp_path}/s/b.parquet")  # double: no order-preserving key
        r = maintain_safely(None, f"{tmp_path}/s", "s")
        assert r.status == "error" and r.error_type == "UnsupportedKeyType"
        r = maintain_safely(None, root, "k", mode="compact")
        assert r.status == "error" and "build one first" in r.error

    def test_index_folder_under_a_file_fails_cleanly(self, tmp_path) -> None:
        root = _table(tmp_path, 1)
        (tmp_path / "plain-file").write_text("x")
        r = maintain_safely(None, root, "k", index_path=str(tmp_path / "plain-file" / "k"))
        assert r.status == "error" and r.error_type == "IndexNotWritable" and "index_path=" in r.error

    @pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
    def test_unwritable_index_folder_fails_cleanly(self, tmp_path) -> None:
        root = _table(tmp_path, 1)
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        try:
            r = maintain_safely(None, root, "k", index_path=str(ro / "k"))
        finally:
            ro.chmod(0o755)
        assert r.status == "error" and r.error_type == "IndexNotWritable" and "writable" in r.error

    def test_check_needs_no_spark_and_waits_for_missing_or_empty_tables(self, tmp_path) -> None:
        assert check(str(tmp_path / "later"), "k").action == "none"
        (tmp_path / "empty").mkdir()
        assert check(str(tmp_path / "empty"), "k").action == "none"
        root = _table(tmp_path, 2)
        need = check(root, "k")
        assert need.action == "build" and need.index_path.endswith("_sieve/k")
        maintain(None, root, "k")
        assert check(root, "k").action == "none"
        os.remove(f"{root}/part-1.parquet")
        need = check(root, "k", thresholds=Thresholds(max_budget_fraction=1.0))
        assert need.action in ("sync", "rebuild") and need.files_removed == 1

    def test_two_concurrent_maintainers_never_corrupt_the_index(self, tmp_path) -> None:
        root = _table(tmp_path, 4)
        maintain(None, root, "k")
        for i in range(10, 16):
            write_file(f"{root}/part-{i}.parquet", [i * 1000, i * 1000 + 1])
        results: list[MaintainResult] = []
        barrier = threading.Barrier(2)

        def one() -> None:
            barrier.wait()
            results.append(maintain_safely(None, root, "k", mode="sync"))

        threads = [threading.Thread(target=one) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(r.status == "ok" or r.error_type == "CommitConflict" for r in results), results
        assert any(r.status == "ok" for r in results)
        for r in results:
            if r.status != "ok":
                assert "another task maintains this index" in r.error and "retry" in r.error
        idx = S.open_index(root, "k")
        assert not idx.is_stale()
        idx.verify()
        for i in range(10, 16):
            assert idx.candidates(S.Eq(i * 1000)) == [f"{root}/part-{i}.parquet"]


class TestJob:
    def test_spec_round_trip_and_version_check(self, tmp_path) -> None:
        jobs = [J.IndexJob("/t", "k", options={"error_bound": 1}, thresholds={"max_deltas": 2})]
        loaded, every = J.load_spec(J.spec_to_json(jobs, progress_seconds=5))
        assert loaded == jobs and every == 5
        with pytest.raises(S.SieveError, match="different package versions"):
            J.load_spec(json.dumps({"spec_version": 99, "jobs": []}))
        with pytest.raises(S.SieveError, match="needs a table and a column"):
            J.load_spec(json.dumps({"spec_version": 1, "jobs": [{"table": "/t"}]}))

    def test_main_without_spark_writes_results_and_exit_code(self, tmp_path) -> None:
        root = _table(tmp_path, 2)
        spec = tmp_path / "spec.json"
        spec.write_text(J.spec_to_json([J.IndexJob(root, "k"), J.IndexJob(root, "missing")]))
        out = tmp_path / "out" / "result.json"
        assert J.main([str(spec), str(out), "--no-spark"]) == 1
        data = json.loads(out.read_text())
        assert data["result_version"] == 1 and data["ok"] is False
        good, bad = J.read_results(str(out))
        assert good.status == "ok" and good.action == "build"
        assert bad.status == "error" and "missing" in bad.error

    def test_progress_line_names_the_index(self) -> None:
        p = J.Progress(None, 0)
        p.start("/t.k")
        assert p.line().startswith("sieve-job: /t.k: running for")

    # The script as spark-submit runs it (a file, not a module) with real Spark: tests/operators/test_sieve.py
    # (a build) and tests/test_example_etl.py (builds, then syncs) submit it through SieveIndexOperator.
