"""The column-lineage page in a real browser: headless Debian Chromium (selenium) on a real
``airflow api-server`` (the deployment fixture, :mod:`tests.support.deployment`) after a real run of
``lineage_etl``, signed in through Airflow's login page (the ``_token`` cookie).

The run's "Column lineage" tab shows as many boxes and edges as the API answers; a click on a column
highlights exactly the path the API gives; the search box finds a column; the browser console stays
free of errors. A screenshot goes to ``docs/img/column-lineage.png`` (shown in the README).
Under CI (``CI`` set) a missing browser fails these tests instead of skipping them.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.support.browser import BrowserMissing, chromium, chromium_paths, console_errors, wait_state

pytestmark = [pytest.mark.xdist_group("deployment"), pytest.mark.deployment, pytest.mark.browser, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "img" / "column-lineage.png"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium, wide enough for the whole lineage_etl graph beside Airflow's grid."""
    try:
        chromium_paths()
    except BrowserMissing as exc:
        if os.environ.get("CI"):
            pytest.fail(f"the browser tests need Chromium under CI: {exc}")
        pytest.skip(str(exc))
    driver = chromium(width=1920, height=1000)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def signed_in(browser: Any, deployment: Any) -> Any:
    """The browser, signed in as ``viewer`` through the auth manager's login form."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(deployment.api_url + "/auth/login/")
    wait = WebDriverWait(browser, 60)
    wait.until(ec.presence_of_element_located((By.NAME, "username"))).send_keys("viewer")
    browser.find_element(By.NAME, "password").send_keys(deployment.password("viewer"))
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait.until(lambda d: d.get_cookie("_token"))
    return browser


def _api(deployment: Any, path: str, **params: Any) -> Any:
    with deployment.client("viewer") as client:
        r = client.get("/column-lineage" + path, params=params)
    assert r.status_code == 200, r.text
    return r.json()


def _run(deployment: Any) -> tuple[str, str]:
    run_id = deployment.etl_runs[-1]
    return run_id, f"/api/dags/lineage_etl/runs/{quote(run_id, safe='')}"


def _open_tab(browser: Any, deployment: Any, run_id: str, *, dag_id: str = "lineage_etl", badges: bool = True) -> None:
    """Airflow's DAG run page, "Column lineage" tab; then into the tab's iframe (and, with ``badges``, until
    the Sieve badges are drawn)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    browser.switch_to.default_content()
    browser.get(f"{deployment.api_url}/dags/{dag_id}/runs/{quote(run_id, safe='')}/plugin/column-lineage-run")
    frame = WebDriverWait(browser, 60).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, "iframe[src*='column-lineage']")))
    browser.switch_to.frame(frame)
    assert wait_state(browser, timeout=60) == "ready"
    if badges:  # the Sieve badges arrive after the graph (and widen their boxes): wait for them before clicking
        WebDriverWait(browser, 60).until(lambda d: d.execute_script("return !!window.columnLineage.badgesDone"))
        wait_state(browser, ("ready",))


