"""The Studio's remaining views in a real browser (headless Chromium through Selenium) against a real
`corvid serve`: a document's attachments (upload, download, delete), counters, revisions (view, compare) and
time series (chart); the query page's explain, patch by query (confirmation, progress) and export; the index
terms browser, performance graph and lag; the dashboard's CPU, memory, traffic per database and ongoing
operations. Every page is screenshotted and must log no console error."""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path

import pytest
import requests
from ravendb.documents.operations.revisions import (
    ConfigureRevisionsOperation,
    RevisionsCollectionConfiguration,
    RevisionsConfiguration,
)
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from ravendb.json.metadata_as_dictionary import MetadataAsDictionary

from corvid_support import open_store
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
    s.page("databases")
    browser.get_log("browser")
    return s


class Slow:
    """Stored by the official client in the collection `Slows`."""

    def __init__(self, n: int = 0):
        self.n = n


def put_doc(url: str, db: str, doc_id: str, body: dict) -> None:
    r = requests.put(f"{url}/databases/{db}/docs", params={"id": doc_id}, json=body, timeout=10)
    assert r.status_code == 201, r.text


def get_doc(url: str, db: str, doc_id: str) -> dict:
    return requests.get(f"{url}/databases/{db}/docs", params={"id": doc_id}, timeout=10).json()["Results"][0]


def type_into(element, text: str) -> None:
    element.send_keys(Keys.CONTROL, "a")
    element.send_keys(Keys.DELETE)
    element.send_keys(text)


def open_tab(studio: Studio, tab: str) -> None:
    studio.element(f"#tab-{tab}").click()
    studio.wait(lambda d: d.find_element(By.ID, f"tab-{tab}").get_attribute("aria-selected") == "true")


