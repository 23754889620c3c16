"""String and binary keys (issue 11): the window-key map is monotone in UTF-8 byte order, ranges
and points over-approximate, pyarrow and Spark compute the same keys, and candidates always
contain the exact files after random appends, overwrites, deletes and compactions."""
from __future__ import annotations

import json
from uuid import uuid4

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.sieve.build_pyarrow import arrow_key_type
from airflow_provider_lineage.sieve.build_spark import spark_key_expr
from airflow_provider_lineage.sieve.decisions import check
from airflow_provider_lineage.sieve.keys import (
    HIGH_KEY,
    LOW_KEY,
    WINDOW,
    KeyType,
    key_type_from_arrow,
    radix_key,
    radix_keys,
    radix_least,
    window_bytes,
    window_exact,
    window_key,
    window_keys,
)
from airflow_provider_lineage.sieve.query import intervals_of
from airflow_provider_lineage.sieve.table import list_table_files

from .helpers import exact_for, matches, replay_ops, write_file
from .test_cli import run


def utf8(s: str) -> bytes:
    return s.encode("utf-8")


def string_kt(prefix: str | bytes, alphabet: bytes = b"") -> KeyType:
    raw = prefix if isinstance(prefix, bytes) else utf8(prefix)
    return KeyType("string", "string", prefix=raw.hex(), alphabet=alphabet.hex())


def key_of(raw: bytes, prefix: bytes, alphabet: bytes) -> int:
    return radix_key(raw, prefix, alphabet) if alphabet else window_key(raw, prefix)


def keys_of(arr: pa.Array, prefix: bytes, alphabet: bytes) -> list[int]:
    return (radix_keys(arr, prefix, alphabet) if alphabet else window_keys(arr, prefix)).tolist()


# Values that exercise the window: empty, prefixes of each other, NUL bytes, window-length edges,
# non-ASCII (multi-byte UTF-8, above any ASCII byte), and arbitrary unicode.
TEXT = st.one_of(
    st.text(max_size=12),
    st.text(alphabet="Ca#0\x00é\uffff", max_size=2 * WINDOW + 2),
    st.builds(lambda n, tail: f"Clerk#{n:09d}{tail}", st.integers(0, 2000), st.sampled_from(["", "x", "\x00"])),
)
# b"" = the byte window; else radix keys over a learned alphabet (decimal, phone, hex codes, any).
ALPHABET = st.one_of(
    st.just(b""),
    st.sampled_from([b"0123456789", b"-0123456789", b"-0123456789abcdef", b"#0Cae"]),
    st.binary(min_size=2, max_size=6).map(lambda b: bytes(sorted(set(b)))).filter(lambda b: len(b) >= 2),
)
PREFIX = st.one_of(st.just(""), st.sampled_from(["C", "Clerk#0000", "a", "é", "\uffff"]), st.text(max_size=4))


# ---- the map ------------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(a=TEXT, b=TEXT, prefix=PREFIX, alphabet=ALPHABET)
def test_keys_are_monotone_in_utf8_byte_order(a, b, prefix, alphabet) -> None:
    p = utf8(prefix)
    ka, kb = key_of(utf8(a), p, alphabet), key_of(utf8(b), p, alphabet)
    if utf8(a) <= utf8(b):
        assert ka <= kb, (a, b, prefix)
    if utf8(a) >= utf8(b):
        assert ka >= kb, (a, b, prefix)
    assert LOW_KEY <= ka <= HIGH_KEY < 2**63
    if alphabet:
        if ka == kb and utf8(b) < utf8(a):
            assert not radix_least(utf8(a), p, alphabet)  # an exclusive bound at a may drop its key
        return
    if ka == kb and window_exact(utf8(a), p):
        assert a == b  # an exact key belongs to one value only
    if window_exact(utf8(a), p):
        assert window_bytes(ka, p) == utf8(a) and string_kt(p).decode(ka) == a


