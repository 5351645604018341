"""A SASL_PLAINTEXT or SASL_SSL broker for the SASL tests (not a test module).

PLAIN users come from the listener's JAAS config; SCRAM users are seeded at
startup through ``scram.credentials`` (kafka-storage's --add-scram syntax).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from kafka_net.config import ServerConfig
from kafka_net.protocol.api_keys import ApiKey
from tests.support import RawClient

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" '
              'user_admin="admin-secret" user_alice="alice-secret";')
USERS = {"PLAIN": ("alice", "alice-secret"),
         "SCRAM-SHA-256": ("bob", "bob-secret"),
         "SCRAM-SHA-512": ("bob", "bob-secret")}


def sasl_config(protocol: str = "SASL_PLAINTEXT", pki=None, **overrides: str) -> ServerConfig:
    """One ``protocol`` listener named after it; SASL_SSL takes its ssl.* keys
    from ``pki`` (tests/tls_support.py)."""
    props = {
        "listeners": f"{protocol}://127.0.0.1:0",
        "num.network.threads": "2", "num.io.threads": "4", "shutdown.timeout.ms": "5000",
        "group.initial.rebalance.delay.ms": "0", "log.store": "memory",
        **sasl_props(protocol),
        **(pki.broker_props() if pki is not None else {}),
    }
    props.update(overrides)
    return ServerConfig.from_properties(props)


def sasl_props(listener: str) -> dict[str, str]:
    """The SASL keys of a broker whose SASL listener is named ``listener``."""
    return {
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        f"listener.name.{listener.lower()}.plain.sasl.jaas.config": PLAIN_JAAS,
        "scram.credentials": "SCRAM-SHA-256=[name=bob,password=bob-secret] "
                             "SCRAM-SHA-512=[name=bob,password=bob-secret,iterations=8192]",
    }


def sasl_port(server, listener: str = "SASL_PLAINTEXT") -> int:
    return server.bound_port(listener)


def counter(server, name: str) -> int:
    """One of the Selectors' authentication counters, summed over the Processors."""
    return sum(p.selector.auth_counts[name] for p in server.socket_server.processors)


# -- a raw SASL client: what librdkafka and the Java client send ------------------------


def handshake(client: RawClient, mechanism: str, version: int = 1) -> dict:
    return client.call(ApiKey.SASL_HANDSHAKE, version, {"mechanism": mechanism})


def authenticate(client: RawClient, token: bytes, version: int = 2) -> dict:
    return client.call(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token})


def plain_login(client: RawClient, user: str, password: str, version: int = 2) -> dict:
    assert handshake(client, "PLAIN")["error_code"] == 0
    return authenticate(client, f"\0{user}\0{password}".encode(), version)


def scram_login(client: RawClient, mechanism: str, user: str, password: str,
                version: int = 2, extensions: str = "") -> dict:
    """A full SCRAM exchange (RFC 5802 client side); the final answer, with the
    server signature checked when it succeeded.  ``extensions``: appended to the
    client-first message (",tokenauth=true": a delegation token login, KIP-48)."""
    h = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
    assert handshake(client, mechanism)["error_code"] == 0
    nonce = base64.b64encode(os.urandom(18)).decode()
    first_bare = f"n={user},r={nonce}{extensions}"
    first = authenticate(client, f"n,,{first_bare}".encode(), version)
    if first["error_code"]:
        return first
    server_first = first["auth_bytes"].decode()
    fields = dict(part.split("=", 1) for part in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(h, password.encode(), base64.b64decode(fields["s"]),
                                 int(fields["i"]))
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    client_key = hmac.new(salted, b"Client Key", h).digest()
    signature = hmac.new(hashlib.new(h, client_key).digest(), auth_message, h).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    final = authenticate(
        client, f"{without_proof},p={base64.b64encode(proof).decode()}".encode(), version)
    if final["error_code"] == 0:
        server_key = hmac.new(salted, b"Server Key", h).digest()
        expected = hmac.new(server_key, auth_message, h).digest()
        assert final["auth_bytes"].decode() == f"v={base64.b64encode(expected).decode()}"
    return final
