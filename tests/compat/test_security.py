"""A secured server: HTTPS with the server's certificate, clients authenticated by their certificates and
RavenDB's clearances, the certificate endpoints, TLS on the TCP listener, and bad input at the TLS edge. Driven
by the official Python client (`certificate_pem_path`, `trust_store_path`)."""

from __future__ import annotations

import base64
import io
import os
import socket
import ssl
import threading
import time
import zipfile

import pytest
import requests
from ravendb import DocumentStore
from ravendb.exceptions.exceptions import AuthorizationException
from ravendb.documents.indexes.definitions import IndexDefinition
from ravendb.documents.operations.indexes import PutIndexesOperation
from ravendb.serverwide.database_record import DatabaseRecord
from ravendb.serverwide.operations.certificates import (
    CreateClientCertificateOperation,
    DatabaseAccess,
    DeleteCertificateOperation,
    EditClientCertificateOperation,
    GetCertificateOperation,
    GetCertificatesOperation,
    PutClientCertificateOperation,
    SecurityClearance,
)
from ravendb.serverwide.operations.common import CreateDatabaseOperation

from corvid_support import CorvidServer, User, unique_db_name
from security_certificates import CertificateAuthority

PFX_PASSWORD = "pfx-secret"


class Secured:
    """The secured server and the certificates of the tests."""

    def __init__(self, directory):
        self.ca = CertificateAuthority(directory)
        self.server_certificate = self.ca.issue("corvid-server", server=True)
        self.pfx = self.ca.write_pfx(self.server_certificate, PFX_PASSWORD)
        self.admin = self.ca.issue("admin")
        self.server = CorvidServer(
            directory / "data",
            log_path=directory / "server.log",
            extra_args=[
                "--url", "https://127.0.0.1:0",
                "--certificate-path", str(self.pfx),
                "--certificate-password", PFX_PASSWORD,
                "--well-known-admin-certificates", self.admin.thumbprint,
                "--audit-log-folder", str(directory / "audit"),
            ],
        )
        self.url = self.server.start()
        self.audit_log = directory / "audit" / "audit.log"

    def store(self, certificate, database=None) -> DocumentStore:
        store = DocumentStore([self.url], database)
        if certificate:
            store.certificate_pem_path = str(certificate.pem_path)
        store.trust_store_path = str(self.ca.pem_path)
        store.initialize()
        return store

    def create_database(self) -> str:
        name = unique_db_name("sec")
        with self.store(self.admin) as admin:
            admin.maintenance.server.send(CreateDatabaseOperation(DatabaseRecord(name)))
        return name

    def register(self, certificate, clearance, permissions=None, name=None) -> None:
        with self.store(self.admin) as admin:
            admin.maintenance.server.send(
                PutClientCertificateOperation(
                    name or certificate.certificate.subject.rfc4514_string(),
                    base64.b64encode(certificate.public_pem).decode(),
                    permissions or {},
                    clearance,
                )
            )

    def raw(self, certificate=None) -> requests.Session:
        session = requests.Session()
        session.verify = str(self.ca.pem_path)
        if certificate:
            session.cert = str(certificate.pem_path)
        return session


