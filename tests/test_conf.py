"""``airflow_provider_lineage.conf``: every ``[column_lineage]`` setting read in one place, and only there."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from airflow_provider_lineage import conf

PACKAGE = Path(__file__).resolve().parents[1] / "airflow_provider_lineage"


def test_each_setting_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__REQUIRE_MASKED", "pii, secret")
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__STOPPED_BY_MASKING", '["pii"]')
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__INDIRECT_LINEAGE", " Fields ")
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__TAGS_VARIABLE", "none")
    key = tmp_path / "k.pub"
    key.write_text("-----BEGIN PUBLIC KEY-----\nx\n", encoding="utf-8")
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__TAG_MAP_PUBLIC_KEY", str(key))
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__SIEVE_BADGE_ROOTS", "/data")
    assert conf.require_masked() == ["pii", "secret"]
    assert conf.stopped_by_masking() == ["pii"]
    assert conf.indirect_lineage() == "fields"
    assert conf.tags_variable() is None
    assert conf.key_setting("tag_map_public_key").startswith("-----BEGIN PUBLIC KEY-----")
    assert conf.sieve_badge_roots() == "/data"


def test_defaults_when_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    for option in ("REQUIRE_MASKED", "STOPPED_BY_MASKING", "INDIRECT_LINEAGE", "TAGS_VARIABLE", "TAGS", "TAGS_FILE"):
        monkeypatch.delenv(f"AIRFLOW__COLUMN_LINEAGE__{option}", raising=False)
    assert conf.require_masked() == []
    assert conf.stopped_by_masking() == ["pii"]
    assert conf.indirect_lineage() is None
    assert conf.tags_variable() == "lineage_column_tags"
    assert conf.tags() is None and conf.tags_file() is None


def test_bad_values_name_the_option_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__INDIRECT_LINEAGE", "everywhere")
    with pytest.raises(ValueError, match=r"\[column_lineage\] indirect_lineage = 'everywhere'.*'dataset'"):
        conf.indirect_lineage()
    monkeypatch.setenv("AIRFLOW__COLUMN_LINEAGE__TAG_MAP_PRIVATE_KEY", "/nowhere/k.pem")
    with pytest.raises(ValueError, match=r"tag_map_private_key: cannot read the key file /nowhere/k.pem"):
        conf.key_setting("tag_map_private_key")


def test_every_option_read_is_declared() -> None:
    from airflow_provider_lineage.get_provider_info import get_provider_info

    declared = set(get_provider_info()["config"][conf.SECTION]["options"])
    read = {node.args[0].value for node in ast.walk(ast.parse(Path(conf.__file__).read_text(encoding="utf-8")))
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str) and getattr(node.func, "id", "") in ("get", "setting_list")}
    assert read, "the scan found no option"
    assert read <= declared, read - declared


def test_no_other_module_reads_the_section() -> None:
    # a read of [column_lineage] anywhere else: a string "column_lineage" next to a config .get( in one call
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name in ("conf.py", "get_provider_info.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("get", "getint", "getfloat", "getboolean", "getjson")
                    and node.args and isinstance(node.args[0], (ast.Constant, ast.Name))
                    and getattr(node.args[0], "value", getattr(node.args[0], "id", None)) in ("column_lineage",
                                                                                              "SECTION")):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert offenders == [], offenders