@settings(max_examples=200, deadline=None)
@given(values=st.lists(TEXT, max_size=30), prefix=PREFIX, cut=st.integers(0, 5), alphabet=ALPHABET)
def test_vectorised_keys_equal_the_python_map(values, prefix, cut, alphabet) -> None:
    p = utf8(prefix)
    arr = pa.array(values, pa.string())
    assert keys_of(arr, p, alphabet) == [key_of(utf8(v), p, alphabet) for v in values]
    sliced = arr.slice(min(cut, len(values)))  # a non-zero array offset
    assert keys_of(sliced, p, alphabet) == [key_of(utf8(v), p, alphabet) for v in values[min(cut, len(values)):]]
    raw = [utf8(v) for v in values]
    assert keys_of(pa.array(raw, pa.binary()), p, alphabet) == [key_of(r, p, alphabet) for r in raw]


@settings(max_examples=300, deadline=None)
@given(values=st.lists(TEXT, min_size=1, max_size=20), prefix=PREFIX, low=st.none() | TEXT,
       high=st.none() | TEXT, li=st.booleans(), hi=st.booleans(), probe=TEXT, alphabet=ALPHABET)
def test_points_and_ranges_over_approximate(values, prefix, low, high, li, hi, probe, alphabet) -> None:
    kt = string_kt(prefix, alphabet)
    keyed = {v: kt.encode(v)[0] for v in values}
    rng = S.Range(low, high, li, hi)
    ivs = intervals_of(rng, kt)
    for v, k in keyed.items():
        if matches(rng, v):  # Python str order is code-point order = UTF-8 byte order
            assert any((a is None or a <= k) and (b is None or k <= b) for a, b in ivs), (v, rng, ivs)
        assert intervals_of(S.Eq(v), kt) == [(k, k)]
    assert set(intervals_of(S.In([*values, None]), kt)) == {(k, k) for k in keyed.values()}
    k, exact = kt.encode(probe)
    window = utf8(probe).startswith(utf8(prefix)) and len(utf8(probe)) - len(utf8(prefix)) < WINDOW
    assert exact == (window and not alphabet)  # radix keys are never one value's alone


def test_encode_examples_and_errors() -> None:
    kt = string_kt("Clerk#00000")
    k951, exact = kt.encode("Clerk#000000951")
    assert exact and kt.decode(k951) == "Clerk#000000951"
    assert kt.encode("Clerk#000000952")[0] == k951 + (256 ** (WINDOW - 4) << 3)  # rest "0952": 4th byte +1
    assert kt.encode("A") == (LOW_KEY, False) and kt.encode("Z") == (HIGH_KEY, False)
    long = string_kt("").encode("C-0001234567")
    assert long == string_kt("").encode("C-00012") and not long[1]  # a full window: shared, not exact
    assert string_kt("").encode("C-0001\x00")[0] == string_kt("").encode("C-0001")[0] + 1  # lengths apart
    lo, hi = kt.interval("Clerk#000000951", "Clerk#000000953", False, False)
    assert (lo, hi) == (k951 + 1, kt.encode("Clerk#000000953")[0] - 1)  # exact bounds: exclusive drops their keys
    with pytest.raises(TypeError, match="needs str"):
        kt.encode(5)
    b = KeyType("binary", "binary", prefix="00ff")
    assert b.parse("0x00ff01") == b"\x00\xff\x01" and b.encode(b"\x00\xff\x01")[1]
    with pytest.raises(TypeError, match="needs bytes"):
        b.encode("x")


def test_arrow_types_and_learned_prefix(tmp_path) -> None:
    for t in (pa.string(), pa.large_string(), pa.string_view()):
        assert key_type_from_arrow(t, "k").kind == "string"
    for t in (pa.binary(), pa.large_binary(), pa.binary(16)):
        assert key_type_from_arrow(t, "k").kind == "binary"
    root = str(tmp_path / "t")
    write_file(f"{root}/a.parquet", ["Clerk#000000951", None, "Clerk#000000001"], pa.string())
    write_file(f"{root}/b.parquet", ["Clerk#000001000", "Clerk#000000500"], pa.string())
    write_file(f"{root}/n.parquet", [None, None], pa.string())  # only NULLs: no bounds
    kt = arrow_key_type(list_table_files(root), "k")
    assert (kt.kind, kt.prefix_bytes, kt.width, kt.alphabet) == ("string", b"Clerk#00000", 15, b"0159".hex())
    keys, nulls = kt.keys_of_arrow(pa.chunked_array([pa.array(["Clerk#000000951", None, "Clerk#000000951"])]))
    assert keys.tolist() == [kt.encode("Clerk#000000951")[0]] and nulls == 1
    for t in (pa.string_view(), pa.large_string()):  # tpchgen-cli writes string_view columns
        view = pa.chunked_array([pa.array(["Clerk#000000951", None], t), pa.array(["A"], t)])
        got, n = kt.keys_of_arrow(view)
        assert got.tolist() == [LOW_KEY, *keys.tolist()] and n == 1
    write_file(f"{root}/v.parquet", ["Clerk#000000002", None], pa.string_view())
    assert arrow_key_type(list_table_files(root), "k").prefix_bytes == b"Clerk#00000"


