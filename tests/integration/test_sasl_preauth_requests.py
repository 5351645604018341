"""A hostile client before authentication, on SASL_PLAINTEXT and SASL_SSL (issue 20).

Every API key (at its newest version, at a version from the future, a
Produce with acks=0; at every version where the request is parsed) and
garbage frames, sent at each stage of a SASL exchange: before anything, after ApiVersions, after a v1 SaslHandshake
(tokens in SaslAuthenticate), after a v0 SaslHandshake (bare tokens),
in the middle of a SCRAM exchange, and during a KIP-368 re-authentication.

Kafka's SaslServerAuthenticator answers only ApiVersions (before the
handshake) and SaslHandshake; anything else closes the connection, after
that API's ILLEGAL_SASL_STATE answer where the client asked for Kafka
headers (v1 handshake) and the API has one.  Each case here must end in
that close, write no traceback, and the whole run must stay within a fixed
number of log lines (the failure lines are rate-limited per peer address).
"""

from __future__ import annotations

import logging
import random
import socket
import struct

import pytest

from kafka_net.config import ServerConfig
from kafka_net.log_safety import RateLimitedLog
from kafka_net.network import selector
from kafka_net.protocol import encode_request
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.messages import MESSAGES
from tests.integration.sasl_support import authenticate, handshake, plain_login, sasl_props
from tests.support import (API_VERSIONS_V3_BODY, RawClient, produce_body, request_body,
                           running_server, wait_until)
from tests.tls_support import pki, tls_raw_client  # noqa: F401 (pki: fixture)

PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
# What the whole hostile run may log at INFO and above (it is several hundred
# connections per protocol): one line per kind and peer address every 10 s.
MAX_LOG_LINES = 12


@pytest.fixture(scope="module")
def server(pki):  # noqa: F811
    props = {"listeners": ",".join(f"{p}://127.0.0.1:0" for p in PROTOCOLS),
             "log.store": "memory", "num.network.threads": "2", "num.io.threads": "2",
             "shutdown.timeout.ms": "5000", "connections.max.reauth.ms": "600000",
             **pki.broker_props()}
    for protocol in PROTOCOLS:
        props.update(sasl_props(protocol))
    with running_server(ServerConfig.from_properties(props)) as running:
        yield running


def connect(server, protocol: str, pki) -> RawClient:  # noqa: F811
    port = server.bound_port(protocol)
    if protocol == "SASL_SSL":
        return tls_raw_client(port, pki.client_context())
    return RawClient(port)


# -- what a hostile client sends ------------------------------------------------------


def _frame(api_key: int, version: int, correlation_id: int = 7) -> bytes:
    """A request of ``api_key`` at ``version``: its default body where the schema
    has that version, else a bare v2 header (an unknown key, a future version)."""
    message = MESSAGES.get(api_key)
    if message is not None and version in message.request.valid:
        body = request_body(api_key)
        if api_key == ApiKey.PRODUCE:
            body = produce_body("t", 0, None, acks=0)   # the request: no answer exists
        return encode_request(api_key, version, correlation_id, body)
    payload = struct.pack(">hhihb", api_key, version, correlation_id, -1, 0)
    return struct.pack(">i", len(payload)) + payload


def hostile_frames() -> list[tuple[str, bytes]]:
    frames = []
    for key in ApiKey:
        newest = MESSAGES[key].request.valid.high if key in MESSAGES else 0
        frames.append((f"{key.name} v{newest}", _frame(key, newest)))
        frames.append((f"{key.name} v{newest + 1}", _frame(key, newest + 1)))
    frames += [("unknown key 999", _frame(999, 0)), ("key -1", _frame(-1, 0)),
               ("frame too short", b"\0\0\0\3abc"), ("empty frame", b"\0\0\0\0"),
               ("garbage header", b"\0\0\0\x10" + b"\xff" * 16),
               ("negative size", b"\xff\xff\xff\xfe"), ("huge size", b"\x7f\xff\xff\xff")]
    return frames


def every_version_frames() -> list[tuple[str, bytes]]:
    """Every version of every request the schemas know, default bodies; then
    garbage that looks almost like a header (a fixed seed: reproducible)."""
    frames = []
    for key in ApiKey:
        if key in MESSAGES:
            valid = MESSAGES[key].request.valid
            frames += [(f"{key.name} v{v}", _frame(key, v))
                       for v in range(valid.low, valid.high + 1)]
    rng = random.Random(20)
    for n in range(60):
        payload = struct.pack(">hh", rng.choice(list(ApiKey)), rng.randrange(-2, 40)) + \
            rng.randbytes(rng.randrange(0, 40))
        frames.append((f"garbage {n}", struct.pack(">i", len(payload)) + payload))
    return frames


# -- the stages of an exchange a request can come at ------------------------------------


def stage_initial(client):
    pass


def stage_after_api_versions(client):
    assert client.call(ApiKey.API_VERSIONS, 3, API_VERSIONS_V3_BODY)["error_code"] == 0


def stage_after_handshake_v1(client):
    assert handshake(client, "PLAIN")["error_code"] == 0


def stage_after_handshake_v0(client):
    assert handshake(client, "PLAIN", version=0)["error_code"] == 0


def stage_mid_scram(client):
    assert handshake(client, "SCRAM-SHA-256")["error_code"] == 0
    assert authenticate(client, b"n,,n=bob,r=abcdefghijklmnop")["error_code"] == 0


def stage_reauthenticating(client):
    assert plain_login(client, "alice", "alice-secret")["error_code"] == 0
    assert handshake(client, "PLAIN")["error_code"] == 0   # KIP-368: a re-authentication


