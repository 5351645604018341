"""Requests that do not arrive at a sane rate (issue 20).

With ``queued.max.request.bytes`` set, a frame's bytes are granted from the
pool as soon as its size is known (Kafka's NetworkReceive).  Two connections
that announced 100 MiB requests and then sent a byte now and then used to
hold those grants, and so starve every other client, for as long as they
dripped; a dripping connection was never closed (Kafka has the same
weakness).  ``socket.request.read.timeout.ms`` (short here, but for the pool
case, where the default holds and the pool's pressure shortens it) and
``socket.request.read.min.bytes.per.second`` close them; a large request sent
at a sane rate is served.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading

import pytest

from kafka_net.config import ServerConfig
from kafka_net.protocol.api_keys import ApiKey
from tests.support import (LOOPBACK, RawClient, produce_body, request_body, running_server,
                           wait_until)

HUNDRED_MIB = 100 * 1024 * 1024
METADATA = (ApiKey.METADATA, 9, request_body(ApiKey.METADATA, topics=[]))


def broker(**props: str) -> ServerConfig:
    return ServerConfig.from_properties({
        "listeners": f"PLAINTEXT://{LOOPBACK}:0", "log.store": "memory",
        "num.network.threads": "2",
        "num.io.threads": "2", "shutdown.timeout.ms": "5000",
        "socket.request.read.timeout.ms": "300", **props})


class Dripper:
    """Announces a 100 MiB request, then sends one byte every 50 ms (at most
    400 of them) until the broker closes the connection."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection((LOOPBACK, port))
        self.sock.sendall(struct.pack(">i", HUNDRED_MIB) + b"\x00\x03\x00\x09")
        self.closed_by_broker = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drip, daemon=True)
        self._thread.start()

    def _drip(self) -> None:
        for _ in range(400):
            if self._stop.wait(0.05):
                return
            try:
                self.sock.send(b"\x00")
            except OSError:   # reset or broken pipe: the broker closed it
                self.closed_by_broker.set()
                return

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


def answered(client: RawClient) -> bool:
    try:
        return bool(client.call(*METADATA)["brokers"])
    except (OSError, ConnectionError):
        return False


def test_two_dripping_100_mib_announcements_leave_bystanders_served(caplog):
    """On the default 30 s timeout: while the pool is out of memory, a request
    not arriving at the minimum rate has 1 s."""
    caplog.set_level(logging.WARNING)
    pool_bytes = 150 * 1024 * 1024   # both announcements are granted (non-strict pool)
    with running_server(broker(**{"queued.max.request.bytes": str(pool_bytes),
                                  "socket.request.read.timeout.ms": "30000"})) as server:
        port = server.bound_port("PLAINTEXT")
        pool = server.socket_server.memory_pool
        drippers = [Dripper(port), Dripper(port)]
        try:
            # Both grants are out: every other request now waits for memory.
            assert wait_until(lambda: pool.available <= 0), pool.available
            bystanders = [RawClient(port) for _ in range(5)]
            try:
                assert all(answered(b) for b in bystanders)
            finally:
                for bystander in bystanders:
                    bystander.close()
            # The pool is no longer out once one grant is back: the other dripper
            # then has the whole timeout, as nobody waits for its memory.
            assert wait_until(lambda: any(d.closed_by_broker.is_set() for d in drippers))
        finally:
            for dripper in drippers:
                dripper.close()
        assert wait_until(lambda: pool.available == pool_bytes)   # every grant back
        assert any("socket.request.read.timeout.ms=30000 (1000 while the memory pool is "
                   "out)" in r.getMessage() for r in caplog.records)


def test_a_dripping_request_is_closed_without_a_pool():
    with running_server(broker()) as server:
        dripper = Dripper(server.bound_port("PLAINTEXT"))
        try:
            assert dripper.closed_by_broker.wait(10)
        finally:
            dripper.close()


@pytest.mark.parametrize("pool", ["-1", str(HUNDRED_MIB)])
def test_a_large_request_at_a_sane_rate_is_served(pool):
    """1 MiB in 64 KiB pieces 20 ms apart (3 MiB/s), taking longer than the
    300 ms timeout alone: the bytes received keep extending it."""
    with running_server(broker(**{"queued.max.request.bytes": pool})) as server:
        with RawClient(server.bound_port("PLAINTEXT")) as client:
            correlation_id, frame = client.request_frame(
                ApiKey.PRODUCE, 9, produce_body("big", 0, b"\x00" * (1 << 20)))
            pieces = [frame[i:i + 65536] for i in range(0, len(frame), 65536)]
            stop = threading.Event()
            for piece in pieces:
                client.send_raw(piece)
                stop.wait(0.02)
            got, body = client.receive(ApiKey.PRODUCE, 9)
            assert got == correlation_id and body["responses"]


def test_the_plaintext_path_never_enters_the_deadline_tables():
    """A PLAINTEXT channel is ready at once (no authentication deadline), and a
    request that arrives in one read never starts a request-read clock."""
    with running_server(broker()) as server:
        with RawClient(server.bound_port("PLAINTEXT")) as client:
            for _ in range(20):
                assert answered(client)
            selectors = [p.selector for p in server.socket_server.processors]
            assert not any(s._auth_deadlines or s._partial_requests for s in selectors)
