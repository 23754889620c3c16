"""A Spark Connect server with column-lineage capture for every session.

Usage::

    python -m airflow_provider_lineage.connect_server --port 15002 --capture-dir s3://bucket/lineage \\
        [--master local[4] | spark://host:7077 | yarn] [--host 127.0.0.1] [--token-file PATH]
        [--conf spark.executor.memory=4g ...] [--sieve-pruning]

Locked by default: it listens on 127.0.0.1 unless ``--host`` names another address, and refuses to listen off
loopback without a token (``--token-file PATH``, or Spark's own ``SPARK_CONNECT_AUTHENTICATE_TOKEN`` in the
environment): every Connect client can run Python code as this server's user, with its capture-store
credentials. With a token, Spark Connect 4.x refuses a client that does not present it
(``sc://localhost:PORT/;token=...``; PySpark sends a token only over TLS, or to ``localhost``: off loopback, put
a TLS-terminating gRPC proxy in front). See docs/lineage.md, "Securing the Connect server".

Starts a PySpark driver whose JVM runs the Spark Connect server (``spark.plugins=
org.apache.spark.sql.connect.SparkConnectPlugin``; the ``spark-connect`` jar ships with pip's pyspark 4.x) and
attaches the capture (:mod:`airflow_provider_lineage.capture.connect`) to its SparkContext, so that every
write of every Connect session (batch writes, and each Structured Streaming query once) becomes a capture record
under ``--capture-dir``: ``<token>/`` for a client
that says which Airflow task run it is (``PySparkLineageOperator`` / ``@task.pyspark_lineage`` do), else
``connect-<user>-<session>/``. The Airflow task reads its records back from there, as in cluster deploy mode.

``kill -USR1 <pid>`` logs what the capture holds (open runs, live sessions, executions in flight: 0 when idle).
Runs in the foreground until SIGTERM or SIGINT, then stops cleanly: Spark's listener bus is drained, the
queued records are written, every open run gets its status, the server and the SparkContext stop.
Sessions see ``spark.airflow_lineage.connectServer`` (the capture location), by which a client knows the
server captures. With ``--sieve-pruning`` every client session's Parquet scans of tables with Sieve indexes read
only the files the indexes cannot exclude (:mod:`airflow_provider_lineage.sieve.spark.prune_sessions`; the
sessions' answers are unchanged). Spark 4.0 or later.
"""
from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"
APP_NAME = "airflow-lineage-connect-server"
#: Spark Connect 4.x's pre-shared token: the Spark property, and the environment variable the server (and PySpark's
#: client) read when the property is not set.
TOKEN_PROPERTY = "spark.connect.authenticate.token"
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
DEFAULT_HOST = "127.0.0.1"
#: the Spark property of ``--sieve-pruning`` (the same key the lineage launcher reads)
SIEVE_PRUNING_CONF = "spark.airflow_lineage.sievePruning"

