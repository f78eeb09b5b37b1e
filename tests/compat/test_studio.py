"""The Studio in a real browser (headless Chromium through Selenium) against a real `corvid serve`: serving
and redirect, databases, documents (create, edit, stale change vector, delete, paging through 10,000),
queries, indexes (a definition that does not compile, then one that does) and the dashboard. Every page is
screenshotted and must log no console error."""

from __future__ import annotations

import json
import time

import pytest
import requests
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from ravendb.json.metadata_as_dictionary import MetadataAsDictionary

from corvid_support import create_database, delete_database, open_store, unique_db_name
from studio_browser import Studio, start_browser


@pytest.fixture(scope="module")
def browser():
    driver = start_browser()
    yield driver
    driver.quit()


@pytest.fixture
def studio(browser, server_url) -> Studio:
    s = Studio(browser, server_url)
    s.open()
    s.page("databases")  # the first page rendered: the app read the database list
    browser.get_log("browser")  # start each test with an empty console
    return s


class Thing:
    """Stored by the official client in the collection `Things`."""

    def __init__(self, name: str = None):
        self.name = name


def put_doc(url: str, db: str, doc_id: str, body: dict) -> None:
    r = requests.put(f"{url}/databases/{db}/docs", params={"id": doc_id}, json=body, timeout=10)
    assert r.status_code == 201, r.text


def type_into(element, text: str) -> None:
    element.send_keys(Keys.CONTROL, "a")
    element.send_keys(Keys.DELETE)
    element.send_keys(text)


def test_root_redirects_to_the_studio_and_its_files_revalidate_by_etag(server_url):
    r = requests.get(server_url + "/", allow_redirects=False, timeout=10)
    assert r.status_code == 302 and r.headers["Location"] == "/studio/"
    page = requests.get(server_url + "/studio/", timeout=10)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert "Corvid Studio" in page.text
    script = requests.get(server_url + "/studio/js/app.js", timeout=10)
    assert script.headers["Content-Type"].startswith("text/javascript")
    assert script.headers["Cache-Control"] == "no-cache"
    again = requests.get(server_url + "/studio/js/app.js", headers={"If-None-Match": script.headers["ETag"]}, timeout=10)
    assert again.status_code == 304 and not again.content
    assert requests.get(server_url + "/studio/js/missing.js", timeout=10).status_code == 404
    # Assets are compressed like every other response when the browser asks.
    css = requests.get(server_url + "/studio/studio.css", headers={"Accept-Encoding": "gzip"}, timeout=10)
    assert css.headers.get("Content-Encoding") == "gzip"


def test_databases_page_creates_and_deletes_a_database(studio, server_url):
    assert studio.driver.current_url.endswith("/studio/")
    studio.driver.get(server_url + "/")
    studio.wait(lambda d: d.current_url.startswith(server_url + "/studio/"))
    studio.page("databases")
    name = unique_db_name("studio_db")
    try:
        type_into(studio.element("#new-database-name"), name)
        studio.element("#create-database").click()
        studio.element(f'tr[data-database="{name}"]')
        studio.wait(lambda d: d.find_element(By.ID, "database-picker").get_attribute("value") == name)
        studio.screenshot("databases")
        studio.element(f'tr[data-database="{name}"] button.danger').click()
        studio.accept_confirmation()
        studio.wait(lambda d: not d.find_elements(By.CSS_SELECTOR, f'tr[data-database="{name}"]'))
        names = [d["Name"] for d in requests.get(server_url + "/databases", timeout=10).json()["Databases"]]
        assert name not in names
    finally:
        if name in [d["Name"] for d in requests.get(server_url + "/databases", timeout=10).json()["Databases"]]:
            delete_database(server_url, name)
    assert studio.console_errors() == []


