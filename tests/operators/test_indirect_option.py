"""Where a task's every-row INDIRECT edges go: ``indirect_lineage=``, else ``[column_lineage] indirect_lineage``,
else the facet's dataset-level list (issue 36, item 4). Real operator and Airflow configuration."""
from __future__ import annotations

import pytest

from airflow_provider_lineage.operators.spark_lineage import SparkLineageSubmitOperator

ENV = "AIRFLOW__COLUMN_LINEAGE__INDIRECT_LINEAGE"


def test_default_option_and_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    op = SparkLineageSubmitOperator(task_id="t", application="a.py")
    assert op.indirect_lineage is None and op.resolved_indirect() == "dataset"
    monkeypatch.setenv(ENV, "Both")
    assert op.resolved_indirect() == "both"
    assert SparkLineageSubmitOperator(task_id="t2", application="a.py", indirect_lineage="fields").resolved_indirect() \
        == "fields"


def test_bad_values_name_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="indirect_lineage='columns' is not one of"):
        SparkLineageSubmitOperator(task_id="t", application="a.py", indirect_lineage="columns")
    monkeypatch.setenv(ENV, "columns")
    with pytest.raises(ValueError, match=r"\[column_lineage\] indirect_lineage = 'columns' is not one of"):
        SparkLineageSubmitOperator(task_id="t", application="a.py").resolved_indirect()
