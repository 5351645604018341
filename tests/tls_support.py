"""Certificates for the SSL tests, made at test time (never checked in), and an
SSL broker around them.

:func:`make_pki` writes, into a directory: a CA (``ca.pem``), a server key and
certificate for 127.0.0.1 and localhost signed by it (``server.pem``: key and
chain in one file, as ``ssl.keystore.location`` takes), a client certificate
signed by it (``client.pem`` / ``client.key``), and a second, untrusted CA with
a client certificate of its own (``rogue-client.pem`` / ``rogue-client.key``).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
from dataclasses import dataclass

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support import LOOPBACK, RawClient

CLIENT_DN = "CN=client,OU=tests,O=kafka-net"


@dataclass(frozen=True)
class Pki:
    directory: str

    def path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    @property
    def ca(self) -> str:
        return self.path("ca.pem")

    @property
    def server(self) -> str:
        return self.path("server.pem")

    def client_context(self, client_cert: str | None = None) -> ssl.SSLContext:
        """A client SSLContext trusting our CA; ``client_cert``: "client" or
        "rogue-client" to present that certificate."""
        context = ssl.create_default_context(cafile=self.ca)
        if client_cert:
            context.load_cert_chain(self.path(f"{client_cert}.pem"),
                                    self.path(f"{client_cert}.key"))
        return context

    def broker_props(self, client_auth: str = "none", prefix: str = "") -> dict[str, str]:
        """The ssl.* keys of a broker using these files (``prefix``: a
        listener.name.<l>. form)."""
        return {f"{prefix}ssl.keystore.type": "PEM",
                f"{prefix}ssl.keystore.location": self.server,
                f"{prefix}ssl.truststore.type": "PEM",
                f"{prefix}ssl.truststore.location": self.ca,
                f"{prefix}ssl.client.auth": client_auth}


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _name(**parts: str) -> x509.Name:
    oids = {"CN": NameOID.COMMON_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME,
            "O": NameOID.ORGANIZATION_NAME}
    return x509.Name([x509.NameAttribute(oids[k], v) for k, v in reversed(parts.items())])


def _certificate(subject, subject_key, issuer, issuer_key, *, ca=False, sans=()):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(subject).issuer_name(issuer)
               .public_key(subject_key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem_key(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _pem_cert(cert) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def make_pki(directory: str) -> Pki:
    files: dict[str, bytes] = {}
    for ca_name, client_name, client_dn in (("ca", "client", dict(CN="client", OU="tests",
                                                                  O="kafka-net")),
                                            ("rogue-ca", "rogue-client",
                                             dict(CN="rogue", O="elsewhere"))):
        ca_key = _key()
        ca_subject = _name(CN=f"kafka-net test {ca_name}")
        ca_cert = _certificate(ca_subject, ca_key, ca_subject, ca_key, ca=True)
        files[f"{ca_name}.pem"] = _pem_cert(ca_cert)
        client_key = _key()
        client = _certificate(_name(**client_dn), client_key, ca_subject, ca_key)
        files[f"{client_name}.pem"] = _pem_cert(client)
        files[f"{client_name}.key"] = _pem_key(client_key)
        if ca_name == "ca":
            server_key = _key()
            server = _certificate(
                _name(CN="localhost"), server_key, ca_subject, ca_key,
                sans=(x509.DNSName("localhost"),
                      x509.IPAddress(ipaddress.ip_address(LOOPBACK))))
            files["server.pem"] = _pem_key(server_key) + _pem_cert(server) + _pem_cert(ca_cert)
            files["server.crt"] = _pem_cert(server) + _pem_cert(ca_cert)
            files["server.key"] = _pem_key(server_key)
    for name, data in files.items():
        with open(os.path.join(directory, name), "wb") as fh:
            fh.write(data)
    return Pki(directory)


@pytest.fixture(scope="session")
def pki(tmp_path_factory) -> Pki:
    """One set of certificates for the test session (import this fixture)."""
    return make_pki(str(tmp_path_factory.mktemp("pki")))


def tls_raw_client(port: int, context: ssl.SSLContext) -> RawClient:
    """A RawClient whose socket speaks TLS (handshake done)."""
    client = RawClient(port)
    try:
        client.sock = context.wrap_socket(client.sock, server_hostname=LOOPBACK)
    except BaseException:
        client.close()
        raise
    return client


def client_hello() -> bytes:
    """The first flight of a TLS client: a real ClientHello, as bytes."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(incoming, outgoing,
                                                server_hostname="localhost")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def rejected(sock, timeout: float = 10.0) -> bool:
    """True if the server ends the connection (EOF, reset or a TLS alert) within
    ``timeout`` without sending application data.  On a raw socket a TLS alert
    record (content type 21) may come before the EOF: that is the refusal."""
    sock.settimeout(timeout)
    received = b""
    try:
        while data := sock.recv(4096):
            received += data
    except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
        pass
    except socket.timeout:
        return False
    assert not received or received[:1] == b"\x15", (
        f"server sent data instead of closing: {received!r}")
    return True