@pytest.fixture(scope="module", autouse=True)
def own_trust_stores():
    """requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE override a session's `verify` (the client's
    `trust_store_path`): without them, the tests' CA is the one trusted."""
    saved = {name: os.environ.pop(name) for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE") if name in os.environ}
    yield
    os.environ.update(saved)


@pytest.fixture(scope="module")
def secured(tmp_path_factory, own_trust_stores):
    s = Secured(tmp_path_factory.mktemp("secured"))
    yield s
    s.server.stop()


def test_whoami_and_the_well_known_admin(secured):
    r = secured.raw(secured.admin).get(f"{secured.url}/certificates/whoami")
    assert r.status_code == 200, r.text
    assert r.json()["SecurityClearance"] == "ClusterAdmin"
    assert r.json()["Thumbprint"] == secured.admin.thumbprint


def test_a_read_write_user_works_on_its_database_only(secured):
    db, other = secured.create_database(), secured.create_database()
    user = secured.ca.issue("writer")
    secured.register(user, SecurityClearance.VALID_USER, {db: DatabaseAccess.READ_WRITE})
    with secured.store(user, db) as store:
        with store.open_session() as session:
            session.store(User("alice", 30), "users/1")
            session.save_changes()
        with store.open_session() as session:
            assert session.load("users/1", User).name == "alice"
            assert [u.name for u in session.query(object_type=User).where_equals("name", "alice")] == ["alice"]
        with store.open_session() as session:
            session.delete("users/1")
            session.save_changes()
    with secured.store(user, other) as store:
        with pytest.raises(AuthorizationException):
            with store.open_session() as session:
                session.load("users/1", User)
    whoami = secured.raw(user).get(f"{secured.url}/certificates/whoami").json()
    assert whoami["SecurityClearance"] == "ValidUser" and whoami["Permissions"] == {db: "ReadWrite"}
    # The database list shows the databases the certificate may read (RavenDB filters it the same way).
    listed = [d["Name"] for d in secured.raw(user).get(f"{secured.url}/databases").json()["Databases"]]
    assert listed == [db], listed
    assert other in [d["Name"] for d in secured.raw(secured.admin).get(f"{secured.url}/databases").json()["Databases"]]


def test_a_read_only_user_cannot_write_or_define_indexes(secured):
    db = secured.create_database()
    with secured.store(secured.admin, db) as admin, admin.open_session() as session:
        session.store(User("bob", 40), "users/1")
        session.save_changes()
    reader = secured.ca.issue("reader")
    secured.register(reader, SecurityClearance.VALID_USER, {db: DatabaseAccess.READ})
    with secured.store(reader, db) as store:
        with store.open_session() as session:
            assert session.load("users/1", User).name == "bob"
            assert len(list(session.query(object_type=User))) == 1
        with pytest.raises(AuthorizationException):
            with store.open_session() as session:
                session.store(User("eve"), "users/2")
                session.save_changes()
        index = IndexDefinition(name="Users/ByName", maps={"from u in docs.Users select new { u.name }"})
        with pytest.raises(AuthorizationException):
            store.maintenance.send(PutIndexesOperation(index))
    # A write hidden in a multi_get sub-request is checked again.
    r = secured.raw(reader).post(
        f"{secured.url}/databases/{db}/multi_get",
        json={"Requests": [{"Url": f"/databases/{db}/bulk_docs", "Method": "POST", "Content": {"Commands": []}}]},
    )
    assert r.status_code == 200 and r.json()["Results"][0]["StatusCode"] == 403, r.text


def test_an_operator_cannot_manage_cluster_admins(secured):
    operator = secured.ca.issue("operator")
    secured.register(operator, SecurityClearance.OPERATOR)
    newcomer = secured.ca.issue("would-be-admin")
    with secured.store(operator) as store:
        # (The client fails to build its message for a server-level 403, so the answer is read raw too.)
        with pytest.raises(Exception):
            store.maintenance.server.send(
                PutClientCertificateOperation("x", base64.b64encode(newcomer.public_pem).decode(), {}, SecurityClearance.CLUSTER_ADMIN)
            )
        body = {"Name": "x", "Certificate": base64.b64encode(newcomer.public_pem).decode(), "SecurityClearance": "ClusterAdmin"}
        r = secured.raw(operator).put(f"{secured.url}/admin/certificates", json=body)
        assert r.status_code == 403 and "ClusterAdmin" in r.json()["Message"], r.text
        assert r.json()["Type"] == "Raven.Client.Exceptions.Security.AuthorizationException"
        # Below cluster admin, an operator manages certificates.
        store.maintenance.server.send(
            PutClientCertificateOperation("user", base64.b64encode(newcomer.public_pem).decode(), {}, SecurityClearance.VALID_USER)
        )
        store.maintenance.server.send(DeleteCertificateOperation(newcomer.thumbprint))
        # And creates databases.
        store.maintenance.server.send(CreateDatabaseOperation(DatabaseRecord(unique_db_name("op"))))


def test_unknown_expired_and_missing_certificates_are_refused(secured):
    db = secured.create_database()
    strangers = {
        "unregistered": secured.ca.issue("stranger"),
        "unknown CA": secured.ca.issue("self-signed", self_signed=True),
    }
    for why, certificate in strangers.items():
        r = secured.raw(certificate).get(f"{secured.url}/databases/{db}/stats")
        assert r.status_code == 403, (why, r.text)
        assert r.json()["Type"] == "Raven.Client.Exceptions.Security.AuthorizationException"
        assert "unknown to the server" in r.json()["Message"]
    expired = secured.ca.issue("expired", expired=True)
    secured.register(expired, SecurityClearance.CLUSTER_ADMIN)
    r = secured.raw(expired).get(f"{secured.url}/databases/{db}/stats")
    assert r.status_code == 403 and "not valid now" in r.json()["Message"], r.text
    r = secured.raw(None).get(f"{secured.url}/databases/{db}/stats")
    assert r.status_code == 403 and "requires client certificate" in r.json()["Message"], r.text
    with secured.store(None, db) as store:
        with pytest.raises(AuthorizationException):
            with store.open_session() as session:
                session.load("users/1")
    # Anyone may ask the version.
    assert secured.raw(None).get(f"{secured.url}/build/version").status_code == 200


def test_generated_certificates_crud_and_restart(secured):
    db = secured.create_database()
    with secured.store(secured.admin) as admin:
        raw = admin.maintenance.server.send(CreateClientCertificateOperation("generated", {db: DatabaseAccess.READ_WRITE}, SecurityClearance.VALID_USER))
        with zipfile.ZipFile(io.BytesIO(raw.raw_data)) as z:
            names = z.namelist()
            crt = z.read(next(n for n in names if n.endswith(".crt")))
            key = z.read(next(n for n in names if n.endswith(".key")))
            assert any(n.endswith(".pfx") for n in names), names
        pem = secured.ca.directory / "generated.pem"
        pem.write_bytes(key + crt)
        definitions = admin.maintenance.server.send(GetCertificatesOperation(0, 100))
        generated = next(d for d in definitions if d.name == "generated")
        assert generated.permissions == {db: DatabaseAccess.READ_WRITE}
    with DocumentStore([secured.url], db) as store:
        store.certificate_pem_path = str(pem)
        store.trust_store_path = str(secured.ca.pem_path)
        store.initialize()
        with store.open_session() as session:
            session.store(User("gen"), "users/gen")
            session.save_changes()
    # Registrations are in the catalog: they survive a restart.
    secured.url = secured.server.restart()
    with secured.store(secured.admin) as admin:
        definition = admin.maintenance.server.send(GetCertificateOperation(generated.thumbprint))
        assert definition.name == "generated"
        parameters = EditClientCertificateOperation.Parameters(generated.thumbprint, {}, "renamed", SecurityClearance.VALID_USER)
        admin.maintenance.server.send(EditClientCertificateOperation(parameters))
        assert admin.maintenance.server.send(GetCertificateOperation(generated.thumbprint)).name == "renamed"
        admin.maintenance.server.send(DeleteCertificateOperation(generated.thumbprint))
        assert admin.maintenance.server.send(GetCertificateOperation(generated.thumbprint)) is None


def test_subscriptions_over_tls(secured):
    db = secured.create_database()
    with secured.store(secured.admin, db) as store:
        with store.open_session() as session:
            for i in range(3):
                session.store(User(f"u{i}"), f"users/{i}")
            session.save_changes()
        name = store.subscriptions.create_for_class(User)
        seen, done = [], threading.Event()

        def batch(b):
            seen.extend(item.key for item in b.items)
            if len(seen) >= 3:
                done.set()

        with store.subscriptions.get_subscription_worker_by_name(name, User) as worker:
            worker.run(batch)
            assert done.wait(30), seen
    assert sorted(seen) == ["users/0", "users/1", "users/2"]


def test_bad_input_at_the_tls_edge(secured):
    host, port = secured.url.removeprefix("https://").split(":")
    # Plain HTTP on the HTTPS port: a clear answer, then the connection closes.
    r = requests.get(f"http://{host}:{port}/build/version", timeout=10)
    assert r.status_code == 400 and "only accepts HTTPS" in r.json()["Message"], r.text
    # Garbage that starts like a handshake, and a connection that never speaks.
    with socket.create_connection((host, int(port)), timeout=10) as garbage:
        garbage.sendall(b"\x16\x03\x01\x00\x05hello" + bytes(range(256)) * 20)
        garbage.settimeout(10)
        try:
            while garbage.recv(4096):
                pass
        except (ConnectionResetError, socket.timeout):
            pass
    silent = socket.create_connection((host, int(port)), timeout=10)
    # A client that trusts another CA gives up (the server's certificate is not one it trusts).
    other_ca = CertificateAuthority(secured.ca.directory, name="Other CA")
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"{secured.url}/build/version", verify=str(other_ca.pem_path), timeout=10)
    # TLS 1.1 is refused.
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    context.minimum_version = context.maximum_version = ssl.TLSVersion.TLSv1_1
    with pytest.raises((ssl.SSLError, ConnectionResetError, OSError)):
        with socket.create_connection((host, int(port)), timeout=10) as s, context.wrap_socket(s) as tls:
            tls.sendall(b"GET /build/version HTTP/1.1\r\nHost: x\r\n\r\n")
            tls.recv(10)
    # The server keeps serving everyone else.
    assert secured.raw(secured.admin).get(f"{secured.url}/build/version").status_code == 200
    silent.close()