UNSECURED = (
    "connect_server: refusing to listen on {host} (not a loopback address) without a token: any client that reaches "
    "the port could run Python code as this server's user, with its capture-store credentials. Either\n"
    "  * give a token: --token-file PATH (a file holding a long random secret, e.g. "
    "'python -c \"import secrets; print(secrets.token_urlsafe(32))\" > PATH; chmod 600 PATH'), or set "
    "SPARK_CONNECT_AUTHENTICATE_TOKEN; clients connect with sc://HOST:PORT/;token=...;use_ssl=true through a "
    "TLS-terminating gRPC proxy in front of this server (PySpark sends a token only over TLS, or to localhost); the "
    "Airflow connection spark_connect carries the token in its password; or\n"
    "  * keep the default --host 127.0.0.1 and reach the server through the host's own network only (a sidecar or "
    "proxy in the same host or pod, an SSH tunnel).\n"
    "See docs/lineage.md, 'Securing the Connect server'."
)


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one (``127.0.0.0/8``, ``::1``, ``localhost``).

    An empty host, ``0.0.0.0`` / ``::`` (every interface) and a name that does not resolve are not.
    """
    name = host.strip().strip("[]")
    if not name:
        return False
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(name, None)
    except OSError:
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(a.split("%", 1)[0]).is_loopback for a in addresses)


def read_token(path: str) -> str:
    """The token in ``path`` (surrounding blanks dropped); ``ValueError`` naming the problem and the fix."""
    try:
        with open(path, encoding="utf-8") as fh:
            token = fh.read().strip()
    except OSError as exc:
        raise ValueError(f"--token-file {path}: cannot read it ({exc.strerror or exc}); give a readable file "
                         "holding the token") from None
    if not token:
        raise ValueError(f"--token-file {path} is empty: write a long random secret into it, e.g. "
                         "python -c \"import secrets; print(secrets.token_urlsafe(32))\"")
    if any(c.isspace() for c in token) or ";" in token:
        raise ValueError(f"--token-file {path}: the token holds blanks or ';' (it travels in the client's "
                         "sc://...;token=... string): use letters, digits, '-' and '_'")
    return token


def url_host(host: str) -> str:
    """``host`` as it goes in an ``sc://`` URL (an IPv6 address in brackets)."""
    try:
        return f"[{host}]" if ipaddress.ip_address(host.strip("[]")).version == 6 else host
    except ValueError:
        return host


