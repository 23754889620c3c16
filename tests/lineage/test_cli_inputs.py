"""The lineage CLI on every input it meets (issue 7, point 5): the operator's events file, run folders,
catalog names, unknown names and bad input — one line on stderr and exit 2, never a traceback."""
from __future__ import annotations

import json

import pytest
from pyspark.sql import functions as F

from airflow_provider_lineage.capture.sink import RecordSink
from airflow_provider_lineage.lineage import analyze_record
from airflow_provider_lineage.lineage.__main__ import main
from airflow_provider_lineage.lineage.facets import datasets_for
from tests.lineage.test_facets import event


@pytest.fixture(scope="module")
def run(env, tmp_path_factory):
    """Two writes of one run (a file and a table, both with a column ``a2``) as a run folder and events."""
    spark = env.spark
    spark.sql("DROP TABLE IF EXISTS lin_cli_t")
    o = spark.read.parquet(env.orders)
    r1 = env.write_parquet(o.where("id > 1").select("id", (F.col("amount") * 2).alias("a2")))
    r2 = env.capture(
        lambda: o.select((F.col("amount") + 1).alias("a2"), "note").write.mode("overwrite").saveAsTable("lin_cli_t")
    )
    base = tmp_path_factory.mktemp("cli")
    sink = RecordSink(base / "run")
    for i, r in enumerate((r1, r2), 1):
        r.sequence = i
        sink.write(r)
    lins = [analyze_record(r) for r in (r1, r2)]
    events = base / "events.jsonl"
    events.write_text("\n".join(json.dumps(event(*datasets_for([lin]))) for lin in lins) + "\n")
    return base, lins


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_analyze_and_explain_read_the_operators_events_file(run, capsys):
    base, lins = run
    assert main(["analyze", str(base / "events.jsonl")]) == 0
    out = capsys.readouterr().out
    assert (
        f"column lineage of file:{lins[0].output.name}" in out
        and "a2 <-" in out
        and ".amount (DIRECT/TRANSFORMATION)" in out
    )
    assert "[all rows]" in out and ".id (INDIRECT/FILTER)" in out
    assert main(["analyze", str(base / "events.jsonl"), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 2
    assert main(["explain", str(base / "events.jsonl"), "a2"]) == 0
    out = capsys.readouterr().out
    assert out.count("<- (one hop, from the columnLineage facet)") == 2 and "capture record" in out
    assert main(["explain", str(base / "events.jsonl"), "nope"]) == 2
    assert "no output column 'nope'" in _err(capsys)


def test_explain_covers_every_write_of_a_run_folder(run, capsys):
    base, _ = run
    assert main(["explain", str(base / "run"), "a2"]) == 0
    out = capsys.readouterr().out
    assert out.count("== write #") == 2 and "lin_cli_t" in out
    assert main(["explain", str(base / "run"), "a3"]) == 2
    assert "did you mean a2" in _err(capsys)
    assert main(["explain", str(base / "run"), "note"]) == 0  # only the second write has it
    assert capsys.readouterr().out.count("== write #") == 1


def test_impact_names_unknown_datasets_and_columns_and_reads_catalog_names(run, capsys):
    base, lins = run
    events = str(base / "events.jsonl")
    assert main(["impact", events, "--upstream", "default.lin_cli_t:a2"]) == 0  # the symlinks facet's name
    assert "orders:amount" in capsys.readouterr().out
    assert main(["impact", events, "--upstream", f"file:{lins[1].output.name}:A2"]) == 0
    capsys.readouterr()
    assert main(["impact", events, "--upstream", "default.lin_cli_tt:a2"]) == 2
    assert "unknown dataset 'default.lin_cli_tt'" in (msg := _err(capsys)) and "default.lin_cli_t" in msg
    assert main(["impact", events, "--downstream", f"file:{lins[0].output.name}:a3"]) == 2
    assert "unknown column 'a3'" in (msg := _err(capsys)) and "a2" in msg
    assert main(["impact", events, "--downstream", "nocolon"]) == 2
    assert "namespace:name:field" in _err(capsys)


def test_bad_input_is_one_line_and_exit_2(run, tmp_path, capsys):
    base, _ = run
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("this is not json\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    other = tmp_path / "other.jsonl"
    other.write_text('{"a": 1}\n')
    (tmp_path / "emptydir").mkdir()
    record = next((base / "run").glob("000001-*.json"))
    for argv in (
        ["analyze", str(tmp_path / "missing")],
        ["analyze", str(garbage)],
        ["analyze", str(empty)],
        ["explain", str(other), "x"],
        ["analyze", str(tmp_path / "emptydir")],
        ["impact", str(record), "--upstream", "a:b:c"],
        ["impact", str(garbage), "--upstream", "a:b:c"],
    ):
        assert main(argv) == 2, argv
        _err(capsys)
    with pytest.raises(SystemExit) as exc:
        main(["explain", str(record)])  # missing COLUMN: argparse, one line too
    assert exc.value.code == 2
    _err(capsys)
