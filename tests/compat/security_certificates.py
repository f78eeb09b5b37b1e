"""Certificates for the security tests, made with the `cryptography` package: a CA, a server certificate for
127.0.0.1 signed by it, and client certificates (CA-signed, self-signed, expired), written as the files the
server and the Python client read (PFX, PEM with key, CA PEM)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass
class Issued:
    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    pem_path: Path  # certificate then key, what DocumentStore.certificate_pem_path reads

    @property
    def thumbprint(self) -> str:
        return self.certificate.fingerprint(hashes.SHA1()).hex().upper()

    @property
    def public_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _build(subject: str, key, issuer_name: x509.Name, issuer_key, not_before, not_after, *, ca=False, server=False, client_too=False):
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        usages = [ExtendedKeyUsageOID.SERVER_AUTH] + ([ExtendedKeyUsageOID.CLIENT_AUTH] if client_too else [])
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    elif not ca:
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


class CertificateAuthority:
    def __init__(self, directory: Path, name: str = "Corvid Test CA"):
        self.directory = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        self.certificate = _build(name, self.key, _name(name), self.key, now - datetime.timedelta(days=1), now + datetime.timedelta(days=365), ca=True)
        self.pem_path = directory / f"{name.replace(' ', '_')}.pem"
        self.pem_path.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))

    def issue(self, subject: str, *, server=False, client_too=False, days=30, expired=False, self_signed=False) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        not_before, not_after = now - datetime.timedelta(days=1), now + datetime.timedelta(days=days)
        if expired:
            not_before, not_after = now - datetime.timedelta(days=30), now - datetime.timedelta(days=1)
        issuer_name, issuer_key = (_name(subject), key) if self_signed else (self.certificate.subject, self.key)
        certificate = _build(subject, key, issuer_name, issuer_key, not_before, not_after, server=server, client_too=client_too)
        pem_path = self.directory / f"{subject}.pem"
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        pem_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM) + key_pem)
        return Issued(certificate, key, pem_path)

    def write_pfx(self, issued: Issued, password: str) -> Path:
        path = self.directory / f"{issued.certificate.subject.rfc4514_string().replace('=', '_')}.pfx"
        data = pkcs12.serialize_key_and_certificates(
            b"server", issued.key, issued.certificate, [self.certificate], serialization.BestAvailableEncryption(password.encode())
        )
        path.write_bytes(data)
        return path