def parse_conf(pairs: Sequence[str]) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{k: v}``; raises ``ValueError`` naming a malformed pair."""
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf {pair!r} is not KEY=VALUE: write e.g. --conf spark.executor.memory=2g")
        conf[key.strip()] = value
    return conf


def normalized_capture_dir(raw: str) -> str:
    """A URI as given; a local path made absolute (the clients' workers must reach the same place)."""
    if "://" in raw or raw.startswith("file:"):
        return raw.rstrip("/")
    return os.path.abspath(raw)


def spark_conf(*, port: int, capture_dir: str, host: str | None, conf: dict[str, str]) -> dict[str, str]:
    """The driver's Spark properties: the user's, plus the Connect plugin, its port and the capture marker."""
    from airflow_provider_lineage.capture.connect import SERVER_CONF

    out = dict(conf)
    plugins = [p for p in out.get("spark.plugins", "").split(",") if p.strip()]
    if PLUGIN not in plugins:
        plugins.append(PLUGIN)
    out["spark.plugins"] = ",".join(plugins)
    out["spark.connect.grpc.binding.port"] = str(port)
    if host:
        out["spark.connect.grpc.binding.address"] = host
    out[SERVER_CONF] = capture_dir
    out.setdefault("spark.app.name", APP_NAME)
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m airflow_provider_lineage.connect_server",
        description="A Spark Connect server that captures the column lineage of every session's writes.")
    parser.add_argument(
        "--port", type=int, required=True, help="the Connect server's gRPC port (Spark's default: 15002)"
    )
    parser.add_argument("--capture-dir", required=True,
                        help="where capture records go: a path or URI (s3://, gs://, abfs://, hdfs://) that the "
                             "Airflow workers also reach")
    parser.add_argument(
        "--master", default=None, help="Spark master (default: spark.master from --conf, else local[*])"
    )
    parser.add_argument("--host", default=DEFAULT_HOST,
                        help="listen address (default: 127.0.0.1, this host only); off loopback a token is required")
    parser.add_argument("--token-file", default=None, metavar="PATH",
                        help="a file holding the token clients must present (sc://HOST:PORT/;token=...); default: "
                             f"Spark's {TOKEN_ENV} environment variable, else no token (loopback only)")
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark property (repeatable)"
    )
    parser.add_argument(
        "--record-limit",
        type=int,
        default=None,
        help="bound (bytes) on one capture record (default 32 MiB); a bigger one is reported, not written",
    )
    parser.add_argument("--sieve-pruning", action="store_true",
                        help="every client session's Parquet scans of tables with Sieve indexes read only the files "
                             "the indexes cannot exclude (sieve.spark.enable for each session; also "
                             "--conf spark.airflow_lineage.sievePruning=true)")
    parser.add_argument("--stop-timeout", type=float, default=60.0,
                        help="seconds to wait at stop for Spark's listener bus and the queued records")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        conf = parse_conf(args.conf)
    except ValueError as exc:
        parser.error(str(exc))
    if not 0 < args.port < 65536:
        parser.error(f"--port {args.port} is not a TCP port (1-65535)")
    host = (args.host or "").strip()
    if not host:
        parser.error("--host is empty: give the address to listen on (default 127.0.0.1)")
    token_source = None
    if args.token_file:
        try:
            os.environ[TOKEN_ENV] = read_token(args.token_file)  # the JVM (started below) inherits it; never argv
        except ValueError as exc:
            print(f"connect_server: {exc}", file=sys.stderr)
            return 2
        token_source = f"--token-file {args.token_file}"
    elif conf.get(TOKEN_PROPERTY):
        token_source = f"--conf {TOKEN_PROPERTY} (visible to every local user in the process list: prefer --token-file)"
    elif os.environ.get(TOKEN_ENV, "").strip():
        token_source = f"the environment ({TOKEN_ENV})"
    if token_source is None and not is_loopback(host):
        print(UNSECURED.format(host=host), file=sys.stderr)
        return 2
    _setup_logging()
    log = logging.getLogger("airflow_provider_lineage.connect_server")
    capture_dir = normalized_capture_dir(args.capture_dir)
    props = spark_conf(port=args.port, capture_dir=capture_dir, host=host, conf=conf)
    sieve_pruning = args.sieve_pruning or props.get(SIEVE_PRUNING_CONF, "").strip().lower() in ("true", "1", "yes")
    if sieve_pruning:
        props[SIEVE_PRUNING_CONF] = "true"
    if args.master:
        props["spark.master"] = args.master
    props.setdefault("spark.master", "local[*]")

    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        log.info("signal %s: stopping the Spark Connect server", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    report = threading.Event()
    signal.signal(signal.SIGUSR1, lambda _s, _f: report.set())  # logged by the main loop below

    from pyspark.sql import SparkSession

    from airflow_provider_lineage.capture.connect import ConnectCapture

    builder = SparkSession.builder
    for key, value in props.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - one clear line instead of a JVM stack
        first = str(exc).strip().splitlines()[0][:500] if str(exc).strip() else repr(exc)
        print(f"connect_server: Spark did not start ({first}); is port {args.port} free and the master "
              f"{props['spark.master']} reachable?", file=sys.stderr)
        return 1
    capture = ConnectCapture(spark, capture_dir, record_limit=args.record_limit)
    try:
        capture.register()
        pruning = _enable_sieve_pruning(spark, log) if sieve_pruning else False
        jvm_handler = _jvm_sigterm_to(stop, spark, log)  # noqa: F841 - kept alive while the server runs
        bound_host, bound_port = _bound_address(spark, host, args.port)
        where = f"sc://{url_host(bound_host)}:{bound_port}"
        if token_source:
            access = (f"clients must present the token from {token_source} (sc://"
                      f"{'localhost' if is_loopback(bound_host) else url_host(bound_host)}:{bound_port}/;token=..."
                      f"{'' if is_loopback(bound_host) else ';use_ssl=true through a TLS proxy'})")
        else:
            access = "no token: this host only"
        if token_source and not is_loopback(bound_host):
            log.warning("listening on %s: the token travels in clear text unless clients reach the server through a "
                        "TLS-terminating proxy (docs/lineage.md, 'Securing the Connect server')", bound_host)
        log.info("Spark Connect server %s (Spark %s, master %s; %s%s) ready; capture records go to %s", where,
                 spark.version, spark.sparkContext.master, access, "; Sieve pruning on" if pruning else "",
                 capture_dir)
        while not stop.wait(1.0):
            if report.is_set():
                report.clear()
                log.info("capture state: %s; %d records written, %d runs ended, %d events dropped",
                         " ".join(f"{k}={v}" for k, v in capture.state_sizes().items()), capture.captured,
                         capture.statuses, capture.dropped)
            if spark.sparkContext._jsc is None or spark.sparkContext._jsc.sc().isStopped():
                log.warning("the SparkContext stopped: the Connect server is gone")
                break
    finally:
        try:
            if not capture.close(args.stop_timeout):
                log.warning(
                    "the capture queue did not drain within %ss: some records may be missing", args.stop_timeout
                )
        except Exception as exc:  # noqa: BLE001 - the JVM went first (SIGKILL, or a signal before the handler was set)
            log.warning("the capture could not drain (%s): records of writes still queued are lost",
                        str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else repr(exc))
        finally:
            try:
                spark.stop()
            except Exception:
                log.debug("spark.stop() after the JVM stopped", exc_info=True)
        log.info("stopped (%d records written, %d runs ended, %d events dropped)", capture.captured,
                 capture.statuses, capture.dropped)
    return 0


def _enable_sieve_pruning(spark: Any, log: logging.Logger) -> bool:
    """Sieve pruning for every client session (``--sieve-pruning``); a failure is logged and the server serves
    unpruned reads (pruning never changes an answer, only how many files a scan reads)."""
    try:
        from airflow_provider_lineage.sieve.spark.prune_sessions import enable_for_new_sessions

        enable_for_new_sessions(spark)
        return True
    except Exception as exc:  # noqa: BLE001 - an optimisation: clients are served without it
        log.warning("--sieve-pruning: Sieve pruning could not be enabled (%s); client sessions read every file "
                    "Spark lists", str(exc).strip().splitlines()[0][:300] if str(exc).strip() else repr(exc))
        return False


def _bound_address(spark: Any, host: str, port: int) -> tuple[str, int]:
    """The address the Connect server really listens on (Spark's ``SparkConnectService``), else the one asked for."""
    try:
        service = spark.sparkContext._jvm.org.apache.spark.sql.connect.service.SparkConnectService
        address = service.bindingAddress()
        bound = str(address.getAddress().getHostAddress()) if address.getAddress() is not None else \
            str(address.getHostString())
        return bound.split("%", 1)[0], int(service.localPort())
    except Exception:  # noqa: BLE001 - another Spark: the address asked for
        return host, port


class _JvmSignalHandler:
    """``sun.misc.SignalHandler`` (py4j): the JVM's SIGTERM asks the server to stop instead of killing the JVM."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop

    def handle(self, _signal: Any) -> None:
        self.stop.set()

    class Java:
        implements: ClassVar[list[str]] = ["sun.misc.SignalHandler"]


def _jvm_sigterm_to(stop: threading.Event, spark: Any, log: logging.Logger) -> Any:
    """A SIGTERM sent to the whole process group (``kill -- -PGID``, systemd's default) reaches the JVM too, whose
    default is to exit at once; with this handler it sets ``stop`` like the driver's, so the stop stays clean."""
    try:
        jvm = spark.sparkContext._jvm
        handler = _JvmSignalHandler(stop)
        jvm.sun.misc.Signal.handle(jvm.sun.misc.Signal("TERM"), handler)
        return handler
    except Exception as exc:  # noqa: BLE001 - a JVM without sun.misc: SIGTERM to the group stops the JVM at once
        log.warning("could not route the JVM's SIGTERM to a clean stop (%r): send SIGTERM to this process only", exc)
        return None


class _PrefixOnce(logging.Formatter):
    """``airflow-provider-lineage:`` in front of a message that does not already start with it (the capture's
    modules log through :func:`.lineage.logs.get_logger`, which adds it)."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        from airflow_provider_lineage.lineage.logs import PREFIX

        if not record.message.startswith(PREFIX + ":"):
            record.message = f"{PREFIX}: {record.message}"
        return super().formatMessage(record)


def _setup_logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_PrefixOnce("%(asctime)s %(levelname)s %(message)s"))
    for name in ("airflow_provider_lineage",):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


if __name__ == "__main__":
    sys.exit(main())
