"""One answer to "is this argument still a template?" for every operator (``SieveIndexOperator`` used to say no to
``{% ... %}`` and to lists)."""
from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_lineage.operators._lineage.templating import is_template


@pytest.mark.parametrize(("value", "expected"), [
    ("{{ params.mode }}", True),
    ("{% if params.strict %}fail{% else %}warn{% endif %}", True),
    (["pii", "{{ var.value.extra_tag }}"], True),
    (("{% raw %}x{% endraw %}",), True),
    ("warn", False),
    ("{# only a comment #}", False),
    ("{ not jinja }", False),
    (["pii", "secret"], False),
    (None, False),
    (3, False),
])
def test_is_template(value: Any, expected: bool) -> None:
    assert is_template(value) is expected


def test_an_xcom_arg_is_resolved_at_run_time() -> None:
    from airflow.sdk import DAG, task

    with DAG("apl_templating", schedule=None):
        @task
        def mode() -> str:
            return "warn"

        assert is_template(mode()) is True


def test_the_sieve_operator_waits_for_a_jinja_statement() -> None:
    # both operators use the same check: a {% %} mode is checked after rendering, not refused at parse time
    from airflow_provider_lineage.operators.sieve import SieveIndexOperator

    op = SieveIndexOperator(task_id="t", table="/data/t", columns=["id"],
                            mode="{% if params.full %}rebuild{% else %}sync{% endif %}")
    assert op.mode.startswith("{%")
    with pytest.raises(ValueError, match="mode="):
        SieveIndexOperator(task_id="t2", table="/data/t", columns=["id"], mode="explode")
