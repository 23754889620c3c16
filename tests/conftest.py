"""Shared fixtures: one real local Spark session per test run, sized for a 2-core machine."""
from __future__ import annotations

import atexit
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Airflow reads its configuration at import time, so set it before anything imports Airflow. Every
# test run gets its own AIRFLOW_HOME (never the user's or the demo's ./.airflow, whose state would
# leak into the tests), and the DAGs folder is the checkout's dags/ (dag.test() serialises the DAG
# from that bundle).
_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="apl-airflow-home-"))
atexit.register(shutil.rmtree, _AIRFLOW_HOME, True)
os.environ["AIRFLOW_HOME"] = str(_AIRFLOW_HOME)
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(Path(__file__).resolve().parents[1] / "dags")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Python workers must run this interpreter (with pyarrow/pandas), not whatever python3 is on PATH.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "False")
# py4j logs INFO lines while its connections close at interpreter exit, after pytest has closed the
# streams logging writes to ("--- Logging error ---"); its warnings still show.
logging.getLogger("py4j").setLevel(logging.WARNING)


# The modules that use the example pipelines (the slowest fixtures: several minutes of spark-submits)
# run on one pytest-xdist worker, started first: with one scope per file (``--dist loadfile``) each
# worker that got one of them would run the pipelines again.
EXAMPLE_PIPELINE_MODULES = frozenset({
    "tests/test_cluster.py", "tests/test_dags.py", "tests/test_example_etl.py", "tests/test_marquez_replay.py",
    "tests/plugins/test_api.py"})
_EXAMPLES_SCOPE = "example-pipelines"


# The real Airflow deployment (tests/support/deployment.py: api-server, scheduler, dag-processor,
# triggerer) takes ~30 s to start and a lineage_etl run to warm up, and two of them would fight over
# 2 cores. Every module whose tests use the session fixture ``deployment`` carries
# ``pytestmark = pytest.mark.xdist_group("deployment")`` and is listed here, and the scheduler below
# makes one scope of each group: one worker runs every test of the group and starts the deployment
# once, while the other modules keep their one-scope-per-file (and module-scoped fixtures).
# The controller schedules by node ids alone (it collects nothing), so the groups are named by module
# here; the autouse fixture ``_xdist_group_listed`` fails a test where this table and the marks
# disagree, so a new module with the mark cannot silently start a second deployment on the other worker. (Suffixing node
# ids with ``@group``, as xdist's own ``--dist loadgroup`` does, stopped working under pytest 9.2, whose
# node ids no longer come from ``Node._nodeid``; ``--dist loadgroup`` would also spread the tests of
# unmarked modules one by one over the workers and start their module fixtures twice.)
DEPLOYMENT_GROUP = "deployment"
XDIST_GROUP_MODULES = {
    "tests/deployment/test_concurrency.py": DEPLOYMENT_GROUP,
    "tests/deployment/test_connect_dag.py": DEPLOYMENT_GROUP,
    "tests/deployment/test_deployment.py": DEPLOYMENT_GROUP,
    "tests/deployment/test_start_parsed.py": DEPLOYMENT_GROUP,
    "tests/plugins/test_estate_page.py": DEPLOYMENT_GROUP,
    "tests/plugins/test_page.py": DEPLOYMENT_GROUP,
}


def _scope_of(nodeid: str) -> str | None:
    """The scope a test is scheduled in, when it is not its own module's."""
    module = nodeid.split("::", 1)[0]
    if module in XDIST_GROUP_MODULES:
        return XDIST_GROUP_MODULES[module]
    return _EXAMPLES_SCOPE if module in EXAMPLE_PIPELINE_MODULES else None


def _make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile``, with :data:`XDIST_GROUP_MODULES` and :data:`EXAMPLE_PIPELINE_MODULES` as
    scopes of their own, handed out first."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ExamplesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope_of(nodeid) or super()._split_scope(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            for first in (DEPLOYMENT_GROUP, _EXAMPLES_SCOPE):  # the two longest scopes first, one per worker
                if first in self.workqueue:
                    self.workqueue.move_to_end(first, last=False)
            super()._assign_work_unit(node)

    return ExamplesTogether(config, log)


