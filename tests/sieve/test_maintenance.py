from __future__ import annotations

import os
import sys

from airflow_provider_lineage import sieve as S

from .helpers import write_file


def test_recommendations(tmp_path) -> None:
    root = str(tmp_path / "t")
    assert S.maintenance_status(root, "k").recommendation == "build"
    for i in range(4):
        write_file(f"{root}/f{i}.parquet", list(range(i * 100, i * 100 + 50)))
    S.build(None, root, "k", mode="mor", error_bound=1000)
    st = S.maintenance_status(root, "k")
    assert st.present and st.recommendation == "none" and st.version == 1
    write_file(f"{root}/f0.parquet", [1, 2])  # rewrite
    st = S.maintenance_status(root, "k")
    assert (st.files_changed, st.recommendation) == (1, "sync") and 0 < st.drift < 0.5
    S.sync(None, root, "k")
    for i in range(8):
        write_file(f"{root}/n{i}.parquet", [7000 + i])
        S.sync(None, root, "k")
    st = S.maintenance_status(root, "k")
    assert st.recommendation == "compact" and st.delta_count == 9 and st.delta_bytes > 0
    S.compact(root, "k")
    for i in range(4):
        os.remove(f"{root}/f{i}.parquet")
        os.remove(f"{root}/n{i}.parquet")
    st = S.maintenance_status(root, "k")
    assert st.recommendation == "rebuild" and st.files_removed == 8 and st.drift >= 0.5
    assert st.to_dict()["record_version"] == 1


def test_status_needs_no_spark(tmp_path) -> None:
    root = str(tmp_path / "t")
    write_file(f"{root}/a.parquet", [1])
    S.build(None, root, "k")
    before = set(sys.modules)
    S.maintenance_status(root, "k")
    assert not any(m.startswith("pyspark") for m in set(sys.modules) - before)
