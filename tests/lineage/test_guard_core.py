"""Lineage diff (record vs record) and column tags (declared -> inherited, stopped by masking): tables of
cases on hand-written lineage records, no Spark, no Airflow."""
from __future__ import annotations

import json

import pytest

from airflow_provider_lineage.lineage import diff as diffs
from airflow_provider_lineage.lineage import tags as tagging

CUST, ORD, MART = "/w/customers", "/w/orders", "/w/mart"


def record(fields_mart: list[str], edges: list[list], dataset_edges: list[list]) -> dict:
    return {
        "format": "airflow-provider-lineage/column-lineage",
        "version": 1,
        "status": "ok",
        "datasets": [
            {"namespace": "file", "name": CUST, "table": None, "fields": [["id", "int"], ["email", "string"]]},
            {"namespace": "file", "name": ORD, "table": None, "fields": [["cid", "int"], ["amount", "int"]]},
            {"namespace": "file", "name": MART, "table": None, "fields": [[f, "string"] for f in fields_mart]},
        ],
        "inputs": [0, 1],
        "outputs": [2],
        "edges": edges,
        "dataset_edges": dataset_edges,
        "problems": [],
    }


V1 = record(
    ["id", "email_h", "amount"],
    [
        [2, "id", 0, "id", "DIRECT", "IDENTITY", 0],
        [2, "email_h", 0, "email", "DIRECT", "TRANSFORMATION", 1],
        [2, "amount", 1, "amount", "DIRECT", "IDENTITY", 0],
    ],
    [[2, 0, "id", "INDIRECT", "JOIN", 0], [2, 1, "cid", "INDIRECT", "JOIN", 0], [2, 0, "email", "INDIRECT", "JOIN", 0]],
)
V2 = record(
    ["id", "email_h", "amount", "segment"],
    [
        [2, "id", 0, "id", "DIRECT", "IDENTITY", 0],
        [2, "email_h", 0, "email", "DIRECT", "TRANSFORMATION", 0],
        [2, "amount", 1, "amount", "DIRECT", "IDENTITY", 0],
        [2, "segment", 0, "id", "DIRECT", "TRANSFORMATION", 0],
    ],
    [[2, 0, "id", "INDIRECT", "JOIN", 0], [2, 1, "cid", "INDIRECT", "JOIN", 0]],
)


def col(name: str, column: str | None) -> dict:
    return {"namespace": "file", "name": name, "column": column}


class TestDiff:
    def test_first_run_has_no_previous(self) -> None:
        d = diffs.diff(None, V1)
        assert d == diffs.empty(None) and set(d) == set(diffs.KEYS)
        assert "first run" in diffs.summary(d)

    def test_unchanged(self) -> None:
        d = diffs.diff(V1, json.loads(json.dumps(V1)), "run1")
        assert d["changed"] is False and d["previous_run_id"] == "run1"
        assert "unchanged since run run1" in diffs.summary(d)

    def test_column_added_join_key_dropped_hash_removed(self) -> None:
        d = diffs.diff(V1, V2, "run1")
        assert d["changed"] is True
        assert d["columns_added"] == [col(MART, "segment")] and d["columns_removed"] == []
        assert d["edges_added"] == [{"from": col(CUST, "id"), "to": col(MART, "segment"), "type": "DIRECT",
                                     "subtype": "TRANSFORMATION", "masking": False}]
        assert d["edges_removed"] == [{"from": col(CUST, "email"), "to": col(MART, None), "type": "INDIRECT",
                                       "subtype": "JOIN", "masking": False}]
        assert d["edges_changed"] == [{"from": col(CUST, "email"), "to": col(MART, "email_h"), "type": "DIRECT",
                                       "subtype": "TRANSFORMATION", "masking": False,
                                       "previous": {"type": "DIRECT", "subtype": "TRANSFORMATION", "masking": True}}]
        assert d["datasets_added"] == d["datasets_removed"] == []
        text = diffs.summary(d)
        assert "CHANGED" in text and "mart.segment" in text and "customers.email -> mart.*" in text

    def test_datasets_added_and_removed(self) -> None:
        v3 = json.loads(json.dumps(V1))
        v3["datasets"][1]["name"] = "/w/orders_v2"
        d = diffs.diff(V1, v3, "r")
        assert d["datasets_added"] == [{"namespace": "file", "name": "/w/orders_v2", "role": "input"}]
        assert d["datasets_removed"] == [{"namespace": "file", "name": ORD, "role": "input"}]
        assert d["edges_added"] and d["edges_removed"]  # the edges from the old and new source


