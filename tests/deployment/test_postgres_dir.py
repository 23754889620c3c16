"""PostgreSQL for ``./dev.sh up --db postgres`` / ``--executor celery`` run by root from a clone inside a 0700
folder (e.g. ``/root/...``): the server runs as the ``postgres`` user, who cannot enter the clone, so its files
go to a temp folder that user owns, recorded so that ``./dev.sh down`` removes it; and whatever initdb says when
it fails is shown, not hidden behind a traceback (issue 37). Only the DB server starts here, no Airflow process.
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from dev.deploy import ROOT, AirflowDeployment, DeploymentError, PostgresServer, free_port

pytestmark = [pytest.mark.postgres]  # without PostgreSQL: skipped saying what to install (tests/conftest.py)


def test_files_move_where_the_postgres_user_can_reach_them_and_down_removes_them(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root runs PostgreSQL as another user (the postgres user)")
    locked = tmp_path / "root-home"
    locked.mkdir(mode=0o700)
    locked.chmod(0o700)  # like /root
    home = locked / "clone" / ".airflow"
    dep = AirflowDeployment(home, db="postgres", pg_dir=home / "postgres")
    try:
        dep.start_db()
        pg = dep.postgres
        assert pg is not None and pg.moved_from == home / "postgres" and pg.temporary
        assert pg.base.name.startswith("apl-postgres-") and not (home / "postgres").exists()
        assert pg.base.stat().st_uid == pwd.getpwnam("postgres").pw_uid
        blocked = pg.blocking_folder(home)
        assert blocked is not None and (blocked == locked or blocked in locked.parents)
        assert f"cannot enter {blocked}" in pg.notice and "./dev.sh down" in pg.notice
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=pg.port, user="postgres", dbname="airflow") as conn:
            assert conn.execute("select 1").fetchone() == (1,)
        state = json.loads(dep.state_file.read_text())
        assert state["postgres"] == {"base": str(pg.base), "temporary": True}
        # `./dev.sh down` (from the recorded state) stops the server and removes its folder
        down = subprocess.run([sys.executable, str(ROOT / "dev" / "deploy.py"), "down", "--home", str(home)],
                              capture_output=True, text=True, check=False)
        assert down.returncode == 0, down.stdout + down.stderr
        assert not pg.base.exists() and not dep.leftovers()
    finally:
        dep.stop()


def test_initdb_message_is_shown_by_up_without_a_traceback() -> None:
    home = Path(tempfile.mkdtemp(prefix="apl-pg-initdb-"))
    home.chmod(0o755)  # reachable by the postgres user: initdb itself runs and fails
    try:
        stray = home / "postgres" / "pgdata"
        stray.mkdir(parents=True)
        (stray / "stray.txt").write_text("not a data folder")
        pg = PostgresServer(home / "postgres")
        with pytest.raises(DeploymentError, match=r"(?s)initdb .*failed on .*pgdata.*exists but is not empty"):
            pg.init()
        assert pg.base == home / "postgres" and not pg.temporary  # it was not moved
        up = subprocess.run([sys.executable, str(ROOT / "dev" / "deploy.py"), "up", "--db", "postgres", "--home",
                             str(home), "--port", str(free_port())], capture_output=True, text=True, check=False,
                            timeout=600)
        assert up.returncode == 1, up.stdout + up.stderr
        assert "exists but is not empty" in up.stderr and "Traceback" not in up.stderr, up.stderr
    finally:
        shutil.rmtree(home, ignore_errors=True)