def test_document_view_shows_attachments_counters_revisions_and_time_series(server_url, db_name, studio, tmp_path):
    with open_store(server_url, db_name) as store:
        store.maintenance.send(ConfigureRevisionsOperation(RevisionsConfiguration(RevisionsCollectionConfiguration())))
    put_doc(server_url, db_name, "users/1", {"Name": "Ann", "Age": 30, "@metadata": {"@collection": "Users"}})
    put_doc(server_url, db_name, "users/1", {"Name": "Ann", "Age": 31, "@metadata": {"@collection": "Users"}})
    r = requests.post(f"{server_url}/databases/{db_name}/counters", timeout=10, json={
        "Documents": [{"DocumentId": "users/1", "Operations": [{"Type": "Increment", "CounterName": "likes", "Delta": 3}]}]})
    assert r.status_code == 200, r.text
    appends = [{"Timestamp": f"2024-01-01T00:{i:02}:00.0000000Z", "Values": [60 + (i % 7), 100 - i], "Tag": None} for i in range(20)]
    r = requests.post(f"{server_url}/databases/{db_name}/timeseries", params={"docId": "users/1"}, timeout=10,
                      json={"Name": "HeartRate", "Appends": appends, "Deletes": []})
    assert r.status_code == 204, r.text

    studio.use_database(db_name)
    studio.go("#/document?id=users/1")
    studio.page("document")

    # Tabs work from the keyboard: arrows move between them.
    studio.element("#tab-metadata").send_keys(Keys.ARROW_RIGHT)
    studio.wait(lambda d: d.find_element(By.ID, "tab-attachments").get_attribute("aria-selected") == "true")
    assert studio.driver.switch_to.active_element.get_attribute("id") == "tab-attachments"

    # Attachments: upload a file, see name, size and type, download it, delete it.
    note = tmp_path / "note.txt"
    note.write_text("hello from the studio\n")
    studio.element("#attachment-file").send_keys(str(note))
    studio.element("#upload-attachment").click()
    row = studio.element('#attachments-table tr[data-attachment="note.txt"]')
    assert "22 B" in row.text and "text/plain" in row.text
    studio.screenshot("document_attachments")
    href = row.find_element(By.CSS_SELECTOR, "a").get_attribute("href")
    assert requests.get(href, timeout=10).content == b"hello from the studio\n"
    assert [a["Name"] for a in get_doc(server_url, db_name, "users/1")["@metadata"]["@attachments"]] == ["note.txt"]
    row.find_element(By.CSS_SELECTOR, "button.danger").click()
    studio.accept_confirmation()
    studio.wait(lambda d: not d.find_elements(By.CSS_SELECTOR, '#attachments-table tr[data-attachment="note.txt"]'))
    assert "@attachments" not in get_doc(server_url, db_name, "users/1")["@metadata"]

    # Counters: the value, +1, a new counter by 5, delete one.
    open_tab(studio, "counters")
    studio.text_appears('#counters-table tr[data-counter="likes"] .counter-value', "3")
    studio.element('#counters-table tr[data-counter="likes"] button').click()
    studio.text_appears('#counters-table tr[data-counter="likes"] .counter-value', "4")
    type_into(studio.element("#counter-name"), "views")
    type_into(studio.element("#counter-delta"), "5")
    studio.element("#increment-counter").click()
    studio.text_appears('#counters-table tr[data-counter="views"] .counter-value', "5")
    studio.screenshot("document_counters")
    studio.element('#counters-table tr[data-counter="likes"] button.danger').click()
    studio.accept_confirmation()
    studio.wait(lambda d: not d.find_elements(By.CSS_SELECTOR, '#counters-table tr[data-counter="likes"]'))
    counters = requests.get(f"{server_url}/databases/{db_name}/counters", params={"docId": "users/1"}, timeout=10).json()["Counters"]
    assert [(c["CounterName"], c["TotalValue"]) for c in counters if c] == [("views", 5)]

    # The attachment and counter changes moved the change vector: a save now is not refused as stale.
    type_into(studio.element("#document-json"), '{"Name": "Ann", "Age": 32}')
    studio.element("#save-document").click()
    studio.wait(lambda d: get_doc(server_url, db_name, "users/1")["Age"] == 32)
    assert studio.driver.find_element(By.ID, "document-error").text == ""

    # Revisions: listed newest first; view one, compare the first with the current document.
    open_tab(studio, "revisions")
    studio.element("#revisions-table tbody tr[data-revision]")
    revisions = requests.get(f"{server_url}/databases/{db_name}/revisions", params={"id": "users/1"}, timeout=10).json()
    assert studio.element("#revisions-count").text == f"{revisions['TotalResults']} revisions"
    rows = studio.driver.find_elements(By.CSS_SELECTOR, "#revisions-table tbody tr[data-revision]")
    rows[-1].find_element(By.XPATH, ".//button[text()='Compare']").click()
    studio.text_appears("#revision-diff", "changed lines")
    removed = [e.text for e in studio.driver.find_elements(By.CSS_SELECTOR, "#revision-diff .diff-removed")]
    added = [e.text for e in studio.driver.find_elements(By.CSS_SELECTOR, "#revision-diff .diff-added")]
    assert any('"Age": 30' in line for line in removed) and any('"Age": 32' in line for line in added)
    studio.screenshot("document_revisions")
    rows[0].find_element(By.XPATH, ".//button[text()='View']").click()
    studio.text_appears("#revision-json", '"@change-vector"')

    # Time series: the names from the metadata and a chart with a line per value.
    open_tab(studio, "timeseries")
    studio.text_appears("#timeseries-chart figcaption", "20 entries")
    lines = studio.driver.find_elements(By.CSS_SELECTOR, "#timeseries-chart polyline")
    assert len(lines) == 2 and all(len(l.get_attribute("points").split()) == 20 for l in lines)
    type_into(studio.element("#timeseries-from"), "2024-01-01T00:10:00Z")
    studio.element("#show-timeseries").click()
    studio.text_appears("#timeseries-chart figcaption", "10 entries")
    studio.screenshot("document_timeseries")

    # The dark theme applies to the new views too.
    studio.element("#theme-toggle").click()
    theme = studio.driver.execute_script("return document.documentElement.dataset.theme")
    studio.screenshot(f"document_timeseries_{theme}")
    studio.element("#theme-toggle").click()
    assert studio.driver.execute_script("return document.documentElement.dataset.theme") != theme
    assert studio.console_errors() == []


