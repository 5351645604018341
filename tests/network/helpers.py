"""Helpers shared by the network and integration tests (not a test module)."""

from __future__ import annotations

import contextlib
import os
import random
import socket
import struct
import threading
import time

from kafka_net.server.apis import HANDLERS
from tests.support import API_VERSIONS_V3_BODY, RawClient

TIMEOUT = 10.0


def api_versions_body(version: int) -> dict:
    return dict(API_VERSIONS_V3_BODY) if version >= 3 else {}


def metadata_body(version: int, topics=None) -> dict:
    if topics is None:
        topics = [] if version == 0 else None  # "all topics" in each version's spelling
    return {"topics": topics, "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}


def send_chunks(sock: socket.socket, chunks, delay: float = 0.002) -> None:
    """Send each chunk on its own, pausing between them so that (with TCP_NODELAY on
    both ends) the server really receives them in separate reads."""
    for i, chunk in enumerate(chunks):
        if i:
            time.sleep(delay)
        sock.sendall(chunk)


def split_at(data: bytes, *cuts: int) -> list[bytes]:
    points = [0, *sorted(c for c in cuts if 0 < c < len(data)), len(data)]
    return [data[a:b] for a, b in zip(points, points[1:]) if b > a]


def chunkings(frame: bytes, seed: int = 0) -> dict[str, list[bytes]]:
    """The chunkings every request must survive: whole, byte by byte, split inside the
    4-byte size prefix, split inside the request header, and seeded random pieces."""
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(frame)), min(5, len(frame) - 1)))
    return {
        "whole": [frame],
        "byte_by_byte": [frame[i:i + 1] for i in range(len(frame))],
        "size_1_3": split_at(frame, 1),
        "size_2_2": split_at(frame, 2),
        "size_3_1": split_at(frame, 3),
        "size_then_body": split_at(frame, 4),
        "header_api_key": split_at(frame, 5),          # inside api_key
        "header_version": split_at(frame, 7),          # inside api_version
        "header_correlation": split_at(frame, 10),     # inside correlation_id
        "header_client_id": split_at(frame, 4 + 8 + 2 + 3),  # inside client_id
        "random": split_at(frame, *cuts),
    }


def closed_by_server(sock: socket.socket, timeout: float = 5.0) -> bool:
    """True if the server closes (EOF or RST) within ``timeout`` without sending data.

    Raises AssertionError if data arrives instead."""
    sock.settimeout(timeout)
    try:
        data = sock.recv(1)
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
    finally:
        sock.settimeout(TIMEOUT)
    assert data == b"", f"server sent data instead of closing: {data!r}"
    return True


def still_open(sock: socket.socket, timeout: float = 0.3) -> bool:
    """True if nothing (no data, no EOF) arrives within ``timeout``."""
    sock.settimeout(timeout)
    try:
        sock.recv(1, socket.MSG_PEEK)
    except socket.timeout:
        return True
    except OSError:
        return False
    finally:
        sock.settimeout(TIMEOUT)
    return False


def healthy(port: int, client: RawClient | None = None) -> None:
    """Kafka's assertProcessorHealthy: an existing connection and a new one both work."""
    if client is not None:
        assert client.call(18, 0, {})["error_code"] == 0
    with RawClient(port) as fresh:
        assert fresh.call(18, 3, API_VERSIONS_V3_BODY)["error_code"] == 0
        assert fresh.call(3, 12, metadata_body(12))["brokers"][0]["port"] == port


def server_threads_alive(server) -> bool:
    threads = [*server.socket_server.acceptors, *server.socket_server.processors,
               *server.handler_pool.handlers]
    return bool(threads) and all(t.is_alive() for t in threads)


def rst_close(sock: socket.socket) -> None:
    """Close with SO_LINGER 0: the peer gets a TCP RST, not a FIN."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class SlowHandler:
    """A handler module wrapper: same API_KEY/VERSIONS/error_response, ``handle`` sleeps
    first (fixed, or seeded-random up to ``max_delay``) and can be gated on an event."""

    def __init__(self, module, delay: float = 0.0, max_delay: float = 0.0, seed: int = 0,
                 gate: threading.Event | None = None) -> None:
        self._module = module
        self.API_KEY = module.API_KEY
        self.VERSIONS = HANDLERS[module.API_KEY].VERSIONS   # the row: modules hold no VERSIONS
        self.error_response = module.error_response
        self.delay = delay
        self.max_delay = max_delay
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.gate = gate
        self.started = 0
        self.calls = 0

    def handle(self, ctx, body):
        with self._lock:
            self.started += 1
            delay = self.delay + (self._rng.uniform(0, self.max_delay) if self.max_delay else 0)
        if self.gate is not None:
            self.gate.wait(TIMEOUT)
        if delay:
            time.sleep(delay)
        result = self._module.handle(ctx, body)
        with self._lock:
            self.calls += 1
        return result


def open_fds() -> int:
    with contextlib.suppress(FileNotFoundError):
        return len(os.listdir("/proc/self/fd"))
    import psutil
    return psutil.Process().num_fds()
