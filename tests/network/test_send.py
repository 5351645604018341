"""MultiRecordsSend and transfer_from on their own: a ChunkedFrame (bytes and file
regions) written to a non-blocking socketpair whose buffers are small, so that
every write is partial; the bytes that arrive are the frame's, in order; a
file shorter than its region fails the send; the TLS transport reads at most
one APP_WRITE_CHUNK of a region per call; the Selector finishes a send on
later writable events and only then reports it complete."""

from __future__ import annotations

import os
import selectors
import socket
import ssl

import pytest

from kafka_net.network.kafka_channel import KafkaChannel
from kafka_net.network.send import FileRegion, MultiRecordsSend, TruncatedRegionError, read_prefix
from kafka_net.network.ssl_transport_layer import SslTransportLayer
from kafka_net.network.transport_layer import APP_WRITE_CHUNK, PlaintextTransportLayer
from kafka_net.protocol.chunked import ChunkedFrame
from tests.network.test_transport_layer import Client, factory
from tests.tls_support import pki  # noqa: F401  (pki is a fixture)


@pytest.fixture
def region_file(tmp_path):
    data = os.urandom(600_000)
    fd = os.open(tmp_path / "00000000000000000000.log", os.O_RDWR | os.O_CREAT)
    os.write(fd, data)
    yield fd, data
    os.close(fd)


def small_pair():
    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    a.setblocking(False)
    b.settimeout(10)
    return a, b


def frame_of(fd, data):
    """header bytes, a region, bytes, a region: and the same as one bytes."""
    chunks = [b"HEAD" * 10, FileRegion(fd, 1000, 300_000), b"MID",
              FileRegion(fd, 400_000, 200_000)]
    expected = chunks[0] + data[1000:301_000] + b"MID" + data[400_000:600_000]
    return ChunkedFrame(chunks, len(expected)), expected


def drain(sock, n: int = 65536) -> bytes:
    sock.setblocking(False)
    out = bytearray()
    try:
        while chunk := sock.recv(n):
            out += chunk
    except BlockingIOError:
        pass
    return bytes(out)


def test_plaintext_send_is_partial_then_resumed_byte_for_byte(region_file, monkeypatch):
    fd, data = region_file
    frame, expected = frame_of(fd, data)
    calls = []
    real = os.sendfile
    monkeypatch.setattr(os, "sendfile", lambda *a: calls.append(a) or real(*a))
    a, b = small_pair()
    transport, send = PlaintextTransportLayer(a), MultiRecordsSend(frame)
    got, writes, total = bytearray(), 0, 0
    while not send.completed() and writes < 10_000:   # bounded
        total += send.write_to(transport)
        writes += 1
        got += drain(b)
    got += drain(b)
    assert send.completed() and bytes(got) == expected and total == len(expected)
    assert writes > 2             # the socket took it in several partial writes
    assert len(calls) > 2         # the regions went out with sendfile, in pieces
    a.close(), b.close()


def test_a_region_past_the_end_of_its_file_fails_the_send(region_file):
    fd, data = region_file
    a, b = socket.socketpair()
    send = MultiRecordsSend(ChunkedFrame([FileRegion(fd, 599_000, 2000)], 2000))
    transport = PlaintextTransportLayer(a)
    with pytest.raises(TruncatedRegionError, match="truncated during write"):
        for _ in range(10):
            send.write_to(transport)
    a.close(), b.close()


def test_tls_transfer_reads_one_chunk_at_a_time(region_file, pki, monkeypatch):
    fd, data = region_file
    frame, expected = frame_of(fd, data)
    reads = []
    real = os.pread
    monkeypatch.setattr(os, "pread", lambda f, n, p: reads.append(n) or real(f, n, p))
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    server = SslTransportLayer(a, factory(pki).context)
    client = Client(pki)
    for _ in range(50):   # the handshake, one flight at a time
        client.step()
        if client.outgoing.pending:
            b.sendall(client.outgoing.read())
        server.handshake()
        try:
            client.incoming.write(b.recv(65536))
        except BlockingIOError:
            pass
        if server.ready() and client.step():
            break
    send, got = MultiRecordsSend(frame), bytearray()
    for _ in range(10_000):
        send.write_to(server)
        if send.completed() and server.has_pending_writes():
            try:
                server.write(memoryview(b""))
            except BlockingIOError:
                pass
        client.incoming.write(drain(b))
        try:
            while chunk := client.tls.read(65536):
                got += chunk
        except ssl.SSLWantReadError:
            pass
        if send.completed() and not server.has_pending_writes() and len(got) == len(expected):
            break
    assert bytes(got) == expected
    assert reads and max(reads) <= APP_WRITE_CHUNK   # never a whole region in memory
    a.close(), b.close()


def test_read_prefix_reads_no_more_than_asked(region_file):
    fd, data = region_file
    frame, expected = frame_of(fd, data)
    for limit in (0, 10, 40, 41, 5000, len(expected), len(expected) + 10):
        assert read_prefix(frame, limit) == expected[:limit]


def test_the_channel_completes_a_chunked_send_only_when_every_byte_is_out(region_file):
    fd, data = region_file
    frame, expected = frame_of(fd, data)
    a, b = small_pair()
    channel = KafkaChannel("c1", a, 1 << 20)
    channel.set_send(frame)
    with pytest.raises(RuntimeError, match="prior send operation still in progress"):
        channel.set_send(b"more")
    got = bytearray()
    sel = selectors.DefaultSelector()
    sel.register(a, selectors.EVENT_WRITE)
    for _ in range(10_000):
        if channel.write():
            break
        assert channel.has_send()
        got += drain(b)
        sel.select(1)
    got += drain(b)
    assert not channel.has_send() and bytes(got) == expected
    assert channel._send_offset == len(expected)
    sel.close(), a.close(), b.close()