def test_query_page_explains_patches_after_confirmation_and_exports(server_url, db_name, studio, tmp_path):
    for i in range(60):
        put_doc(server_url, db_name, f"orders/{i}", {"Total": i, "Note": f'say "hi", {i}', "@metadata": {"@collection": "Orders"}})
    studio.driver.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(tmp_path)})
    studio.use_database(db_name)
    studio.go("#/query")
    studio.page("query")
    editor = studio.element("#rql-editor")

    type_into(editor, "from Orders where Total >= 10")
    studio.element("#explain-query").click()
    studio.text_appears("#query-explain", "Auto/Orders/ByTotal")
    studio.screenshot("query_explain")

    # Export holds every result, not only the page shown.
    editor.send_keys(Keys.CONTROL, Keys.ENTER)
    studio.text_appears("#query-summary", "of 50 results")
    studio.element("#export-csv").click()
    studio.wait(lambda d: (tmp_path / "results.csv").exists() and not list(tmp_path.glob("*.crdownload")))
    rows = list(csv.reader(io.StringIO((tmp_path / "results.csv").read_text())))
    assert rows[0][0] == "@id" and len(rows) == 51
    assert ['"hi"' in r[rows[0].index("Note")] for r in rows[1:]].count(True) == 50
    studio.element("#export-json").click()
    studio.wait(lambda d: (tmp_path / "results.json").exists() and not list(tmp_path.glob("*.crdownload")))
    assert len(json.loads((tmp_path / "results.json").read_text())) == 50

    # A patch asks first: cancel changes nothing, confirm runs it and shows its progress to the end.
    type_into(editor, "from Orders where Total < 40 update { this.Patched = true; }")
    editor.send_keys(Keys.CONTROL, Keys.ENTER)
    dialog = studio.element("#patch-confirm")
    assert "40 documents" in dialog.text
    assert studio.driver.switch_to.active_element.get_attribute("id") == "patch-confirm-cancel"
    studio.screenshot("query_patch_confirm")
    studio.driver.switch_to.active_element.send_keys(Keys.ESCAPE)  # Escape cancels, like the Cancel button
    studio.wait(lambda d: not d.find_elements(By.ID, "patch-confirm"))
    studio.element("#run-query").click()
    studio.element("#patch-confirm-cancel").click()
    studio.wait(lambda d: not d.find_elements(By.ID, "patch-confirm"))
    assert "Patched" not in get_doc(server_url, db_name, "orders/1")
    studio.element("#run-query").click()
    studio.element("#patch-confirm-run").click()
    studio.text_appears("#patch-status", "Patch done: 40 documents changed")
    assert studio.element("#patch-progress").get_attribute("value") == "1"
    studio.screenshot("query_patch_done")
    assert get_doc(server_url, db_name, "orders/1")["Patched"] is True
    assert "Patched" not in get_doc(server_url, db_name, "orders/45")
    assert studio.console_errors() == []


def test_indexes_page_shows_lag_the_performance_graph_and_terms(server_url, db_name, studio):
    for i in range(150):
        put_doc(server_url, db_name, f"items/{i}", {"Name": f"item {i:03}", "Kind": "even" if i % 2 == 0 else "odd",
                                                    "@metadata": {"@collection": "Items"}})
    definition = {"Name": "Items/ByName", "Maps": ["map('Items', function (i) {\nreturn { Name: i.Name, Kind: i.Kind };\n})"],
                  "Type": "JavaScriptMap", "SourceType": "Documents", "Fields": {}, "Configuration": {}}
    r = requests.put(f"{server_url}/databases/{db_name}/admin/indexes", json={"Indexes": [definition]}, timeout=10)
    assert r.status_code in (200, 201), r.text

    def indexed(_driver=None):
        stats = requests.get(f"{server_url}/databases/{db_name}/indexes/stats", params={"name": "Items/ByName"}, timeout=10).json()
        return not stats["Results"][0]["IsStale"]

    studio.wait(indexed, timeout=30)
    studio.use_database(db_name)
    studio.go("#/indexes")
    studio.page("indexes")
    assert studio.element('tr[data-index="Items/ByName"] .index-lag').text == "0"
    studio.element("#index-performance-chart")
    assert studio.driver.find_elements(By.CSS_SELECTOR, '#index-performance-chart g[data-index="Items/ByName"] rect')
    assert "150" in studio.element('#index-performance-table tr[data-index="Items/ByName"]').text
    studio.screenshot("index_performance")

    studio.element('tr[data-index="Items/ByName"] a[href*="terms="]').click()
    studio.text_appears("h1", "Terms of Items/ByName")
    assert studio.element("#terms-field").get_attribute("value") == "Name"
    studio.text_appears("#terms-status", "100 terms so far")
    first = [li.text for li in studio.driver.find_elements(By.CSS_SELECTOR, "#terms-list li")]
    assert first == sorted(first) and first[0] == "item 000"
    studio.element("#more-terms").click()
    studio.text_appears("#terms-status", "150 terms")
    assert not studio.driver.find_element(By.ID, "more-terms").is_displayed()
    type_into(studio.element("#terms-field"), "Kind")
    studio.element("#show-terms").click()
    studio.text_appears("#terms-status", "2 terms")
    assert [li.text for li in studio.driver.find_elements(By.CSS_SELECTOR, "#terms-list li")] == ["even", "odd"]
    studio.screenshot("index_terms")
    assert studio.console_errors() == []


