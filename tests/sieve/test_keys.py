from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from airflow_provider_lineage.sieve.errors import UnsupportedKeyType
from airflow_provider_lineage.sieve.keys import KeyType, key_type_from_arrow


def test_encode_preserves_order_and_exactness() -> None:
    d = KeyType("date", "date")
    assert d.encode(dt.date(1970, 1, 2)) == (1, True)
    ts = KeyType("timestamp", "timestamp")
    assert ts.encode(dt.datetime(1970, 1, 1, 0, 0, 1)) == (1_000_000, True)
    aware = dt.datetime(1970, 1, 1, 1, 0, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert ts.encode(aware) == (1_000_000, True)
    dec = KeyType("decimal", "decimal(10,2)", 10, 2)
    assert dec.encode(decimal.Decimal("1.25")) == (125, True)
    assert dec.encode(decimal.Decimal("1.255")) == (125, False)
    assert dec.interval(decimal.Decimal("1.255"), decimal.Decimal("1.30"), False, False) == (126, 129)
    i = KeyType("int", "bigint")
    assert i.interval(5, 10, False, True) == (6, 10)


def test_arrow_keys_all_types() -> None:
    kt = key_type_from_arrow(pa.decimal128(38, 3), "k")
    big = decimal.Decimal("12345678901234567890123.456")
    keys, nulls = kt.keys_of_arrow(pa.array([big, None, big], pa.decimal128(38, 3)))
    assert keys.tolist() == [12345678901234567890123456] and nulls == 1
    kt = key_type_from_arrow(pa.timestamp("ns", tz="UTC"), "k")
    keys, _ = kt.keys_of_arrow(pa.array([1_500, 2_000_999], pa.timestamp("ns", tz="UTC")))
    assert kt.kind == "timestamp" and keys.tolist() == [1, 2000]
    assert key_type_from_arrow(pa.timestamp("us"), "k").kind == "timestamp_ntz"


def test_unsupported_type_names_type_and_supported() -> None:
    with pytest.raises(UnsupportedKeyType, match="list<item: string>.*supported are integer.*string, binary"):
        key_type_from_arrow(pa.list_(pa.string()), "tags")


def test_old_key_type_dicts_load_and_non_string_dicts_keep_their_shape() -> None:
    old = {"kind": "int", "type_name": "bigint", "precision": 0, "scale": 0, "width": 8}  # no "prefix"
    assert KeyType.from_dict(old) == KeyType("int", "bigint")
    assert KeyType("int", "bigint").to_dict() == old  # readable by releases without string keys
    s = KeyType("string", "string", width=15, prefix=b"Clerk#".hex())
    assert KeyType.from_dict(s.to_dict()) == s and s.prefix_bytes == b"Clerk#"


@pytest.mark.parametrize("values", [[], [5], [3, 3, 3], [1, 2, 2, 9], [9, -4, 9, 0, -(1 << 62), 1 << 62, 0],
                                    list(range(1000, 0, -3)) * 2])
def test_unique_sorted_equals_numpy_unique(values) -> None:
    import numpy as np

    from airflow_provider_lineage.sieve.keys import unique_sorted

    a = np.asarray(values, np.int64)
    got = unique_sorted(a)
    assert got.dtype == np.int64 and got.tolist() == np.unique(a).tolist()
