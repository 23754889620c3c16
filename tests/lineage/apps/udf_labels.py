"""Hand-labelled lineage of every scenario of ``udf_app.py``, read from the UDF bodies (the test's
reference and the benchmark's: ``benchmarks/lineage/udf_cost.py``)."""
from __future__ import annotations

I = ("DIRECT", "IDENTITY", False)
T = ("DIRECT", "TRANSFORMATION", False)
M = ("DIRECT", "TRANSFORMATION", True)
A = ("DIRECT", "AGGREGATION", False)
C = ("INDIRECT", "CONDITIONAL", False)


def e(field: str, kind: tuple[str, str, bool]) -> tuple[str, str, str, bool]:
    return (field, *kind)


#: scenario -> {output column: exact edge set}
EXPECTED: dict[str, dict[str, set[tuple[str, str, str, bool]]]] = {
    "used_unused": {"r": {e("email", T)}},
    "identity": {"r": {e("email", I)}},
    "condition_only": {"r": {e("score", C)}},
    "mask_branch": {"r": {e("email", T), e("country", C)}},
    "hash": {"r": {e("email", M)}},
    "hmac": {"r": {e("email", M)}},
    "helper": {"r": {e("name", T)}},
    "helper_drops_arg": {"r": {e("email", I)}},
    "closure": {"r": {e("name", T)}},
    "lambda": {"r": {e("email", T)}},
    "partial": {"r": {e("score", T)}},
    "star_args": {"r": {e("email", T), e("name", T)}},
    "default_arg": {"r": {e("score", T)}},
    "kwargs": {"r": {e("country", I)}},
    "named_args": {"r": {e("score", C)}},
    "hash_update": {"r": {e("email", M)}},
    "struct_fields": {"rx": {e("email", T)}, "ry": {e("country", I)}},
    "nested": {"r": {e("email", T), e("country", T)}},
    "multi_column_expr": {"r": {e("name", T), e("country", T)}},
    "filter": {"email": {e("email", I)}},
    "aggregate_input": {"s": {e("score", A)}, "country": {e("country", I)}},
    "struct": {"r": {e("email", T), e("country", T)}},
    "loop_condition": {"r": {e("code", T), e("code", C)}},
    "mutation": {"r": {e("email", T)}},
    "arrow_python_udf": {"r": {e("email", I)}},
    "sql_registered": {"r": {e("email", I)}, "s": {e("score", C)}},
    "pandas_scalar": {"r": {e("score", T)}},
    "pandas_iterator": {"r": {e("score", T)}},
    "pandas_grouped_agg": {"m": {e("score", A)}, "country": {e("country", I)}},
    "grouped_map": {"country": {e("country", I)}, "total": {e("score", T)}},
    "map_in_pandas": {"id": {e("id", I)}, "email": {e("email", I)}},
    "bound_method_alias": {"r": {e("name", T), e("email", T)}},
    "global_helper": {"r": {e("email", I)}},
    "redefined_helper": {"r": {e("email", I)}},
    "pandas_inplace": {"r": {e("score", T), e("age", T)}},
    # fallbacks: every argument DIRECT, as before the analysis
    "fallback_builtin": {"r": {e("email", T)}},
    "fallback_c_function": {"r": {e("score", T)}},
    "fallback_dynamic": {"r": {e("email", T), e("country", T)}},
    "fallback_no_source": {"r": {e("email", T), e("country", T)}},
    "fallback_too_large": {"r": {e("email", T), e("country", T)}},
    "fallback_introspection": {"r": {e("email", T), e("country", T)}},
}

DATASET_EDGES = {
    "filter": {("age", "FILTER")},
    "aggregate_input": {("country", "GROUP_BY")},
    "pandas_grouped_agg": {("country", "GROUP_BY")},
    "grouped_map": {("country", "GROUP_BY")},
}

FALLBACKS = {
    "fallback_builtin": ("len", "built-in or C function"),
    "fallback_c_function": ("floor", "built-in or C function"),
    "fallback_dynamic": ("dynamic", "dynamic code: eval() in the body"),
    "fallback_no_source": ("no_source", "no source"),
    "fallback_too_large": ("large", "body too large"),
    "fallback_introspection": ("peek_frame", "frame introspection: inspect.currentframe() in the body"),
}