# ---- end to end ---------------------------------------------------------------------------------
def _codes_table(root: str) -> dict[str, list[str | None]]:
    layout: dict[str, list[str | None]] = {}
    for i in range(6):  # every file holds a low and a high stretch of codes: min/max reads them all
        keys: list[str | None] = [f"C-{n:06d}" for n in (*range(i * 10, i * 10 + 10), *range(900_000 + i, 900_060, 6))]
        if i == 3:
            keys.append(None)
        layout[f"{root}/f{i}.parquet"] = keys
        write_file(f"{root}/f{i}.parquet", keys, pa.string())
    return layout


def test_string_index_prunes_points_in_lists_and_ranges(tmp_path) -> None:
    root = str(tmp_path / "t")
    layout = _codes_table(root)
    stats = S.build(None, root, "k")
    idx = S.open_index(root, "k")
    assert idx.key_type.prefix_bytes == b"C-" and stats.key_type == "string"
    for pred in (S.Eq("C-000013"), S.Eq("C-000099"), S.Eq("C-5"), S.In(["C-000001", "C-000042", None]),
                 S.Range("C-000010", "C-000019", True, False), S.Range("C-000500", "C-899999"),
                 S.Range("C-900001", None), S.Range(None, "B"), S.Range("D", None), S.IsNull()):
        got = set(idx.candidates(pred, assume_fresh=True))
        assert got == exact_for(layout, pred), pred  # short codes: one key each, tight answers
    # Decimal codes are digits of base 10 after the prefix (consecutive codes, consecutive keys); an
    # end of value counts as '0', so 'C-00002' < 'C-000020' share a key and an exclusive bound ending
    # in '0' keeps that key's files.
    assert idx.key_type.alphabet == b"0123456789".hex()
    half_open = S.Range("C-000010", "C-000020", True, False)
    got = set(idx.candidates(half_open, assume_fresh=True))
    assert exact_for(layout, half_open) <= got <= exact_for(layout, half_open) | exact_for(layout, S.Eq("C-000020"))
    r = run("query", root, "k", "--eq", "C-000013")
    assert r.returncode == 0, r.stderr
    assert [json.loads(x)["file"] for x in r.stdout.splitlines()] == [f"{root}/f1.parquet"]
    r = run("query", root, "k", "--range", "C-000010..C-000021")
    assert [json.loads(x)["file"] for x in r.stdout.splitlines()] == [f"{root}/f1.parquet", f"{root}/f2.parquet"]
    r = run("query", root, "k", "--range", "C-000500", "C-899999")
    assert r.returncode == 0 and r.stdout == "", r.stderr


