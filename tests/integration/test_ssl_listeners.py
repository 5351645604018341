"""SSL listeners on real sockets: one broker with four listeners at once,
PLAINTEXT, SSL, MTLS (an SSL listener whose ``listener.name.mtls.ssl.client.auth``
is ``required``) and SASL_SSL (TLS, then a SASL login), and the ways a TLS
client can go wrong.

Each bad client: its connection is closed, one clear log line names the peer
and the reason, the failed-authentication metric counts it where Kafka does,
every other connection is served, and no thread dies or is added.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import ssl
import threading

import pytest

from kafka_net.config import ConfigError, ServerConfig
from kafka_net.log_safety import RateLimitedLog
from kafka_net.metrics import server_snapshot
from kafka_net.network import selector as selector_module
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.apis import HANDLERS
from kafka_net.server.handlers import api_versions
from kafka_net.server.kafka_server import KafkaServer
from tests.network.helpers import healthy, server_threads_alive
from tests.integration.sasl_support import plain_login, sasl_props
from tests.support import (
    API_VERSIONS_V3_BODY, LOOPBACK, RawClient, running_server, wait_until)
from tests.tls_support import (
    CLIENT_DN, client_hello, pki, rejected, tls_raw_client)  # noqa: F401 (pki: fixture)

IDLE_MS = 1500


class RecordingApiVersions:
    """api_versions, recording each request's principal (RequestContext.principal)."""

    API_KEY, VERSIONS = api_versions.API_KEY, HANDLERS[ApiKey.API_VERSIONS].VERSIONS
    error_response = staticmethod(api_versions.error_response)
    principals: list[tuple[str, str]] = []

    @classmethod
    def handle(cls, ctx, body):
        cls.principals.append((ctx.listener_name, ctx.principal))
        return api_versions.handle(ctx, body)


def broker_config(pki, **extra: str) -> ServerConfig:
    return ServerConfig.from_properties({
        "log.store": "memory",
        "listeners": f"PLAINTEXT://{LOOPBACK}:0,SSL://{LOOPBACK}:0,MTLS://{LOOPBACK}:0,"
                     f"SASL_SSL://{LOOPBACK}:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,"
                                          "SASL_SSL:SASL_SSL",
        **pki.broker_props(), **sasl_props("SASL_SSL"),
        "listener.name.mtls.ssl.client.auth": "required",
        "num.network.threads": "1", "num.io.threads": "2",
        "connections.max.idle.ms": str(IDLE_MS), "shutdown.timeout.ms": "5000", **extra})


@pytest.fixture(scope="module")
def server(pki):
    with running_server(broker_config(pki),
                        apis_handlers={18: RecordingApiVersions}) as running:
        yield running


@pytest.fixture(autouse=True)
def fresh_log_limits(monkeypatch, caplog):
    # Every bad client here comes from 127.0.0.1: each case gets its own line.
    monkeypatch.setattr(selector_module, "_auth_log",
                        RateLimitedLog(selector_module.log))
    # Captured for the whole test: the broker may log a refusal after the client
    # saw it, when a test's own caplog.at_level block has already ended.
    caplog.set_level(logging.INFO, logger=selector_module.log.name)


def api_versions_ok(client: RawClient) -> bool:
    return client.call(18, 3, API_VERSIONS_V3_BODY)["error_code"] == 0


def failed_authentications(server, listener: str) -> float:
    return sum(v for k, v in server_snapshot(server).items()
               if f"listener={listener}," in k and k.endswith("name=failed-authentication-total"))


def all_listeners_serve(server, pki) -> None:
    healthy(server.bound_port("PLAINTEXT"))
    with tls_raw_client(server.bound_port("SSL"), pki.client_context()) as c:
        assert api_versions_ok(c)
    with tls_raw_client(server.bound_port("MTLS"), pki.client_context("client")) as c:
        assert api_versions_ok(c)
    with sasl_ssl_login(server, pki, "alice", "alice-secret") as (c, answer):
        assert answer["error_code"] == 0 and api_versions_ok(c)


@contextlib.contextmanager
def sasl_ssl_login(server, pki, user: str, password: str):
    """A TLS connection to the SASL_SSL listener that has tried a PLAIN login:
    (client, SaslAuthenticate answer)."""
    with tls_raw_client(server.bound_port("SASL_SSL"), pki.client_context()) as client:
        yield client, plain_login(client, user, password)


def logged_identities(caplog) -> set[tuple[str, str, str]]:
    lines = [json.loads(r.getMessage()[len("Completed request:"):]) for r in caplog.records
             if r.getMessage().startswith("Completed request:")]
    return {(d["listener"], d["securityProtocol"], d["principal"]) for d in lines}