DECL = {"datasets": [{"namespace": "file", "name": CUST, "columns": {"email": ["pii"], "id": ["customer-key"]}}]}
TAGREC = record(["email_hash", "email_lower", "n"],
                [[2, "email_hash", 0, "email", "DIRECT", "TRANSFORMATION", 1],
                 [2, "email_lower", 0, "email", "DIRECT", "TRANSFORMATION", 0],
                 [2, "n", 1, "amount", "DIRECT", "AGGREGATION", 0],
                 [2, "n", 0, "email", "INDIRECT", "FILTER", 0]], [[2, 0, "email", "INDIRECT", "FILTER", 0]])


class TestTags:
    def test_hash_stops_lower_carries_filter_does_not(self) -> None:
        declared = tagging.parse_declaration(json.dumps(DECL))
        res = tagging.propagate(TAGREC, declared)
        cols = res["columns"]
        assert [e["tag"] for e in cols[("file", CUST, "email")]] == ["pii"]
        assert ("file", MART, "email_hash") not in cols  # masking stops pii
        (lower,) = cols[("file", MART, "email_lower")]
        assert lower["source"] == "inherited" and lower["path"] == [col(CUST, "email"), col(MART, "email_lower")]
        assert ("file", MART, "n") not in cols  # INDIRECT FILTER carries no tag
        assert res["stopped"] == [
            {
                "column": col(MART, "email_hash"),
                "tag": "pii",
                "path": [col(CUST, "email"), col(MART, "email_hash")],
                "at": col(MART, "email_hash"),
            }
        ]
        _, outs = tagging.record_columns(TAGREC)
        v = tagging.violations(res, outs, ["pii"])
        assert v == [{"column": col(MART, "email_lower"), "tag": "pii", "path": lower["path"]}]
        assert tagging.violations(res, outs, ["secret"]) == []

    def test_masking_only_stops_the_listed_tags(self) -> None:
        decl = {"datasets": [{"namespace": "file", "name": CUST, "columns": {"email": ["pii", "customer-data"]}}]}
        res = tagging.propagate(TAGREC, tagging.parse_declaration(decl), stopped_by_masking=["pii"])
        (kept,) = res["columns"][("file", MART, "email_hash")]
        assert kept["tag"] == "customer-data" and kept["masked"] is True
        _, outs = tagging.record_columns(TAGREC)
        assert [v["column"]["column"] for v in tagging.violations(res, outs, ["customer-data"])] == ["email_lower"]

    def test_known_upstream_tags_extend_the_path(self) -> None:
        """A second task (another DAG) reads mart.email_lower: the tag keeps its whole path."""
        first = tagging.propagate(TAGREC, tagging.parse_declaration(DECL))
        extra = {"column_tags": json.loads(json.dumps(tagging.dataset_tags(first, "file", MART)))}
        known = tagging.known_from_extra("file", MART, extra)
        rep = {"datasets": [{"namespace": "file", "name": MART, "fields": [["email_lower", "string"]]},
                            {"namespace": "file", "name": "/w/report", "fields": [["contact", "string"]]}],
               "inputs": [0], "outputs": [1], "edges": [[1, "contact", 0, "email_lower", "DIRECT", "IDENTITY", 0]],
               "dataset_edges": []}
        res = tagging.propagate(rep, {}, known)
        (e,) = res["columns"][("file", "/w/report", "contact")]
        assert e["path"] == [col(CUST, "email"), col(MART, "email_lower"), col("/w/report", "contact")]
        kept = tagging.for_record(res, rep)
        assert kept["columns"][1][:2] == [1, "contact"]

    @pytest.mark.parametrize(("value", "words"), [
        ("{not json", "not valid JSON"),
        ('{"tables": []}', '"datasets" list'),
        ('{"datasets": [{"name": "/x", "columns": {}}]}', 'needs "namespace" and "name"'),
        ('{"datasets": [{"namespace": "file", "name": "/x", "columns": ["email"]}]}', 'needs "columns"'),
        ('{"datasets": [{"namespace": "file", "name": "/x", "columns": {"email": [1]}}]}', "list of non-empty strings"),
    ])
    def test_malformed_declaration_is_a_clear_error(self, value: str, words: str) -> None:
        with pytest.raises(tagging.TagsError, match="lineage_column_tags") as info:
            tagging.parse_declaration(value)
        assert words in str(info.value)

    def test_unknown_declared_column_is_reported(self) -> None:
        decl = tagging.parse_declaration(
            {"datasets": [{"namespace": "file", "name": CUST, "columns": {"mail": "pii"}}]}
        )
        (msg,) = tagging.unknown_columns(decl, TAGREC)
        assert "'mail'" in msg and CUST in msg


