"""The Studio under HTTPS with client certificates, in a real headless Chromium: a secured `corvid serve`
(server certificate signed by a test CA), a browser presenting a ClusterAdmin certificate, one presenting a
certificate allowed on one database only, and one presenting none. The browser verifies the server's
certificate against the test CA (trusted in its NSS database) and sends its client certificate without a
prompt (see studio_client_certificates.py). One secured server for the whole module."""

from __future__ import annotations

import base64

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from corvid_support import CorvidServer, unique_db_name
from security_certificates import CertificateAuthority
from studio_accessibility import CONTRAST_FAILURES, LANDMARKS
from studio_browser import Studio
from studio_client_certificates import (
    STUDIO_TEST_CA,
    auto_select_policy,
    certificate_home,
    start_browser_with_home,
    why_no_client_certificates,
)

PFX_PASSWORD = "studio-secret"

_problem = why_no_client_certificates()
pytestmark = pytest.mark.skipif(_problem is not None, reason=_problem or "")


class SecuredStudio:
    """The secured server, its certificates and the raw admin session the tests prepare data with."""

    def __init__(self, directory):
        self.ca = CertificateAuthority(directory, name=STUDIO_TEST_CA)
        server_certificate = self.ca.issue("corvid-studio-server", server=True)
        pfx = self.ca.write_pfx(server_certificate, PFX_PASSWORD)
        self.admin = self.ca.issue("studio-admin")
        self.limited = self.ca.issue("studio-limited")
        self.server = CorvidServer(directory / "data", log_path=directory / "server.log", extra_args=[
            "--url", "https://127.0.0.1:0", "--certificate-path", str(pfx), "--certificate-password", PFX_PASSWORD,
            "--well-known-admin-certificates", self.admin.thumbprint,
        ])
        self.url = self.server.start()
        self.http = requests.Session()
        self.http.trust_env = False  # REQUESTS_CA_BUNDLE would replace `verify`: the test CA is the one trusted
        self.http.verify = str(self.ca.pem_path)
        self.http.cert = str(self.admin.pem_path)
        self.database = unique_db_name("tls_a")
        self.other_database = unique_db_name("tls_b")
        for name in (self.database, self.other_database):
            r = self.http.put(f"{self.url}/admin/databases", params={"name": name, "replicationFactor": 1},
                              json={"DatabaseName": name, "Settings": {}, "Disabled": False})
            assert r.status_code in (200, 201), r.text
        r = self.http.put(f"{self.url}/admin/certificates", json={
            "Name": "studio-limited", "Certificate": base64.b64encode(self.limited.public_pem).decode(),
            "SecurityClearance": "ValidUser", "Permissions": {self.database: "ReadWrite"}})
        assert r.status_code in (200, 201), r.text


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    with auto_select_policy():
        s = SecuredStudio(tmp_path_factory.mktemp("studio-https"))
        yield s
        s.server.stop()


def type_into(element, text: str) -> None:
    element.send_keys(Keys.CONTROL, "a")
    element.send_keys(Keys.DELETE)
    element.send_keys(text)


def browser_for(secured: SecuredStudio, tmp_path_factory, name: str, client):
    home = certificate_home(tmp_path_factory.mktemp(f"home-{name}"), secured.ca, client)
    return start_browser_with_home(home)


@pytest.fixture(scope="module")
def admin_studio(secured, tmp_path_factory):
    driver = browser_for(secured, tmp_path_factory, "admin", secured.admin)
    yield Studio(driver, secured.url)
    driver.quit()


@pytest.fixture(scope="module")
def anonymous_browser(secured, tmp_path_factory):
    driver = browser_for(secured, tmp_path_factory, "anonymous", None)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def limited_studio(secured, tmp_path_factory):
    driver = browser_for(secured, tmp_path_factory, "limited", secured.limited)
    yield Studio(driver, secured.url)
    driver.quit()


