"""Bad input at the TLS edge that test_security.py does not cover: a client certificate signed by a CA the
server has never heard of, a client presenting a huge certificate chain, and many garbage handshakes at once.
Each gets a clear refusal and the server keeps serving everyone else."""

from __future__ import annotations

import os
import socket
import threading

import pytest
import requests
from cryptography.hazmat.primitives.serialization import Encoding

from security_certificates import CertificateAuthority


@pytest.fixture(autouse=True)
def own_trust_stores():
    """REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE would override the session's `verify`."""
    saved = {name: os.environ.pop(name) for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE") if name in os.environ}
    yield
    os.environ.update(saved)


@pytest.fixture
def secured(server_factory, tmp_path):
    ca = CertificateAuthority(tmp_path)
    server_certificate = ca.issue("bad-input-server", server=True)
    admin = ca.issue("bad-input-admin")
    srv = server_factory(
        extra_args=["--url", "https://127.0.0.1:0", "--certificate-path", str(server_certificate.pem_path), "--well-known-admin-certificates", admin.thumbprint]
    )
    return srv, ca, admin


def still_serving(srv, ca, admin):
    r = requests.get(f"{srv.url}/certificates/whoami", verify=str(ca.pem_path), cert=str(admin.pem_path), timeout=10)
    assert r.status_code == 200 and r.json()["SecurityClearance"] == "ClusterAdmin", r.text


def test_a_client_certificate_from_an_unknown_ca(secured, tmp_path):
    srv, ca, admin = secured
    other = CertificateAuthority(tmp_path, name="Unknown CA")
    stranger = other.issue("signed-by-a-stranger")
    r = requests.get(f"{srv.url}/databases", verify=str(ca.pem_path), cert=str(stranger.pem_path), timeout=10)
    assert r.status_code == 403, r.text
    assert r.json()["Type"] == "Raven.Client.Exceptions.Security.AuthorizationException"
    assert "unknown to the server" in r.json()["Message"]
    still_serving(srv, ca, admin)


def test_a_huge_client_certificate_chain(secured, tmp_path):
    srv, ca, admin = secured
    user = ca.issue("long-chain")
    # The leaf, its key, then the CA certificate 2,000 times (about 1 MB): far beyond any real chain.
    huge = tmp_path / "huge-chain.pem"
    huge.write_bytes(user.pem_path.read_bytes() + ca.certificate.public_bytes(Encoding.PEM) * 2000)
    with pytest.raises((requests.exceptions.SSLError, requests.exceptions.ConnectionError)):
        requests.get(f"{srv.url}/databases", verify=str(ca.pem_path), cert=str(huge), timeout=30)
    still_serving(srv, ca, admin)


def test_many_garbage_handshakes_at_once(secured):
    srv, ca, admin = secured
    host, port = srv.url.removeprefix("https://").split(":")
    errors = []

    def garbage(i):
        try:
            with socket.create_connection((host, int(port)), timeout=10) as s:
                # Half start like a TLS record, half do not (the plain-HTTP path).
                s.sendall((b"\x16\x03\x03\xff\xff" if i % 2 else b"\x00\x01") + os.urandom(4096))
                s.settimeout(10)
                try:
                    while s.recv(4096):
                        pass
                except (ConnectionResetError, socket.timeout):
                    pass
        except OSError as e:  # a refused connection would be a failure of the server
            errors.append(e)

    threads = [threading.Thread(target=garbage, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    # Served while the garbage arrives.
    still_serving(srv, ca, admin)
    for t in threads:
        t.join()
    assert not errors, errors
    still_serving(srv, ca, admin)