class TestGraphTags:
    """tags.propagate_graph: the estate's edges of many tasks and DAGs at once (what plugins/guard/estate.py feeds)."""

    @staticmethod
    def c(name: str, column: str) -> tuple[str, str, str]:
        return ("file", name, column)

    def edges(self) -> list:
        c = self.c
        return [
            (c("/w/landing", "email"), c(CUST, "email"), "DIRECT", False, "dag_a.load"),
            (c(CUST, "email"), c(MART, "email_h"), "DIRECT", True, "dag_b.mart"),  # hash: stops pii
            (c(CUST, "email"), c(MART, "email_l"), "DIRECT", False, "dag_b.mart"),  # lower: carries
            (c(CUST, "email"), c(MART, ""), "INDIRECT", False, "dag_b.mart"),  # a filter: carries nothing
            (c(CUST, "email"), c(MART, "n"), "INDIRECT", False, "dag_b.mart"),
            (c(MART, "email_l"), c("/w/report", "contact"), "DIRECT", False, "dag_c.report"),
            (c(MART, "email_h"), c("/w/report", "key"), "DIRECT", False, "dag_c.report"),
            (c("/w/report", "contact"), c("/w/landing", "email"), "DIRECT", False, "dag_d.loop"),  # a cycle
        ]

    def test_tags_cross_dags_stop_at_masking_and_skip_indirect(self) -> None:
        decl = tagging.parse_declaration({"datasets": [{"namespace": "file", "name": "/w/landing",
                                                        "columns": {"email": ["pii", "contact"]}}]})
        res = tagging.propagate_graph(self.edges(), decl)
        tags = {
            (c[1], c[2]): sorted((e["tag"], e["source"], e["masked"]) for e in es) for c, es in res["columns"].items()
        }
        assert tags[("/w/report", "contact")] == [("contact", "inherited", False), ("pii", "inherited", False)]
        assert tags[(MART, "email_h")] == [("contact", "inherited", True)]  # pii stopped, the other tag masked
        assert tags[("/w/report", "key")] == [("contact", "inherited", True)]
        assert (MART, "n") not in tags and (MART, "") not in tags
        assert tags[("/w/landing", "email")] == [("contact", "declared", False), ("pii", "declared", False)]
        (stop,) = res["stopped"]
        assert stop["tag"] == "pii" and stop["at"]["column"] == "email_h"
        found = {(c[1], c[2], e["tag"]): (e["path"], via) for c, e, via in tagging.unmasked_of(res, "pii")}
        assert set(found) == {(CUST, "email", "pii"), (MART, "email_l", "pii"), ("/w/report", "contact", "pii")}
        path, via = found[("/w/report", "contact", "pii")]
        assert [p["name"] for p in path] == ["/w/landing", CUST, MART, "/w/report"] and via == "dag_c.report"

    def test_an_unmasked_path_wins_over_a_masked_one(self) -> None:
        c = self.c
        decl = {("file", "/w/s"): {"x": ["secret"]}}
        edges = [(c("/w/s", "x"), c("/w/t", "y"), "DIRECT", True, "hash"),  # found first (same depth), masked
                 (c("/w/s", "x"), c("/w/u", "x"), "DIRECT", False, "copy"),
                 (c("/w/u", "x"), c("/w/t", "y"), "DIRECT", False, "copy2")]
        res = tagging.propagate_graph(edges, decl, stopped_by_masking=[])
        (e,) = res["columns"][c("/w/t", "y")]
        assert e["masked"] is False and [p["name"] for p in e["path"]] == ["/w/s", "/w/u", "/w/t"]

    def test_published_map_gives_known_tags_of_the_inputs_only(self) -> None:
        value = {
            "datasets": [
                {
                    "namespace": "file",
                    "name": MART,
                    "columns": {
                        "email_l": [
                            {
                                "tag": "pii",
                                "source": "inherited",
                                "masked": False,
                                "path": [col(CUST, "email"), col(MART, "email_l")],
                            }
                        ]
                    },
                },
                {
                    "namespace": "file",
                    "name": "/w/other",
                    "columns": {"z": [{"tag": "pii", "path": [col("/w/o", "z")]}]},
                },
            ]
        }
        known = tagging.published_known(json.dumps(value), {("file", MART): ("file", MART)})
        assert list(known) == [("file", MART, "email_l")] and known[("file", MART, "email_l")][0]["tag"] == "pii"
        with pytest.raises(tagging.TagsError, match="datasets"):
            tagging.published_known("[]", {})


