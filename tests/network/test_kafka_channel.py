"""KafkaChannel (kafka_net/network/kafka_channel.py) on its own, over socketpairs:
reads into the frame decoder (and not beyond a complete request or a refused
pool grant), one send at a time resumed after partial writes, the peer's
address, and close giving a partial frame's pool grant back."""

from __future__ import annotations

import select
import socket
import struct

import pytest

from kafka_net.network.kafka_channel import READ_CHUNK, KafkaChannel
from kafka_net.network.memory_pool import SimpleMemoryPool
from kafka_net.network.mute_state import ChannelMuteState

TIMEOUT = 10.0


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@pytest.fixture
def pair():
    """(channel over the server end, the client end)."""
    client, server = socket.socketpair()
    server.setblocking(False)
    client.settimeout(TIMEOUT)
    channel = KafkaChannel("c1", server, max_frame_size=1 << 20)
    try:
        yield channel, client
    finally:
        channel.close()
        client.close()


def read_until(channel: KafkaChannel, n: int) -> int:
    """Read until ``n`` bytes arrived (each read takes what the socket has)."""
    got = 0
    for _ in range(1000):
        r = channel.read()
        if r > 0:
            got += r
        if got >= n:
            return got
    raise AssertionError(f"read {got} of {n} bytes")


# -- reads ------------------------------------------------------------------------------


def test_read_reports_bytes_nothing_and_eof(pair):
    channel, client = pair
    assert channel.read() == -1                     # nothing to read yet
    client.sendall(frame(b"abc")[:5])
    assert read_until(channel, 5) == 5
    assert not channel.has_complete_receive()        # the frame is not all here
    client.sendall(frame(b"abc")[5:])
    read_until(channel, 2)
    assert channel.has_complete_receive()
    assert channel.decoder.next_frame() == b"abc"
    client.shutdown(socket.SHUT_WR)
    assert channel.read() == 0                      # EOF


def test_no_read_while_a_complete_request_is_buffered(pair):
    """Kafka reads no further while a completed receive waits to be taken."""
    channel, client = pair
    client.sendall(frame(b"one"))
    read_until(channel, 7)
    client.sendall(frame(b"two"))
    assert channel.read() == -1 and channel.decoder.buffered() == 7
    assert channel.decoder.next_frame() == b"one"
    read_until(channel, 7)
    assert channel.decoder.next_frame() == b"two"


def test_no_read_while_the_pool_refuses_the_frame_under_way():
    pool = SimpleMemoryPool(100, 100, strict=True)
    client, server = socket.socketpair()
    server.setblocking(False)
    channel = KafkaChannel("c1", server, 1 << 20, memory_pool=pool)
    try:
        assert pool.try_allocate(100)               # someone else holds all of it
        client.sendall(frame(b"x" * 50)[:10])
        read_until(channel, 10)
        assert channel.decoder.waiting_for_memory()
        client.sendall(frame(b"x" * 50)[10:])
        assert channel.read() == -1                 # nothing read: no memory for it
        pool.release(100)
        read_until(channel, 44)
        assert channel.decoder.next_frame() == b"x" * 50
    finally:
        channel.close()
        client.close()


def test_one_read_takes_at_most_one_chunk(pair):
    channel, client = pair
    client.sendall(frame(b"y" * (3 * READ_CHUNK))[:READ_CHUNK + 1000])
    assert select.select([channel.socket], [], [], TIMEOUT)[0]
    got = channel.read()
    assert 0 < got <= READ_CHUNK


def test_a_reset_connection_raises_from_read():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname(), timeout=TIMEOUT)
        server, _ = listener.accept()
    server.setblocking(False)
    channel = KafkaChannel("c1", server, 1 << 20)
    try:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()                              # RST, not FIN
        assert select.select([server], [], [], TIMEOUT)[0], "the reset never arrived"
        with pytest.raises(ConnectionResetError):
            channel.read()
    finally:
        channel.close()


# -- writes -----------------------------------------------------------------------------


def test_one_send_at_a_time(pair):
    channel, _ = pair
    assert not channel.has_send() and channel.write() is False
    channel.set_send(b"abc")
    assert channel.has_send()
    with pytest.raises(RuntimeError, match="prior send operation still in progress, "
                                           "connection id is c1"):
        channel.set_send(b"def")


def test_partial_writes_resume_where_they_stopped(pair):
    channel, client = pair
    channel.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    data = bytes(range(256)) * 4096                 # 1 MiB: more than the buffers hold
    channel.set_send(data)
    assert channel.write() is False and channel.has_send()   # the socket took a part
    received = bytearray()
    for _ in range(100_000):
        if channel.write():
            break
        received += client.recv(1 << 16)
    else:
        raise AssertionError("the send never finished")
    assert not channel.has_send()
    while len(received) < len(data):
        received += client.recv(1 << 16)
    assert bytes(received) == data                  # nothing lost, nothing repeated
    channel.set_send(b"next")                        # the slot is free again
    assert channel.write() is True


# -- identity and close -----------------------------------------------------------------


def test_peer_of_a_tcp_connection():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname(), timeout=TIMEOUT)
        server, _ = listener.accept()
    channel = KafkaChannel("c1", server, 1 << 20)
    try:
        host, port = client.getsockname()[:2]
        assert channel.peer[:2] == (host, port)
        assert channel.peer_text == f"{host}:{port}"
        assert repr(channel) == f"KafkaChannel(c1, {ChannelMuteState.NOT_MUTED.name})"
    finally:
        channel.close()
        client.close()


def test_peer_of_a_socket_without_one():
    sock = socket.socket()
    channel = KafkaChannel("c1", sock, 1 << 20)
    assert channel.peer == ("?", 0) and channel.peer_text == "?:0"
    channel.close()


def test_close_gives_a_partial_frames_grant_back_and_closes_the_socket():
    pool = SimpleMemoryPool(1000, 1000)
    client, server = socket.socketpair()
    server.setblocking(False)
    channel = KafkaChannel("c1", server, 1 << 20, memory_pool=pool)
    try:
        client.sendall(frame(b"z" * 100)[:20])      # size known, body not all here
        read_until(channel, 20)
        assert pool.available == 900
        channel.close()
        assert pool.available == 1000
        assert server.fileno() == -1
        channel.close()                             # twice is harmless
    finally:
        client.close()
