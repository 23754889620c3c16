"""The estate page in a real browser (Chromium) on the deployment fixture: three DAGs chained through
tables -- ``lineage_etl`` (run by the fixture) writes ``marts/customer_monthly``, ``lineage_estate_scores``
reads it and writes ``reports/customer_scores``, ``lineage_estate_flags`` reads that and writes
``reports/customer_flags`` (``dags/lineage_estate_chain.py``, tiny Spark apps).

From a column of ``customer_monthly`` the page reaches both reports; as of the instant between the
scores run and the first flags run it does not reach the flags; the diff against that instant
highlights what the flags DAG added; the impact CSV export equals the JSON. A screenshot goes to
``docs/img/estate.png``. One module: two Spark runs on the shared deployment.

First, before those runs, the page as the navigation opens it after the fixture's ``lineage_etl`` run: where
to start (datasets written recently, DAGs with lineage, one line of help), the search answering as you type
in a list that floats over the page (the side panel stays where it is); its screenshot goes to
``docs/img/estate-start.png``.
"""
from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.support.browser import BrowserMissing, chromium, chromium_paths, console_errors, wait_state

pytestmark = [
    pytest.mark.xdist_group("deployment"),
    pytest.mark.deployment,
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.timeout(2400),
]
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "img" / "estate.png"


@pytest.fixture(scope="module")
def chain(deployment: Any) -> dict[str, Any]:
    """Runs the scores DAG, notes the instant, then the flags DAG; the datasets' identities."""
    out: dict[str, Any] = {}
    for dag_id in ("lineage_estate_scores", "lineage_estate_flags"):
        run_id = deployment.trigger(dag_id)
        deployment.wait_success(dag_id, run_id, timeout=600)
        with deployment.client("admin") as c:
            out[dag_id] = c.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}").json()
    with deployment.client("viewer") as c:
        hits = c.get("/column-lineage/api/estate/search", params={"q": "customer_", "limit": 200}).json()["hits"]
    ids = {h["name"].rsplit("/", 1)[-1]: h for h in hits if not h["column"]}
    out["t1"], out["t2"], out["t3"] = ids["customer_monthly"], ids["customer_scores"], ids["customer_flags"]
    out["before_flags"] = out["lineage_estate_scores"]["end_date"]
    assert out["before_flags"] < out["lineage_estate_flags"]["start_date"]
    return out


@pytest.fixture(scope="module")
def browser(deployment: Any) -> Iterator[Any]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        chromium_paths()
    except BrowserMissing as exc:
        if os.environ.get("CI"):
            pytest.fail(f"the browser tests need Chromium under CI: {exc}")
        pytest.skip(str(exc))
    driver = chromium(width=1600, height=900)
    driver.get(deployment.api_url + "/auth/login/")
    wait = WebDriverWait(driver, 60)
    wait.until(ec.presence_of_element_located((By.NAME, "username"))).send_keys("viewer")
    driver.find_element(By.NAME, "password").send_keys(deployment.password("viewer"))
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait.until(lambda d: d.get_cookie("_token"))
    yield driver
    driver.quit()


START_SCREENSHOT = ROOT / "docs" / "img" / "estate-start.png"


def _rect(browser: Any, element_id: str) -> list[float]:
    return browser.execute_script(
        "var r = document.getElementById(arguments[0]).getBoundingClientRect();"
        " return [r.left, r.top, r.width, r.height];",
        element_id,
    )


def _side(browser: Any) -> list[float]:
    """The side panel's box within ``#main``: a notice above (e.g. "the index is being built", cleared by the
    next answer once it is) moves the whole of ``#main``, which is not the panel moving."""
    return browser.execute_script(
        "var r = document.getElementById('side').getBoundingClientRect(),"
        " m = document.getElementById('main').getBoundingClientRect();"
        " return [r.left - m.left, r.top - m.top, r.width, r.bottom - m.bottom];")