class TestPolicyInput:
    """Issue 37, finding 3: bad guard input is a clear error or read right, never a policy that silently stops."""

    @pytest.mark.parametrize(("value", "tags"), [
        ("pii", ["pii"]), (" pii , secret ", ["pii", "secret"]), ('["pii", "secret"]', ["pii", "secret"]),
        (["pii"], ["pii"]), (("pii", "pii"), ["pii"]), ([], []), (None, None)])
    def test_require_masked_is_a_tag_or_a_list(self, value: object, tags: list[str] | None) -> None:
        assert tagging.parse_tag_list(value) == tags  # "pii" used to become ['p', 'i', 'i']

    @pytest.mark.parametrize(("value", "words"), [
        (5, "is a int"), ([1], "non-empty string"), (["pii", ""], "non-empty string"), ("[pii", "not valid JSON"),
        ({"pii": True}, "is a dict")])
    def test_a_bad_tag_list_is_a_clear_error(self, value: object, words: str) -> None:
        with pytest.raises(tagging.TagsError, match="require_masked") as info:
            tagging.parse_tag_list(value)
        assert words in str(info.value)

    @pytest.mark.parametrize("bad", [
        {"email": 5}, {"email": [5]}, {"email": [{"tag": "pii"}]}, {"email": [{"tag": "pii", "path": []}]},
        {"email": [{"tag": 7, "path": [col(CUST, "email")]}]}, {"email": [{"tag": "pii", "path": ["x"]}]},
        {"email": [{"tag": "pii", "path": [col(CUST, "email")], "masked": "no"}]}, ["email"]])
    def test_malformed_upstream_tags_raise_never_read_as_no_tags(self, bad: object) -> None:
        """An asset-event extra or published-map entry like {"email": 5} used to raise TypeError deep in the
        guard (no tags computed, the policy passed) or be skipped silently: now a TagsError naming it."""
        with pytest.raises(tagging.TagsError, match=MART):
            tagging.known_from_extra("file", MART, {"column_tags": bad})
        value = {"datasets": [{"namespace": "file", "name": MART, "columns": bad}]}
        with pytest.raises(tagging.TagsError, match="published estate tag map"):
            tagging.published_known(json.dumps(value), {("file", MART): ("file", MART)})
        # a dataset the task does not read is not looked at (its entries cannot hide the task's tags)
        assert tagging.published_known(json.dumps(value), {("file", CUST): ("file", CUST)}) == {}

    def test_no_column_tags_in_an_extra_is_no_tags(self) -> None:
        assert (
            tagging.known_from_extra("file", MART, {"table": "t"}) == {} == tagging.known_from_extra("file", MART, None)
        )

    def test_a_published_map_that_leaves_an_input_out_says_so(self) -> None:
        good = {"tag": "pii", "source": "inherited", "masked": False, "path": [col(CUST, "email"), col(MART, "e")]}
        value = {"cut": True, "omitted": [tagging.identity_digest("file", "/w/left_out")],
                 "datasets": [{"namespace": "file", "name": MART, "columns": {"e": [good]}}]}
        known = tagging.published_known(value, {("file", MART): ("file", MART)})
        assert known[("file", MART, "e")][0]["path"] == good["path"]
        with pytest.raises(tagging.TagsError, match="leaves out file:/w/left_out"):
            tagging.published_known(value, {("file", MART): ("file", MART), ("file", "/w/left_out"): ("file", "/w/x")})
        # a map cut by an older version (no "omitted"): its reader cannot know what is missing
        with pytest.raises(tagging.TagsError, match="does not say which datasets"):
            tagging.published_known({"cut": True, "datasets": []}, {("file", MART): ("file", MART)})


# -- issue 46 items 7 and 8: approximate columns, spellings --------------------------------------------------------

def _approx(rec: dict, items: list) -> dict:
    return {**json.loads(json.dumps(rec)), "approximate": items}