def test_spark_keys_equal_python_keys(spark) -> None:
    """spark_key_expr computes window keys on executors exactly as the pyarrow path does."""
    values = ["", "a", "a\x00", "\x00", "C", "C-", "C-0", "C-000123", "C-0001234", "C-00012345678",
              "Clerk#000000951", "Clerk#0000", "Clerk#00000", "Clerk#00000\uffff", "B\uffff", "D", "é",
              "日本語のテキスト", "\U0001f600x", "zzzzzzzzzzzzzz", "\x7f\x80"]
    import random

    rnd = random.Random(11)
    values += ["".join(rnd.choice("C-0é\x00z") for _ in range(rnd.randint(0, 12))) for _ in range(200)]
    df = spark.createDataFrame([(v, utf8(v)) for v in values] + [(None, None)], "s string, b binary")
    prefixes = [utf8(p) for p in ("", "C-", "Clerk#00000", "日本")] + [utf8("é")[:1]]  # the last cut mid-character
    alphabets = [b"0123456789", b"-0C", bytes(sorted(set(utf8("C-0é"))))]
    window = [(p, b"", col, kind) for p in prefixes for col, kind in (("s", "string"), ("b", "binary"))]
    radix = [(p, a, "s", "string") for p in prefixes[:2] for a in alphabets]
    cases = [(i, *case) for i, case in enumerate(window + radix)]
    exprs = [spark_key_expr(col, KeyType(kind, kind, prefix=p.hex(), alphabet=a.hex())).alias(f"k{i}{col}")
             for i, p, a, col, kind in cases]
    rows = df.select("s", *exprs).collect()  # one Spark job for every case
    for i, p, a, col, _ in cases:
        got = {(r.s, r[f"k{i}{col}"]) for r in rows}
        want = {(v, key_of(utf8(v), p, a)) for v in values} | {(None, None)}
        assert got == want, (p, a, col, sorted(got ^ want, key=str)[:4])


def test_spark_build_and_pruned_read_on_strings(spark, tmp_path) -> None:
    from pyspark.sql import functions as F

    root = str(tmp_path / "t")
    layout = _codes_table(root)
    S.build(spark, root, "k", index_path=str(tmp_path / "spark"), engine="spark")
    S.build(None, root, "k", index_path=str(tmp_path / "local"))
    a = S.open_index(root, "k", index_path=str(tmp_path / "spark"))
    b = S.open_index(root, "k", index_path=str(tmp_path / "local"))
    assert a.key_type.prefix == b.key_type.prefix == utf8("C-").hex()
    assert [(m.s_min, m.s_max, m.n_keys) for m in a.metas] == [(m.s_min, m.s_max, m.n_keys) for m in b.metas]
    full = spark.read.parquet(root)
    for pred, cond in (
        (S.Eq("C-000013"), F.col("k") == "C-000013"),
        (S.In(["C-000001", "C-900005"]), F.col("k").isin("C-000001", "C-900005")),
        (S.Range("C-000010", "C-000020", False, True), (F.col("k") > "C-000010") & (F.col("k") <= "C-000020")),
    ):
        assert set(a.candidates(pred)) == set(b.candidates(pred)) == exact_for(layout, pred)
        df = S.read(spark, root, "k", pred, index_path=str(tmp_path / "spark"), full_read_share=1.0)
        assert sorted(df.collect()) == sorted(full.filter(cond).collect()), pred


# ---- property: never a lost file ------------------------------------------------------------------
KEY = st.one_of(st.sampled_from(["C-000001", "C-000002", "C-000100", "C-0001000", "C-00010000", "C-",
                                 "C", "B", "D", "", "C-é", "C-\x00"]),
                st.builds(lambda n: f"C-{n:06d}", st.integers(0, 120)),
                st.text(alphabet="C-01é\x00", max_size=11), st.none())
FILE = st.lists(KEY, min_size=1, max_size=20)
OP = st.one_of(st.tuples(st.just("append"), FILE), st.tuples(st.just("overwrite"), st.integers(0, 50), FILE),
               st.tuples(st.just("delete"), st.integers(0, 50)), st.tuples(st.just("compact")))
VALUE = KEY.filter(lambda v: v is not None)
PRED = st.one_of(st.builds(S.Eq, VALUE), st.builds(S.In, st.lists(VALUE, max_size=4)),
                 st.builds(S.Range, st.none() | VALUE, st.none() | VALUE, st.booleans(), st.booleans()),
                 st.just(S.IsNull()))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial=st.lists(FILE, min_size=1, max_size=4), ops=st.lists(OP, max_size=6),
       mode=st.sampled_from(["cow", "mor"]), e=st.integers(0, 4), cap=st.integers(2, 30),
       preds=st.lists(PRED, min_size=3, max_size=8))
