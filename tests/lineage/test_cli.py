"""CLI, explain, summary and impact on a real two-job pipeline."""
from __future__ import annotations

import json

from pyspark.sql import functions as F

from airflow_provider_lineage.capture.sink import RecordSink
from airflow_provider_lineage.lineage import analyze_record
from airflow_provider_lineage.lineage.__main__ import main
from airflow_provider_lineage.lineage.explain import explain
from airflow_provider_lineage.lineage.facets import datasets_for
from airflow_provider_lineage.lineage.impact import LineageGraph
from airflow_provider_lineage.lineage.summary import summarize
from tests.lineage.test_facets import event


def test_two_jobs_explain_summary_impact_and_cli(env, tmp_path, capsys):
    mid = env.out("mid")
    o = env.spark.read.parquet(env.orders)
    r1 = env.capture(
        lambda: (
            o.where("amount > 1")
            .select("id", F.substring(F.col("note").cast("string"), 1, 2).alias("n2"))
            .write.mode("overwrite")
            .parquet(mid)
        )
    )
    r2 = env.write_parquet(
        env.spark.read.parquet(mid).select((F.col("id") + 1).alias("id1"), F.upper("n2").alias("up"))
    )

    text = explain(r1, "n2")
    assert text.splitlines()[0].startswith("n2: n2#") and "substring(" in text
    assert "note#" in text and "[INDIRECT/FILTER]" in text

    lin1, lin2 = analyze_record(r1), analyze_record(r2)
    s = summarize(lin1)
    assert "n2 <- " in s and "(DIRECT/TRANSFORMATION)" in s and "[all rows] FILTER" in s

    events = tmp_path / "events.jsonl"
    events.write_text("\n".join(json.dumps(event(*datasets_for([lin]))) for lin in (lin1, lin2)) + "\n")
    g = LineageGraph.from_events(events)
    up = g.upstream(lin2.output.namespace, lin2.output.name, "up")
    assert [(h.name.rsplit("/", 1)[-1], h.field, h.distance) for h in up] == [
        ("mid_" + mid.rsplit("_", 1)[-1], "n2", 1),
        ("orders", "note", 2),
    ]
    down = g.downstream("file", env.orders, "note")
    assert {h.field for h in down} == {"n2", "up"}
    assert any(h.field == "id1" for h in g.downstream("file", env.orders, "amount", include_indirect=True))

    run_dir = tmp_path / "records"
    sink = RecordSink(run_dir)
    for i, r in enumerate((r1, r2), 1):
        r.sequence = i
        sink.write(r)
    assert main(["analyze", str(run_dir)]) == 0
    assert "n2 <- " in capsys.readouterr().out
    assert main(["analyze", str(run_dir), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["outputs"]) == 2
    rec_file = next(run_dir.glob("000001-*.json"))
    assert main(["explain", str(rec_file), "n2"]) == 0
    assert main(["explain", str(rec_file), "nope"]) == 2
    assert main(["impact", str(events), "--upstream", f"{lin2.output.namespace}:{lin2.output.name}:up"]) == 0
    assert "distance 2" in capsys.readouterr().out