# -- a mixed broker: every listener kind at once ----------------------------------------


def test_mixed_broker_serves_plaintext_ssl_mtls_and_sasl_ssl_with_their_principals(
        server, pki, caplog):
    RecordingApiVersions.principals.clear()
    with caplog.at_level(logging.DEBUG, logger="kafka.request.logger"):
        all_listeners_serve(server, pki)
        # The request log line of each: listener, security protocol, principal.
        expected = {("PLAINTEXT", "PLAINTEXT", "User:ANONYMOUS"),
                    ("SSL", "SSL", "User:ANONYMOUS"), ("MTLS", "SSL", f"User:{CLIENT_DN}"),
                    ("SASL_SSL", "SASL_SSL", "User:alice")}
        assert wait_until(lambda: expected <= logged_identities(caplog))
    seen = set(RecordingApiVersions.principals)
    assert ("PLAINTEXT", "User:ANONYMOUS") in seen
    assert ("SSL", "User:ANONYMOUS") in seen
    assert ("MTLS", f"User:{CLIENT_DN}") in seen
    # The SASL name, not the (absent) certificate's: the ApiVersions before the
    # login was answered by the authenticator, so only the one after it is here.
    assert ("SASL_SSL", "User:alice") in seen


def test_metadata_on_each_listener_advertises_that_listener(server, pki):
    from tests.network.helpers import metadata_body
    for listener, context in (("SSL", pki.client_context()),
                              ("MTLS", pki.client_context("client"))):
        port = server.bound_port(listener)
        with tls_raw_client(port, context) as c:
            assert c.call(3, 12, metadata_body(12))["brokers"][0]["port"] == port


def test_principal_mapping_rules_map_the_dn(pki):
    cfg = broker_config(pki, **{
        "listener.name.mtls.ssl.principal.mapping.rules":
            "RULE:^CN=([^,]*),OU=tests,.*$/$1@tests/U,DEFAULT"})
    RecordingApiVersions.principals.clear()
    with running_server(cfg, apis_handlers={18: RecordingApiVersions}) as running:
        with tls_raw_client(running.bound_port("MTLS"), pki.client_context("client")) as c:
            assert api_versions_ok(c)
    assert RecordingApiVersions.principals == [("MTLS", "User:CLIENT@TESTS")]


# -- bad clients ----------------------------------------------------------------------


def log_line_about(caplog, peer: str) -> str:
    """The log line naming ``peer``, waited for: the client may see its refusal
    (the TLS alert goes out first) before the broker's thread has logged it."""
    assert wait_until(lambda: any(peer in r.getMessage() for r in caplog.records))
    return next(r.getMessage() for r in caplog.records if peer in r.getMessage())


def assert_failed_authentications(server, listener: str, expected: float) -> None:
    assert wait_until(lambda: failed_authentications(server, listener) == expected)


def assert_only_that_connection_paid(server, pki, bystander: RawClient, threads: int) -> None:
    assert api_versions_ok(bystander)
    all_listeners_serve(server, pki)
    assert server_threads_alive(server)
    assert threading.active_count() == threads


@pytest.fixture
def bystander(server, pki):
    with tls_raw_client(server.bound_port("SSL"), pki.client_context()) as client:
        assert api_versions_ok(client)
        yield client


def test_plaintext_client_on_the_ssl_port(server, pki, bystander, caplog):
    threads, before = threading.active_count(), failed_authentications(server, "SSL")
    with caplog.at_level(logging.INFO, logger=selector_module.log.name):
        with RawClient(server.bound_port("SSL")) as plain:
            plain.send(18, 3, API_VERSIONS_V3_BODY)
            assert rejected(plain.sock)
            peer = "%s:%d" % plain.sock.getsockname()
    line = log_line_about(caplog, peer)
    assert "Failed authentication with" in line and "SSL handshake failed" in line
    assert_failed_authentications(server, "SSL", before + 1)
    assert_only_that_connection_paid(server, pki, bystander, threads)


