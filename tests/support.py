"""Shared test harness: a real server on 127.0.0.1:0 and a raw-socket Kafka client."""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import struct
import time

import pytest

from kafka_net.config import ConfigError, ServerConfig, parse_listeners
from kafka_net.protocol import decode_response, encode_request
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.kafka_server import KafkaServer

LOOPBACK = "127.0.0.1"


def make_config(**overrides) -> ServerConfig:
    """Small and fast: ephemeral port, few threads, short shutdown wait."""
    base = dict(listeners=parse_listeners(f"PLAINTEXT://{LOOPBACK}:0"),
                num_network_threads=2, num_io_threads=4, shutdown_timeout_ms=5000,
                log_store="memory")
    base.update(overrides)
    return ServerConfig(**base)


@contextlib.contextmanager
def running_server(config: ServerConfig | None = None, apis_handlers=None, memory_pool=None):
    """A started KafkaServer, shut down on exit; ``memory_pool`` replaces the
    server's (a seam: tests count or fail allocations)."""
    server = KafkaServer(config or make_config())
    if memory_pool is not None:
        server.socket_server.memory_pool = memory_pool   # before startup builds the Processors
    if apis_handlers is not None:
        # Replaces or adds handler modules: any object with API_KEY, VERSIONS,
        # handle(ctx, body) and error_response(body, version, code) will do.
        server.apis.set_handlers({**server.apis.handlers, **apis_handlers})
    server.startup()
    try:
        yield server
    finally:
        server.shutdown()


def config(**props: str) -> ServerConfig:
    """ServerConfig from keyword props; ``num_io_threads=`` means ``num.io.threads``."""
    return ServerConfig.from_properties({k.replace("_", "."): v for k, v in props.items()})


def config_error(props: dict[str, str]) -> str:
    """The message of the ConfigError ``props`` must raise."""
    with pytest.raises(ConfigError) as info:
        ServerConfig.from_properties(props)
    return str(info.value)


def server_fixture(config=make_config, scope: str = "function", as_version: bool = False):
    """A ``server`` fixture: a running broker on an ephemeral loopback port, made
    with ``config()``; a module that wants other settings or one broker for all
    its tests writes ``server = server_fixture(..., scope="module")``.

    ``as_version=True``: the broker plays the release of the module's
    ``as_version`` fixture (:func:`as_version_fixture`), so each test using
    ``server`` runs once per release of the client matrix."""

    if as_version:
        @pytest.fixture(scope=scope)
        def server(as_version):
            with running_server(playing(config(), as_version)) as running:
                yield running
        return server

    @pytest.fixture(scope=scope)
    def server():
        with running_server(config()) as running:
            yield running

    return server


# The client matrix (issue 22): the real-client suites run against kafka-net as
# it is (None: as.version unset) and playing these Kafka releases.  Test ids
# carry "as-default", "as-2.8", ...: ``pytest -k as-3.9`` runs one column.
CLIENT_MATRIX = (None, "2.8", "3.9", "4.2")


def as_version_id(release: str | None) -> str:
    return f"as-{release or 'default'}"


def as_version_fixture(releases=CLIENT_MATRIX, scope: str = "module"):
    """An ``as_version`` fixture: the release (or None) a module's broker plays,
    one per entry of ``releases``; modules define it next to
    ``server_fixture(..., as_version=True)``."""

    @pytest.fixture(scope=scope, params=releases, ids=as_version_id)
    def as_version(request):
        return request.param

    return as_version


def playing(config: ServerConfig, release: str | None) -> ServerConfig:
    """``config`` with as.version set to ``release`` (None: unset)."""
    return dataclasses.replace(config, as_version=release)


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
        return recv_frame(self.sock)

    def receive(self, api_key: int, api_version: int) -> tuple[int, dict]:
        return decode_response(api_key, api_version, self.recv_frame())

    def call(self, api_key: int, api_version: int, body: dict) -> dict:
        correlation_id = self.send(api_key, api_version, body)
        got, response = self.receive(api_key, api_version)
        assert got == correlation_id, (got, correlation_id)
        return response

    def is_closed_by_server(self, timeout: float = 5.0) -> bool:
        """True if the server closes the connection (EOF or reset) within ``timeout``."""
        return closed_by_peer(self.sock, timeout)

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


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    """``n`` bytes from a blocking socket; raises ConnectionError on EOF."""
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            raise ConnectionError("server closed the connection")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def closed_by_peer(sock: socket.socket, timeout: float = 5.0) -> bool:
    """True if the peer closes the connection (EOF or reset) within ``timeout``."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def recv_frame(sock: socket.socket) -> bytes:
    """One size-prefixed frame's payload from a blocking socket."""
    (size,) = struct.unpack(">i", recv_exactly(sock, 4))
    return recv_exactly(sock, size)


# -- request bodies -------------------------------------------------------------------


def request_body(api_key: int, version: int | None = None, /, **fields) -> dict:
    """Every field of the request at its default, then ``fields`` on top (the
    defaults are the same at every version, so ``version`` is for the reader)."""
    body = MESSAGES[api_key].request.defaults()
    body.update(fields)
    return body


def produce_body(topic: str, partition: int, records: bytes | None, acks: int = 1,
                 timeout_ms: int = 10_000, topic_id=ZERO_UUID,
                 transactional_id: str | None = None) -> dict:
    """A Produce request: ``records`` (one or more batches) for one partition;
    ``topic_id`` names the topic from v13 on."""
    return dict(transactional_id=transactional_id, acks=acks, timeout_ms=timeout_ms,
                topic_data=[{"name": topic, "topic_id": topic_id,
                             "partition_data": [{"index": partition, "records": records}]}])


def fetch_body(partitions, max_wait_ms: int = 0, min_bytes: int = 1,
               max_bytes: int = 1 << 20, partition_max_bytes: int = 1 << 20,
               topic_ids: dict | None = None, **fields) -> dict:
    """A Fetch request for ``partitions``, (topic, partition, fetch_offset) triples,
    grouped by topic in the order given; ``topic_ids`` names each topic's id (v13+)."""
    topics: dict[str, list] = {}
    for topic, partition, offset in partitions:
        topics.setdefault(topic, []).append(
            {"partition": partition, "fetch_offset": offset,
             "partition_max_bytes": partition_max_bytes})
    ids = topic_ids or {}
    return dict(max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
                topics=[{"topic": name, "topic_id": ids.get(name, ZERO_UUID), "partitions": parts}
                        for name, parts in topics.items()], **fields)


API_VERSIONS_V3_BODY = {"client_software_name": "kafka-net-tests",
                        "client_software_version": "1.0"}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that reach each other (Tarjan's strongly connected
    components of more than one module, or of one importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1 or v in graph[v]:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found
