"""Headless Chromium presenting a client certificate without a prompt, for the Studio-over-HTTPS tests.

Chromium on Linux reads certificates and trust from the NSS database in `$HOME/.pki/nssdb`, so every browser
gets a throwaway HOME holding one client certificate (imported as PKCS#12 with `pk12util`) and the test CA
trusted for servers (`certutil -A -t "C,,"`): the server's certificate is verified for real, no
`--ignore-certificate-errors`. Chromium asks the user which certificate to send unless the managed policy
`AutoSelectCertificateForUrls` names one: a policy is only read from /etc/chromium/policies/managed/, so
writing it needs root (scripts/test.sh installs it, with sudo when not root; the tests write it when they run
as root, as in CI, and skip saying why otherwise). It selects by issuer name, so it applies to the tests' CA
alone. (Verified with Debian's chromium 156, headless: without the policy the page load waits on the
certificate prompt no one can answer and times out.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from security_certificates import CertificateAuthority, Issued
from studio_browser import chromium_binaries

POLICY_DIRECTORY = Path("/etc/chromium/policies/managed")
POLICY_FILE = POLICY_DIRECTORY / "corvid-studio-tests.json"
# Issuer name of the certificates the policy lets Chromium send: nothing but the tests' own CA matches it.
STUDIO_TEST_CA = "Corvid Studio Test CA"


def policy_text() -> str:
    """The policy file: send a certificate issued by the tests' CA to https://127.0.0.1 on any port."""
    rule = {"pattern": "https://127.0.0.1:*", "filter": {"ISSUER": {"CN": STUDIO_TEST_CA}}}
    return json.dumps({"AutoSelectCertificateForUrls": [json.dumps(rule)]})


def _policy_installed() -> bool:
    try:
        return POLICY_FILE.read_text() == policy_text()
    except OSError:
        return False


def why_no_client_certificates() -> str | None:
    """Why the browser cannot be given a client certificate here, or None when it can."""
    for tool in ("certutil", "pk12util"):
        if not shutil.which(tool):
            return f"{tool} is missing: install Debian's libnss3-tools (scripts/test.sh does it)"
    if not _policy_installed() and os.geteuid() != 0 and not os.access(POLICY_DIRECTORY, os.W_OK):
        return (f"Chromium's managed policy {POLICY_FILE} is not installed and writing it needs root "
                "(scripts/test.sh installs it with sudo; CI runs as root)")
    return None


@contextmanager
def auto_select_policy():
    """Makes sure the policy is in place while the tests run: one installed beforehand (scripts/test.sh)
    stays, one written here is removed afterwards."""
    if _policy_installed():
        yield
        return
    POLICY_DIRECTORY.mkdir(parents=True, exist_ok=True)
    POLICY_FILE.write_text(policy_text())
    try:
        yield
    finally:
        POLICY_FILE.unlink(missing_ok=True)


def certificate_home(directory: Path, ca: CertificateAuthority, client: Issued | None) -> Path:
    """A HOME whose NSS database trusts `ca` for servers and holds `client` (with its key), if any."""
    nssdb = directory / ".pki" / "nssdb"
    nssdb.mkdir(parents=True, exist_ok=True)
    database = f"sql:{nssdb}"
    run = lambda *args: subprocess.run(args, check=True, capture_output=True, timeout=60)
    run("certutil", "-N", "-d", database, "--empty-password")
    run("certutil", "-A", "-d", database, "-n", STUDIO_TEST_CA, "-t", "C,,", "-i", str(ca.pem_path))
    if client is not None:
        p12 = directory / "client.p12"
        p12.write_bytes(pkcs12.serialize_key_and_certificates(
            client.certificate.subject.rfc4514_string().encode(), client.key, client.certificate, None,
            serialization.NoEncryption()))
        run("pk12util", "-i", str(p12), "-d", database, "-W", "")
    return directory


def start_browser_with_home(home: Path) -> webdriver.Chrome:
    """Headless Chromium (same flags as studio_browser.start_browser) reading its certificates from `home`."""
    browser, driver = chromium_binaries()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1400,900",
                f"--user-data-dir={home / 'profile'}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(driver, env={**os.environ, "HOME": str(home)})
    chrome = webdriver.Chrome(options=options, service=service)
    chrome.set_page_load_timeout(30)
    return chrome
