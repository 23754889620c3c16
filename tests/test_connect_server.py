"""``python -m airflow_provider_lineage.connect_server``: its command line and Spark settings, and locked by default
(issue 47): loopback unless told, no start off loopback without a token, a client without the token refused by a
real server (a real one for the capture: tests/capture/test_connect.py, tests/operators/test_pyspark_connect.py)."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_lineage import connect_server as cs


def test_spark_settings_add_the_plugin_port_and_marker() -> None:
    conf = cs.spark_conf(port=15010, capture_dir="/srv/cap", host="127.0.0.1",
                         conf={"spark.plugins": "com.example.Mine", "spark.executor.memory": "2g"})
    assert conf["spark.plugins"] == f"com.example.Mine,{cs.PLUGIN}"
    assert conf["spark.connect.grpc.binding.port"] == "15010"
    assert conf["spark.connect.grpc.binding.address"] == "127.0.0.1"
    assert conf["spark.airflow_lineage.connectServer"] == "/srv/cap"
    assert conf["spark.executor.memory"] == "2g"


def test_capture_dir_paths_made_absolute_uris_kept(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cs.normalized_capture_dir("cap") == str(tmp_path / "cap")
    assert cs.normalized_capture_dir("s3://bucket/lineage/") == "s3://bucket/lineage"


def test_bad_conf_pair_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="KEY=VALUE"):
        cs.parse_conf(["spark.executor.memory"])
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow_provider_lineage.connect_server",
            "--port",
            "15002",
            "--capture-dir",
            "/tmp/x",
            "--conf",
            "novalue",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2 and "KEY=VALUE" in res.stderr


def _run_server(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != cs.TOKEN_ENV}
    return subprocess.run([sys.executable, "-m", "airflow_provider_lineage.connect_server", "--port", "15002",
                           "--capture-dir", "/tmp/x", *args], env={**base, **(env or {})}, check=False,
                          capture_output=True, text=True, timeout=120)


def _non_loopback_address() -> str | None:
    """An address of this machine that is not loopback (the one a route to the outside would use)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: no packet is sent for a UDP connect
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if cs.is_loopback(address) else address


def test_loopback_is_the_default() -> None:
    args = cs.build_parser().parse_args(["--port", "15002", "--capture-dir", "/tmp/x"])
    assert args.host == "127.0.0.1" and args.token_file is None
    assert cs.spark_conf(port=1, capture_dir="/c", host=args.host, conf={})[
        "spark.connect.grpc.binding.address"] == "127.0.0.1"


