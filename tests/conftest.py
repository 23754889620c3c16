"""Shared fixtures: one real local Spark session per test run, sized for a 2-core machine."""
from __future__ import annotations

import atexit
import importlib.util
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
    "tests/test_cluster.py", "tests/test_dags.py", "tests/test_example_etl.py", "tests/test_marquez_replay.py"})
_EXAMPLES_SCOPE = "example-pipelines"


def _make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile``, with :data:`EXAMPLE_PIPELINE_MODULES` as one scope handed out first."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ExamplesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if "@" in nodeid:  # an xdist_group mark (see pytest_collection_modifyitems below)
                return nodeid.rsplit("@", 1)[-1]
            module = nodeid.split("::", 1)[0]
            return _EXAMPLES_SCOPE if module in EXAMPLE_PIPELINE_MODULES else super()._split_scope(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            for first in (DEPLOYMENT_GROUP, _EXAMPLES_SCOPE):  # the two longest scopes first, one per worker
                if first in self.workqueue:
                    self.workqueue.move_to_end(first, last=False)
            super()._assign_work_unit(node)

    return ExamplesTogether(config, log)


if importlib.util.find_spec("xdist") is not None:  # a hook pytest only knows with pytest-xdist
    pytest_xdist_make_scheduler = _make_scheduler


# The real Airflow deployment (tests/support/deployment.py: api-server, scheduler, dag-processor,
# triggerer) takes ~30 s to start and a lineage_etl run to warm up, and two of them would fight over
# 2 cores. Every test that uses the session fixture ``deployment`` carries
# ``@pytest.mark.xdist_group("deployment")`` (tests/deployment/, the UI's browser tests in
# tests/plugins/), wherever its module is. Under ``--dist loadfile`` xdist ignores that mark, so the
# hook below does what xdist's own ``--dist loadgroup`` does -- suffix those tests' ids with
# ``@<group>`` -- and the scheduler above makes one scope of each group: one worker runs every test
# of the group and starts the deployment once, while the other modules keep their one-scope-per-file
# (and module-scoped fixtures) as before. ``--dist loadgroup`` itself is not used: it would spread
# the tests of unmarked modules one by one over the workers and start their module fixtures twice.
DEPLOYMENT_GROUP = "deployment"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("dist", "no") != "loadfile" or not hasattr(config, "workerinput"):
        return
    for item in items:
        mark = item.get_closest_marker("xdist_group")
        if mark is not None:
            group = mark.args[0] if mark.args else mark.kwargs.get("name", "default")
            item._nodeid = f"{item.nodeid}@{group}"  # what xdist's loadgroup does


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