def test_tab_shows_the_api_graph_and_highlights_a_column_path(signed_in: Any, deployment: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser = signed_in
    run_id, base = _run(deployment)
    graph = _api(deployment, base + "/graph")
    _open_tab(browser, deployment, run_id)

    boxes = browser.find_elements(By.CSS_SELECTOR, "#graph .box")
    assert len(boxes) == len(graph["datasets"]) > 0
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph .column-edge")) == len(graph["edges"]) > 0
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph .dataset-edge")) == len(graph["dataset_edges"])
    assert browser.find_elements(By.CSS_SELECTOR, "#graph .column-edge.indirect") or not any(
        e["type"] == "INDIRECT" for e in graph["edges"])

    # click a column: exactly the API's path is highlighted, the rest faded
    txn = next(d for d in graph["datasets"] if d["label"] == "warehouse/transactions")
    row = browser.find_element(By.CSS_SELECTOR, f'#graph .box[data-id="{txn["id"]}"] .row[data-field="customer_id"]')
    row.click()
    wait_state(browser, ("ready",))
    path = _api(deployment, base + "/column", dataset=txn["id"], column="customer_id", depth=3)
    deadline = time.monotonic() + 10
    while not browser.execute_script("return !!window.columnLineage.path") and time.monotonic() < deadline:
        time.sleep(0.1)
    lit = {int(e.get_attribute("data-index"))
           for e in browser.find_elements(By.CSS_SELECTOR, "#graph .column-edge.hl")}
    lit_ds = {int(e.get_attribute("data-index"))
              for e in browser.find_elements(By.CSS_SELECTOR, "#graph .dataset-edge.hl")}
    assert lit == set(path["edges"]) and lit, (lit, path)
    assert lit_ds == set(path["dataset_edges"])
    assert "faded" in browser.find_element(By.ID, "graph").get_attribute("class")
    lit_rows = {(r.find_element(By.XPATH, "..").get_attribute("data-id"), r.get_attribute("data-field"))
                for r in browser.find_elements(By.CSS_SELECTOR, "#graph .row.hl")}
    assert lit_rows == {tuple(c) for c in path["columns"]}

    browser.execute_script("document.getElementById('tip').hidden = true")
    browser.switch_to.default_content()
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOT))  # the tab with a column's path lit and the Sieve badges

    # the search box jumps to a column
    _open_tab(browser, deployment, run_id)
    box = browser.find_element(By.ID, "search")
    box.send_keys("segment" if any(f["name"] == "segment" for d in graph["datasets"] for f in d["fields"])
                  else "customer_id")
    box.send_keys(Keys.ENTER)
    found = browser.execute_script("return window.columnLineage.found")
    assert found and found[1] in ("segment", "customer_id")
    assert browser.find_elements(By.CSS_SELECTOR, "#graph .row.found")

    browser.switch_to.default_content()
    assert console_errors(browser) == []


def test_sieve_badges_and_table_level(signed_in: Any, deployment: Any) -> None:
    from selenium.webdriver.common.by import By

    browser = signed_in
    run_id, base = _run(deployment)
    badges = _api(deployment, base + "/indexes")["indexes"]
    _open_tab(browser, deployment, run_id)
    shown = {(b.get_attribute("data-dataset"), b.get_attribute("data-column")): b.get_attribute("data-state")
             for b in browser.find_elements(By.CSS_SELECTOR, "#graph .badge")}
    assert badges and shown == {(b["dataset"], b["column"]): b["state"] for b in badges}
    assert set(shown.values()) == {"fresh"}  # the run's index task synced every index
    browser.find_element(By.ID, "level-table").click()
    graph = _api(deployment, base + "/graph")
    pairs = {(e["source"], e["target"]) for e in graph["edges"] + graph["dataset_edges"] if e["source"] != e["target"]}
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph .table-edge")) == len(pairs)
    assert browser.find_elements(By.CSS_SELECTOR, "#graph .row") == []
    browser.switch_to.default_content()
    assert console_errors(browser) == []


