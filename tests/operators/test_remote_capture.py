"""A driver that runs elsewhere (issue 31): the records' round trip through a shared location, the bad
cases, and the spark-submit command lines of YARN and Kubernetes cluster deploy mode (neither runs here)."""
from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_lineage.capture import remote
from airflow_provider_lineage.capture.config import STATUS_FILE
from airflow_provider_lineage.lineage.record import CaptureRecord, OutputInfo
from airflow_provider_lineage.operators._lineage import remote_capture as rc
from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator, launcher_path


def _record(seq: int, command: str = "InsertIntoHadoopFsRelationCommand") -> CaptureRecord:
    return CaptureRecord(command=command, status="success", sequence=seq, output=OutputInfo(command=command))


def _write_run(sink: remote.RemoteSink, n: int = 2) -> None:
    for i in range(1, n + 1):
        sink.write(_record(i))
    sink.write_status(json.dumps({"format_version": 1, "captured": n, "problems": []}))


@pytest.fixture
def s3() -> Iterator[tuple[str, str]]:
    from tests.support.s3 import new_bucket, s3_server

    with s3_server() as endpoint:
        yield endpoint, new_bucket()


class TestRoundTrip:
    def test_shared_path(self, tmp_path: Path) -> None:
        cap = rc.RemoteCapture(str(tmp_path / "shared"), task_run="ns/d.t/r1")
        cap.check_reachable()
        _write_run(remote.RemoteSink(cap.capture_dir, cap.token, task_run=cap.task_run))
        got = cap.fetch(str(tmp_path / "local"))
        assert (got.records, got.status_found, got.problems, got.notes) == (2, True, [], [])
        local = Path(got.folder)
        assert sorted(p.name for p in local.iterdir()) == sorted(
            [STATUS_FILE, *(f"{i:06d}-{_id}.json" for i, _id in [])] + [p.name for p in local.glob("*.json")])
        assert [CaptureRecord.from_json(p.read_text()).sequence for p in sorted(local.glob("*.json"))] == [1, 2]
        assert json.loads((local / STATUS_FILE).read_text())["captured"] == 2
        assert cap.cleanup() is None and not Path(cap.folder).exists()

    def test_kept_when_asked(self, tmp_path: Path) -> None:
        cap = rc.RemoteCapture(str(tmp_path), task_run="ns/d.t/r1", keep=True)
        _write_run(remote.RemoteSink(cap.capture_dir, cap.token))
        cap.fetch(str(tmp_path / "local"))
        assert cap.cleanup() is None and Path(cap.folder).is_dir()

    def test_s3_written_with_the_standard_library_read_with_a_connection(self, s3: tuple[str, str], tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
        endpoint, bucket = s3
        # The driver: the S3A settings Spark has, no AWS_* environment, no JVM connector (no session here).
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"):
            monkeypatch.delenv(key)
        spark_conf = {"spark.hadoop.fs.s3a.access.key": "testing", "spark.hadoop.fs.s3a.secret.key": "testing",
                      "spark.hadoop.fs.s3a.endpoint": endpoint}
        monkeypatch.setenv("AIRFLOW_CONN_CAPTURE_S3", json.dumps({
            "conn_type": "aws", "login": "testing", "password": "testing",
            "extra": {"endpoint_url": endpoint, "region_name": "us-east-1"}}))
        cap = rc.RemoteCapture(f"s3://{bucket}/lineage/", task_run="ns/d.t/r1",
                               storage_options=rc.storage_options_from_connection("capture_s3"))
        cap.check_reachable()
        sink = remote.RemoteSink(cap.capture_dir, cap.token, task_run=cap.task_run, get_conf=spark_conf.get)
        assert isinstance(sink.store, remote.S3Store)
        _write_run(sink)
        got = cap.fetch(str(tmp_path / "local"))
        assert (got.records, got.status_found, got.problems) == (2, True, [])
        assert cap.cleanup() is None
        import boto3

        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                              region_name="us-east-1")
        left = client.list_objects_v2(Bucket=bucket, Prefix=f"lineage/{cap.token}").get("Contents", [])
        assert [o["Key"] for o in left if not o["Key"].endswith("/")] == []  # removed after use


