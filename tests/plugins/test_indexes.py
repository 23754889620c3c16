"""Sieve index badges (plugins/indexes.py): the api-server touches no path a task chose (issue 47).

A badge comes from what the index task recorded, unless the table (and index) lie under a root of
``[column_lineage] sieve_badge_roots``; a path outside every root is never opened, listed or scanned
(watched with a Python audit hook: ``open``, ``os.scandir``, ``os.listdir``), and a tree over
``sieve_badge_max_files`` entries is not walked. Real files, real ``sieve.decisions.check``; no Spark.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_lineage.plugins import indexes

_watch: list[tuple[str, str]] = []
_active: list[bool] = []


def _hook(event: str, args: tuple) -> None:
    if _active and event in ("open", "os.scandir", "os.listdir") and args and isinstance(args[0], (str, bytes)):
        _watch.append((event, args[0] if isinstance(args[0], str) else args[0].decode(errors="replace")))


sys.addaudithook(_hook)


@pytest.fixture
def touched() -> Iterator[list[tuple[str, str]]]:
    """The paths opened, scanned or listed while the test's block runs (``_active``)."""
    _watch.clear()
    yield _watch
    _active.clear()


def _result(table: str, column: str = "id", index_path: str | None = None, **kw: Any) -> dict[str, Any]:
    return {"table": table, "table_root": table, "column": column, "index_path": index_path, "status": "ok",
            "action": "sync", "version": 7, "task_id": "index", "recorded_at": "2026-01-02T03:04:05+00:00", **kw}


def _badges(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    indexes.badges([])  # lazy imports and time zone data load outside the watched block
    _watch.clear()
    _active.append(True)
    try:
        return indexes.badges(results)
    finally:
        _active.clear()


def test_a_badge_for_a_path_outside_the_roots_reads_nothing(touched: list, monkeypatch: Any, tmp_path: Path) -> None:
    monkeypatch.delenv("AIRFLOW__COLUMN_LINEAGE__SIEVE_BADGE_ROOTS", raising=False)
    results = [_result("/etc/passwd"), _result("/usr", "k"), _result("/etc", "x", index_path="/etc/shadow"),
               _result(str(tmp_path / "t"), "c", status="error", error="FileNotFoundError: secret text /etc/x",
                       error_type="FileNotFoundError")]
    got = _badges(results)
    assert not [p for _, p in touched if p.startswith(("/etc", "/usr", str(tmp_path)))], touched
    assert [b["state"] for b in got] == ["fresh", "fresh", "fresh", "error"]
    assert all(b["source"] == "recorded" and b["checked"] == "2026-01-02T03:04:05+00:00" for b in got)
    assert got[0]["version"] == 7 and "as the index task left it" in got[0]["reason"]
    text = json.dumps(got)
    assert "Not a directory" not in text and "secret text" not in text and "Errno" not in text
    # a root elsewhere changes nothing for these paths, nor for one that climbs out of the root or a symlink out
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__SIEVE_BADGE_ROOTS", str(tmp_path))
    (tmp_path / "link").symlink_to("/etc")
    got = _badges(results[:3] + [_result(f"{tmp_path}/../../etc"), _result(str(tmp_path / "link")),
                                 _result(str(tmp_path / "ok"), index_path="/etc/idx")])
    assert not [p for _, p in touched if p.startswith(("/etc", "/usr")) or "link" in p or p.endswith("/ok")], touched
    assert {b["source"] for b in got} == {"recorded"}


def _table(root: Path, rows: int = 5) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    root.mkdir(parents=True)
    pq.write_table(pa.table({"id": list(range(rows))}), root / "part-0.parquet")
    return root


def test_a_table_under_a_root_is_checked(monkeypatch: Any, tmp_path: Path) -> None:
    table = _table(tmp_path / "lake" / "t")
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__SIEVE_BADGE_ROOTS", f"/nowhere, {tmp_path / 'lake'}")
    (badge,) = _badges([_result(str(table))])
    assert badge["source"] == "checked" and badge["state"] == "missing", badge  # no index was built there
    assert badge["run_version"] == 7 and badge["checked"]


def test_a_huge_tree_under_a_root_is_not_walked(touched: list, monkeypatch: Any, tmp_path: Path) -> None:
    table = tmp_path / "big"
    for d in range(12):
        (table / f"d={d}").mkdir(parents=True)
        for f in range(20):
            (table / f"d={d}" / f"part-{f}.parquet").write_bytes(b"")
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__SIEVE_BADGE_ROOTS", str(tmp_path))
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__SIEVE_BADGE_MAX_FILES", "50")
    (badge,) = _badges([_result(str(table))])
    assert badge["source"] == "recorded" and "over 50 files" in badge["reason"], badge
    scanned = {p for e, p in touched if e == "os.scandir" and p.startswith(str(table))}
    assert 1 <= len(scanned) <= 3, scanned  # stopped after 51 entries: not the 13 folders of the tree
    assert not [p for e, p in touched if e == "open" and p.startswith(str(table))]


def test_roots_are_read_lexically_first() -> None:
    assert indexes.under_roots("/data/lake/t", ["/data/lake"]) == "/data/lake/t"
    assert indexes.under_roots("file:///data/lake/t", ["/data/lake"]) == "/data/lake/t"
    for path in ("/data/lake2/t", "/data/lake/../x", "relative/t", "s3://b/data/lake/t", "/data/lake/\x00", None):
        assert indexes.under_roots(path, ["/data/lake"]) is None, path
    assert indexes.under_roots("/data/lake/t", []) is None
