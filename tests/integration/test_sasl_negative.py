"""SASL_PLAINTEXT on raw sockets: the exchange itself, what Kafka does with bad
input during it, and KIP-368 re-authentication (that also over SASL_SSL, where
the re-authentication's frames come through the TLS transport).

Each bad case: the connection is closed (after the failure answer, where
Kafka sends one), one clear log line names the peer, a connection that
authenticated is still served, and the Processors are all alive.
"""

from __future__ import annotations

import logging
import struct
import time
from types import SimpleNamespace

import pytest

from kafka_net.log_safety import RateLimitedLog
from kafka_net.metrics import server_snapshot
from kafka_net.network import selector as selector_module
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.framing import encode_frame
from kafka_net.server.apis import HANDLERS
from kafka_net.server.handlers import list_groups
from tests.integration.sasl_support import (
    authenticate, counter, handshake, plain_login, sasl_config, sasl_port, scram_login)
from tests.support import RawClient, produce_body, request_body, running_server, wait_until
from tests.tls_support import pki, tls_raw_client  # noqa: F401 (pki: fixture)

METADATA = (ApiKey.METADATA, 9, request_body(ApiKey.METADATA, 9, topics=[]))
principals: list[str] = []


def _recording_list_groups(ctx, body):
    principals.append(ctx.principal)
    return list_groups.handle(ctx, body)


# ListGroups, recording the principal each request carries into the API layer.
RECORDING = SimpleNamespace(API_KEY=ApiKey.LIST_GROUPS,
                            VERSIONS=HANDLERS[ApiKey.LIST_GROUPS].VERSIONS,
                            handle=_recording_list_groups,
                            error_response=list_groups.error_response)


@pytest.fixture(autouse=True)
def first_of_its_kind(monkeypatch):
    """Fresh per-address log rate limits: each case's failure is the first from
    127.0.0.1 and gets its line (see test_repeated_failures_log_once)."""
    monkeypatch.setattr(selector_module, "_auth_log",
                        RateLimitedLog(selector_module.log))


@pytest.fixture(scope="module")
def server():
    with running_server(sasl_config(), apis_handlers={ApiKey.LIST_GROUPS: RECORDING}) as s:
        yield s


@pytest.fixture
def alice(server):
    """A connection that authenticated before the bad one, served after it."""
    with RawClient(sasl_port(server)) as client:
        assert plain_login(client, "alice", "alice-secret")["error_code"] == 0
        yield client


def still_served(server, client: RawClient) -> None:
    assert client.call(*METADATA)["brokers"]
    assert all(p.is_alive() for p in server.socket_server.processors)


def failure_logged(caplog, text: str) -> bool:
    return wait_until(lambda: any(
        "Failed authentication with 127.0.0.1:" in r.getMessage() and text in r.getMessage()
        for r in caplog.records), timeout=5)


# -- the exchange -------------------------------------------------------------------------