@pytest.mark.parametrize("garbage", [os.urandom(300), b"\x16\x03\x01\x00\x05hello",
                                     b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"],
                         ids=["random", "bad_record", "http"])
def test_garbage_instead_of_a_client_hello(server, pki, bystander, caplog, garbage):
    threads = threading.active_count()
    with caplog.at_level(logging.INFO, logger=selector_module.log.name):
        with socket.create_connection((LOOPBACK, server.bound_port("SSL")), timeout=10) as s:
            peer = "%s:%d" % s.getsockname()
            s.sendall(garbage)
            assert rejected(s)
    assert "SSL handshake failed" in log_line_about(caplog, peer)
    assert_only_that_connection_paid(server, pki, bystander, threads)


def test_wrong_password_over_sasl_ssl(server, pki, bystander, caplog):
    threads, before = threading.active_count(), failed_authentications(server, "SASL_SSL")
    with caplog.at_level(logging.INFO, logger=selector_module.log.name):
        with sasl_ssl_login(server, pki, "alice", "wrong") as (client, answer):
            peer = "%s:%d" % client.sock.getsockname()
            assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
            assert answer["error_message"] == (
                "Authentication failed: Invalid username or password")
            assert rejected(client.sock)   # closed after the failure answer
    line = log_line_about(caplog, peer)
    assert "Failed authentication with" in line and "Invalid username or password" in line
    assert_failed_authentications(server, "SASL_SSL", before + 1)
    assert_only_that_connection_paid(server, pki, bystander, threads)


def test_a_sasl_plaintext_client_on_the_sasl_ssl_port(server, pki, bystander, caplog):
    threads, before = threading.active_count(), failed_authentications(server, "SASL_SSL")
    with caplog.at_level(logging.INFO, logger=selector_module.log.name):
        with RawClient(server.bound_port("SASL_SSL")) as plain:
            plain.send(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
            assert rejected(plain.sock)
            peer = "%s:%d" % plain.sock.getsockname()
    assert "SSL handshake failed" in log_line_about(caplog, peer)
    assert_failed_authentications(server, "SASL_SSL", before + 1)
    assert_only_that_connection_paid(server, pki, bystander, threads)


@pytest.mark.parametrize("certificate", ["rogue-client", None], ids=["untrusted", "none"])
def test_mutual_tls_refuses_an_untrusted_or_missing_client_certificate(
        server, pki, bystander, caplog, certificate):
    threads, before = threading.active_count(), failed_authentications(server, "MTLS")
    with caplog.at_level(logging.INFO, logger=selector_module.log.name):
        raw = socket.create_connection((LOOPBACK, server.bound_port("MTLS")), timeout=10)
        peer = "%s:%d" % raw.getsockname()
        try:
            # TLS 1.3: the client's side of the handshake ends before the server
            # has checked its certificate; the refusal comes as an alert.
            sock = pki.client_context(certificate).wrap_socket(raw, server_hostname=LOOPBACK)
            sock.sendall(b"\x00\x00\x00\x00")
            assert rejected(sock)
        except ssl.SSLError:
            pass   # refused inside the handshake (TLS 1.2)
        finally:
            raw.close()
    line = log_line_about(caplog, peer)
    assert "Failed authentication with" in line and "certificate" in line.lower()
    assert_failed_authentications(server, "MTLS", before + 1)
    assert_only_that_connection_paid(server, pki, bystander, threads)


def test_a_handshake_that_stalls_halfway_is_expired(server, pki, caplog):
    threads = threading.active_count()
    hello = client_hello()
    with caplog.at_level(logging.INFO, logger=selector_module.log.name):
        with socket.create_connection((LOOPBACK, server.bound_port("SSL")), timeout=10) as s:
            peer = "%s:%d" % s.getsockname()
            s.sendall(hello[:len(hello) // 2])
            assert rejected(s, timeout=IDLE_MS / 1000 * 5)
    line = log_line_about(caplog, peer)
    assert "handshake did not finish within connections.max.idle.ms" in line
    all_listeners_serve(server, pki)
    assert server_threads_alive(server)
    assert threading.active_count() == threads


# -- bad configuration: a startup error naming the key and the file --------------------


@pytest.mark.parametrize("props, fragments", [
    ({"ssl.keystore.location": "/nonexistent/server.pem"},
     ["ssl.keystore.location", "/nonexistent/server.pem"]),
    ({"listener.name.ssl.ssl.truststore.location": "/nonexistent/ca.pem",
      "ssl.client.auth": "required"},
     ["listener.name.ssl.ssl.truststore.location", "/nonexistent/ca.pem"]),
    ({"ssl.keystore.type": "JKS"}, ["ssl.keystore.type", "JKS", "PEM"]),
    ({"ssl.keystore.type": "PKCS12"}, ["ssl.keystore.type", "PKCS12", "PEM"]),
    ({"ssl.keystore.location": ""}, ["ssl.keystore.location", "needs a key store"]),
    ({"ssl.enabled.protocols": "SSLv3"}, ["ssl.enabled.protocols", "SSLv3"]),
])
def test_bad_ssl_configuration_stops_the_startup(pki, props, fragments):
    cfg = ServerConfig.from_properties({
        "log.store": "memory",
        "listeners": f"SSL://{LOOPBACK}:0", **pki.broker_props(), **props})
    server = KafkaServer(cfg)
    with pytest.raises(ConfigError) as info:
        server.startup()
    for fragment in fragments:
        assert fragment in str(info.value)


def test_keystore_that_is_not_pem_names_the_file(pki, tmp_path):
    bad = tmp_path / "not-a-key.pem"
    bad.write_text("hello")
    cfg = ServerConfig.from_properties({
        "log.store": "memory",
        "listeners": f"SSL://{LOOPBACK}:0", **pki.broker_props(),
        "ssl.keystore.location": str(bad)})
    with pytest.raises(ConfigError, match="ssl.keystore.location: .*not-a-key.pem"):
        KafkaServer(cfg).startup()


def test_keystore_as_pem_text_in_the_config(pki):
    with open(pki.path("server.crt")) as chain, open(pki.path("server.key")) as key:
        props = {"ssl.keystore.certificate.chain": chain.read(),
                 "ssl.keystore.key": key.read()}
    cfg = ServerConfig.from_properties({
        "log.store": "memory",
        "listeners": f"SSL://{LOOPBACK}:0", "ssl.keystore.type": "PEM", **props})
    with running_server(cfg) as running:
        with tls_raw_client(running.bound_port("SSL"), pki.client_context()) as c:
            assert api_versions_ok(c)


def test_large_request_and_response_cross_many_tls_records(server, pki):
    # 900 KB each way: about 55 TLS records, more than one socket buffer, so
    # partial writes of encrypted bytes (has_pending_writes) are on the path.
    from kafka_net.protocol.records import build_batch, decode_records, iter_batches
    from tests.support import fetch_body, produce_body
    value = os.urandom(900_000)
    server.apis.create_topic("ssl-large", 1)
    with tls_raw_client(server.bound_port("SSL"), pki.client_context()) as c:
        answer = c.call(0, 9, produce_body("ssl-large", 0, build_batch([(None, value)])))
        assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0
        fetched = c.call(1, 12, fetch_body([("ssl-large", 0, 0)], max_bytes=2 << 20,
                                           partition_max_bytes=2 << 20))
        records = fetched["responses"][0]["partitions"][0]["records"]
        got = [r.value for b in iter_batches(records) for r in decode_records(b)]
    assert got == [value]


def test_enabled_protocols_bound_the_tls_version(pki):
    cfg = ServerConfig.from_properties({
        "log.store": "memory",
        "listeners": f"OLD://{LOOPBACK}:0,NEW://{LOOPBACK}:0",
        "listener.security.protocol.map": "OLD:SSL,NEW:SSL", **pki.broker_props(),
        "listener.name.old.ssl.enabled.protocols": "TLSv1.2",
        "listener.name.new.ssl.enabled.protocols": "TLSv1.3"})
    with running_server(cfg) as running:
        with tls_raw_client(running.bound_port("OLD"), pki.client_context()) as c:
            assert c.sock.version() == "TLSv1.2" and api_versions_ok(c)
        with tls_raw_client(running.bound_port("NEW"), pki.client_context()) as c:
            assert c.sock.version() == "TLSv1.3" and api_versions_ok(c)
        old_client = pki.client_context()
        old_client.maximum_version = ssl.TLSVersion.TLSv1_2
        with pytest.raises(ssl.SSLError):
            tls_raw_client(running.bound_port("NEW"), old_client).close()


def test_requests_left_decrypted_in_the_transport_are_served(server, pki, monkeypatch):
    # testLatencyWithBufferedDataAndNoSocketData through a running broker: with
    # 16-byte channel reads, every request lands in the transport in one TLS
    # record and is read from there in many polls that no select announces.
    # Pipelined requests too: answered one by one, in order, after each unmute.
    from kafka_net.network import kafka_channel
    monkeypatch.setattr(kafka_channel, "READ_CHUNK", 16)
    with tls_raw_client(server.bound_port("SSL"), pki.client_context()) as c:
        for _ in range(3):
            assert api_versions_ok(c)
        requests = [c.request_frame(18, 3, API_VERSIONS_V3_BODY) for _ in range(4)]
        c.send_raw(b"".join(frame for _, frame in requests))
        answers = [c.receive(18, 3) for _ in requests]
    assert [correlation_id for correlation_id, _ in answers] == [
        correlation_id for correlation_id, _ in requests]
    assert [body["error_code"] for _, body in answers] == [0] * 4