def test_dashboard_shows_cpu_memory_traffic_per_database_and_ongoing_operations(server_url, db_name, studio):
    # A patch slow enough (a busy loop per document) to be seen running, with its progress.
    with open_store(server_url, db_name) as store:
        with store.bulk_insert() as bulk:
            for i in range(400):
                bulk.store_as(Slow(i), f"slow/{i}", MetadataAsDictionary())
    studio.go("#/dashboard")
    studio.page("dashboard")
    body = {"Query": {"Query": "from @all_docs update { var x = 0; for (var i = 0; i < 200000; i++) { x += i; } this.X = x; }"}}
    r = requests.patch(f"{server_url}/databases/{db_name}/queries", json=body, timeout=10)
    assert r.status_code == 200, r.text
    operation = r.json()["OperationId"]
    studio.element(f'#ongoing-operations tr[data-operation="{operation}"] progress', timeout=20)
    studio.screenshot("dashboard_operation")
    for i in range(10):
        put_doc(server_url, db_name, f"ticks/{i}", {"N": i})
    studio.wait(lambda d: d.find_element(By.ID, "cpu-process").text not in ("", "-"))
    assert float(studio.element("#memory-used").text.replace(",", "")) > 0
    assert float(studio.element("#memory-machine").text.replace(",", "")) > 0
    row = f'#database-traffic tr[data-database="{db_name}"]'
    studio.wait(lambda d: d.find_element(By.CSS_SELECTOR, f"{row} .requests-rate").text not in ("", "-"))
    studio.wait(lambda d: d.find_element(By.CSS_SELECTOR, row).text.endswith("Loaded"))

    def finished(_driver):
        state = requests.get(f"{server_url}/databases/{db_name}/operations/state", params={"id": operation}, timeout=10).json()
        return state["Status"] != "InProgress"

    studio.wait(finished, timeout=120)
    studio.wait(lambda d: not d.find_elements(By.CSS_SELECTOR, f'#ongoing-operations tr[data-operation="{operation}"]'))
    studio.screenshot("dashboard_traffic")
    metrics = requests.get(f"{server_url}/admin/metrics", timeout=10).json()
    assert metrics["DatabaseRequests"][db_name] > 10
    assert studio.console_errors() == []


def test_import_export_and_backup_pages(server_url, db_name, studio, tmp_path):
    """The Import/Export page: an export the browser downloads, that dump imported into another database
    through the file input (counts shown, documents and attachment there), and a one-time backup into a
    server folder followed to its end."""
    for i in range(25):
        put_doc(server_url, db_name, f"orders/{i}", {"N": i, "@metadata": {"@collection": "Orders"}})
    r = requests.put(f"{server_url}/databases/{db_name}/attachments", params={"id": "orders/0", "name": "a.txt"},
                     data=b"hello", headers={"Content-Type": "text/plain"}, timeout=10)
    assert r.status_code == 201, r.text

    studio.use_database(db_name)
    studio.go("#/tasks")
    studio.page("tasks")
    studio.element("#export-button").click()
    studio.text_appears("#export-status", "Exported")
    href = studio.element("#export-download").get_attribute("href")
    assert href.startswith("blob:")
    # What the browser downloaded, read back through the page (same bytes as the server's export).
    size = studio.driver.execute_async_script(
        "const done = arguments[arguments.length - 1]; fetch(arguments[0]).then(r => r.blob()).then(b => done(b.size));", href)
    assert size > 100
    studio.screenshot("tasks_export")

    # Import a dump the test exported itself into a fresh database, through the file input.
    dump = tmp_path / "orders.ravendbdump"
    exported = requests.post(f"{server_url}/databases/{db_name}/smuggler/export", json={}, timeout=60)
    assert exported.status_code == 200
    dump.write_bytes(exported.content)
    target = f"{db_name}_copy"
    assert requests.put(f"{server_url}/admin/databases", json={"DatabaseName": target}, timeout=10).status_code in (200, 201)
    studio.use_database(target)
    studio.go("#/databases")
    studio.page("databases")
    studio.go("#/tasks")
    studio.page("tasks")
    studio.element("#import-file").send_keys(str(dump))
    studio.element("#import-button").click()
    studio.text_appears("#import-status", "Documents: 25", timeout=60)
    assert "Attachments: 1" in studio.element("#import-status").text
    assert requests.get(f"{server_url}/databases/{target}/docs", params={"id": "orders/24"}, timeout=10).json()["Results"][0]["N"] == 24
    attachment = requests.get(f"{server_url}/databases/{target}/attachments", params={"id": "orders/0", "name": "a.txt"}, timeout=10)
    assert attachment.content == b"hello"
    studio.screenshot("tasks_import")

    # Back up now into a folder of the server.
    folder = tmp_path / "backups"
    type_into(studio.element("#backup-folder"), str(folder))
    studio.element("#backup-button").click()
    studio.text_appears("#backup-status", "Backup completed", timeout=60)
    assert list(folder.rglob("*.ravendb-full-backup")), list(folder.rglob("*"))
    studio.screenshot("tasks_backup")
    assert studio.console_errors() == []
    requests.delete(f"{server_url}/admin/databases", json={"DatabaseNames": [target], "HardDelete": True}, timeout=30)