def test_concurrent_registration_and_deletion(secured):
    certificate = secured.ca.issue("contended")
    errors = []

    def churn(i):
        try:
            with secured.raw(secured.admin) as http:
                for _ in range(10):
                    body = {"Name": f"c{i}", "Certificate": base64.b64encode(certificate.public_pem).decode(), "SecurityClearance": "ValidUser", "Permissions": {}}
                    r = http.put(f"{secured.url}/admin/certificates", json=body)
                    assert r.status_code == 201, r.text
                    r = http.delete(f"{secured.url}/admin/certificates?thumbprint={certificate.thumbprint}")
                    assert r.status_code == 204, r.text
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=churn, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    with secured.raw(secured.admin) as http:
        listed = http.get(f"{secured.url}/admin/certificates").json()["Results"]
        assert certificate.thumbprint not in [c["Thumbprint"] for c in listed]


def test_a_pem_certificate_and_http_refused(server_factory, tmp_path):
    ca = CertificateAuthority(tmp_path)
    server_certificate = ca.issue("pem-server", server=True)
    admin = ca.issue("pem-admin")
    srv = server_factory(extra_args=["--url", "https://127.0.0.1:0", "--certificate-path", str(server_certificate.pem_path), "--well-known-admin-certificates", admin.thumbprint])
    r = requests.get(f"{srv.url}/certificates/whoami", verify=str(ca.pem_path), cert=str(admin.pem_path), timeout=10)
    assert r.status_code == 200 and r.json()["SecurityClearance"] == "ClusterAdmin", r.text
    # A renewed certificate written over the file is served without a restart (the operation; the file watch
    # does the same by itself).
    host, port = srv.url.removeprefix("https://").split(":")
    renewed = ca.issue("pem-server-renewed", server=True)
    server_certificate.pem_path.write_bytes(renewed.pem_path.read_bytes())
    r = requests.post(f"{srv.url}/admin/certificates/reload", verify=str(ca.pem_path), cert=str(admin.pem_path), timeout=10)
    assert r.status_code == 200 and r.json()["Thumbprint"] == renewed.thumbprint, r.text
    served = ssl.get_server_certificate((host, int(port)))
    assert ssl.PEM_cert_to_DER_cert(served) == ssl.PEM_cert_to_DER_cert(renewed.public_pem.decode())
    metrics = requests.get(f"{srv.url}/admin/metrics", verify=str(ca.pem_path), cert=str(admin.pem_path), timeout=10).json()
    assert metrics["Security"]["CertificateReloads"] >= 1 and metrics["Security"]["ServerCertificate"] == renewed.thumbprint
    # A certificate with an http:// URL would serve its clients in plain text: refused at start.
    bad = server_factory(extra_args=["--certificate-path", str(server_certificate.pem_path)], start=False)
    with pytest.raises(RuntimeError, match="https://"):
        bad.start()


