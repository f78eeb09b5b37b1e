"""Accessibility of every Studio page, in the light and the dark theme, checked in a real headless Chromium
against a real `corvid serve`: text contrast (WCAG 2.x ratios computed from what the browser rendered),
accessible names of every control, one h1 and a main landmark per page, and a keyboard walk (Tab order and
a visible focus) through the document list and the query page. The checks are in studio_accessibility.py."""

from __future__ import annotations

import json
import re

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from studio_accessibility import CONTRAST_FAILURES, FOCUSED, LANDMARKS, UNNAMED_CONTROLS
from studio_browser import Studio, start_browser

THEMES = ("light", "dark")


@pytest.fixture(scope="module")
def browser():
    driver = start_browser()
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def sample_database(server_url):
    """A database with a collection, an index and a document with a counter: each page has content to show."""
    from corvid_support import create_database, delete_database, unique_db_name

    name = unique_db_name("a11y")
    create_database(server_url, name)
    for i in range(5):
        r = requests.put(f"{server_url}/databases/{name}/docs", params={"id": f"people/{i}"}, timeout=10,
                         json={"Name": f"Person {i}", "Age": 20 + i, "@metadata": {"@collection": "People"}})
        assert r.status_code == 201, r.text
    r = requests.post(f"{server_url}/databases/{name}/counters", timeout=10, json={
        "Documents": [{"DocumentId": "people/1", "Operations": [{"Type": "Increment", "CounterName": "likes", "Delta": 2}]}]})
    assert r.status_code == 200, r.text
    r = requests.put(f"{server_url}/databases/{name}/admin/indexes", timeout=10, json={"Indexes": [{
        "Name": "People/ByName", "Maps": ["from p in docs.People select new { p.Name }"], "Type": "Map"}]})
    assert r.status_code in (200, 201), r.text
    yield name
    delete_database(server_url, name)


@pytest.fixture
def studio(browser, server_url, sample_database) -> Studio:
    s = Studio(browser, server_url)
    s.open()
    s.page("databases")
    s.use_database(sample_database)
    browser.get_log("browser")
    return s


def run_query(studio: Studio) -> None:
    editor = studio.element("#rql-editor")
    editor.send_keys(Keys.CONTROL, "a")
    editor.send_keys("from People")
    editor.send_keys(Keys.CONTROL, Keys.ENTER)
    studio.text_appears("#query-summary", "of 5 results")


# (page, fragment, what shows it has rendered its content, extra steps)
PAGES = [
    ("databases", "#/databases", "#databases-table tbody tr", None),
    ("documents", "#/documents?collection=People", '#documents-list .row[aria-rowindex="1"]', None),
    ("document", "#/document?id=people/1", "#document-metadata", None),
    ("document", "#/document?id=people/1&tab=attachments", "#upload-attachment", None),
    ("document", "#/document?id=people/1&tab=counters", '#counters-table tr[data-counter="likes"]', None),
    ("document", "#/document?id=people/1&tab=revisions", "#panel-revisions", None),
    ("document", "#/document?id=people/1&tab=timeseries", "#panel-timeseries", None),
    ("query", "#/query", "#rql-editor", run_query),
    ("indexes", "#/indexes", "#indexes-table tbody tr", None),
    ("indexes", "#/indexes?edit=People/ByName", "#index-name", None),
    ("indexes", "#/indexes?terms=People/ByName", "#terms-field", None),
    ("tasks", "#/tasks", "#export-button", None),
    ("dashboard", "#/dashboard", "#dashboard-status", None),
]


def set_theme(studio: Studio, theme: str) -> None:
    studio.driver.execute_script("localStorage.setItem('corvid.theme', arguments[0])", theme)
    studio.open()
    studio.page("databases")
    assert studio.driver.execute_script("return document.documentElement.dataset.theme") == theme