def test_document_editor_creates_edits_refuses_a_stale_save_and_deletes(server_url, db_name, studio):
    studio.use_database(db_name)
    studio.go("#/document?collection=Users")
    studio.page("document")
    type_into(studio.element("#document-id"), "users/1")
    editor = studio.element("#document-json")
    type_into(editor, '{"Name": "Ann", "Age": 30')
    studio.text_appears("#document-error", "Invalid JSON")
    studio.element("#save-document").click()
    studio.text_appears("#document-error", "Not saved: invalid JSON")
    editor.send_keys("}")
    studio.wait(lambda d: d.find_element(By.ID, "document-error").text == "")
    studio.element("#save-document").click()
    studio.text_appears("h1", "Document users/1")
    stored = requests.get(f"{server_url}/databases/{db_name}/docs", params={"id": "users/1"}, timeout=10).json()["Results"][0]
    assert stored["Name"] == "Ann" and stored["Age"] == 30 and stored["@metadata"]["@collection"] == "Users"
    studio.text_appears("#document-metadata", "@change-vector")
    studio.screenshot("document_editor")

    # Edit and save: the new version is stored and the editor holds its change vector.
    first_version = studio.element("#document-metadata").get_attribute("data-change-vector")
    assert first_version == stored["@metadata"]["@change-vector"]
    type_into(studio.element("#document-json"), '{"Name": "Ann B", "Age": 31}')
    studio.element("#save-document").click()
    studio.wait(lambda d: d.find_element(By.ID, "document-metadata").get_attribute("data-change-vector") not in ("", first_version))
    stored = requests.get(f"{server_url}/databases/{db_name}/docs", params={"id": "users/1"}, timeout=10).json()["Results"][0]
    assert stored["Name"] == "Ann B"

    # Someone else changes it: saving the version the editor holds is refused, nothing is overwritten.
    put_doc(server_url, db_name, "users/1", {"Name": "Changed elsewhere", "@metadata": {"@collection": "Users"}})
    type_into(studio.element("#document-json"), '{"Name": "Mine", "Age": 32}')
    studio.element("#save-document").click()
    studio.text_appears("#document-error", "change vector is stale")
    studio.screenshot("document_conflict")
    stored = requests.get(f"{server_url}/databases/{db_name}/docs", params={"id": "users/1"}, timeout=10).json()["Results"][0]
    assert stored["Name"] == "Changed elsewhere"

    # The list shows it; delete from the editor.
    studio.go("#/documents?collection=Users")
    studio.element('#documents-list .row[aria-rowindex="1"]').click()
    studio.page("document")
    studio.text_appears("h1", "users/1")
    studio.element("#delete-document").click()
    studio.accept_confirmation()
    studio.page("documents")
    r = requests.get(f"{server_url}/databases/{db_name}/docs", params={"id": "users/1"}, timeout=10)
    assert r.status_code == 404
    assert studio.console_errors(expected=("409",)) == []


def test_query_page_runs_rql_and_shows_rows_index_and_json(server_url, db_name, studio):
    for i in range(60):
        put_doc(server_url, db_name, f"people/{i}", {"Name": f"user {i:02}", "Age": i, "@metadata": {"@collection": "People"}})
    studio.use_database(db_name)
    studio.go("#/query")
    studio.page("query")
    editor = studio.element("#rql-editor")
    type_into(editor, "from People where Age >= 5")
    editor.send_keys(Keys.CONTROL, Keys.ENTER)
    studio.text_appears("#query-summary", "of 55 results")
    rows = studio.driver.find_elements(By.CSS_SELECTOR, "#query-table tbody tr")
    assert len(rows) == 50
    assert "Name" in studio.element("#query-table thead").text
    assert studio.element("#query-index").text.startswith("Auto/People")
    studio.screenshot("query")
    studio.element("#next-page").click()
    studio.text_appears("#query-summary", "51-55 of 55")
    # Completion: collections after `from`.
    type_into(editor, "from Peo")
    studio.element("#rql-completions li")
    editor.send_keys(Keys.ENTER)
    assert studio.element("#rql-editor").get_attribute("value") == "from People"
    # The same results as JSON.
    editor.send_keys(Keys.CONTROL, Keys.ENTER)
    studio.text_appears("#query-summary", "of 60 results")
    Select(studio.element("#result-view")).select_by_value("json")
    studio.text_appears("#query-json", '"Name"')
    assert studio.element("#export-csv").is_enabled()
    assert studio.console_errors() == []


