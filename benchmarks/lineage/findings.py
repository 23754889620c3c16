"""Root causes of the misses the benchmark finds, written after looking at each one.

Keys are scenario ids; the report prints the text next to that scenario's misses. A miss in a
scenario without an entry is reported as "not analysed yet".
"""
from __future__ import annotations

ROOT_CAUSES: dict[str, str] = {
    "join_anti_sql": (
        "Labelling choice, not an error in the column set: `c.is_active` is written in the ON clause "
        "(JOIN by the spec's wording), the optimizer pushes it below the join as a Filter on the right "
        "side, so the optimized plan shows a FILTER. Recoverable only from the analyzed plan; the edge "
        "itself is found (subtype disagreement only)."
    ),
    "dedup_df": (
        "Plan limitation: dropDuplicates(subset) reaches the optimized plan as Aggregate(keys, first(x)) "
        "(ReplaceDeduplicateWithAggregate), indistinguishable from a user-written first(); the engine "
        "says AGGREGATION where the value is taken as is from one row (IDENTITY). Recoverable from the "
        "analyzed plan's Deduplicate node. Subtype only."
    ),
    "write_partitioned_df": (
        "Engine bug (minor): for a partitioned file write Spark's V1Writes wraps string partition columns "
        "in `empty2null(...)`; the engine treats it as a TRANSFORMATION. It only maps '' to null as a "
        "storage detail and should be value-preserving (IDENTITY). Subtype only."
    ),
}
