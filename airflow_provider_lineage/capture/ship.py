"""The capture code as one self-contained archive, shipped with the job to a driver that runs elsewhere.

In cluster deploy mode (YARN, Kubernetes) the driver runs on the cluster, where this package is not
installed. The operator adds :func:`capture_archive` to ``--py-files`` (``spark.submit.pyFiles``), so
the driver imports the launcher's code from it: ``airflow_provider_lineage/__init__.py``, ``_jvm.py`` (the
core-neutral Janino helper), ``capture/`` and ``lineage/``, taken from the installed package. On the driver's
path (capture, record writing) these need only the standard library and pyspark: no Airflow, no
openlineage-python, nothing else (``tests/capture/test_ship.py`` imports the launcher from the archive in an
interpreter that has nothing but the standard library). Only the fallback where the driver emits OpenLineage
events itself (no shared ``capture_dir``) needs openlineage-python on the cluster.

The archive is byte-for-byte reproducible (sorted entries, fixed times), named by the hash of its
content, and built once per installed version into a cache folder.

No Airflow and no Spark imports here.
"""
from __future__ import annotations

import hashlib
import io
import os
import tempfile
import zipfile
from pathlib import Path

#: Sub-packages of ``airflow_provider_lineage`` the driver needs (capture imports lineage only).
PACKAGES = ("capture", "lineage")
#: Top-level modules of ``airflow_provider_lineage`` the driver needs (the Janino helper ``capture`` shares).
MODULES = ("_jvm.py",)
ARCHIVE_PREFIX = "airflow-provider-lineage-capture-"
CACHE_ENV = "AIRFLOW_LINEAGE_CAPTURE_ARCHIVE_CACHE"
_FIXED_TIME = (2020, 1, 1, 0, 0, 0)


def package_root() -> Path:
    """The installed ``airflow_provider_lineage`` folder."""
    import airflow_provider_lineage

    return Path(airflow_provider_lineage.__file__).resolve().parent


def archive_members(root: Path | None = None) -> list[tuple[str, Path]]:
    """``(name in the archive, source file)`` of every module the driver may import, sorted."""
    root = root or package_root()
    members = [("airflow_provider_lineage/__init__.py", root / "__init__.py")]
    members += [(f"airflow_provider_lineage/{name}", root / name) for name in MODULES]
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):  # sub-packages too, should they appear
            if "__pycache__" not in path.parts:
                members.append((f"airflow_provider_lineage/{path.relative_to(root).as_posix()}", path))
    return members


def archive_bytes(root: Path | None = None) -> bytes:
    """The zip archive's bytes (deterministic for the same sources)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, path in archive_members(root):
            info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, path.read_bytes())
    return buf.getvalue()


def default_cache_dir() -> Path:
    """``$AIRFLOW_LINEAGE_CAPTURE_ARCHIVE_CACHE``, else ``~/.cache/airflow-provider-lineage``, else the temp folder."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "airflow-provider-lineage"


def capture_archive(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The path of the capture archive, built into ``cache_dir`` when not there yet (atomic, cached by hash)."""
    data = archive_bytes()
    digest = hashlib.sha256(data).hexdigest()[:16]
    name = f"{ARCHIVE_PREFIX}{digest}.zip"
    candidates = (
        [Path(cache_dir)] if cache_dir else [default_cache_dir(), Path(tempfile.gettempdir()) / f"apl-{os.getuid()}"]
    )
    last: OSError | None = None
    for folder in candidates:
        target = folder / name
        try:
            if target.is_file() and target.stat().st_size == len(data):
                return target
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
            return target
        except OSError as exc:
            last = exc
    raise OSError(f"cannot write the capture archive into {', '.join(map(str, candidates))}: {last!r}")
