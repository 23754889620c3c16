"""SieveIndexOperator: arguments, what to index (table / indexes / upstream lineage XCom), real spark-submit
runs of the job (local[2]), failures that name the fix, and the OpenLineage datasets."""
from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_lineage import sieve as S
from airflow_provider_lineage.operators.sieve import SieveIndexOperator, job_path
from airflow_provider_lineage.sieve.maintain import maintain

SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}


@pytest.fixture(autouse=True)
def spark_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ["PATH"].split(os.pathsep):
        monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ["PATH"])


def _dates_table(root: Path, parts: int = 3, start: int = 0) -> str:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + parts):
        days = [dt.date(2024, 1, 1) + dt.timedelta(days=i * 10 + d) for d in range(5)]
        pq.write_table(
            pa.table(
                {
                    "day": pa.array(days, pa.date32()),
                    "id": pa.array(range(i * 5, i * 5 + 5), pa.int64()),
                    "name": pa.array([f"n{i}"] * 5),
                    "tags": pa.array([[f"t{i}"]] * 5),
                }
            ),
            root / f"part-{i:03d}.parquet",
        )
    return str(root)


def _op(**kwargs: Any) -> SieveIndexOperator:
    kwargs.setdefault("task_id", "index")
    kwargs.setdefault("conf", dict(SPARK_CONF))
    kwargs.setdefault("lineage_emission", "off")
    kwargs.setdefault("progress_interval", 5)
    return SieveIndexOperator(**kwargs)