class TestApproximate:
    def _unproven(self, rec: dict, required: list[str] | None = None) -> list[dict]:
        result = tagging.propagate(rec, tagging.parse_declaration(json.dumps(DECL)))
        return tagging.unproven(rec, result, required or ["pii"])

    def test_an_approximate_column_whose_inputs_carry_the_tag_is_unproven_even_through_a_mask(self) -> None:
        rec = _approx(TAGREC, [[2, "email_hash", ["driver round trip: a lookup from collect()"]]])
        (u,) = self._unproven(rec)
        assert u["column"] == col(MART, "email_hash") and "never taken as masking" in u["why"]
        assert u["reasons"] == ["driver round trip: a lookup from collect()"]
        assert tagging.violations(tagging.propagate(rec, DECL_PARSED), [("file", MART, "email_hash")], ["pii"]) == []

    def test_an_unknown_input_is_never_proved_clean(self) -> None:
        rec = _approx(TAGREC, [[2, "n", ["unknown input: Python data source 'custfile'"]]])
        (u,) = self._unproven(rec)
        assert u["column"]["column"] == "n" and "could not be named" in u["why"]

    def test_approximate_inputs_without_the_tag_prove_the_column_clean(self) -> None:
        rec = _approx(TAGREC, [[2, "n", ["driver round trip: a total collected to the driver"]]])
        assert self._unproven(rec) == []  # n <- orders.amount (its FILTER on the email carries no value)
        rec["edges"].append([2, "n", 0, "email", "DIRECT", "AGGREGATION", 1])  # a count of emails, approximate
        assert [u["column"]["column"] for u in self._unproven(rec)] == ["n"]
        assert self._unproven(_approx(TAGREC, [[2, "n", ["x"]]]), ["secret"]) == []  # no required tag on its inputs

    def test_an_input_that_is_itself_unproven_is_not_clean(self) -> None:
        rec = json.loads(json.dumps(TAGREC))
        rec["datasets"].append({"namespace": "file", "name": "/w/next", "table": None, "fields": [["c", "string"]]})
        rec["outputs"].append(3)
        rec["edges"].append([3, "c", 2, "n", "DIRECT", "IDENTITY", 0])
        rec["approximate"] = [[2, "n", ["unknown input: x"]], [3, "c", ["driver round trip: y"]]]
        assert sorted(u["column"]["column"] for u in self._unproven(rec)) == ["c", "n"]
        assert "itself approximate" in next(u["why"] for u in self._unproven(rec) if u["column"]["column"] == "c")


DECL_PARSED = tagging.parse_declaration(json.dumps(DECL))


@pytest.mark.parametrize("spelt", ["PII", " pii", "Pii ", "pii"])
def test_tag_names_compare_after_one_normalisation(spelt: str) -> None:
    decl = {"datasets": [{"namespace": "file", "name": CUST + "/", "columns": {"email": [spelt]}}]}
    result = tagging.propagate(TAGREC, tagging.parse_declaration(json.dumps(decl)), stopped_by_masking=[spelt.upper()])
    _, outs = tagging.record_columns(TAGREC)
    found = tagging.violations(result, outs, [f" {spelt.upper()}"])
    assert [v["column"]["column"] for v in found] == ["email_lower"]  # the hash stops it: "PII" is "pii"
    assert tagging.parse_tag_list(f"{spelt}, Secret") == ["pii", "secret"]
    assert tagging.used_tags(tagging.parse_declaration(json.dumps(decl))) == {"pii"}
    extra = {"column_tags": {"email": [{"tag": spelt, "path": [col(CUST, "email")], "masked": False}]}}
    (entry,) = tagging.known_from_extra("file", CUST, extra)[("file", CUST, "email")]
    assert entry["tag"] == "pii"


def test_a_masked_arrival_never_hides_an_unmasked_one_of_the_same_origin() -> None:
    rec = json.loads(json.dumps(TAGREC))
    rec["edges"] = [[2, "email_lower", 0, "email", "DIRECT", "TRANSFORMATION", 1],
                    [2, "email_lower", 0, "email", "DIRECT", "TRANSFORMATION", 0]]
    result = tagging.propagate(rec, DECL_PARSED, stopped_by_masking=[])
    assert [v["column"]["column"] for v in tagging.violations(result, [("file", MART, "email_lower")], ["pii"])] \
        == ["email_lower"]
