"""Replacing the server's certificate without a restart: through RavenDB's operation
(`ReplaceClusterCertificateOperation`, sent by the official Python client) and by writing the file (the
watch). New handshakes show the new certificate, open connections keep working, a bad certificate changes
nothing, and a restart serves the replaced one (it was written over the configured file)."""

from __future__ import annotations

import os
import socket
import ssl
import time

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from ravendb import DocumentStore
from ravendb.serverwide.operations.certificates import ReplaceClusterCertificateOperation

from corvid_support import User
from security_certificates import CertificateAuthority

PFX_PASSWORD = "configured-secret"


@pytest.fixture(autouse=True)
def own_trust_stores():
    """REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE would override the client's `trust_store_path`."""
    saved = {name: os.environ.pop(name) for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE") if name in os.environ}
    yield
    os.environ.update(saved)


def pfx_bytes(ca, issued, password: str) -> bytes:
    encryption = serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption()
    return pkcs12.serialize_key_and_certificates(b"server", issued.key, issued.certificate, [ca.certificate], encryption)


def served_certificate(url: str) -> x509.Certificate:
    """The certificate a new handshake shows."""
    host, port = url.removeprefix("https://").split(":")
    return x509.load_pem_x509_certificate(ssl.get_server_certificate((host, int(port))).encode())


class Setup:
    def __init__(self, server_factory, directory):
        self.ca = CertificateAuthority(directory)
        self.first = self.ca.issue("first-server", server=True)
        self.pfx_path = directory / "server.pfx"
        self.pfx_path.write_bytes(pfx_bytes(self.ca, self.first, PFX_PASSWORD))
        self.admin = self.ca.issue("replacing-admin")
        self.server = server_factory(
            extra_args=[
                "--url", "https://127.0.0.1:0",
                "--certificate-path", str(self.pfx_path),
                "--certificate-password", PFX_PASSWORD,
                "--well-known-admin-certificates", self.admin.thumbprint,
            ]
        )

    @property
    def url(self) -> str:
        return self.server.url

    def store(self, database=None) -> DocumentStore:
        store = DocumentStore([self.url], database)
        store.certificate_pem_path = str(self.admin.pem_path)
        store.trust_store_path = str(self.ca.pem_path)
        return store.initialize()

    def metrics(self) -> dict:
        return requests.get(f"{self.url}/admin/metrics", verify=str(self.ca.pem_path), cert=str(self.admin.pem_path), timeout=10).json()["Security"]

    def open_tls_connection(self) -> ssl.SSLSocket:
        context = ssl.create_default_context(cafile=str(self.ca.pem_path))
        context.load_cert_chain(str(self.admin.pem_path))
        host, port = self.url.removeprefix("https://").split(":")
        return context.wrap_socket(socket.create_connection((host, int(port)), timeout=10), server_hostname=host)


def get_version(tls: ssl.SSLSocket) -> bytes:
    """One keep-alive request on an open connection; the status line."""
    tls.sendall(b"GET /build/version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    return tls.recv(65536).split(b"\r\n", 1)[0]


def test_replace_through_the_client_operation(server_factory, tmp_path):
    s = Setup(server_factory, tmp_path)
    assert served_certificate(s.url).serial_number == s.first.certificate.serial_number
    before = s.open_tls_connection()
    assert get_version(before) == b"HTTP/1.1 200 OK"

    renewed = s.ca.issue("renewed-server", server=True)
    with s.store() as store:
        # The client sends the PFX without a password; the server writes it under its configured one.
        store.maintenance.server.send(ReplaceClusterCertificateOperation(pfx_bytes(s.ca, renewed, ""), True))
        assert served_certificate(s.url).serial_number == renewed.certificate.serial_number
        assert s.metrics()["ServerCertificate"] == renewed.thumbprint

        # The connection opened before keeps its certificate and keeps being served.
        assert x509.load_der_x509_certificate(before.getpeercert(binary_form=True)).serial_number == s.first.certificate.serial_number
        assert get_version(before) == b"HTTP/1.1 200 OK"
        before.close()

        # A certificate that cannot be loaded is refused and changes nothing.
        with pytest.raises(Exception, match="Unable to load the provided certificate"):
            store.maintenance.server.send(ReplaceClusterCertificateOperation(bytes([1, 2, 3, 4]), True))
        assert served_certificate(s.url).serial_number == renewed.certificate.serial_number

    # The client keeps working over new connections with the new certificate (same CA).
    with s.store() as store:
        from ravendb.serverwide.database_record import DatabaseRecord
        from ravendb.serverwide.operations.common import CreateDatabaseOperation

        store.maintenance.server.send(CreateDatabaseOperation(DatabaseRecord("replaced")))
    db_store = s.store("replaced")
    with db_store.open_session() as session:
        session.store(User(name="after"), "users/1")
        session.save_changes()
    db_store.close()

    # Written over the configured file (under its password): a restart serves the replaced certificate.
    s.server.restart()
    assert served_certificate(s.url).serial_number == renewed.certificate.serial_number


def test_the_file_watch_keeps_the_old_certificate_when_the_new_file_is_bad(server_factory, tmp_path):
    s = Setup(server_factory, tmp_path)
    failures = s.metrics()["CertificateReloadFailures"]
    s.pfx_path.write_bytes(b"not a certificate at all")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and s.metrics()["CertificateReloadFailures"] == failures:
        time.sleep(0.5)
    assert s.metrics()["CertificateReloadFailures"] > failures
    assert served_certificate(s.url).serial_number == s.first.certificate.serial_number
    assert "could not reload the server certificate" in s.server.log_text()

    renewed = s.ca.issue("watched-server", server=True)
    s.pfx_path.write_bytes(pfx_bytes(s.ca, renewed, PFX_PASSWORD))
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and served_certificate(s.url).serial_number != renewed.certificate.serial_number:
        time.sleep(0.5)
    assert served_certificate(s.url).serial_number == renewed.certificate.serial_number
    assert s.metrics()["ServerCertificate"] == renewed.thumbprint


def test_the_replacing_certificate_is_the_servers_cluster_admin_at_once(server_factory, tmp_path):
    s = Setup(server_factory, tmp_path)
    # A node certificate usable both ways, as RavenDB's are: the server's own certificate is a cluster admin.
    renewed = s.ca.issue("renewed-node", server=True, client_too=True)
    with s.store() as store:
        store.maintenance.server.send(ReplaceClusterCertificateOperation(pfx_bytes(s.ca, renewed, ""), True))
    r = requests.get(f"{s.url}/certificates/whoami", verify=str(s.ca.pem_path), cert=str(renewed.pem_path), timeout=10)
    assert r.status_code == 200, r.text
    assert (r.json()["SecurityClearance"], r.json()["Thumbprint"]) == ("ClusterAdmin", renewed.thumbprint)