class TestArguments:
    def test_is_a_spark_submit_operator_submitting_the_job_script(self) -> None:
        from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

        op = _op(table="/t", columns="day")
        assert isinstance(op, SparkSubmitOperator)
        assert op.application == job_path() and job_path().endswith("sieve/job.py")
        assert set(SparkSubmitOperator.template_fields) < set(op.template_fields)
        assert {"conn_id", "table", "columns", "indexes", "index_columns", "index_path", "mode"} <= set(
            op.template_fields
        )
        op.conn_id = "other"
        assert op._get_hook()._conn_id == "other"

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"table": "/t", "columns": "c", "mode": "fast"}, "use one of auto"),
            ({"table": "/t", "columns": "c", "update_strategy": "append"}, "copy_on_write"),
            ({"table": "/t"}, "needs columns="),
            ({"table": "/t", "columns": "c", "indexes": []}, "not both"),
            ({}, "say what to index"),
            ({"table": "/t", "columns": "c", "application": "x.py"}, "submits its own job script"),
            ({"table": "/t", "columns": "c", "freshness": "crc"}, "'crc' is unknown: use one of stat, footer"),
        ],
    )
    def test_bad_arguments_name_the_fix(self, kwargs: dict[str, Any], match: str) -> None:
        with pytest.raises(ValueError, match=match):
            _op(**kwargs)

    def test_jobs_from_table_columns_and_index_path_placeholders(self) -> None:
        op = _op(table="/data/sales", columns=["day", "id"], index_path="/idx/{table}/{column}", mode="sync",
                 error_bound=2, max_deltas=3)
        jobs = op.resolve_jobs()
        assert [(j.table, j.column, j.index_path, j.mode) for j in jobs] == [
            ("/data/sales", "day", "/idx/sales/day", "sync"), ("/data/sales", "id", "/idx/sales/id", "sync")]
        assert jobs[0].options == {"error_bound": 2} and jobs[0].thresholds == {"max_deltas": 3}
        with pytest.raises(ValueError, match="put \\{column\\} in it"):
            _op(table="/t", columns=["a", "b"], index_path="/idx/one").resolve_jobs()

    def test_jobs_from_indexes_accepts_the_sensor_output(self) -> None:
        needs = [{"table": "/t", "column": "day", "index_path": "/i/day", "action": "sync", "reason": "1 added"},
                 {"table": "/t", "column": "day", "index_path": "/i/day", "action": "sync", "reason": "dup"}]
        jobs = _op(indexes=needs).resolve_jobs()
        assert [(j.table, j.column, j.index_path, j.mode) for j in jobs] == [("/t", "day", "/i/day", "auto")]

    def test_storage_options_go_to_the_job_environment_not_its_arguments(self) -> None:
        """The job reads them from $SIEVE_STORAGE_OPTIONS (tests/sieve/test_s3.py runs it on S3)."""
        import json

        opts = {"region": "eu-west-1", "secret_key": "s3cr3t"}
        op = _op(table="s3://lake/sales", columns="day", storage_options=opts, env_vars={"TZ": "UTC"})
        assert "storage_options" in op.template_fields
        env = op.submit_env()
        assert env is not None and env["TZ"] == "UTC" and json.loads(env["SIEVE_STORAGE_OPTIONS"]) == opts
        assert op.env_vars == {"TZ": "UTC"}  # the operator's own argument is left as it was
        assert "s3cr3t" not in json.dumps([j.to_dict() for j in op.resolve_jobs()])
        assert _op(table="/t", columns="day").submit_env() is None
        rendered = _op(table="/t", columns="day", storage_options={"x": 1})
        rendered.storage_options = '{"region": "us-east-1"}'  # a template rendered as JSON text
        assert json.loads(rendered.submit_env()["SIEVE_STORAGE_OPTIONS"]) == {"region": "us-east-1"}
        rendered.storage_options = "region=us"
        with pytest.raises(TypeError, match="not a mapping"):
            rendered.submit_env()

    def test_jobs_from_lineage_outputs(self) -> None:
        from airflow_provider_lineage._compat import AirflowException

        written = [
            {
                "namespace": "file",
                "name": "/w/mart/daily",
                "table": None,
                "location": "file:/w/mart/daily",
                "format": "parquet",
                "columns": ["day", "amount"],
                "mode": "Overwrite",
            },
            {
                "namespace": "file",
                "name": "/w/raw/txn",
                "table": "spark_catalog.default.txn",
                "location": "file:/w/raw/txn",
                "format": "parquet",
                "columns": ["txn_date", "customer_id"],
                "mode": "Append",
            },
        ]
        op = _op(
            index_columns={"daily": "day", "*/raw/*": ["txn_date", "customer_id"]}, index_path="/i/{table}/{column}"
        )
        jobs = op._jobs_from_lineage(written)
        assert [(j.table, j.column, j.index_path) for j in jobs] == [
            ("/w/mart/daily", "day", "/i/daily/day"), ("/w/raw/txn", "txn_date", "/i/txn/txn_date"),
            ("/w/raw/txn", "customer_id", "/i/txn/customer_id")]
        with pytest.raises(AirflowException, match="column 'amt' is not in /w/mart/daily .*fix index_columns"):
            _op(index_columns={"daily": "amt"})._jobs_from_lineage(written)
        with pytest.raises(AirflowException, match="'weekly' but the upstream tasks wrote /w/mart/daily, /w/raw/txn"):
            _op(index_columns={"weekly": "day"})._jobs_from_lineage(written)