class TestBadCases:
    def test_other_runs_half_written_corrupt_oversized_and_skewed(self, tmp_path: Path) -> None:
        shared = str(tmp_path / "shared")
        cap = rc.RemoteCapture(shared, task_run="ns/d.t/r2", limit=4000)
        sink = remote.RemoteSink(shared, cap.token, task_run=cap.task_run, limit=4000)
        _write_run(sink)
        # A previous attempt of the same folder: its own token folder, never listed.
        _write_run(remote.RemoteSink(shared, "run-previous", task_run="ns/d.t/r1"))
        folder = Path(cap.folder)
        # A record of another task run copied into this run's folder: the token inside says so.
        (folder / "000009-x.json").write_text(remote.envelope("record", "run-other", "ns/d.t/r0", _record(9).to_json()))
        (folder / ".tmp-000010-y.json").write_text('{"apl_capture": 1, "kind": "rec')  # the driver was killed mid-write
        (folder / "000011-z.json").write_text('{"apl_capture": 1, "kind": "record", "tok')  # truncated
        (folder / "000012-big.json").write_text("x" * 5000)  # over the limit: never read
        future = dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)
        (folder / "000013-skew.json").write_text(
            remote.envelope("record", cap.token, cap.task_run, _record(13).to_json(), now=future))
        got = cap.fetch(str(tmp_path / "local"))
        assert got.records == 3 and got.status_found
        text = "\n".join(got.problems)
        assert "000009-x.json belongs to another task run (ns/d.t/r0" in text and "not mixed into this run" in text
        assert "half-written capture record" in text and ".tmp-000010-y.json" in text
        assert "unreadable capture record" in text and "000011-z.json" in text
        assert "000012-big.json is 5000 bytes, over capture_record_limit=4000" in text
        assert len(got.problems) == 4
        skew = re.search(r"clock is about \+(\d+) s off", got.notes[0]) if got.notes else None
        assert skew and 7100 < int(skew[1]) <= 7200 and "never by time" in got.notes[0]  # (+7199 on a loaded machine)
        assert sorted(int(p.name[:6]) for p in Path(got.folder).glob("*.json")) == [1, 2, 13]

    def test_driver_refuses_a_record_over_the_limit(self, tmp_path: Path) -> None:
        sink = remote.RemoteSink(str(tmp_path), "tok", limit=300)
        with pytest.raises(remote.RecordTooLarge, match="over the limit of 300 bytes.*capture_record_limit"):
            sink.write(_record(1))
        assert not list(Path(sink.directory).glob("*.json"))

    def test_no_status_means_the_driver_did_not_finish(self, tmp_path: Path) -> None:
        cap = rc.RemoteCapture(str(tmp_path), task_run="ns/d.t/r1")
        remote.RemoteSink(cap.capture_dir, cap.token).write(_record(1))
        got = cap.fetch(str(tmp_path / "local"))
        assert got.records == 1 and "left no status" in got.problems[0] and "records found are used" in got.problems[0]

    def test_unreachable_location(self, s3: tuple[str, str]) -> None:
        cap = rc.RemoteCapture("s3://no-such-bucket-apl/x", task_run="ns/d.t/r1")
        with pytest.raises(OSError, match="not reachable from this worker.*capture_conn_id"):
            cap.check_reachable()
        got = cap.fetch()
        assert got.records == 0 and got.problems

    def test_location_gone_after_the_job(self, tmp_path: Path) -> None:
        cap = rc.RemoteCapture(str(tmp_path / "shared"), task_run="ns/d.t/r1")
        cap.check_reachable()
        _write_run(remote.RemoteSink(cap.capture_dir, cap.token))

        class Gone:
            def get_file_info(self, *_: Any) -> Any:
                raise OSError("Connection refused")

        cap._fs = lambda: (Gone(), "x")  # type: ignore[method-assign]  # the store went away after the job
        got = cap.fetch(str(tmp_path / "local"))
        assert got.records == 0 and not got.status_found
        assert got.problems == [(f"cannot list the capture records at {cap.folder} (Connection refused): no lineage "
                                 "for this run; check that the location is reachable from this worker")]

    def test_driver_clock_behind_is_noted_and_its_records_used(self, tmp_path: Path) -> None:
        cap = rc.RemoteCapture(str(tmp_path), task_run="ns/d.t/r1")
        past = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=30)
        Path(cap.folder).mkdir(parents=True)
        for i in (1, 2):
            (Path(cap.folder) / f"00000{i}-a.json").write_text(
                remote.envelope("record", cap.token, cap.task_run, _record(i).to_json(), now=past))
        got = cap.fetch(str(tmp_path / "local"))
        assert got.records == 2 and got.notes and "clock is about -18" in got.notes[0]