def test_first_view_shows_where_to_start_and_searches_as_you_type(browser: Any, deployment: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(deployment.api_url + "/column-lineage/estate")  # what the navigation entry opens
    WebDriverWait(browser, 90).until(
        lambda d: d.find_element(By.ID, "start").get_attribute("data-state") in ("ready", "error"))
    assert browser.find_element(By.ID, "start").get_attribute("data-state") == "ready"
    assert browser.find_element(By.ID, "start").is_displayed()
    assert "Type a dataset or column name" in browser.find_element(By.CSS_SELECTOR, "#start .help").text
    recent = browser.execute_script(
        "return Array.from(document.querySelectorAll('#start-recent tr.start-dataset'),"
        " r => r.getAttribute('data-id'));"
    )
    assert any(r.endswith("/customer_monthly") for r in recent), recent  # lineage_etl's mart
    dags = browser.execute_script(
        "return Array.from(document.querySelectorAll('#start-dags tr.start-dag'), r => r.getAttribute('data-dag'));")
    assert "lineage_etl" in dags, dags
    START_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(START_SCREENSHOT))

    # search as you type: no Enter; the hits float over the page, the side panel does not move
    side = _side(browser)
    browser.find_element(By.ID, "search").send_keys("customer_mon")
    WebDriverWait(browser, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#results button.hit"))
    hits = [b.text for b in browser.find_elements(By.CSS_SELECTOR, "#results button.hit")]
    assert "marts/customer_monthly" in hits, hits
    assert _side(browser) == side
    results = _rect(browser, "results")
    assert results[0] + results[2] <= _rect(browser, "side")[0] + 1, (
        results,
        side,
    )  # beside the side panel, not over it
    # the arrow keys pick a hit, Enter opens the graph around it
    hit = hits.index("marts/customer_monthly")
    box = browser.find_element(By.ID, "search")
    box.send_keys(*([Keys.ARROW_DOWN] * (hit + 1)), Keys.ENTER)
    assert wait_state(browser, ("ready",), timeout=90) == "ready"
    assert browser.find_element(By.ID, "results").get_attribute("hidden") is not None
    assert not browser.find_element(By.ID, "start").is_displayed()
    assert any(b.endswith("/customer_monthly") for b in _boxes(browser))
    assert _side(browser) == side

    # back to the start (the title), then a DAG: the graph around what it writes
    browser.find_element(By.ID, "title").click()
    WebDriverWait(browser, 90).until(lambda d: d.find_element(By.ID, "start").get_attribute("data-state") == "ready")
    browser.find_element(By.CSS_SELECTOR, '#start-dags tr.start-dag[data-dag="lineage_etl"] button.pick').click()
    assert wait_state(browser, ("ready",), timeout=90) == "ready"
    assert any(b.endswith("/customer_monthly") for b in _boxes(browser))
    assert console_errors(browser) == []


def _open(browser: Any, deployment: Any, start: dict[str, Any], **params: Any) -> None:
    q = {"namespace": start["namespace"], "name": start["name"], "column": "customer_id", **params}
    browser.get(deployment.api_url + "/column-lineage/estate?" + urlencode(q))
    assert wait_state(browser, timeout=90) == "ready"


def _boxes(browser: Any) -> set[str]:
    """The ids of the boxes drawn now, read in one script call (the graph may redraw between two calls)."""
    return set(browser.execute_script(
        "return Array.from(document.querySelectorAll('#graph .box'), b => b.getAttribute('data-id'));"))


def _id(ds: dict[str, Any]) -> str:
    return f"{ds['namespace']}:{ds['name']}"


def test_estate_page_across_dags_and_back_in_time(browser: Any, deployment: Any, chain: dict[str, Any]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    t1, t2, t3 = chain["t1"], chain["t2"], chain["t3"]
    # search from the nav page: a column of t1, one hop each way by default
    browser.get(deployment.api_url + "/column-lineage/estate")
    box = browser.find_element(By.ID, "search")
    box.send_keys("customer_monthly", Keys.ENTER)
    WebDriverWait(browser, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#results button.hit"))
    browser.find_element(By.CSS_SELECTOR, "#results button.hit").click()
    assert wait_state(browser, ("ready",), timeout=90) == "ready"
    shown = _boxes(browser)
    assert _id(t1) in shown and _id(t2) in shown and _id(t3) not in shown
    # expand t2 by a click on its "+N down" badge: t3 appears (one request for both starts)
    browser.find_element(By.CSS_SELECTOR, f'#graph .box[data-id="{_id(t2)}"] .more-down text').click()
    WebDriverWait(browser, 60).until(lambda d: _id(t3) in _boxes(d))
    edges = browser.execute_script(
        "return Array.from(document.querySelectorAll('#edges tr.edge-row a'), a => [a.textContent, a.href]);")
    assert any("lineage_estate_flags" in text and "/plugin/column-lineage-run" in href for text, href in edges)

    # from a column of t1, depth 3: t2 and t3
    _open(browser, deployment, t1)
    browser.find_element(By.CSS_SELECTOR, "#depth option[value='3']").click()
    assert wait_state(browser, ("ready",), timeout=90) == "ready"
    WebDriverWait(browser, 60).until(lambda d: {_id(t2), _id(t3)} <= _boxes(d))

    # as of the instant before the flags DAG first ran: t2 but not t3
    _open(browser, deployment, t1, as_of=chain["before_flags"])
    browser.find_element(By.CSS_SELECTOR, "#depth option[value='3']").click()
    assert wait_state(browser, ("ready",), timeout=90) == "ready"
    WebDriverWait(browser, 60).until(lambda d: _id(t2) in _boxes(d))
    assert _id(t3) not in _boxes(browser)

    # now, compared with that instant: t3 and its edges are highlighted as added
    _open(browser, deployment, t1, before=chain["before_flags"])
    browser.find_element(By.CSS_SELECTOR, "#depth option[value='3']").click()
    WebDriverWait(browser, 90).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, f'#graph .box.added[data-id="{_id(t3)}"]')
    )
    assert browser.find_elements(By.CSS_SELECTOR, "#graph .edge.added")
    assert "added dataset " + _id(t3) in browser.find_element(By.ID, "diff").text

    # impact list, and its CSV export equals the JSON one
    browser.find_element(By.ID, "impact-go").click()
    WebDriverWait(browser, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#impact tr.impact-row"))
    fetch = ("var cb = arguments[arguments.length - 1]; Promise.all([fetch(document.getElementById('export-json').href)"
             ".then(r => r.json()), fetch(document.getElementById('export-csv').href).then(r => r.text())])"
             ".then(cb, e => cb(String(e)));")
    as_json, as_csv = browser.execute_async_script(fetch)
    rows = list(csv.DictReader(io.StringIO(as_csv)))
    assert rows == [{k: ("true" if v is True else "false" if v is False else str(v)) for k, v in r.items()}
                    for r in as_json["rows"]]
    reached = {(r["name"].rsplit("/", 1)[-1], r["column"]) for r in as_json["rows"]}
    assert {("customer_scores", "customer_id"), ("customer_flags", "customer_id")} <= reached
    assert len(browser.find_elements(By.CSS_SELECTOR, "#impact tr.impact-row")) == len(as_json["rows"])

    # the graph scrolls inside its canvas, beside (never under) the side panel
    side, canvas = browser.execute_script(
        "var s = document.getElementById('side').getBoundingClientRect(), c = document.getElementById('canvas')"
        ".getBoundingClientRect(); return [[s.left, s.right], [c.left, c.right]];")
    assert canvas[1] <= side[0] + 1, (canvas, side)
    # the screenshot: a window wide enough for the whole graph, then every box inside the canvas
    width = browser.execute_script("return Math.ceil(document.getElementById('graph').getBoundingClientRect().width);")
    browser.set_window_size(max(1600, width + 460 + 80), 900)
    browser.execute_script("var c = document.getElementById('canvas'); c.scrollLeft = 0; c.scrollTop = 0;")
    outside = browser.execute_script(
        "var c = document.getElementById('canvas').getBoundingClientRect();"
        "return Array.from(document.querySelectorAll('#graph .box'), b => [b.getAttribute('data-id'),"
        " b.getBoundingClientRect()]).filter(p => p[1].left < c.left - 1 || p[1].right > c.right + 1).map(p => p[0]);")
    assert outside == [], f"boxes outside the visible canvas: {outside}"
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOT))
    print("estate page timings (ms):", browser.execute_script("return window.estate.timings"))  # not asserted
    assert console_errors(browser) == []