class TestExecute:
    def test_builds_through_spark_submit(self, tmp_path: Path) -> None:
        table = _dates_table(tmp_path / "sales")
        op = _op(
            table=table, columns=["day", "id"], index_path=str(tmp_path / "idx" / "{column}"), rows_per_partition=4
        )
        out = op.execute({})
        assert [(r["column"], r["action"], r["status"], r["version"]) for r in out] == [
            ("day", "build", "ok", 1), ("id", "build", "ok", 1)]
        assert out[0]["key_type"] == "date" and out[0]["index_bytes"] > 0 and out[0]["bytes_per_key"] > 0
        json.dumps(out)
        idx = S.open_index(table, "day", index_path=str(tmp_path / "idx" / "day"))
        assert not idx.is_stale()
        assert idx.candidates(S.Eq(dt.date(2024, 1, 12))) == [f"{table}/part-001.parquet"]
        # A sync through spark-submit: the example ETL's second run (tests/test_example_etl.py).

    def test_bad_inputs_fail_the_task_naming_each_fix_and_leave_indexes_intact(self, tmp_path: Path) -> None:
        from airflow_provider_lineage._compat import AirflowException

        table = _dates_table(tmp_path / "sales")
        good = maintain(None, table, "day")  # an existing index that must survive
        (tmp_path / "a-file").write_text("x")
        op = _op(indexes=[
            {"table": str(tmp_path / "nope"), "column": "day"},
            {"table": table, "column": "amount"},
            {"table": table, "column": "tags"},  # a list: no order-preserving key
            {"table": table, "column": "id", "index_path": str(tmp_path / "a-file" / "id")},
            {"table": table, "column": "day"},
        ])
        with pytest.raises(AirflowException) as info:
            op.execute({})
        msg = str(info.value)
        assert "4 of 5 Sieve index job(s) failed" in msg
        assert "does not exist" in msg and "check the table path or name" in msg
        assert "no column 'amount'" in msg and "check the column name" in msg
        assert "UnsupportedKeyType" in msg and "'tags'" in msg
        assert "IndexNotWritable" in msg and "pass index_path=" in msg
        ok = [r for r in op.results if r.status == "ok"]
        assert [(r.column, r.action, r.version) for r in ok] == [("day", "none", good.version)]
        S.open_index(table, "day").verify()
        with pytest.raises(S.IndexUnavailable):  # nothing half-written was committed
            S.open_index(table, "amount")

    def test_openlineage_index_is_an_output_derived_from_the_table(self, tmp_path: Path) -> None:
        table = _dates_table(tmp_path / "sales")
        op = _op(table=table, columns="day")
        op.results = [maintain(None, table, "day")]
        lineage = op.get_openlineage_facets_on_complete(None)
        (inp,) = lineage.inputs
        (out,) = lineage.outputs
        assert (inp.namespace, inp.name) == ("file", table)
        assert (out.namespace, out.name) == ("file", f"{table}/_sieve/day")
        assert [(f.name, f.type) for f in out.facets["schema"].fields] == [("day", "date")]
        assert [(f.name, f.type) for f in inp.facets["schema"].fields] == [("day", "date")]
        src = out.facets["columnLineage"].fields["day"].inputFields[0]
        assert (src.namespace, src.name, src.field) == ("file", table, "day")


class TestHashedKeys:
    @pytest.mark.parametrize("structure", ["hashed", "fuse"])
    def test_structure_option_reaches_the_job_and_answers_have_no_false_negative(self, tmp_path: Path,
                                                                               structure: str) -> None:
        """structure=/fpp= go into the job spec; the job script (what spark-submit runs on the driver,
        here without Spark) builds a hashed index, then syncs an append; no present key is missed."""
        import numpy as np

        from airflow_provider_lineage.sieve import job as J

        rng = np.random.default_rng(4)
        keys = rng.integers(-(2**62), 2**62, 4000)
        root = tmp_path / "t"
        root.mkdir()
        for i in range(4):
            pq.write_table(pa.table({"id": pa.array(keys[i::4], pa.int64())}), root / f"part-{i}.parquet")
        op = _op(table=str(root), columns=["id"], structure=structure, fpp=0.001)
        (job,) = op.resolve_jobs()
        assert job.options == {"structure": structure, "fpp": 0.001}
        spec, out = tmp_path / "spec.json", tmp_path / "out.json"
        spec.write_text(J.spec_to_json([job]))
        assert J.main([str(spec), str(out), "--no-spark"]) == 0
        (res,) = J.read_results(str(out))
        assert res.action == "build" and res.status == "ok"
        pq.write_table(pa.table({"id": pa.array([7, 8], pa.int64())}), root / "part-9.parquet")
        assert J.main([str(spec), str(out), "--no-spark"]) == 0
        assert J.read_results(str(out))[0].action == "sync"
        idx = S.open_index(str(root), "id")
        assert idx.manifest.structure == "hashed" and idx.manifest.fpp == 0.001 and len(idx.manifest.hashed) == 2
        assert (idx.manifest.fuse is not None) == (structure == "fuse")  # 4,000 keys: "hashed" keeps pages
        for i, k in enumerate(keys[:400].tolist()):
            assert f"{root}/part-{i % 4}.parquet" in idx.candidates(S.Eq(k))
        assert idx.candidates(S.In([8, 9])) == [f"{root}/part-9.parquet"]
