"""Headless Debian Chromium driven by selenium (no browser download: ``./dev.sh setup`` installs
``chromium`` + ``chromium-driver`` with apt-get), for the column-lineage page's tests and benchmark."""
from __future__ import annotations

import os
import shutil
from typing import Any

INSTALL_HINT = ("run ./dev.sh setup as root (it installs Debian's chromium and chromium-driver), or "
                "apt-get install chromium chromium-driver")


class BrowserMissing(RuntimeError):
    """No Chromium or no chromedriver on this machine."""


def chromium_paths() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        missing = [n for n, p in (("chromium", browser), ("chromedriver", driver)) if not p]
        raise BrowserMissing(f"{' and '.join(missing)} not found on PATH: {INSTALL_HINT}")
    return browser, driver


def chromium(width: int = 1440, height: int = 900) -> Any:
    """A headless Chromium WebDriver that keeps the browser console log (``driver.get_log("browser")``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    browser, driver = chromium_paths()
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium-manager must not try to download anything
    opts = Options()
    opts.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={width},{height}", "--hide-scrollbars", "--force-device-scale-factor=1"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=opts, service=Service(executable_path=driver))


def console_errors(driver: Any) -> list[dict[str, Any]]:
    """The SEVERE entries of the browser console since the last call."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def wait_state(driver: Any, states: tuple[str, ...] = ("ready", "empty", "error"), timeout: float = 30) -> str:
    """Wait until the column-lineage page's ``body[data-state]`` is one of ``states``; return it."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script("return document.body && document.body.getAttribute('data-state')") in states)
    return driver.execute_script("return document.body.getAttribute('data-state')")
