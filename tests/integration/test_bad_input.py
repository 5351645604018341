"""Bad input on a real socket (reference section 3; SocketServerTest 4.4).

Kafka's policy: anything that cannot be framed or parsed, or names an API/version the broker
does not serve, closes that connection with no response and a log line naming the connection
and the reason.  Every other connection keeps being served and no thread dies.  The one
exception is a too-new ApiVersions, which gets a v0 UNSUPPORTED_VERSION answer."""

from __future__ import annotations

import logging
import struct

import pytest

from kafka_net.log_safety import RateLimitedLog
from kafka_net.network import processor as processor_module
from kafka_net.network import selector as selector_module
from kafka_net.protocol import decode_response, encode_request
from tests.network.helpers import (
    closed_by_server, healthy, metadata_body, server_threads_alive, still_open)
from tests.support import API_VERSIONS_V3_BODY, RawClient, make_config, running_server

MAX_BYTES = 1000


@pytest.fixture(scope="module")
def live():
    config = make_config(socket_request_max_bytes=MAX_BYTES, num_network_threads=2,
                         num_io_threads=2)
    with running_server(config) as server:
        yield server


@pytest.fixture(autouse=True)
def first_of_its_kind(monkeypatch):
    """Fresh per-address log rate limits for every case: each bad input here is the
    first from 127.0.0.1 and gets its line (a repeat within 10 s would be held back,
    see test_repeated_bad_frames_from_one_address_log_once)."""
    monkeypatch.setattr(selector_module, "_bad_frame_log",
                        RateLimitedLog(selector_module.log))
    monkeypatch.setattr(processor_module, "_per_connection_log",
                        RateLimitedLog(processor_module.log))


@pytest.fixture(scope="module")
def bystander(live):
    """A connection open for the whole module, used between and after the bad inputs."""
    with RawClient(live.bound_port()) as client:
        assert client.call(18, 3, API_VERSIONS_V3_BODY)["error_code"] == 0
        yield client


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def header_v1(api_key: int, version: int, correlation_id: int, client_id: bytes = b"bad") -> bytes:
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id


def with_version(request_frame: bytes, version: int) -> bytes:
    """A request frame with its api_version field rewritten (bytes 6-7)."""
    return request_frame[:6] + struct.pack(">h", version) + request_frame[8:]


BAD_INPUTS = {
    # name: (bytes to send, words the log line must contain)
    "negative_size": (struct.pack(">i", -1), "Invalid receive"),
    "very_negative_size": (struct.pack(">i", -(2**31)), "Invalid receive"),
    "zero_size": (frame(b""), "header"),
    "short_header": (frame(b"\x00\x12\x00\x00\x00"), "header"),
    "seven_header_bytes": (frame(b"\x00\x12\x00\x00\x00\x00\x00"), "header"),
    # client_id claims 20 bytes, 3 follow.
    "truncated_client_id": (frame(struct.pack(">hhih", 18, 1, 5, 20) + b"abc"), "header"),
    "negative_client_id_length": (frame(struct.pack(">hhih", 18, 1, 5, -7)), "header"),
    "unknown_api_key": (frame(header_v1(9999, 0, 5) + b"\x00" * 8), "9999"),
    "negative_api_key": (frame(header_v1(-1, 0, 5)), "-1"),
    "vote_not_served": (frame(header_v1(52, 0, 5) + b"\x00" * 16), "not enabled"),
    "metadata_v14": (with_version(encode_request(3, 13, 5, metadata_body(13)), 14),
                     "not enabled"),
    "metadata_negative_version": (with_version(encode_request(3, 1, 5, metadata_body(1)), -1),
                                  "not enabled"),
    "body_does_not_parse": (frame(header_v1(3, 1, 5) + struct.pack(">i", 5)), "Error getting"),
    "body_string_too_long": (frame(header_v1(3, 1, 5) + struct.pack(">ih", 1, 300) + b"ab"),
                             "Error getting"),
    "api_versions_v3_garbage_body": (frame(header_v1(18, 3, 5) + b"\x00"
                                           + b"\xff\xff\xff\xff\x0f"), "Error getting"),
}


def _assert_logged(caplog, client_port: int, reason: str) -> None:
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    matching = [r.getMessage() for r in lines
                if f"127.0.0.1:{client_port}" in r.getMessage() and reason in r.getMessage()]
    assert matching, ("no WARNING naming the connection and the reason "
                      f"{reason!r}: {[r.getMessage() for r in lines]}")