def test_string_candidates_superset_of_exact_after_updates(initial, ops, mode, e, cap, preds) -> None:
    for root, layout in replay_ops(initial, ops, prefix="sieve-strings-", typ=pa.string(), every_step=True,
                                   error_bound=e, max_segment_keys=cap, mode=mode):
        idx = S.open_index(root, "k")
        for pred in preds:
            got = set(idx.candidates(pred))
            assert exact_for(layout, pred) <= got <= set(layout), (pred, layout, idx.key_type.prefix)


def test_binary_keys_build_query_and_pruned_read(spark, tmp_path) -> None:
    root = str(tmp_path / "b")
    layout = {f"{root}/a.parquet": [b"\x00\x01", b"\xff\xfe", None], f"{root}/b.parquet": [b"\x00\x02", b"\x80"]}
    for path, keys in layout.items():
        write_file(path, keys, pa.binary())
    S.build(spark, root, "k", engine="spark")  # binary keys computed on executors
    idx = S.open_index(root, "k")
    assert idx.key_type.kind == "binary" and idx.key_type.prefix == ""
    for pred in (S.Eq(b"\x00\x02"), S.Range(b"\x80", None), S.In([b"\xff\xfe", b"\x00"]), S.IsNull()):
        assert set(idx.candidates(pred, assume_fresh=True)) == exact_for(layout, pred), pred
    r = run("query", root, "k", "--eq", "0x0002")
    assert [json.loads(x)["file"] for x in r.stdout.splitlines()] == [f"{root}/b.parquet"], r.stderr
    rows = S.read(spark, root, "k", S.Eq(b"\xff\xfe"), full_read_share=1.0).collect()
    assert [bytes(x.k) for x in rows] == [b"\xff\xfe"]


def test_radix_keys_only_for_codes() -> None:
    """Codes (even a sparse subset, or clusters) get radix keys; random strings keep the byte window."""
    import random

    from airflow_provider_lineage.sieve.keys import learn_alphabet

    rnd = random.Random(5)
    kt = string_kt("C-")
    codes = pa.array([f"C-{n:06d}" for n in rnd.sample(range(1_000_000), 50_000)])
    assert learn_alphabet(kt, codes).alphabet == b"0123456789".hex()
    clusters = pa.array([f"C-{n:06d}" for n in (*range(60), *range(900_000, 900_060, 6))])
    assert learn_alphabet(kt, clusters).alphabet == b"0123456789".hex()
    phones = pa.array(
        [
            f"{rnd.randint(10, 34)}-{rnd.randint(100, 999)}-{rnd.randint(100, 999)}-{rnd.randint(1000, 9999)}"
            for _ in range(5_000)
        ]
    )
    assert learn_alphabet(string_kt(""), phones).alphabet == ""
    assert learn_alphabet(string_kt(""), pa.array([str(uuid4()) for _ in range(2_000)])).alphabet == ""


@pytest.mark.parametrize("mode", ["cow", "mor"])
def test_values_outside_the_learned_prefix_recommend_a_rebuild(tmp_path, mode: str) -> None:
    """A sync keeps answers right for values outside the learned prefix (they share one key), and
    maintenance asks for the rebuild that learns a prefix covering them."""
    root = str(tmp_path / "t")
    layout = _codes_table(root)
    S.build(None, root, "k", mode=mode)
    layout[f"{root}/g.parquet"] = ["D-000001", "D-000002"]
    layout[f"{root}/h.parquet"] = ["A-7"]
    for name in ("g", "h"):
        write_file(f"{root}/{name}.parquet", layout[f"{root}/{name}.parquet"], pa.string())
    S.sync(None, root, "k")
    idx = S.open_index(root, "k")
    for pred in (S.Eq("D-000001"), S.Eq("A-7"), S.Eq("C-000013"), S.Range("D", None)):
        assert exact_for(layout, pred) <= set(idx.candidates(pred)), pred
    st = S.maintenance_status(root, "k")
    assert st.recommendation == "rebuild" and "2 file(s) hold k values outside the learned prefix b'C-'" in st.reason
    assert check(root, "k").action == "rebuild"
    S.rebuild(None, root, "k")
    assert S.open_index(root, "k").key_type.prefix_bytes == b""
    assert S.maintenance_status(root, "k").recommendation == "none"
