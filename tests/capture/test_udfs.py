"""The driver's UDF registry: matching plan UDFs to live functions (no Spark needed: hand-made plan JSON).

The launcher path on real Spark is covered by ``tests/lineage/udf/test_scenarios.py``.
"""
from __future__ import annotations

from airflow_provider_lineage.capture.udfs import MAX_PER_NAME, UdfRegistry, python_udfs
from airflow_provider_lineage.lineage.record import CaptureRecord

EXPR = "org.apache.spark.sql.catalyst.expressions."


def _attr(name: str, eid: int) -> dict:
    return {"class": EXPR + "AttributeReference", "num-children": 0, "name": name, "dataType": "string",
            "exprId": {"id": eid}}


def _plan(udf_name: str, *, named: bool = False, nested: bool = False) -> list[dict]:
    args: list[dict] = [_attr("a", 1), _attr("b", 2)]
    if named:
        args = [args[0], {"class": EXPR + "NamedArgumentExpression", "num-children": 1, "key": "b"}, args[1]]
    udf = {"class": EXPR + "PythonUDF", "num-children": 2, "name": udf_name, "evalType": 100, "dataType": "string",
           "resultId": {"id": 9}}
    inner = []
    if nested:  # udf(inner(a), b)
        inner = [{"class": EXPR + "PythonUDF", "num-children": 1, "name": "inner", "evalType": 100,
                  "dataType": "string", "resultId": {"id": 8}}, _attr("a", 1)]
        args = [*inner, _attr("b", 2)]
    expr = [{"class": EXPR + "Alias", "num-children": 1, "name": "r", "exprId": {"id": 5}}, udf, *args]
    return [{"class": "org.apache.spark.sql.catalyst.plans.logical.Project", "num-children": 0, "projectList": [expr]}]


def _record(plan: list[dict]) -> CaptureRecord:
    return CaptureRecord(command="InsertIntoHadoopFsRelationCommand", status="success", optimized_plan=plan)


def first(a, b):
    return a


def second(a, b):
    return b


def test_finds_nested_udfs() -> None:
    names = sorted(n.name for n, _c in python_udfs(_plan("outer", nested=True)))
    assert names == ["inner", "outer"]


def test_same_name_functions_are_united() -> None:
    reg = UdfRegistry()
    reg.add("<lambda>", first, 100, "string")
    reg.add("<lambda>", second, 100, "string")
    rec = _record(_plan("<lambda>"))
    reg.enrich(rec)
    analysis = rec.udfs[0]["analysis"]
    assert rec.udfs[0]["result_id"] == 9
    assert [a["direct"] for a in analysis["args"]] == ["IDENTITY", "IDENTITY"]
    assert analysis["candidates"] == 2


def test_return_type_narrows_the_candidates() -> None:
    reg = UdfRegistry()
    reg.add("f", first, 100, "string")
    reg.add("f", second, 100, "integer")
    rec = _record(_plan("f"))
    reg.enrich(rec)
    assert [a["direct"] for a in rec.udfs[0]["analysis"]["args"]] == ["IDENTITY", None]


def test_unknown_function_keyword_call_and_overflow_fall_back() -> None:
    reg = UdfRegistry()
    rec = _record(_plan("nobody"))
    reg.enrich(rec)
    assert rec.udfs[0]["analysis"]["reason"] == "function not found on the driver"
    reg.add("f", first, 100, "string")
    rec = _record(_plan("f", named=True))  # f(a, b=b): the keyword binds by parameter name
    reg.enrich(rec)
    assert [a["direct"] for a in rec.udfs[0]["analysis"]["args"]] == ["IDENTITY", None]
    for i in range(MAX_PER_NAME + 1):
        reg.add("many", eval(f"lambda a, b: a + {i}"), 100, "string")
    rec = _record(_plan("many"))
    reg.enrich(rec)
    assert rec.udfs[0]["analysis"]["analysed"] is False
    assert "more than" in rec.udfs[0]["analysis"]["reason"]


def test_bound_method_and_callable_object() -> None:
    from airflow_provider_lineage.lineage.udf import analyse_udf

    class Masker:
        def run(self, a, b):
            return a

        def __call__(self, a, b):
            return b

    m = Masker()
    assert [f.direct for f in analyse_udf(m.run, "run", 2, 100).args] == ["IDENTITY", None]
    obj = analyse_udf(m, "Masker", 2, 100)
    assert not obj.analysed and obj.reason == "not a Python function (Masker)"


def test_capture_session_hands_records_to_the_registry() -> None:
    from airflow_provider_lineage.capture.listener import CaptureSession

    reg = UdfRegistry()
    reg.add("f", first, 100, "string")
    session = CaptureSession(spark=None, udfs=reg)  # type: ignore[arg-type] - only the record callback runs
    session._on_record(_record(_plan("f")))
    assert session.records[0].udfs[0]["analysis"]["analysed"] is True


def price_band(price, note):
    return "high" if price > 10 else "low"


def test_named_arguments_map_by_parameter_name_not_position() -> None:
    """``price_band(note=sku, price=qty)``: ``qty`` is read (by a condition), ``sku`` is not (was: a false edge)."""
    named = [{"class": EXPR + "NamedArgumentExpression", "num-children": 1, "key": "note"}, _attr("sku", 1),
             {"class": EXPR + "NamedArgumentExpression", "num-children": 1, "key": "price"}, _attr("qty", 2)]
    udf = {"class": EXPR + "PythonUDF", "num-children": 2, "name": "price_band", "evalType": 100,
           "dataType": "string", "resultId": {"id": 9}}
    expr = [{"class": EXPR + "Alias", "num-children": 1, "name": "band", "exprId": {"id": 5}}, udf, *named]
    plan = [{"class": "org.apache.spark.sql.catalyst.plans.logical.Project", "num-children": 0, "projectList": [expr]}]
    reg = UdfRegistry()
    reg.add("price_band", price_band, 100, "string")
    rec = _record(plan)
    reg.enrich(rec)
    note, price = rec.udfs[0]["analysis"]["args"]
    assert (note["direct"], note["conditional"]) == (None, False)
    assert price["conditional"] is True


def _shown(x):
    return x


def shows_email(a, b):
    return _shown(b)


def _hides(x):
    return "redacted"


def test_a_helper_redefined_after_the_udf_was_built_keeps_the_built_analysis(monkeypatch) -> None:
    """The registry snapshots what the function reaches when PySpark builds (pickles) the UDF: a helper the driver
    redefines afterwards is not what the executors run, so it does not change the analysis; the same function
    built again after the change is a second candidate, and the united answer keeps the edge."""
    reg = UdfRegistry()
    reg.add("f", shows_email, 100, "string")  # PySpark's _create_judf: pickled now
    monkeypatch.setitem(globals(), "_shown", _hides)
    rec = _record(_plan("f"))
    reg.enrich(rec)
    assert [a["direct"] for a in rec.udfs[0]["analysis"]["args"]] == [None, "IDENTITY"]
    reg.add("f", shows_email, 100, "string")  # built again after the change: a second candidate
    assert len(reg.by_name["f"]) == 2
    rec = _record(_plan("f"))
    reg.enrich(rec)
    # this module is importable (pickled by reference: executors import it afresh), so the rebound name is an
    # unknown callee in the second snapshot; united with the first: the edge stays, never "unused"
    assert [a["direct"] for a in rec.udfs[0]["analysis"]["args"]] == [None, "TRANSFORMATION"]
    assert rec.udfs[0]["analysis"]["candidates"] == 2