def test_unsecured_access_rules(server_factory):
    srv = server_factory(extra_args=["--unsecured-access-allowed", "None"])
    r = requests.get(f"{srv.url}/databases", timeout=10)
    assert r.status_code == 403, r.text
    assert "Security.UnsecuredAccessAllowed" in r.json()["Message"]
    wide = server_factory(extra_args=["--url", "http://0.0.0.0:0"])
    assert "Security.UnsecuredAccessAllowed" in wide.log_text()
    assert "Listening on: 0.0.0.0:" in wide.log_text()


def test_the_audit_log(secured):
    db = secured.create_database()
    user = secured.ca.issue("audited")
    secured.register(user, SecurityClearance.VALID_USER, {db: DatabaseAccess.ADMIN})
    with secured.store(user, db) as store:
        store.maintenance.send(PutIndexesOperation(IndexDefinition(name="Users/ByName", maps={"from u in docs.Users select new { u.name }"})))

    def lines():
        return secured.audit_log.read_text().splitlines() if secured.audit_log.exists() else []

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not any("/admin/indexes" in line for line in lines()):
        time.sleep(0.1)
    text = "\n".join(lines())
    assert f"{secured.admin.thumbprint} " in text and "PUT /admin/databases" in text, text[-2000:]
    assert "PUT /admin/certificates" in text
    assert f"{user.thumbprint} " in text and "HTTPS connection from 127.0.0.1" in text
    assert any(line.startswith(tuple("0123456789")) and user.thumbprint in line and "/admin/indexes" in line and "-> 20" in line for line in lines()), text[-2000:]