def test_the_admin_certificate_uses_every_page_over_https(secured, admin_studio):
    studio = admin_studio
    assert secured.url.startswith("https://127.0.0.1:")
    studio.open()
    studio.page("databases")
    studio.element(f'#databases-table tr[data-database="{secured.database}"]')
    studio.element(f'#databases-table tr[data-database="{secured.other_database}"]')
    studio.screenshot("https_databases_admin")

    # A document made in the editor is stored on the server.
    studio.use_database(secured.database)
    studio.go("#/document?collection=Users")
    studio.page("document")
    type_into(studio.element("#document-id"), "users/https-1")
    type_into(studio.element("#document-json"), '{"Name": "Over TLS"}')
    studio.element("#save-document").click()
    studio.text_appears("h1", "Document users/https-1")
    stored = secured.http.get(f"{secured.url}/databases/{secured.database}/docs", params={"id": "users/https-1"}, timeout=10)
    assert stored.json()["Results"][0]["Name"] == "Over TLS"
    studio.screenshot("https_document_admin")

    studio.go("#/query")
    studio.page("query")
    editor = studio.element("#rql-editor")
    type_into(editor, "from Users where Name = 'Over TLS'")
    editor.send_keys(Keys.CONTROL, Keys.ENTER)
    studio.text_appears("#query-summary", "of 1 results")
    assert "users/https-1" in studio.element("#query-table").text
    studio.screenshot("https_query_admin")

    studio.go("#/dashboard")
    studio.page("dashboard")
    studio.text_appears("#dashboard-status", "Updated")
    studio.screenshot("https_dashboard_admin")
    assert studio.console_errors() == []


def test_a_certificate_for_one_database_sees_that_database_and_is_told_what_it_may_not_do(secured, limited_studio):
    studio = limited_studio
    studio.open()
    studio.page("databases")
    studio.element(f'#databases-table tr[data-database="{secured.database}"]')
    names = [row.get_attribute("data-database") for row in studio.driver.find_elements(By.CSS_SELECTOR, "#databases-table tr[data-database]")]
    assert names == [secured.database]
    assert [o.get_attribute("value") for o in studio.driver.find_elements(By.CSS_SELECTOR, "#database-picker option")] == [secured.database]
    studio.screenshot("https_databases_limited")
    # Creating a database needs the Operator clearance: the refusal is shown, nothing is created.
    type_into(studio.element("#new-database-name"), "not_mine")
    studio.element("#create-database").click()
    studio.text_appears("#messages", "Could not create not_mine: Forbidden")
    assert "not_mine" not in secured.http.get(f"{secured.url}/databases", params={"namesOnly": "true"}).text

    # Its own database works: documents are listed and a query runs.
    secured.http.put(f"{secured.url}/databases/{secured.database}/docs", params={"id": "notes/1"},
                     json={"Text": "mine", "@metadata": {"@collection": "Notes"}}).raise_for_status()
    studio.go("#/documents?collection=Notes")
    studio.page("documents")
    studio.element('#documents-list .row[aria-rowindex="1"]')
    studio.screenshot("https_documents_limited")
    # The other pages of its database load (ReadWrite reads indexes and exports); none says it failed.
    for page in ("query", "indexes", "tasks"):
        studio.go(f"#/{page}")
        studio.page(page)
        assert "Could not load" not in studio.element("main").text and not studio.driver.find_elements(By.ID, "not-allowed")

    # The dashboard is for operators: a clear refusal, with the heading, no polling and no broken page.
    studio.go("#/dashboard")
    studio.page("dashboard")
    studio.text_appears("#not-allowed", "Not allowed")
    assert studio.element("h1").text == "Server dashboard"
    assert "Operator clearance" in studio.element("main").text
    studio.screenshot("https_dashboard_limited")
    # The refusal is as readable and as structured as any page.
    assert studio.driver.execute_script(CONTRAST_FAILURES) == []
    assert studio.driver.execute_script(LANDMARKS) == {"h1": ["Server dashboard"], "main": 1}
    errors = studio.console_errors(expected=("403",))
    assert errors == []


def test_without_a_certificate_the_server_refuses(secured, anonymous_browser):
    """A browser with no certificate gets the server's 403 (TLS succeeds: the certificate is asked for, not
    required, so the refusal can say why), shown by the browser as the error JSON."""
    anonymous_browser.get(f"{secured.url}/studio/")
    body = anonymous_browser.find_element(By.TAG_NAME, "body").text
    assert "requires client certificate" in body, body
    assert "AuthorizationException" in body
    Studio(anonymous_browser, secured.url).screenshot("https_no_certificate")