def test_what_is_loopback() -> None:
    assert all(cs.is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"))
    assert not any(cs.is_loopback(h) for h in ("0.0.0.0", "::", "", "10.1.2.3", "no-such-host.invalid"))
    if (address := _non_loopback_address()) is not None:
        assert not cs.is_loopback(address)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3"])
def test_non_loopback_bind_without_a_token_refuses_to_start(host: str) -> None:
    res = _run_server("--host", host)
    assert res.returncode == 2, res.stderr[-2000:]
    assert f"refusing to listen on {host}" in res.stderr
    for fix in ("--token-file", "SPARK_CONNECT_AUTHENTICATE_TOKEN", "TLS", "127.0.0.1", "Securing the Connect server"):
        assert fix in res.stderr, fix
    assert "ready" not in res.stderr  # Spark never started


def test_bad_token_files_are_clear_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("\n")
    res = _run_server("--host", "0.0.0.0", "--token-file", str(empty))
    assert res.returncode == 2 and "is empty" in res.stderr
    res = _run_server("--token-file", str(tmp_path / "missing"))
    assert res.returncode == 2 and "cannot read it" in res.stderr
    spaced = tmp_path / "spaced"
    spaced.write_text("two words")
    with pytest.raises(ValueError, match="blanks"):
        cs.read_token(str(spaced))


# -- a real server with a token ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from tests.support.connect import connect_server

    with connect_server(tmp_path_factory.mktemp("connect-token"), token=True) as srv:
        yield srv


def _query(url: str) -> list[tuple[object, ...]]:
    from pyspark.sql import SparkSession

    from airflow_provider_lineage.operators.pyspark import _CONNECT_ENV, _restore_environ

    saved = {k: os.environ.get(k) for k in _CONNECT_ENV}  # pyspark leaves Connect mode set in os.environ
    try:
        spark = SparkSession.builder.remote(url).create()
        try:
            return [tuple(r) for r in spark.range(2).collect()]
        finally:
            spark.stop()
    finally:
        _restore_environ(saved)


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.timeout(900)
class TestWithAToken:
    def test_the_ready_line_prints_the_real_address_and_that_a_token_is_needed(self, token_server) -> None:
        ready = [line for line in token_server.log_text().splitlines() if "ready; capture records go to" in line]
        assert ready and f"sc://127.0.0.1:{token_server.port} " in ready[0], ready
        assert "clients must present the token from --token-file" in ready[0]
        assert token_server.token not in token_server.log_text()  # the token itself is never logged
        assert len(re.findall("airflow-provider-lineage:", ready[0])) == 1  # the log prefix once

    def test_a_client_with_the_token_is_served(self, token_server) -> None:
        assert _query(token_server.url) == [(0,), (1,)]

    @pytest.mark.parametrize("url", ["sc://127.0.0.1:{port}", "sc://localhost:{port}/;token=not-the-token"])
    def test_a_client_without_the_token_is_refused(self, token_server, url: str) -> None:
        with pytest.raises(Exception, match="(?i)unauthenticated|authentication token") as exc:
            _query(url.format(port=token_server.port))
        assert "(0,)" not in str(exc.value)

    def test_only_loopback_listens(self, token_server) -> None:
        address = _non_loopback_address()
        if address is None:
            pytest.skip("this machine has no non-loopback address")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            assert s.connect_ex((address, token_server.port)) != 0


# -- --sieve-pruning: every client session's Parquet scans read the Sieve candidates only ---------------------
def test_sieve_pruning_flag_is_in_the_command_line() -> None:
    parser = cs.build_parser()
    assert parser.parse_args(["--port", "1", "--capture-dir", "c", "--sieve-pruning"]).sieve_pruning is True
    assert parser.parse_args(["--port", "1", "--capture-dir", "c"]).sieve_pruning is False


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sieve_pruning_server_narrows_every_client_session(tmp_path: Path) -> None:
    """``--sieve-pruning``: two Connect clients (two server-side sessions) read an indexed table with a filter; each
    reads only the index's candidates (``inputFiles()``) and gets the table's rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import SparkSession

    from airflow_provider_lineage import sieve as S
    from airflow_provider_lineage.operators.pyspark import _CONNECT_ENV, _restore_environ
    from tests.support.connect import connect_server

    root = tmp_path / "sales"
    root.mkdir()
    for i in range(8):
        keys = list(range(i * 50, i * 50 + 50))
        pq.write_table(pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array([k * 2 for k in keys], pa.int64())}),
                       root / f"part-{i}.parquet")
    S.build(None, str(root), "k")
    candidates = {os.path.normpath(p) for p in S.open_index(str(root), "k").candidates(S.In([7, 333]))}
    assert len(candidates) == 2
    saved = {k: os.environ.get(k) for k in _CONNECT_ENV}  # pyspark leaves Connect mode set in os.environ
    try:
        with connect_server(tmp_path / "srv", args=("--sieve-pruning",)) as srv:
            assert "Sieve pruning on" in srv.log_text()
            for _client in range(2):
                spark = SparkSession.builder.remote(srv.url).create()
                try:
                    df = spark.read.parquet(str(root)).where("k IN (7, 333)")
                    files = {os.path.normpath(p.removeprefix("file:")) for p in df.inputFiles()}
                    rows = sorted(tuple(r) for r in df.collect())
                    unindexed = len(spark.read.parquet(str(root)).where("v = 14").inputFiles())
                finally:
                    spark.stop()
                assert files == candidates
                assert rows == [(7, 14), (333, 666)]
                assert unindexed == 8  # a filter on a column without an index reads every file
    finally:
        _restore_environ(saved)