def test_nav_search_page_finds_a_column(signed_in: Any, deployment: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    browser = signed_in
    browser.switch_to.default_content()
    browser.get(deployment.api_url + "/column-lineage/")
    wait_state(browser)
    box = browser.find_element(By.ID, "search")
    box.send_keys("customer_id", Keys.ENTER)
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#hits tr.hit"))
    hits = browser.find_elements(By.CSS_SELECTOR, "#hits tr.hit")
    assert any("customer_id" in h.text and "lineage_etl" in h.text for h in hits)
    hits[0].find_element(By.TAG_NAME, "a").click()
    assert wait_state(browser, timeout=60) == "ready"
    assert browser.execute_script("return window.columnLineage.found")
    assert console_errors(browser) == []


def test_the_api_server_lists_the_plugin_and_guards_its_api(deployment: Any) -> None:
    _, base = _run(deployment)
    with deployment.client("admin") as client:
        plugins = client.get("/api/v2/plugins").json()["plugins"]
    plugin = next(p for p in plugins if p["name"] == "column_lineage")
    assert {v["destination"] for v in plugin["external_views"]} == {"dag_run", "task_instance", "nav"}
    import httpx

    assert httpx.get(deployment.api_url + "/column-lineage" + base + "/graph").status_code == 401


def test_task_view_shows_that_task_only(signed_in: Any, deployment: Any) -> None:
    from selenium.webdriver.common.by import By

    browser = signed_in
    run_id, base = _run(deployment)
    graph = _api(deployment, base + "/tasks/build_marts/graph", map_index=-1)
    browser.switch_to.default_content()
    browser.get(f"{deployment.api_url}/column-lineage/?dag_id=lineage_etl&run_id={quote(run_id, safe='')}"
                "&task_id=build_marts&map_index=-1")
    assert wait_state(browser, timeout=60) == "ready"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph .box")) == len(graph["datasets"]) > 0
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph .column-edge")) == len(graph["edges"])
    browser.get(f"{deployment.api_url}/column-lineage/?dag_id=lineage_etl&run_id={quote(run_id, safe='')}"
                "&task_id=land&map_index=-1")
    assert wait_state(browser, timeout=60) == "empty"
    assert "no lineage record" in browser.find_element(By.ID, "message").text
    assert console_errors(browser) == []


# ---- lineage as a guard (docs/guard.md): two runs of lineage_guard on the same deployment -----------------
GUARD_SCREENSHOT = ROOT / "docs" / "img" / "lineage-guard.png"


@pytest.fixture(scope="module")
def guard_runs(deployment: Any) -> list[str]:
    """``lineage_guard`` version 1 then version 2 (a column added, a join key dropped, the email's hash
    removed). Version 1 runs with a malformed Variable ``lineage_column_tags`` (bad input: reported, the
    write succeeds); version 2 with ``email`` of the customers declared ``pii`` in it."""
    import json

    data = deployment.home / "guard-data"
    decl = {"datasets": [{"namespace": "file", "name": str(data / "warehouse" / "customers"),
                          "columns": {"email": ["pii"]}}]}
    runs = []
    for version, value in ((1, '{"datasets": [ not json'), (2, json.dumps(decl))):
        with deployment.client("admin") as client:
            client.delete("/api/v2/variables/lineage_column_tags")
            client.post("/api/v2/variables", json={"key": "lineage_column_tags", "value": value}).raise_for_status()
        run_id = deployment.trigger(
            "lineage_guard", conf={"data_dir": str(data), "version": version, "on_change": "warn"}
        )
        deployment.wait_success("lineage_guard", run_id, timeout=900)
        runs.append(run_id)
    return runs


def test_guard_malformed_tags_variable_is_a_notice_in_the_log_and_on_the_page(
        signed_in: Any, deployment: Any, guard_runs: list[str]) -> None:
    """Bad input (docs/guard.md "Bad input"): the run with the malformed Variable succeeded (the write is
    done, see the fixture); the task log and the run's Column lineage tab name the problem and the fix."""
    from selenium.webdriver.common.by import By

    run_id = guard_runs[0]
    want = "Variable 'lineage_column_tags' is not valid JSON"
    graph = _api(deployment, f"/api/dags/lineage_guard/runs/{quote(run_id, safe='')}/graph")
    (mart,) = [t for t in graph["tasks"] if t["label"] == "mart"]
    assert any(want in p for p in mart["guard_problems"]), mart["guard_problems"]
    with deployment.client("admin") as client:
        r = client.get(f"/api/v2/dags/lineage_guard/dagRuns/{quote(run_id, safe='')}/taskInstances/mart/logs/1",
                       params={"full_content": "true"}, headers={"Accept": "application/json"})
    assert r.status_code == 200 and want in r.text and "expected e.g." in r.text
    browser = signed_in
    _open_tab(browser, deployment, run_id, dag_id="lineage_guard", badges=False)
    notices = [n.text for n in browser.find_elements(By.CSS_SELECTOR, "#notices .notice.error")]
    assert any(n.startswith("Task mart: lineage guard: " + want) and "expected e.g." in n for n in notices), notices
    assert browser.find_elements(By.CSS_SELECTOR, "#graph .column-edge")  # the lineage itself is all there
    browser.switch_to.default_content()
    assert console_errors(browser) == []


def test_guard_badge_changed_edges_tag_chips_and_unmasked_list(signed_in: Any, deployment: Any,
                                                               guard_runs: list[str]) -> None:
    from selenium.webdriver.common.by import By

    browser = signed_in
    run_id = guard_runs[-1]
    graph = _api(deployment, f"/api/dags/lineage_guard/runs/{quote(run_id, safe='')}/graph")
    assert graph["changed"] is True
    _open_tab(browser, deployment, run_id, dag_id="lineage_guard")

    badge = browser.find_element(By.ID, "changed-badge")
    assert badge.text == "changed"
    badge.click()
    changes = browser.find_element(By.ID, "changes").text
    assert "+ column marts/orders_mart.segment" in changes and "warehouse/orders.region" in changes
    added = [e for e in graph["edges"] if e.get("change") == "added"]
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph .column-edge.change-added")) == len(added) == 1
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph .edge.change-changed")) == 1  # the hash removed
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph .removed-edge")) == len(graph["removed_edges"]) == 2
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph .column-edge")) == len(graph["edges"])

    def chips(label: str, column: str) -> set[tuple[str, str]]:
        ds = next(d for d in graph["datasets"] if d["label"].endswith(label))
        row = browser.find_element(By.CSS_SELECTOR, f'#graph .box[data-id="{ds["id"]}"] .row[data-field="{column}"]')
        return {
            (c.get_attribute("data-tag"), c.get_attribute("data-source"))
            for c in row.find_elements(By.CSS_SELECTOR, ".chip")
        }

    assert chips("customers", "email") == {("pii", "declared")}
    assert chips("orders_mart", "email") == {("pii", "inherited")}
    assert chips("orders_mart", "customer_id") == set()
    rows = browser.find_elements(By.CSS_SELECTOR, "#unmasked tr.unmasked")
    assert [(r.get_attribute("data-tag"), r.get_attribute("data-column")) for r in rows] == [("pii", "email")]
    assert "customers.email \u2192 marts/orders_mart.email" in rows[0].text
    browser.switch_to.default_content()
    browser.save_screenshot(str(GUARD_SCREENSHOT))
    assert console_errors(browser) == []


def test_guard_unmasked_page_lists_where_pii_reaches_unmasked(
    signed_in: Any, deployment: Any, guard_runs: list[str]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    answer = _api(deployment, "/api/tags/unmasked", tag="pii")
    assert answer["source"] == "estate"  # along the estate index's edges (docs/guard.md)
    assert [(u["dag_id"], u["task_id"], u["column"]) for u in answer["unmasked"]] == [
        ("lineage_guard", "mart", "email")
    ]
    # the scheduler publishes the estate's tag map for the workers once the index synced after the run
    deadline = time.monotonic() + 120
    published: dict[str, Any] = {}
    while time.monotonic() < deadline:
        with deployment.client("admin") as client:
            r = client.get("/api/v2/variables/lineage_column_tags_estate")
        if r.status_code == 200:
            published = json.loads(r.json()["value"])
            if any(d["name"].endswith("/marts/orders_mart") for d in published["datasets"]):
                break
        time.sleep(2)
    mart = [d for d in published.get("datasets", []) if d["name"].endswith("/marts/orders_mart")]
    assert mart and [e["tag"] for e in mart[0]["columns"]["email"]] == ["pii"], published
    browser = signed_in
    browser.switch_to.default_content()
    browser.get(deployment.api_url + "/column-lineage/estate")  # the estate page's list
    WebDriverWait(browser, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#unmasked-estate tr.unmasked"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#unmasked-estate tr.unmasked")
    assert [(r.get_attribute("data-tag"), r.get_attribute("data-column")) for r in rows] == [("pii", "email")]
    browser.get(deployment.api_url + "/column-lineage/?view=unmasked&tag=pii")  # the same list on its own page
    WebDriverWait(browser, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#unmasked tr.unmasked"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#unmasked tr.unmasked")
    assert [(r.get_attribute("data-tag"), r.get_attribute("data-column")) for r in rows] == [("pii", "email")]
    assert "lineage_guard" in rows[0].text
    assert console_errors(browser) == []
