"""The documentation builds with MkDocs in strict mode (warnings are errors), and that mode catches a
broken internal link; the README's links to files of the checkout point at files that exist."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _build(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(project / "mkdocs.yml"),
                           "-d", str(site)], check=False, capture_output=True, text=True, timeout=300)


def test_docs_build_strict(tmp_path: Path) -> None:
    out = _build(ROOT, tmp_path / "site")
    assert out.returncode == 0, out.stderr[-4000:]
    assert (tmp_path / "site" / "troubleshooting" / "index.html").is_file()


def test_strict_build_fails_on_a_broken_internal_link(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    with (tmp_path / "docs" / "index.md").open("a") as f:
        f.write("\nSee [the missing section](install.md#no-such-section).\n")
    out = _build(tmp_path, tmp_path / "site")
    assert out.returncode != 0
    assert "no-such-section" in out.stderr


def test_readme_links_to_files_that_exist() -> None:
    text = re.sub(r"<!--.*?-->", "", (ROOT / "README.md").read_text(), flags=re.DOTALL)  # placeholders
    targets = {t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text)
               if not t.startswith(("http://", "https://", "mailto:", "#"))}
    missing = sorted(t for t in targets if t and not (ROOT / t).exists())
    assert not missing, f"README.md links to missing files: {missing}"


def test_changelog_names_the_package_version_first() -> None:
    from airflow_provider_lineage import __version__

    releases = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), flags=re.MULTILINE)
    assert releases and releases[0] == __version__, (releases[:1], __version__)