@pytest.mark.parametrize("name", list(BAD_INPUTS))
def test_bad_input_closes_only_that_connection(live, bystander, caplog, name):
    data, reason = BAD_INPUTS[name]
    port = live.bound_port()
    with caplog.at_level(logging.WARNING, logger="kafka_net"):
        with RawClient(port) as bad:
            client_port = bad.sock.getsockname()[1]
            bad.send_raw(data)
            assert closed_by_server(bad.sock), "the server kept the connection open"
        _assert_logged(caplog, client_port, reason)
    healthy(port, bystander)
    assert server_threads_alive(live)


def test_oversized_frame_is_refused_before_its_body(live, bystander, caplog):
    """tooBigRequestIsRejected: the 4 size bytes alone close the connection."""
    with caplog.at_level(logging.WARNING, logger="kafka_net"):
        with RawClient(live.bound_port()) as bad:
            client_port = bad.sock.getsockname()[1]
            bad.send_raw(struct.pack(">i", MAX_BYTES + 1))  # and not one byte of body
            assert closed_by_server(bad.sock)
        _assert_logged(caplog, client_port, f"larger than {MAX_BYTES}")
    healthy(live.bound_port(), bystander)


def test_frame_of_exactly_the_maximum_is_accepted(live):
    # A Metadata v1 request padded with trailing bytes up to the limit (trailing bytes
    # after a well-formed body are ignored, as in Kafka).
    with RawClient(live.bound_port()) as client:
        request = encode_request(3, 1, 77, metadata_body(1))
        payload = request[4:] + b"\x00" * (MAX_BYTES - len(request) + 4)
        assert len(payload) == MAX_BYTES
        client.send_raw(frame(payload))
        got, body = client.receive(3, 1)
        assert got == 77 and body["brokers"]


def test_too_new_api_versions_gets_v0_unsupported_version(live, bystander):
    """KIP-511: ApiVersions v9 is answered (v0 body, UNSUPPORTED_VERSION, only the
    ApiVersions range) and the connection stays open for the retry."""
    with RawClient(live.bound_port()) as client:
        client.send_raw(with_version(encode_request(18, 3, 41, API_VERSIONS_V3_BODY), 9))
        payload = client.recv_frame()
        # Response header v0: the correlation id only, then the v0 body.
        correlation_id, body = decode_response(18, 0, payload)
        assert correlation_id == 41
        assert body["error_code"] == 35
        assert body["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 4}]
        # correlation id, error_code, array length, one entry: nothing else (a v0 body).
        assert payload == struct.pack(">ihihhh", 41, 35, 1, 18, 0, 4)
        assert still_open(client.sock)
        # The retry on the same connection works.
        assert client.call(18, 3, API_VERSIONS_V3_BODY)["error_code"] == 0
        assert client.call(18, 0, {})["error_code"] == 0
    healthy(live.bound_port(), bystander)


def test_invalid_client_software_name_is_an_error_in_the_body(live):
    with RawClient(live.bound_port()) as client:
        body = client.call(18, 3, {"client_software_name": "-bad name-",
                                   "client_software_version": "1.0"})
        assert body["error_code"] == 42  # INVALID_REQUEST, and the connection stays
        assert client.call(18, 3, API_VERSIONS_V3_BODY)["error_code"] == 0


def test_bad_request_after_good_ones_on_the_same_connection(live, bystander):
    with RawClient(live.bound_port()) as client:
        assert client.call(18, 0, {})["error_code"] == 0
        good = encode_request(18, 1, 9, {})
        client.send_raw(good + frame(header_v1(9999, 0, 10)))
        assert client.receive(18, 1)[0] == 9   # the good one is answered first
        assert closed_by_server(client.sock)
    healthy(live.bound_port(), bystander)


def test_every_bad_input_at_once_while_traffic_flows(live, bystander):
    """All the bad connections together, interleaved with good requests."""
    port = live.bound_port()
    bad = [RawClient(port) for _ in BAD_INPUTS]
    try:
        for client, (data, _) in zip(bad, BAD_INPUTS.values()):
            client.send_raw(data)
            assert bystander.call(18, 1, {})["error_code"] == 0
        for client in bad:
            assert closed_by_server(client.sock)
    finally:
        for client in bad:
            client.close()
    healthy(port, bystander)
    assert server_threads_alive(live)
    processors = live.socket_server.processors
    assert sum(len(p.selector.channels) for p in processors) >= 1  # the bystander


def test_repeated_bad_frames_from_one_address_log_once(live, bystander, caplog):
    """A client that connects and sends garbage in a loop cannot write the log."""
    port = live.bound_port()
    with caplog.at_level(logging.WARNING, logger="kafka_net"):
        for _ in range(50):
            with RawClient(port) as bad:
                bad.send_raw(struct.pack(">i", -1))
                assert closed_by_server(bad.sock)
        healthy(port, bystander)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
