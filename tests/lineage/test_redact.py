"""``lineage.redact``: a tag path keeps its shape, each run of hidden hops one marker with its count."""
from __future__ import annotations

from airflow_provider_lineage.lineage import redact as r


def _hop(name: str) -> dict[str, str]:
    return {"namespace": "file", "name": name, "column": "c"}


def test_each_run_of_hidden_hops_is_one_marker() -> None:
    path = [_hop("a"), _hop("b"), _hop("c"), _hop("d"), _hop("e")]
    out, hidden = r.redact(path, [True, False, False, True, False])
    assert [h["name"] for h in out] == ["a", r.HIDDEN_NAME, "d", r.HIDDEN_NAME]
    assert (out[1]["hidden"], out[3]["hidden"], hidden) == (2, 1, 3)
    assert r.is_marker(out[1]) and not r.is_marker(out[0])


def test_markers_stay_visible_and_names_never_leak() -> None:
    path = [_hop("secret"), r.marker(4), _hop("mine")]
    visible = r.hops_visible(path, lambda key: key[1] == "mine", lambda h: (h["namespace"], h["name"], h["column"]))
    assert visible == [False, True, True]
    out, hidden = r.redact(path, visible)
    assert "secret" not in repr(out) and hidden == 1 and out[1] == r.marker(4)
