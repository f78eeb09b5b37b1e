"""A headless Chromium (Debian's `chromium` + `chromium-driver`) driven by Selenium for the Studio tests:
screenshots of each page go to target/studio-screenshots (CI keeps them as artifacts), and the browser's
console is read so a test can assert that a page logged no error."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from corvid_support import REPO_ROOT

SCREENSHOTS = Path(os.environ.get("STUDIO_SCREENSHOTS") or REPO_ROOT / "target" / "studio-screenshots")


def chromium_binaries() -> tuple[str, str]:
    """(browser, driver) paths; scripts/test.sh installs both when missing, so their absence is a failure."""
    browser = shutil.which("chromium") or "/usr/bin/chromium"
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    for path, package in ((browser, "chromium"), (driver, "chromium-driver")):
        if not os.access(path, os.X_OK):
            raise RuntimeError(f"{path} is missing: install Debian's {package} (scripts/test.sh does it)")
    return browser, driver


def start_browser() -> webdriver.Chrome:
    browser, driver = chromium_binaries()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1400,900"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    chrome = webdriver.Chrome(options=options, service=Service(driver))
    chrome.set_page_load_timeout(30)
    return chrome


class Studio:
    """The browser on one server's Studio, with the waits every test needs."""

    def __init__(self, driver: webdriver.Chrome, url: str):
        self.driver = driver
        self.url = url

    def open(self, fragment: str = "") -> None:
        self.driver.get(f"{self.url}/studio/{fragment}")

    def go(self, fragment: str) -> None:
        """Navigates inside the single-page app (no reload)."""
        self.driver.execute_script("location.hash = arguments[0]", fragment)

    def use_database(self, name: str) -> None:
        self.driver.execute_script("localStorage.setItem('corvid.database', arguments[0])", name)

    def wait(self, condition, timeout: float = 15):
        # Live pages (the dashboard) redraw their rows every second: an element found just before a redraw
        # is stale when read, and the condition is simply asked again.
        return WebDriverWait(self.driver, timeout, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(condition)

    def element(self, css: str, timeout: float = 15):
        return self.wait(EC.visibility_of_element_located((By.CSS_SELECTOR, css)), timeout)

    def text_appears(self, css: str, text: str, timeout: float = 15) -> None:
        self.wait(EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), text), timeout)

    def page(self, name: str) -> None:
        """Waits until the app rendered page `name` (main's data-page)."""
        self.wait(lambda d: d.find_element(By.ID, "main").get_attribute("data-page") == name)

    def accept_confirmation(self) -> None:
        self.wait(EC.alert_is_present()).accept()

    def screenshot(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))

    def console_errors(self, expected: tuple[str, ...] = ()) -> list[str]:
        """Errors the pages logged since the last call, minus those containing one of `expected` (e.g. the
        409 of a save the test means to be refused)."""
        entries = self.driver.get_log("browser")
        return [e["message"] for e in entries if e["level"] == "SEVERE" and not any(x in e["message"] for x in expected)]
