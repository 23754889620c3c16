"""The capture archive a driver elsewhere runs from (issue 31): self-contained, stdlib + pyspark only, cached."""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

from airflow_provider_lineage.capture import launcher, ship

#: What the driver imports: the launcher and everything it loads lazily on the capture path.
DRIVER_MODULES = ["launcher", "runtime", "emission", "config", "sink", "remote", "listener", "udfs", "versions"]


def test_archive_is_built_once_and_reproducible(tmp_path: Path) -> None:
    first = ship.capture_archive(tmp_path)
    mtime = first.stat().st_mtime_ns
    assert ship.capture_archive(tmp_path) == first and first.stat().st_mtime_ns == mtime  # cached
    assert ship.archive_bytes() == first.read_bytes()  # reproducible: same sources, same bytes
    names = zipfile.ZipFile(first).namelist()
    assert "airflow_provider_lineage/capture/launcher.py" in names
    assert "airflow_provider_lineage/lineage/engine.py" in names
    assert not [n for n in names if n.split("/")[1] not in ("__init__.py", "_jvm.py", "capture", "lineage")]


def test_driver_path_needs_only_the_standard_library(tmp_path: Path) -> None:
    """``python -S`` (no site-packages: no Airflow, no openlineage-python, no pyspark) imports the driver's code."""
    archive = ship.capture_archive(tmp_path)
    code = (
        "import sys, json\n"
        f"sys.path.insert(0, {str(archive)!r})\n"
        + "".join(f"import airflow_provider_lineage.capture.{m}\n" for m in DRIVER_MODULES)
        + "import airflow_provider_lineage.lineage.engine, airflow_provider_lineage.lineage.record\n"
        "from airflow_provider_lineage.capture.config import LauncherConfig\n"
        "LauncherConfig.resolve(lambda k: None, {})\n"
        "third = sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names)"
        " - {'__main__', 'airflow_provider_lineage'})\n"
        "print(json.dumps({'third_party': third, 'from': sys.modules['airflow_provider_lineage'].__file__}))\n"
    )
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["third_party"] == []
    assert out["from"].startswith(str(archive))


def test_launcher_finds_a_shipped_application_by_name(tmp_path: Path, monkeypatch) -> None:
    shipped = tmp_path / "files"
    shipped.mkdir()
    (shipped / "job.py").write_text("print('hi')\n")
    monkeypatch.syspath_prepend(str(shipped))
    assert launcher.find_application("/airflow/worker/dags/job.py") == str(shipped / "job.py")
    monkeypatch.chdir(tmp_path)
    assert launcher.find_application("/nowhere/other.py") == "/nowhere/other.py"  # not found: unchanged