STAGES = [stage_initial, stage_after_api_versions, stage_after_handshake_v1,
          stage_after_handshake_v0, stage_mid_scram, stage_reauthenticating]


def answered_before_login(stage, name: str) -> bool:
    """ApiVersions before the handshake is served (any version: a future one gets
    the v0 UNSUPPORTED_VERSION answer, KIP-511), and the connection stays."""
    return stage is stage_initial and name.startswith("API_VERSIONS ")


def ends_in_close(sock: socket.socket, timeout: float = 10.0) -> bool:
    """True once the server closed: read (an error answer may come first) to EOF."""
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
    except (ConnectionResetError, BrokenPipeError):
        pass
    except (socket.timeout, TimeoutError):
        return False
    return True


def open_channels(server) -> int:
    return sum(len(p.selector.channels) for p in server.socket_server.processors)


def loud_records(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records
            if r.name.startswith("kafka_net") and r.levelno >= logging.INFO]


def assert_quiet_and_closed(server, caplog, clients, still_open: int = 0) -> None:
    unclosed = [name for name, client in clients if not ends_in_close(client.sock)]
    assert not unclosed, f"left open: {unclosed}"
    for _, client in clients:
        client.close()
    assert wait_until(lambda: open_channels(server) == still_open), open_channels(server)
    assert all(p.is_alive() for p in server.socket_server.processors)
    loud = loud_records(caplog)
    assert not [r for r in loud if r.exc_info], [r.getMessage() for r in loud if r.exc_info]
    assert len(loud) <= MAX_LOG_LINES, [r.getMessage() for r in loud]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.__name__[len("stage_"):])
def test_every_request_before_authentication_closes_quietly(server, pki, caplog,  # noqa: F811
                                                            protocol, stage):
    caplog.set_level(logging.INFO)
    clients = []
    try:
        for name, frame in hostile_frames():
            if answered_before_login(stage, name):
                continue
            client = connect(server, protocol, pki)
            clients.append((name, client))
            stage(client)
            client.send_raw(frame)
        assert_quiet_and_closed(server, caplog, clients)
    finally:
        for _, client in clients:
            client.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("stage", [stage_after_handshake_v1, stage_reauthenticating],
                         ids=lambda s: s.__name__[len("stage_"):])
def test_every_version_where_requests_are_parsed(server, pki, caplog,  # noqa: F811
                                                 protocol, stage):
    """Where the client asked for Kafka headers the request is parsed and its
    API's error response built: every version of every API, and garbage."""
    caplog.set_level(logging.INFO)
    clients = []
    try:
        for name, frame in every_version_frames():
            client = connect(server, protocol, pki)
            clients.append((name, client))
            stage(client)
            client.send_raw(frame)
        assert_quiet_and_closed(server, caplog, clients)
    finally:
        for _, client in clients:
            client.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_300_produce_acks_0_after_the_handshake(server, pki, caplog, protocol):  # noqa: F811
    """The issue's flood: each connection closed, the log bounded, no traceback."""
    caplog.set_level(logging.INFO)
    frame = _frame(ApiKey.PRODUCE, 9)
    clients = []
    try:
        for _ in range(300):
            client = connect(server, protocol, pki)
            clients.append(("produce acks=0", client))
            stage_after_handshake_v1(client)
            client.send_raw(frame)
        assert_quiet_and_closed(server, caplog, clients)
        with connect(server, protocol, pki) as bystander:   # still served
            assert plain_login(bystander, "alice", "alice-secret")["error_code"] == 0
    finally:
        for _, client in clients:
            client.close()


# -- connection.authentication.timeout.ms -----------------------------------------------


@pytest.fixture
def short_deadline_server(pki):  # noqa: F811
    props = {"listeners": ",".join(f"{p}://127.0.0.1:0" for p in PROTOCOLS),
             "log.store": "memory", "num.network.threads": "1", "num.io.threads": "2",
             "shutdown.timeout.ms": "5000", "connections.max.reauth.ms": "600000",
             "connection.authentication.timeout.ms": "500", **pki.broker_props()}
    for protocol in PROTOCOLS:
        props.update(sasl_props(protocol))
    with running_server(ServerConfig.from_properties(props)) as running:
        yield running


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_authentication_that_stalls_is_closed_by_the_deadline(
        short_deadline_server, pki, caplog, monkeypatch, protocol):  # noqa: F811
    caplog.set_level(logging.INFO)
    # A fresh per-address rate limit: the first line here is the deadline's.
    monkeypatch.setattr(selector, "_auth_log",
                        RateLimitedLog(selector.log))
    server = short_deadline_server
    with connect(server, protocol, pki) as served:
        assert plain_login(served, "alice", "alice-secret")["error_code"] == 0
        stalled = []
        try:
            for stage in (stage_initial, stage_after_handshake_v1, stage_mid_scram,
                          stage_reauthenticating):
                client = connect(server, protocol, pki)
                stalled.append((stage.__name__, client))
                stage(client)
            half_token = connect(server, protocol, pki)   # half a SaslAuthenticate frame
            stalled.append(("half a frame", half_token))
            stage_after_handshake_v1(half_token)
            half_token.send_raw(b"\0\0\0\x40\0\x24")
            assert_quiet_and_closed(server, caplog, stalled, still_open=1)
        finally:
            for _, client in stalled:
                client.close()
        assert any("did not finish within connection.authentication.timeout.ms=500"
                   in r.getMessage() for r in caplog.records)
        # The connection that authenticated in time outlived every deadline above.
        assert served.call(ApiKey.METADATA, 9,
                           request_body(ApiKey.METADATA, topics=[]))["brokers"]
