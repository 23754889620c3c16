"""Masking is proved, not assumed (issue 46): the expression rules on real optimized plans from local Spark.

A masked edge lets a ``require_masked`` guard pass a sensitive column: it must be set only where the value
really cannot be read back from the output. Each case is checked on the data too (the output holds the email
in clear, or does not), so a rule that drifts from Spark's behaviour fails here.
"""
from __future__ import annotations

from pyspark.sql import functions as F

from airflow_provider_lineage.lineage import analyze_record
from airflow_provider_lineage.lineage.expressions import MASKING_FUNCTIONS, MASKING_STATIC, REVERSIBLE
from tests.lineage.helpers import check_properties

KEY = "0000111122223333"


def _masking(env, exprs: dict[str, str]) -> tuple[dict[str, list[tuple[str, bool]]], dict[str, str]]:
    """Write ``exprs`` over ``customers`` (+ its email in clear): per column its DIRECT edges (field, masking), and
    the first row's values (as strings)."""
    c = env.spark.read.parquet(env.customers).where("cust_id = 1")
    df = c.select("email", "cust_id", *(F.expr(e).alias(k) for k, e in exprs.items()))
    rec = env.write_parquet(df)
    lin = analyze_record(rec)
    check_properties(lin)
    row = df.first().asDict()
    out = {k: sorted((e.field, e.masking) for e in lin.columns[k] if e.type == "DIRECT") for k in exprs}
    return out, {k: (bytes(v).hex() if isinstance(v, bytes | bytearray) else str(v)) for k, v in row.items()}


def test_mask_with_null_replacements_is_not_masking(env) -> None:
    got, row = _masking(env, {
        "all_null": "mask(email, NULL, NULL, NULL, NULL)",
        "lower_kept": "mask(email, 'X', NULL, 'n')",
        "digits_kept": "mask(email, 'X', 'x', NULL)",
        "default": "mask(email)",
        "literals": "mask(email, 'X', 'x', 'n', NULL)",
        "folded_null": "mask(email, 'X', 'x', CAST(NULL AS STRING))",
    })
    # the data: a null replacement keeps that class of characters (the email comes back in clear)
    assert row["all_null"] == row["email"] == "x1@m"
    assert row["lower_kept"] == "x1@m".replace("1", "n") and row["digits_kept"] == "x1@x"
    for col in ("all_null", "lower_kept", "digits_kept"):
        assert got[col] == [("email", False)], col
    assert row["default"] == row["literals"] == "xn@x"
    assert got["default"] == got["literals"] == [("email", True)]
    # Spark requires foldable replacements: an expression that folds to NULL is a null literal in the plan
    assert row["folded_null"] == "x1@x" and got["folded_null"] == [("email", False)]


def test_narrow_hashes_of_fixed_width_values_are_not_masking(env) -> None:
    got, _row = _masking(env, {
        "hash_int": "hash(cust_id)",
        "xx_int": "xxhash64(cust_id)",
        "hash_str": "hash(email)",
        "crc_str": "crc32(email)",
        "sha_int": "sha2(cast(cust_id AS string), 256)",
    })
    for col in ("hash_int", "xx_int"):
        assert got[col] == [("cust_id", False)], col
    for col in ("hash_str", "crc_str"):
        assert got[col] == [("email", True)], col
    assert got["sha_int"] == [("cust_id", True)]


def test_an_encoding_undone_later_leaves_the_path_unmasked(env) -> None:
    """``graph.compose`` keeps masking sticky along a path; that is right only because no reversible encoding is a
    masking step: encode-then-decode gives the email back, and the lineage says so."""
    undone = {
        "aes": f"aes_decrypt(aes_encrypt(email, '{KEY}'), '{KEY}')",
        "try_aes": f"try_aes_decrypt(aes_encrypt(email, '{KEY}'), '{KEY}')",
        "b64": "unbase64(base64(email))",
        "hex": "unhex(hex(email))",
        "codec": "decode(encode(email, 'utf-8'), 'utf-8')",
        "json": "from_json(to_json(named_struct('e', email)), 'e string').e",
    }
    got, row = _masking(env, {k: f"CAST({e} AS STRING)" for k, e in undone.items()})
    for col in undone:
        assert row[col] == row["email"], col  # the data: the email in clear
        assert got[col] == [("email", False)], col


def test_reversible_encodings_alone_are_not_masking(env) -> None:
    got, _row = _masking(env, {
        "aes": f"aes_encrypt(email, '{KEY}')",
        "b64": "base64(email)",
        "hex": "hex(email)",
        "sha": "sha2(email, 256)",
        "md5": "md5(email)",
    })
    for col in ("aes", "b64", "hex"):
        assert got[col] == [("email", False)], col
    assert got["sha"] == got["md5"] == [("email", True)]


def test_no_reversible_function_is_a_masking_function() -> None:
    assert not (REVERSIBLE & MASKING_FUNCTIONS)
    assert not ({r.lower() for r in REVERSIBLE} & MASKING_STATIC)
