"""A throw-away PostgreSQL server for ``db="postgres"`` deployments (:class:`PostgresServer`)."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dev.deployment.processes import DeploymentError, free_port
from dev.deployment.settings import PG_BIN


class PostgresServer:
    """A throw-away PostgreSQL (Debian's binaries) in ``base``, on a free port, as an unprivileged user.

    ``initdb`` refuses to run as root: as root the server runs as the ``postgres`` user (which
    Debian's package creates); otherwise as the current user. Trust auth on 127.0.0.1 only.

    As root, ``base`` must be reachable by the ``postgres`` user: a clone under ``/root`` (mode 0700) is
    not. Then :meth:`init` puts the server's files in a new folder under the temp folder instead
    (``/tmp`` or ``/var/tmp``, owned by ``postgres``), marks them ``temporary`` (removed by
    :meth:`AirflowDeployment.stop` and ``./dev.sh down``) and says so in :attr:`notice`.
    """

    def __init__(self, base: Path, port: int | None = None, *, temporary: bool = False) -> None:
        if not (PG_BIN / "initdb").exists():
            raise DeploymentError(f"PostgreSQL binaries not found in {PG_BIN}: run ./dev.sh setup as root "
                                  "(installs Debian's postgresql), or set APL_PG_BIN to the folder of initdb/postgres")
        self.base = base
        self.temporary = temporary
        self.port = port or free_port()
        self.data = base / "pgdata"
        self.user: str | None = "postgres" if os.geteuid() == 0 else None
        #: the folder asked for, when the server's files had to go elsewhere (see :attr:`notice`)
        self.moved_from: Path | None = None
        self.notice = ""

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/airflow"

    def _chown(self, path: Path) -> None:
        if self.user:
            shutil.chown(path, self.user, self.user)

    def can_reach(self, folder: Path) -> bool:
        """Whether the server's user may enter ``folder`` (every parent searchable: the kernel's own check)."""
        if not self.user:
            return True
        return subprocess.run(["test", "-x", str(folder)], check=False, user=self.user, cwd="/",
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0

    def blocking_folder(self, folder: Path) -> Path | None:
        """The first folder on the way to ``folder`` that the server's user may not enter (None: none)."""
        for part in [*reversed(folder.parents), folder]:
            if part.exists() and not self.can_reach(part):
                return part
        return None

    def _relocate(self) -> None:
        """Put the server's files in a new temp folder the server's user can reach (see the class docstring)."""
        blocked = self.blocking_folder(self.base) or self.base
        for parent in dict.fromkeys([Path(tempfile.gettempdir()), Path("/var/tmp"), Path("/tmp")]):
            if parent.is_dir() and self.can_reach(parent):
                new = Path(tempfile.mkdtemp(prefix="apl-postgres-", dir=parent))
                break
        else:
            raise DeploymentError(
                f"the {self.user} user (PostgreSQL runs as it when started by root) cannot enter {blocked}, nor a temp "
                f"folder (/tmp, /var/tmp): run from a clone outside {blocked}, or `chmod o+x {blocked}`, or run as a "
                "non-root user")
        self.moved_from, self.base, self.data, self.temporary = self.base, new, new / "pgdata", True
        self.notice = (f"PostgreSQL's files are in {new}, not {self.moved_from}: the {self.user} user (the server runs "
                       f"as it when started by root) cannot enter {blocked} (mode "
                       f"{blocked.stat().st_mode & 0o777:o}); they are removed when the deployment stops "
                       f"(./dev.sh down). To keep them beside the deployment, run from a clone outside {blocked} "
                       f"or `chmod o+x {blocked}`")

    def _make_base(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        self.base.chmod(0o755)
        self._chown(self.base)

    def init(self) -> None:
        """Create the data folder with ``initdb`` (once); a failure is a :class:`DeploymentError` with initdb's
        own message."""
        created = [p for p in [self.base, *self.base.parents] if not p.exists()]  # deepest first
        self._make_base()
        if self.user and not self.can_reach(self.base):
            for folder in created:  # leave nothing behind where the server could not go
                with contextlib.suppress(OSError):
                    folder.rmdir()
            self._relocate()
            self._make_base()
        if not (self.data / "PG_VERSION").exists():
            res = subprocess.run([str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                                  "-E", "UTF8", "--no-sync"], check=False, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, user=self.user, cwd=self.base)
            if res.returncode:
                who = f"as the {self.user} user" if self.user else "as this user"
                raise DeploymentError(f"initdb ({who}) failed on {self.data} with exit code {res.returncode}; "
                                      f"its message:\n{res.stdout.decode(errors='replace').strip()[-3000:]}")

    def command(self) -> list[str]:
        return [str(PG_BIN / "postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(self.base),
                "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=400"]

    def wait_ready(self, timeout: float = 60, alive: Callable[[], None] | None = None) -> None:
        """Wait until the server answers, then create the ``airflow`` database; ``alive`` raises when the
        server process is gone (with its log)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if alive is not None:
                alive()
            ok = subprocess.run([str(PG_BIN / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                                check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
            if ok:
                subprocess.run(
                    [str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "airflow"],
                    check=False,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    user=self.user,
                )
                return
            time.sleep(0.3)
        raise DeploymentError(f"PostgreSQL on port {self.port} did not become ready within {timeout:.0f} s")