def test_indexes_page_shows_a_compile_error_then_creates_an_index_that_catches_up(server_url, db_name, studio):
    for i in range(20):
        put_doc(server_url, db_name, f"items/{i}", {"Name": f"item {i}", "@metadata": {"@collection": "Items"}})
    studio.use_database(db_name)
    studio.go("#/indexes")
    studio.page("indexes")
    studio.element("#new-index").click()
    type_into(studio.element("#index-name"), "Items/ByName")
    type_into(studio.element("#index-map"), "map('Items', function (i) {\nreturn { Name: i.Name \n})")
    studio.element("#save-index").click()
    studio.text_appears("#index-error", "Not saved (line 3)")
    # The editor's gutter marks the line the server named.
    assert studio.element("#index-map").find_element(By.XPATH, "..").find_element(By.CSS_SELECTOR, ".gutter .bad-line").text == "3"
    studio.screenshot("index_error")
    type_into(studio.element("#index-map"), "map('Items', function (i) {\nreturn { Name: i.Name };\n})")
    studio.element("#save-index").click()
    studio.page("indexes")
    studio.element('tr[data-index="Items/ByName"]')

    def up_to_date(driver):
        driver.find_element(By.ID, "refresh-indexes").click()
        cells = driver.find_elements(By.CSS_SELECTOR, 'tr[data-index="Items/ByName"] .index-staleness')
        return cells and "Up to date" in cells[0].text

    studio.wait(up_to_date, timeout=30)
    studio.screenshot("indexes")
    assert studio.console_errors(expected=("400",)) == []


def list_diagnostics(studio: Studio, url: str, db: str) -> str:
    page = studio.driver.execute_script(
        "const q = (s) => document.querySelector(s);"
        "return { hash: location.hash, page: q('#main') && q('#main').dataset.page, database: localStorage.getItem('corvid.database'),"
        " count: q('#documents-count') && q('#documents-count').textContent, status: q('#documents-status') && q('#documents-status').textContent,"
        " rows: document.querySelectorAll('#documents-list .row:not(.header)').length, main: q('#main').innerText.slice(0, 300) }")
    stats = requests.get(f"{url}/databases/{db}/collections/stats", timeout=10).json()
    metrics = requests.get(f"{url}/admin/metrics", timeout=10).json()
    return json.dumps({"page": page, "collections": stats, "queries": metrics.get("Queries"), "memory": metrics.get("MemoryBudget"),
                       "console": studio.driver.get_log("browser")[-10:]})


def test_document_list_pages_through_ten_thousand_documents(server_factory, browser):
    # Each store_as gets its own metadata: the official client's default (`metadata=MetadataAsDictionary()`)
    # is ONE dict shared by every call in the process, and the first call writes its `@collection` into it.
    # After another test's bulk insert of Users in the same process, these documents went to "Users" and
    # the "Things" list stayed empty (the one-process flake of sessions 14-16).
    server_url = server_factory().url
    db_name = unique_db_name("studio_list")
    create_database(server_url, db_name)
    studio = Studio(browser, server_url)
    studio.open()
    studio.page("databases")
    browser.get_log("browser")
    with open_store(server_url, db_name) as store:
        with store.bulk_insert() as bulk:
            for i in range(10_000):
                bulk.store_as(Thing(f"n{i}"), f"things/{i:05}", MetadataAsDictionary())
    studio.use_database(db_name)
    started = time.monotonic()
    studio.go("#/documents?collection=Things")
    try:
        studio.element('#documents-list .row[aria-rowindex="1"]', timeout=60)
    except TimeoutException:
        # What the page and the server said, so a failure tells why no row showed (issue 24's flake).
        pytest.fail(f"no first row after 60 s: {list_diagnostics(studio, server_url, db_name)}")
    first_page_ms = (time.monotonic() - started) * 1000
    assert "10,000 documents" in studio.element("#documents-count").text
    studio.screenshot("documents")
    studio.driver.execute_script("document.getElementById('documents-list').scrollTop = 1e9")
    last = studio.element('#documents-list .row[aria-rowindex="10000"]', timeout=60)
    assert "things/" in last.text
    # Only the rows in view exist in the page.
    assert len(studio.driver.find_elements(By.CSS_SELECTOR, "#documents-list .row:not(.header)")) < 100
    print(f"\nfirst page of the document list rendered in {first_page_ms:.0f} ms")
    assert studio.console_errors() == []


def test_dashboard_shows_request_and_write_rates(server_url, db_name, studio):
    studio.go("#/dashboard")
    studio.page("dashboard")
    for i in range(5):
        put_doc(server_url, db_name, f"ticks/{i}", {"N": i})
        time.sleep(0.3)
    studio.wait(lambda d: d.find_element(By.ID, "requests-per-second").text not in ("", "-"))
    studio.wait(lambda d: d.find_element(By.ID, "writes-per-second").text not in ("", "-"))
    assert float(studio.element("#total-requests").text.replace(",", "")) > 0
    studio.screenshot("dashboard")
    assert studio.console_errors() == []
