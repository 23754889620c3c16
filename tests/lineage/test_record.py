"""The capture record: JSON round trip, unreadable files skipped, wrapper events merged per write."""
from __future__ import annotations

from pathlib import Path

from airflow_provider_lineage.lineage.naming import catalog_identifier
from airflow_provider_lineage.lineage.record import CaptureRecord, OutputInfo, collapse_nested, read_records


def _rec(command: str, seq: int, **out: str) -> CaptureRecord:
    return CaptureRecord(command=command, status="success", sequence=seq, output=OutputInfo(command=command, **out))


def test_json_round_trip() -> None:
    rec = _rec("InsertIntoHadoopFsRelationCommand", 3, location="file:/data/t", mode="Overwrite")
    assert CaptureRecord.from_json(rec.to_json()) == rec


def test_unreadable_file_is_skipped_and_reported(tmp_path: Path) -> None:
    good = _rec("InsertIntoHadoopFsRelationCommand", 1, location="file:/a")
    (tmp_path / "000001-a.json").write_text(good.to_json())
    (tmp_path / "000002-b.json").write_text("{truncated")
    errors: list[str] = []
    assert read_records(tmp_path, errors) == [good]
    assert len(errors) == 1 and "000002-b.json" in errors[0]


def test_save_as_table_wrappers_merge_into_the_inner_write() -> None:
    inner = _rec("InsertIntoHadoopFsRelationCommand", 1, location="file:/wh/sales", table="spark_catalog.default.sales",
                 mode="ErrorIfExists")
    ctas = _rec("CreateDataSourceTableAsSelectCommand", 2, table="spark_catalog.default.sales", mode="Overwrite")
    save = _rec("SaveAsV1TableCommand", 3, table="`default`.`SALES`", mode="Overwrite")
    merged = collapse_nested([inner, ctas, save])
    assert len(merged) == 1
    assert merged[0].command == "InsertIntoHadoopFsRelationCommand"
    assert merged[0].wrappers == ["CreateDataSourceTableAsSelectCommand", "SaveAsV1TableCommand"]
    assert merged[0].output is not None and merged[0].output.mode == "Overwrite"
    assert collapse_nested(merged) == merged  # idempotent
    assert inner.wrappers == []  # inputs untouched


def test_catalog_identifier_spellings_agree() -> None:
    assert catalog_identifier("sales") == catalog_identifier("`default`.`SALES`") == "spark_catalog.default.sales"
