"""A deployment start (``./dev.sh up``, the ``deployment`` fixture: :class:`dev.deploy.AirflowDeployment`)
returns only when the dag-processor has parsed every DAG file of the folder, and names the files that did not
load (issue 37). A real api-server and dag-processor on a DAGs folder of its own: a file slow to import, a
broken one, one listed in ``.airflowignore``, a helper module, and (afterwards) one that defines no DAG.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tests.support.deployment import AirflowDeployment, DeploymentError

pytestmark = [pytest.mark.deployment, pytest.mark.slow, pytest.mark.xdist_group("deployment"), pytest.mark.timeout(900)]

DAG = """from airflow.sdk import DAG
from airflow.providers.standard.operators.empty import EmptyOperator
{before}
with DAG("{dag_id}", schedule=None):
    EmptyOperator(task_id="t")
"""


def _folder(path: Path) -> Path:
    path.mkdir()
    (path / "fast_dag.py").write_text(DAG.format(dag_id="apl_fast", before=""))
    # imports for a while: what made lineage_etl 404 after "Airflow is up" (the start waited for one file only)
    (path / "slow_dag.py").write_text(DAG.format(dag_id="apl_slow", before="import time\ntime.sleep(12)"))
    (path / "broken_dag.py").write_text("from airflow.sdk import DAG\nraise RuntimeError('apl broken on purpose')\n")
    (path / "ignored_dag.py").write_text("from airflow.sdk import DAG\nraise RuntimeError('never parsed')\n")
    (path / ".airflowignore").write_text("ignored_dag.py\n")
    (path / "helper.py").write_text("VALUE = 1  # no DAG here, and the discovery heuristic skips it\n")
    return path


def test_start_waits_for_every_dag_file_and_names_the_broken_one(tmp_path: Path) -> None:
    dags = _folder(tmp_path / "dags")
    dep = AirflowDeployment(tmp_path / "home", processes=("api-server", "dag-processor"), dags_folder=dags)
    try:
        assert dep.dag_files() == ["broken_dag.py", "fast_dag.py", "slow_dag.py"]
        with pytest.raises(DeploymentError) as err:
            dep.start()
        message = str(err.value)
        assert "broken_dag.py: import error" in message and "apl broken on purpose" in message, message
        assert "fast_dag.py" not in message and "slow_dag.py" not in message and "ignored" not in message, message
        # every file was parsed when the start returned: the slow file's DAG is there at once
        with dep.client("viewer") as c:
            assert c.get("/api/v2/dags/apl_slow").status_code == 200
            assert c.get("/api/v2/dags/apl_fast").status_code == 200

        # fixed: the same wait (the dag-processor parses changed files again) returns the DAG ids of the folder
        since = dt.datetime.now(dt.UTC)
        (dags / "broken_dag.py").write_text(DAG.format(dag_id="apl_fixed", before=""))
        assert dep.wait_parsed(since, timeout=240) == ["apl_fast", "apl_fixed", "apl_slow"]

        # a file that mentions airflow and DAGs but defines none: named, with the fix, after the bounded wait
        (dags / "nodag.py").write_text("# airflow DAG helpers, no DAG\nX = 1\n")
        with pytest.raises(DeploymentError, match=r"nodag.py: no DAG and no import error within 20 s.*airflowignore"):
            dep.wait_parsed(since, timeout=20)
    finally:
        dep.stop()
        assert not dep.leftovers()