class _XdistScheduling:
    """The hook above as a plugin, registered only while pytest-xdist is active: a hook in conftest.py itself
    would stop ``pytest -p no:xdist`` at collection ("unknown hook")."""

    pytest_xdist_make_scheduler = staticmethod(_make_scheduler)


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistScheduling(), "apl-xdist-scheduling")


# What each tier marker needs beyond the venv, and how to get it. A test whose component is missing is
# skipped with that sentence (a newcomer's machine), or fails with it where the whole suite must run
# (``./dev.sh test --all`` sets APL_REQUIRE_COMPONENTS=1; CI sets CI): a green CI never hides a missing install.
_SETUP_HINT = "./dev.sh setup as root installs it"


def _missing_postgres() -> str | None:
    from dev.deploy import PG_BIN

    return None if (PG_BIN / "initdb").exists() else f"no PostgreSQL server binaries in {PG_BIN}: " \
        f"{_SETUP_HINT} (apt-get install postgresql), or set APL_PG_BIN to the folder of initdb/postgres"


def _missing_browser() -> str | None:
    from tests.support.browser import BrowserMissing, chromium_paths

    try:
        chromium_paths()
    except BrowserMissing as exc:
        return str(exc)
    return None


def _missing_java() -> str | None:
    java = Path(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
    return None if java and Path(java).exists() else "no java: install a Java 17 runtime " \
                                                     "(apt-get install openjdk-17-jre-headless) or set JAVA_HOME"


COMPONENTS = {"postgres": _missing_postgres, "browser": _missing_browser, "cluster": _missing_java,
              "deployment": _missing_java}


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip (or, under ``--all``/CI, fail) a test whose tier marker names a component this machine lacks."""
    for marker, missing in COMPONENTS.items():
        if item.get_closest_marker(marker) is None:
            continue
        reason = missing()
        if reason is None:
            continue
        message = f"this test is marked {marker!r} and needs a component that is missing: {reason}"
        if os.environ.get("APL_REQUIRE_COMPONENTS") == "1" or os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


@pytest.fixture(autouse=True)
def _xdist_group_listed(request: pytest.FixtureRequest) -> None:
    """Fail a test whose ``xdist_group`` mark and :data:`XDIST_GROUP_MODULES` disagree (an error at
    collection would reach the xdist controller as an internal error without this message)."""
    module = request.node.nodeid.split("::", 1)[0]
    mark = request.node.get_closest_marker("xdist_group")
    group = None if mark is None else (mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
    if group != XDIST_GROUP_MODULES.get(module):
        pytest.fail(f"{module} is marked xdist_group({group!r}) but tests/conftest.py XDIST_GROUP_MODULES lists "
                    f"{XDIST_GROUP_MODULES.get(module)!r}: list every module marked with pytest.mark.xdist_group "
                    "there with its group (and nothing else), so that one worker runs the whole group", pytrace=False)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pyspark.sql.SparkSession]:  # noqa: F821
    """A real ``local[2]`` SparkSession with its own warehouse, shared by the whole run."""
    from pyspark.sql import SparkSession

    base = tmp_path_factory.mktemp("spark")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("airflow-provider-lineage-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", str(base / "warehouse"))
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={base}")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def example_c1(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``lineage_c1_transactions_mart`` once (see :mod:`tests.support.pipelines`)."""
    from tests.support.pipelines import run_self_emitting

    return run_self_emitting("lineage_c1_transactions_mart", tmp_path_factory.mktemp("c1-data"))


@pytest.fixture(scope="session")
def example_etl(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``lineage_etl`` twice on one data folder (see :mod:`tests.support.pipelines`)."""
    from tests.support.pipelines import run_self_emitting

    return run_self_emitting("lineage_etl", tmp_path_factory.mktemp("etl-data"), times=2)


@pytest.fixture(scope="session")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real Airflow deployment on the project's dags/ that has run ``lineage_etl`` once (see
    :mod:`tests.support.deployment`); tests using it carry ``@pytest.mark.xdist_group("deployment")``."""
    from tests.support.deployment import deployment_with_etl

    yield from deployment_with_etl(tmp_path_factory.mktemp("deployment"))
