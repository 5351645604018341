"""Shared test harness: a real server on 127.0.0.1:0 and a raw-socket Kafka client."""

from __future__ import annotations

import contextlib
import socket
import struct
import time

from kafka_net.config import ServerConfig, parse_listeners
from kafka_net.protocol import decode_response, encode_request
from kafka_net.server.kafka_server import KafkaServer

LOOPBACK = "127.0.0.1"


def make_config(**overrides) -> ServerConfig:
    """Small and fast: ephemeral port, few threads, short shutdown wait."""
    base = dict(listeners=parse_listeners(f"PLAINTEXT://{LOOPBACK}:0"),
                num_network_threads=2, num_io_threads=4, shutdown_timeout_ms=5000)
    base.update(overrides)
    return ServerConfig(**base)


@contextlib.contextmanager
def running_server(config: ServerConfig | None = None, apis_handlers=None):
    server = KafkaServer(config or make_config())
    if apis_handlers is not None:
        # Replaces or adds handler modules: any object with API_KEY, VERSIONS,
        # handle(ctx, body) and error_response(body, version, code) will do.
        server.apis.set_handlers({**server.apis.handlers, **apis_handlers})
    server.startup()
    try:
        yield server
    finally:
        server.shutdown()


class RawClient:
    """A blocking socket speaking size-prefixed Kafka frames; every call has a timeout."""

    def __init__(self, port: int, host: str = LOOPBACK, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._next_correlation_id = 0

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def request_frame(self, api_key: int, api_version: int, body: dict,
                      correlation_id: int | None = None) -> tuple[int, bytes]:
        if correlation_id is None:
            correlation_id = self._next_correlation_id
            self._next_correlation_id += 1
        return correlation_id, encode_request(api_key, api_version, correlation_id, body)

    def send(self, api_key: int, api_version: int, body: dict,
             correlation_id: int | None = None) -> int:
        correlation_id, frame = self.request_frame(api_key, api_version, body, correlation_id)
        self.sock.sendall(frame)
        return correlation_id

    def recv_frame(self) -> bytes:
        """One response payload; raises ConnectionError on EOF."""
        (size,) = struct.unpack(">i", self._recv_exactly(4))
        return self._recv_exactly(size)

    def receive(self, api_key: int, api_version: int) -> tuple[int, dict]:
        return decode_response(api_key, api_version, self.recv_frame())

    def call(self, api_key: int, api_version: int, body: dict) -> dict:
        correlation_id = self.send(api_key, api_version, body)
        got, response = self.receive(api_key, api_version)
        assert got == correlation_id, (got, correlation_id)
        return response

    def is_closed_by_server(self, timeout: float = 5.0) -> bool:
        """True if the server closes the connection (EOF or reset) within ``timeout``."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    def _recv_exactly(self, n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            chunk = self.sock.recv(n - got)
            if not chunk:
                raise ConnectionError("server closed the connection")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "RawClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def wait_until(predicate, timeout: float = 10.0, interval: float = 0.01) -> bool:
    """Poll ``predicate`` until true or ``timeout``; returns its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


API_VERSIONS_V3_BODY = {"client_software_name": "kafka-net-tests",
                        "client_software_version": "1.0"}