def test_api_versions_handshake_and_plain_then_requests_carry_the_principal(server):
    with RawClient(sasl_port(server)) as client:
        versions = client.call(ApiKey.API_VERSIONS, 3, request_body(
            ApiKey.API_VERSIONS, 3, client_software_name="raw", client_software_version="1"))
        keys = {entry["api_key"] for entry in versions["api_keys"]}
        assert {ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE} <= keys
        answer = handshake(client, "PLAIN")
        assert answer == {"error_code": 0,
                          "mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]}
        done = authenticate(client, b"\0alice\0alice-secret")
        assert done["error_code"] == 0 and done["session_lifetime_ms"] == 0
        principals.clear()
        client.call(ApiKey.LIST_GROUPS, 4, request_body(ApiKey.LIST_GROUPS, 4))
        assert principals == ["User:alice"]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_exchange_and_principal(server, mechanism):
    with RawClient(sasl_port(server)) as client:
        assert scram_login(client, mechanism, "bob", "bob-secret")["error_code"] == 0
        principals.clear()
        client.call(ApiKey.LIST_GROUPS, 4, request_body(ApiKey.LIST_GROUPS, 4))
        assert principals == ["User:bob"]


def test_an_api_versions_version_from_the_future_is_answered_in_v0_before_login(server):
    # KIP-511 holds before authentication too: v0 UNSUPPORTED_VERSION, then retry.
    with RawClient(sasl_port(server)) as client:
        # Header v2: null client id, no tagged fields; then a body of unknown layout.
        client.send_raw(encode_frame(struct.pack(">hhih", ApiKey.API_VERSIONS, 99, 7, -1)
                                     + b"\x00future body"))
        correlation_id, body = client.receive(ApiKey.API_VERSIONS, 0)
        assert correlation_id == 7 and body["error_code"] == ErrorCode.UNSUPPORTED_VERSION
        assert client.call(ApiKey.API_VERSIONS, 3, request_body(
            ApiKey.API_VERSIONS, 3, client_software_name="raw",
            client_software_version="1"))["error_code"] == 0
        assert plain_login(client, "alice", "alice-secret")["error_code"] == 0
        still_served(server, client)


def test_api_versions_after_the_handshake_closes(server, alice):
    with RawClient(sasl_port(server)) as client:
        assert handshake(client, "PLAIN")["error_code"] == 0
        client.send(ApiKey.API_VERSIONS, 0, {})
        _, body = client.receive(ApiKey.API_VERSIONS, 0)
        assert body["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
        assert client.is_closed_by_server()
    still_served(server, alice)


def test_handshake_v0_then_raw_tokens(server):
    # SaslHandshake v0: the PLAIN token is a bare frame, the answer an empty frame.
    with RawClient(sasl_port(server)) as client:
        assert handshake(client, "PLAIN", version=0)["error_code"] == 0
        client.send_raw(encode_frame(b"\0alice\0alice-secret"))
        assert client.recv_frame() == b""
        still_served(server, client)


def test_a_second_handshake_after_authentication_is_illegal_without_reauth(server, alice):
    # connections.max.reauth.ms=0: no re-authentication; KafkaApis answers.
    assert handshake(alice, "PLAIN")["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
    answer = authenticate(alice, b"\0alice\0alice-secret")
    assert answer["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
    assert answer["error_message"] == ("SaslAuthenticate request received after successful "
                                       "authentication")
    still_served(server, alice)


# -- failures -----------------------------------------------------------------------------


def test_wrong_password(server, alice, caplog):
    caplog.set_level(logging.INFO, logger="kafka_net.network.selector")
    failed = counter(server, "failed-authentication-total")
    with RawClient(sasl_port(server)) as client:
        answer = plain_login(client, "alice", "wrong")
        assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert answer["error_message"] == "Authentication failed: Invalid username or password"
        assert client.is_closed_by_server()
    assert failure_logged(caplog, "Invalid username or password")
    assert counter(server, "failed-authentication-total") == failed + 1
    metrics = server_snapshot(server)
    assert sum(v for k, v in metrics.items()
               if k.startswith("kafka.server:type=socket-server-metrics,listener=SASL_PLAINTEXT")
               and k.endswith(",name=failed-authentication-total")) == failed + 1
    still_served(server, alice)


def test_repeated_failures_log_once(server, caplog):
    caplog.set_level(logging.INFO, logger="kafka_net.network.selector")
    for _ in range(3):
        with RawClient(sasl_port(server)) as client:
            plain_login(client, "alice", "guess")
            assert client.is_closed_by_server()
    lines = [r for r in caplog.records if "Failed authentication" in r.getMessage()]
    assert len(lines) == 1


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_unknown_user(server, alice, caplog, mechanism):
    caplog.set_level(logging.INFO, logger="kafka_net.network.selector")
    with RawClient(sasl_port(server)) as client:
        if mechanism == "PLAIN":
            answer = plain_login(client, "mallory", "x")
            message = "Authentication failed: Invalid username or password"
        else:
            answer = scram_login(client, mechanism, "mallory", "x")
            # Kafka does not tell the client that the user does not exist.
            message = ("Authentication failed during authentication due to invalid "
                       "credentials with SASL mechanism SCRAM-SHA-256")
        assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert answer["error_message"] == message
        assert client.is_closed_by_server()
    assert failure_logged(caplog, message)
    still_served(server, alice)


def test_scram_wrong_password(server, alice):
    with RawClient(sasl_port(server)) as client:
        answer = scram_login(client, "SCRAM-SHA-512", "bob", "wrong")
        assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert client.is_closed_by_server()
    still_served(server, alice)


def test_unsupported_mechanism_is_answered_then_closed(server, alice):
    with RawClient(sasl_port(server)) as client:
        answer = handshake(client, "GSSAPI")
        assert answer["error_code"] == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert answer["mechanisms"] == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert client.is_closed_by_server()
    still_served(server, alice)


def test_an_unauthenticated_produce_closes_the_connection(server, alice, caplog):
    caplog.set_level(logging.INFO, logger="kafka_net.network.selector")
    with RawClient(sasl_port(server)) as client:
        client.send(ApiKey.PRODUCE, 9, produce_body("t", 0, None))
        assert client.is_closed_by_server()
    assert failure_logged(caplog, "Unexpected Kafka request of type PRODUCE during SASL "
                                  "handshake.")
    assert server.replica_manager.read("t", 0, 0, 1 << 20, True)[0] != 0  # nothing stored
    still_served(server, alice)


def test_a_request_between_handshake_and_authenticate_closes(server, alice, caplog):
    caplog.set_level(logging.INFO, logger="kafka_net.network.selector")
    # Kafka answers with that API's error response (ILLEGAL_SASL_STATE), then closes.
    with RawClient(sasl_port(server)) as client:
        assert handshake(client, "PLAIN")["error_code"] == 0
        correlation_id = client.send(ApiKey.CREATE_TOPICS, 7, request_body(
            ApiKey.CREATE_TOPICS, 7, topics=[{"name": "x", "num_partitions": 1,
                                              "replication_factor": 1, "assignments": [],
                                              "configs": []}], timeout_ms=1000))
        got, body = client.receive(ApiKey.CREATE_TOPICS, 7)
        assert got == correlation_id
        assert [t["error_code"] for t in body["topics"]] == [ErrorCode.ILLEGAL_SASL_STATE]
        assert client.is_closed_by_server()
    assert failure_logged(caplog, "Unexpected Kafka request of type CREATE_TOPICS during "
                                  "SASL authentication.")
    assert server.metadata_cache.topic("x") is None
    still_served(server, alice)


@pytest.mark.parametrize("garbage", [
    b"\x60\x82\x01\x00garbage-gssapi-like-token",       # not a Kafka request at all
    struct.pack(">hhi", 17, 1, 1) + b"\xff\xff\xff",  # a SaslHandshake that does not parse
])
def test_garbage_first_frames_close(server, alice, garbage):
    with RawClient(sasl_port(server)) as client:
        client.send_raw(encode_frame(garbage))
        assert client.is_closed_by_server()
    still_served(server, alice)


def test_garbage_scram_tokens_fail_authentication(server, alice):
    with RawClient(sasl_port(server)) as client:
        assert handshake(client, "SCRAM-SHA-256")["error_code"] == 0
        answer = authenticate(client, b"\x00\xffnot-scram")
        assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert client.is_closed_by_server()
    still_served(server, alice)


def test_an_oversized_frame_during_authentication_closes(server, alice):
    with RawClient(sasl_port(server)) as client:
        client.send_raw(struct.pack(">i", 524289))   # sasl.server.max.receive.size + 1
        assert client.is_closed_by_server()
    still_served(server, alice)


def test_sasl_server_max_receive_size_bounds_frames_before_login():
    with running_server(sasl_config(**{"sasl.server.max.receive.size": "64"})) as small:
        with RawClient(sasl_port(small)) as client:
            client.send(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "P" * 100})
            assert client.is_closed_by_server()
        with RawClient(sasl_port(small)) as client:
            assert plain_login(client, "alice", "alice-secret")["error_code"] == 0


# -- KIP-368: session lifetime and re-authentication ----------------------------------


@pytest.fixture(params=["SASL_PLAINTEXT", "SASL_SSL"])
def reauth_server(request, pki):
    tls = request.param == "SASL_SSL"
    with running_server(sasl_config(request.param, pki if tls else None,
                                    **{"connections.max.reauth.ms": "1000"})) as s:
        yield s


@pytest.fixture
def connect(reauth_server, pki):
    """A new raw client of reauth_server's listener (over TLS for SASL_SSL)."""
    protocol = reauth_server.config.listeners[0].security_protocol
    port = sasl_port(reauth_server, protocol)
    if protocol == "SASL_SSL":
        return lambda: tls_raw_client(port, pki.client_context())
    return lambda: RawClient(port)


def test_session_lifetime_is_returned_and_an_expired_session_closes(reauth_server, connect,
                                                                   caplog):
    # Kafka's testSaslReauthenticationFailureWithKip152SaslAuthenticate.
    caplog.set_level(logging.INFO, logger="kafka_net.network.selector")
    with connect() as client, connect() as other:
        assert plain_login(client, "alice", "alice-secret")["session_lifetime_ms"] == 1000
        # v0 has no session_lifetime_ms field, but the session still ends.
        assert plain_login(other, "alice", "alice-secret", version=0)["error_code"] == 0
        still_served(reauth_server, client)
        time.sleep(1.2)   # past the session's end (a wait, not a timing assertion)
        client.send(*METADATA)
        assert client.is_closed_by_server()
        assert wait_until(lambda: any("Disconnecting expired channel" in r.getMessage()
                                      for r in caplog.records), timeout=5)
        assert counter(reauth_server, "expired-connections-killed-count") == 1
        with connect() as fresh:
            assert plain_login(fresh, "alice", "alice-secret")["error_code"] == 0
            still_served(reauth_server, fresh)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_reauthentication_on_a_live_connection(reauth_server, connect, mechanism):
    with connect() as client:
        login = (lambda: plain_login(client, "alice", "alice-secret")) if mechanism == "PLAIN" \
            else (lambda: scram_login(client, mechanism, "bob", "bob-secret"))
        assert login()["error_code"] == 0
        still_served(reauth_server, client)
        again = login()
        assert again["error_code"] == 0 and again["session_lifetime_ms"] == 1000
        still_served(reauth_server, client)
        assert counter(reauth_server, "successful-reauthentication-total") == 1


def test_a_pipelined_reauthentication_and_request_are_served_in_order(reauth_server, connect):
    # SaslHandshake, SaslAuthenticate and Metadata in one write: the bytes read past
    # the handshake belong to the authenticator, and what follows the exchange goes
    # back to the channel as its next request.
    with connect() as client:
        assert plain_login(client, "alice", "alice-secret")["error_code"] == 0
        frames = [client.request_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}),
                  client.request_frame(ApiKey.SASL_AUTHENTICATE, 2,
                                       {"auth_bytes": b"\0alice\0alice-secret"}),
                  client.request_frame(*METADATA)]
        client.send_raw(b"".join(frame for _, frame in frames))
        assert client.receive(ApiKey.SASL_HANDSHAKE, 1)[1]["error_code"] == 0
        assert client.receive(ApiKey.SASL_AUTHENTICATE, 2)[1]["error_code"] == 0
        correlation_id, body = client.receive(*METADATA[:2])
        assert correlation_id == frames[2][0] and body["brokers"]
        assert counter(reauth_server, "successful-reauthentication-total") == 1


def test_reauthentication_as_someone_else_fails(reauth_server, connect, caplog):
    caplog.set_level(logging.INFO, logger="kafka_net.network.selector")
    with connect() as client:
        assert plain_login(client, "alice", "alice-secret")["error_code"] == 0
        answer = plain_login(client, "admin", "admin-secret")
        assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert answer["error_message"] == ("Cannot change principals during re-authentication "
                                           "from User.alice: User.admin")
        assert client.is_closed_by_server()
    assert wait_until(lambda: any("Failed re-authentication with" in r.getMessage()
                                  for r in caplog.records), timeout=5)
    assert counter(reauth_server, "failed-reauthentication-total") == 1


def test_reauthentication_with_another_mechanism_fails(reauth_server, connect):
    with connect() as client:
        assert plain_login(client, "alice", "alice-secret")["error_code"] == 0
        assert handshake(client, "SCRAM-SHA-256")["error_code"] == 0
        client.send(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"n,,n=bob,r=abc"})
        assert client.is_closed_by_server()