@pytest.mark.parametrize("theme", THEMES)
def test_every_page_has_readable_text_named_controls_and_one_heading(studio, theme):
    set_theme(studio, theme)
    problems = {}
    for page, fragment, ready, then in PAGES:
        # Unlabelled first, so that waiting for the page's name waits for this visit (the index views share one).
        studio.driver.execute_script("document.getElementById('main').dataset.page = ''")
        if fragment == "#/databases":
            studio.open(fragment)
        else:
            studio.go(fragment)
        studio.page(page)
        studio.element(ready)
        if then:
            then(studio)
        # Messages from the page's actions fade: they are checked where they show, not raced here.
        studio.driver.execute_script("document.getElementById('messages').replaceChildren()")
        contrast = studio.driver.execute_script(CONTRAST_FAILURES)
        unnamed = studio.driver.execute_script(UNNAMED_CONTROLS)
        landmarks = studio.driver.execute_script(LANDMARKS)
        found = {}
        if contrast:
            found["contrast"] = contrast
        if unnamed:
            found["controls without a name"] = unnamed
        if len(landmarks["h1"]) != 1 or landmarks["main"] != 1:
            found["headings"] = landmarks
        if found:
            problems[fragment] = found
        studio.screenshot(f"a11y_{theme}_{re.sub(r'[^A-Za-z0-9]+', '_', fragment).strip('_')}")
    assert problems == {}, json.dumps(problems, indent=1)
    assert studio.console_errors() == []


def tab_walk(studio: Studio, start_css: str, steps: int) -> list[dict]:
    """Focuses `start_css` and presses Tab `steps` times; what had the focus after each press."""
    start = studio.element(start_css)
    studio.driver.execute_script("arguments[0].focus()", start)
    seen = []
    for _ in range(steps):
        studio.driver.switch_to.active_element.send_keys(Keys.TAB)
        seen.append(studio.driver.execute_script(FOCUSED))
    return seen


def test_the_keyboard_walks_the_document_list_and_the_query_page_in_order_with_a_visible_focus(studio):
    set_theme(studio, "light")
    studio.go("#/documents?collection=People")
    studio.page("documents")
    studio.element('#documents-list .row[aria-rowindex="1"]')
    # From the header's last control into the page: the collections, the list's tools, the list itself.
    walk = tab_walk(studio, "#theme-toggle", 5)
    assert [step["key"] for step in walk] == ["All documents5", "People5", "new-document", "extra-columns", "documents-list"], walk
    assert all(step["focusVisible"] and step["outline"] for step in walk), walk
    # Down arrow from the list reaches its rows (focus drawn there too), Enter opens one.
    studio.driver.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
    studio.driver.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
    focused = studio.driver.execute_script(FOCUSED)
    assert focused["focusVisible"] and focused["outline"], focused
    assert studio.driver.switch_to.active_element.get_attribute("aria-rowindex") == "2"
    studio.driver.switch_to.active_element.send_keys(Keys.ENTER)
    studio.page("document")
    studio.text_appears("h1", "people/")

    studio.go("#/query")
    studio.page("query")
    # The editor, then its buttons in reading order (Previous/Next are skipped while disabled).
    walk = tab_walk(studio, "#theme-toggle", 6)
    assert [step["key"] for step in walk] == ["rql-editor", "run-query", "explain-query", "recent-queries", "result-view", "export-json"], walk
    assert all(step["focusVisible"] and step["outline"] for step in walk), walk
    assert studio.console_errors() == []


def test_the_contrast_check_reports_low_contrast_text(studio):
    """The checker itself: grey on white fails, the same grey as large bold text passes (3:1), text on a
    translucent dark layer over white is measured against the blend, disabled controls are exempt."""
    studio.driver.execute_script("""
        document.getElementById('main').insertAdjacentHTML('beforeend',
          '<p id="grey" style="color:#999;background:#fff">grey</p>' +
          '<p id="big" style="color:#888;background:#fff;font-size:19px;font-weight:700">big</p>' +
          '<div style="background:#fff"><p id="veil" style="color:#fff;background:rgba(0,0,0,0.2)">veil</p></div>' +
          '<button id="off" disabled style="color:#ccc;background:#fff">off</button>');
    """)
    failures = {f["selector"]: f for f in studio.driver.execute_script(CONTRAST_FAILURES)}
    assert set(failures) == {"p#grey", "p#veil"}, failures
    assert failures["p#grey"]["ratio"] == 2.85 and failures["p#grey"]["required"] == 4.5
    assert failures["p#veil"]["background"] == "#cccccc"