class TestOperatorResultUnchanged:
    """The operator around bad records: the Spark job's own result stays what it was (no Spark: the driver's
    writes are played by a stand-in for spark-submit)."""

    def _run(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, driver: Any) -> Any:
        from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

        app = tmp_path / "job.py"
        app.write_text("")
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_CLUSTER", json.dumps(
            {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}))
        monkeypatch.setattr(SparkSubmitOperator, "execute", lambda self, context: driver(self.conf))
        op = SparkLineageSubmitOperator(task_id="t", conn_id="spark_cluster", application=str(app),
                                        capture_dir=str(tmp_path / "shared"), lineage_emission="off",
                                        asset_alias=None, lineage_xcom_key=None)

        class TI:
            dag_id, task_id, run_id, try_number = "d", "t", "manual__1", 1

            def xcom_push(self, key: str, value: Any) -> None:
                pass

        op.execute({"ti": TI(), "task_instance": TI()})
        return op

    @staticmethod
    def _bad_driver(conf: dict[str, str], *, fail: bool = False) -> None:
        shared, token = conf["spark.airflow_lineage.captureDir"], conf["spark.airflow_lineage.captureToken"]
        sink = remote.RemoteSink(shared, token, task_run=conf["spark.airflow_lineage.taskRun"], limit=4000)
        sink.write(_record(1))
        folder = Path(sink.directory)
        (folder / ".tmp-000002-y.json").write_text('{"apl_capture": 1, "kind": "rec')  # killed mid-write
        (folder / "000003-x.json").write_text(remote.envelope("record", "run-other", "ns/d.t/r0", _record(3).to_json()))
        (folder / "000004-big.json").write_text("x" * (33 * 1024 * 1024))  # over the 32 MiB default limit
        if fail:
            raise RuntimeError("Cannot execute: spark-submit returned 1")  # the job's own failure
        sink.write_status(json.dumps({"format_version": 1, "captured": 1, "problems": []}))

    def test_bad_records_never_fail_a_green_job(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                capfd: pytest.CaptureFixture[str]) -> None:
        op = self._run(monkeypatch, tmp_path, self._bad_driver)  # no exception: the job succeeded
        text = _text(capfd)
        assert "half-written capture record" in text and "belongs to another task run" in text
        assert "over capture_record_limit" in text
        assert [r.sequence for r in op.lineage_result.records] == [1]  # only this run's readable record
        assert not list((tmp_path / "shared").iterdir())  # removed after use

    def test_a_failed_job_fails_with_its_own_error(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        with pytest.raises(RuntimeError, match="spark-submit returned 1"):
            self._run(monkeypatch, tmp_path, lambda conf: self._bad_driver(conf, fail=True))


# -- the operator: what it submits in cluster deploy mode -------------------------------------------------------
def _submitted(monkeypatch: pytest.MonkeyPatch, conn: dict[str, Any], **kwargs: Any) -> tuple[list[str], Any]:
    """Run the operator's execute with spark-submit replaced by recording its command line."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CLUSTER", json.dumps(conn))
    seen: dict[str, Any] = {}

    def fake_execute(self: SparkSubmitOperator, context: Any) -> None:
        seen["cmd"] = self._get_hook()._build_spark_submit_command(self.application)

    monkeypatch.setattr(SparkSubmitOperator, "execute", fake_execute)
    # Building a Kubernetes command line needs no Kubernetes client, but the hook insists on its import.
    from airflow.providers.apache.spark.hooks import spark_submit as hook_module

    monkeypatch.setattr(hook_module, "kube_client", object(), raising=False)
    op = SparkLineageSubmitOperator(task_id="t", conn_id="spark_cluster", **{
        "lineage_emission": "off", "asset_alias": None, "lineage_xcom_key": None, **kwargs})

    class TI:
        dag_id, task_id, run_id, try_number = "d", "t", "manual__1", 1

        def xcom_push(self, key: str, value: Any) -> None:
            seen.setdefault("xcom", {})[key] = value

    op.execute({"ti": TI(), "task_instance": TI()})
    return seen["cmd"], op


def _text(capfd: pytest.CaptureFixture[str]) -> str:
    out = capfd.readouterr()
    return out.out + out.err


def _opt(cmd: list[str], flag: str) -> list[str]:
    return [cmd[i + 1] for i, a in enumerate(cmd) if a == flag]


def _confs(cmd: list[str]) -> dict[str, str]:
    return dict(c.split("=", 1) for c in _opt(cmd, "--conf"))


class TestClusterSubmission:
    def test_yarn(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        app = tmp_path / "job.py"
        app.write_text("")
        cmd, op = _submitted(monkeypatch, {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}},
                             application=str(app), application_args=["a1"], capture_dir=str(tmp_path / "shared"))
        assert _opt(cmd, "--master") == ["yarn"] and _opt(cmd, "--deploy-mode") == ["cluster"]
        (py_files,) = _opt(cmd, "--py-files")
        archive, shipped_app = py_files.split(",")
        assert Path(archive).name.startswith("airflow-provider-lineage-capture-") and shipped_app == str(app)
        assert cmd[-3:] == [launcher_path(), str(app), "a1"]  # the launcher is the primary resource
        conf = _confs(cmd)
        assert conf["spark.airflow_lineage.captureDir"] == str(tmp_path / "shared")
        assert conf["spark.airflow_lineage.captureToken"].startswith("run-")
        assert conf["spark.airflow_lineage.taskRun"].count("/") >= 2  # namespace/name/runId of the task run
        assert "spark.airflow_lineage.emit" not in conf  # records come back: the driver does not emit
        assert op.py_files is None and op.application == str(app)  # the user's arguments are restored

    def test_kubernetes_with_upload_path(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                         capfd: pytest.CaptureFixture[str]) -> None:
        app = tmp_path / "job.py"
        app.write_text("")
        conn = {"conn_type": "spark", "host": "k8s://https://kube.example:6443", "extra": {"deploy-mode": "cluster"}}
        cmd, _ = _submitted(monkeypatch, conn, application=str(app), capture_dir=str(tmp_path / "shared"),
                            conf={"spark.kubernetes.file.upload.path": "s3a://bucket/uploads"})
        assert _opt(cmd, "--master") == ["k8s://https://kube.example:6443"]
        assert _confs(cmd)["spark.kubernetes.file.upload.path"] == "s3a://bucket/uploads"
        assert len(_opt(cmd, "--py-files")[0].split(",")) == 2 and cmd[-2:] == [launcher_path(), str(app)]
        assert "spark.kubernetes.file.upload.path, which is not set" not in _text(capfd)

    def test_kubernetes_without_upload_path_says_what_to_set(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                             capfd: pytest.CaptureFixture[str]) -> None:
        app = tmp_path / "job.py"
        app.write_text("")
        conn = {"conn_type": "spark", "host": "k8s://https://kube.example:6443", "extra": {"deploy-mode": "cluster"}}
        _submitted(monkeypatch, conn, application=str(app), capture_dir=str(tmp_path / "shared"))
        assert "spark.kubernetes.file.upload.path, which is not set: set it" in _text(capfd)

    def test_without_a_shared_location_the_driver_emits_and_the_log_says_what_is_lost(
            self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
        app = tmp_path / "job.py"
        app.write_text("")
        cmd, _ = _submitted(monkeypatch, {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}},
                            application=str(app), lineage_emission="self")
        text = _text(capfd)
        assert "the Column lineage tab stays empty" in text and "capture_dir='s3://bucket/prefix'" in text
        conf = _confs(cmd)
        assert conf["spark.airflow_lineage.emit"] == "true" and "spark.airflow_lineage.captureToken" not in conf
        assert len(_opt(cmd, "--py-files")[0].split(",")) == 2  # shipped all the same

    def test_unreachable_location_falls_back_with_the_reason(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, s3: tuple[str, str], capfd: pytest.CaptureFixture[str]
    ) -> None:
        app = tmp_path / "job.py"
        app.write_text("")
        cmd, _ = _submitted(monkeypatch, {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}},
                            application=str(app), capture_dir="s3://no-such-bucket-apl/lineage",
                            lineage_emission="self")
        text = _text(capfd)
        assert "s3://no-such-bucket-apl/lineage is not reachable from this worker" in text
        assert "falling back to the driver emitting the events itself" in text
        assert _confs(cmd)["spark.airflow_lineage.emit"] == "true"
        assert "testing" not in " ".join(cmd)  # no credential on the command line


class TestPermissions:
    """A worker that runs as another user than the writer (issue 47): said plainly, never 'corrupt'."""

    @staticmethod
    def _fetch_as_nobody(capture_dir: Path, token: str, into: Path) -> rc.FetchResult:
        """The worker's fetch with the file-access rights of user ``nobody`` (the effective uid, restored after):
        as root nothing is refused, and this machine's Python lives where ``nobody`` cannot run it."""
        import os

        if os.geteuid() != 0:
            pytest.skip("reads as another user: needs root to take the rights of 'nobody'")
        cap = rc.RemoteCapture(str(capture_dir), task_run="ns/d.t/r", token=token, keep=True)
        cap.fetch(str(into) + "-warm")  # every lazy import done while the stdlib is reachable
        into.mkdir(mode=0o777)
        into.chmod(0o777)
        os.setegid(65534)
        os.seteuid(65534)
        try:
            return cap.fetch(str(into))
        finally:
            os.seteuid(0)
            os.setegid(0)

    def test_a_private_record_is_named_as_a_permission_problem_and_the_others_are_used(self) -> None:
        import os
        import shutil
        import tempfile

        base = Path(tempfile.mkdtemp(prefix="apl-perm-", dir="/tmp"))
        try:
            base.chmod(0o755)
            token = "run-" + "a" * 32
            old = os.umask(0o022)
            try:
                sink = remote.RemoteSink(str(base / "cap"), token, task_run="ns/d.t/r")
                _write_run(sink, 2)
            finally:
                os.umask(old)
            private = min((base / "cap" / token).glob("000001-*.json"))
            private.chmod(0o600)  # what every record was before issue 47 (tempfile's mode)
            res = self._fetch_as_nobody(base / "cap", token, base / "into")
            assert res.records == 1 and res.status_found  # the readable ones are used
            problems = [p for p in res.problems if private.name in p]
            assert len(problems) == 1 and "permission denied for user nobody" in problems[0], res.problems
            assert "corrupt" not in problems[0]
        finally:
            shutil.rmtree(base, ignore_errors=True)
