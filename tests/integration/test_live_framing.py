"""Framing on a real socket: requests arrive in every chunking and are answered correctly.

The codec's framing has its own unit tests; here the bytes really cross TCP in separate
segments (TCP_NODELAY on both ends plus a short pause between chunks), so the Processor's
partial reads and the FrameDecoder are exercised together."""

from __future__ import annotations

import pytest

from kafka_net.protocol import encode_request
from tests.network.helpers import (
    api_versions_body, chunkings, metadata_body, send_chunks, split_at)
from tests.support import RawClient, make_config, running_server

CHUNKINGS = list(chunkings(b"\x00" * 40))


@pytest.fixture(scope="module")
def live():
    with running_server(make_config(num_network_threads=2, num_io_threads=2)) as server:
        yield server


@pytest.fixture
def client(live):
    with RawClient(live.bound_port()) as c:
        yield c


def check_api_versions(body: dict, version: int) -> None:
    assert body["error_code"] == 0
    keys = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
    assert keys[18] == (0, 4) and keys[3] == (0, 13)
    if version >= 1:
        assert body["throttle_time_ms"] == 0


@pytest.mark.parametrize("how", CHUNKINGS)
@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_in_every_chunking(client, version, how):
    correlation_id = 1000 + version
    frame = encode_request(18, version, correlation_id, api_versions_body(version))
    send_chunks(client.sock, chunkings(frame, seed=version)[how])
    got, body = client.receive(18, version)
    assert got == correlation_id
    check_api_versions(body, version)


@pytest.mark.parametrize("how", CHUNKINGS)
@pytest.mark.parametrize("version", [0, 4, 8, 9, 12])
def test_metadata_in_every_chunking(live, client, version, how):
    correlation_id = 2000 + version
    frame = encode_request(3, version, correlation_id, metadata_body(version))
    send_chunks(client.sock, chunkings(frame, seed=version)[how])
    got, body = client.receive(3, version)
    assert got == correlation_id
    assert [(b["node_id"], b["host"], b["port"]) for b in body["brokers"]] == [
        (1, "127.0.0.1", live.bound_port())]


def test_pipelined_frames_split_across_boundaries(client):
    """Several requests in one stream, cut so chunks straddle frame boundaries."""
    frames = [encode_request(18, v % 5, 3000 + i, api_versions_body(v % 5))
              for i, v in enumerate(range(10))]
    stream = b"".join(frames)
    boundaries, pos = [], 0
    for f in frames:
        pos += len(f)
        boundaries.append(pos)
    # Cut 2 bytes before and 3 after every boundary: each chunk ends one frame's body
    # and starts the next one's size prefix.
    cuts = [b + d for b in boundaries[:-1] for d in (-2, 3)]
    send_chunks(client.sock, split_at(stream, *cuts))
    for i in range(10):
        got, body = client.receive(18, i % 5)
        assert got == 3000 + i
        check_api_versions(body, i % 5)


def test_many_requests_in_one_segment(client):
    frames = [encode_request(3, 12, 4000 + i, metadata_body(12)) for i in range(30)]
    client.send_raw(b"".join(frames))
    for i in range(30):
        assert client.receive(3, 12)[0] == 4000 + i


def test_large_request_read_in_many_pieces(live, client):
    """A request far bigger than one socket read (many topic names), byte-exact."""
    topics = [{"name": f"topic-{i:05d}-" + "x" * 200} for i in range(700)]  # ~150 KiB
    body = metadata_body(4, topics=topics)
    frame = encode_request(3, 4, 5000, body)
    assert len(frame) > 2 * 64 * 1024  # more than two socket reads (READ_CHUNK)
    send_chunks(client.sock, split_at(frame, *range(997, len(frame), 9973)), delay=0.0005)
    got, response = client.receive(3, 4)
    assert got == 5000
    assert [t["name"] for t in response["topics"]] == [t["name"] for t in topics]
