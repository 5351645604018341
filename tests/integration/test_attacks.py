"""Attacks of a hostile client against ``kafka-net serve`` on its defaults (issue 8).

Each test starts the real daemon as a subprocess (only the listener is
overridden, to 127.0.0.1 port 0; a few tests set the one key they are
about), plays one attack in a bounded loop over loopback, and then checks
what an operator would check:

* the broker is still up and a bystander client is still answered: a raw
  socket looping ApiVersions and Metadata while the attack runs, and a fresh
  connection afterwards;
* no thread died: the process has as many threads as before the attack, and
  its log has no "Traceback" or "Exception in thread";
* file descriptors and the broker's TCP connections return to their baseline
  (psutil on the broker's pid);
* the attack added at most ``ATTACK_LOG_LINES`` lines to the log.

Timeouts here are hang guards only; nothing asserts how long anything took.

Tests marked ``needs_branch(...)`` play attacks whose defence lives on another
branch (records: decompression limit; mempool: queued.max.request.bytes;
quotas: max.connections.per.ip).  They are strict xfails on this branch: once
the named branch is merged they pass, strict xfail turns that into a failure,
and the mark is to be deleted then.
"""

from __future__ import annotations

import contextlib
import selectors
import signal
import socket
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import psutil
import pytest

from kafka_net.daemon import EXIT_OK
from kafka_net.protocol import encode_request
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import Compression, build_batch
from tests.integration.test_cli import CLEAN_STOP, EPHEMERAL, Broker, serve
from tests.support import (
    API_VERSIONS_V3_BODY, LOOPBACK, RawClient, fetch_body, request_body, wait_until)

HANG_GUARD = 30.0          # seconds; only so that a hung broker fails the test
ATTACK_LOG_LINES = 30      # the most log lines one whole attack may add
HUGE = 2**31 - 1
MiB = 1 << 20


def needs_branch(name: str):
    return pytest.mark.xfail(
        strict=True, reason=f"needs branch `{name}`: delete this mark once it is merged")


# -- the broker under attack and its baseline --------------------------------------------


def tcp_connections(proc: psutil.Process) -> int:
    """The broker's TCP connections, listening sockets left out."""
    return sum(1 for c in proc.net_connections(kind="tcp") if c.status != psutil.CONN_LISTEN)


@dataclass
class Target:
    broker: Broker
    port: int
    proc: psutil.Process
    threads: int = 0
    fds: int = 0
    connections: int = 0
    rss: int = 0
    first_line: int = 0

    def take_baseline(self) -> None:
        served(self.port)   # every lazily created thing exists before we count
        self.threads = self.proc.num_threads()
        self.fds = self.proc.num_fds()
        self.connections = tcp_connections(self.proc)
        self.rss = self.proc.memory_info().rss
        self.first_line = self.broker.line_count()

    def new_log(self) -> str:
        return "".join(self.broker.stderr.splitlines(keepends=True)[self.first_line:])

    def assert_recovered(self) -> None:
        assert self.broker.proc.poll() is None, f"the broker died:\n{self.broker.stderr}"
        served(self.port)
        assert wait_until(lambda: self.proc.num_fds() <= self.fds, HANG_GUARD), (
            f"fds: {self.proc.num_fds()} now, {self.fds} before")
        assert wait_until(lambda: tcp_connections(self.proc) <= self.connections, HANG_GUARD), (
            f"connections: {tcp_connections(self.proc)} now, {self.connections} before")
        assert self.proc.num_threads() == self.threads, "a thread died or leaked"
        log = self.new_log()
        assert "Traceback" not in log and "Exception in thread" not in log, log
        lines = self.broker.line_count() - self.first_line
        assert lines <= ATTACK_LOG_LINES, f"{lines} log lines from one attack:\n{log}"


@contextlib.contextmanager
def attacked(*overrides: str):
    """A ``kafka-net serve`` on its defaults; checks it recovered when the block ends.
    Its logs are in memory: a topic an attack creates would otherwise open its
    segment file, one descriptor the fd check would count as a leak."""
    with serve(EPHEMERAL, "log.store=memory", *overrides) as broker:
        port = broker.wait_started()["PLAINTEXT"]
        target = Target(broker, port, psutil.Process(broker.proc.pid))
        target.take_baseline()
        yield target
        target.assert_recovered()


def served(port: int) -> None:
    """A fresh connection is answered (ApiVersions and Metadata)."""
    with RawClient(port, timeout=HANG_GUARD) as client:
        assert client.call(ApiKey.API_VERSIONS, 3, API_VERSIONS_V3_BODY)["error_code"] == 0
        assert client.call(ApiKey.METADATA, 1, {"topics": []})["brokers"]


class Bystander(threading.Thread):
    """A well-behaved client looping ApiVersions and Metadata during an attack."""

    def __init__(self, port: int) -> None:
        super().__init__(name="bystander", daemon=True)
        self.client = RawClient(port, timeout=HANG_GUARD)
        self.answered = 0
        self.error: BaseException | None = None
        self._stop_event = threading.Event()
        self._progress = threading.Condition()

    def run(self) -> None:
        try:
            while not self._stop_event.is_set():
                assert self.client.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == 0
                assert self.client.call(ApiKey.METADATA, 1, {"topics": []})["brokers"]
                with self._progress:
                    self.answered += 1
                    self._progress.notify_all()
                self._stop_event.wait(0.02)
        except BaseException as exc:   # reported by assert_served
            self.error = exc

    def assert_served_after(self, mark: int) -> None:
        """At least one more round trip than ``mark``, and never an error."""
        with self._progress:
            self._progress.wait_for(lambda: self.answered > mark or self.error is not None
                                    or not self.is_alive(), HANG_GUARD)
        assert self.error is None, f"the bystander failed: {self.error!r}"
        assert self.answered > mark, "the bystander was not answered"

    def __enter__(self) -> "Bystander":
        self.start()
        self.assert_served_after(0)
        return self

    def __exit__(self, *exc) -> None:
        self._stop_event.set()
        self.join(HANG_GUARD)
        self.client.close()
        if exc[0] is None:
            assert self.error is None, f"the bystander failed: {self.error!r}"


def create_topics_body(*topics, validate_only=False) -> dict:
    return request_body(ApiKey.CREATE_TOPICS, 5, timeout_ms=10_000, validate_only=validate_only,
                        topics=[{"name": n, "num_partitions": p, "replication_factor": 1,
                                 "assignments": [], "configs": []} for n, p in topics])


def create_topic(client: RawClient, name: str, partitions: int = 1) -> None:
    [t] = client.call(ApiKey.CREATE_TOPICS, 5, create_topics_body((name, partitions)))["topics"]
    assert t["error_code"] == ErrorCode.NONE, t


def join_body() -> dict:
    return request_body(ApiKey.JOIN_GROUP, 0, group_id="g", session_timeout_ms=30_000,
                        member_id="", protocol_type="consumer",
                        protocols=[{"name": "range", "metadata": b""}])


# -- attacks defended on this branch ------------------------------------------------------


def test_huge_create_topics_and_create_partitions_are_refused_before_allocating():
    with attacked() as target, Bystander(target.port) as bystander:
        mark = bystander.answered
        with RawClient(target.port, timeout=HANG_GUARD) as client:
            create_topic(client, "small")
            for i in range(20):
                [t] = client.call(ApiKey.CREATE_TOPICS, 5,
                                  create_topics_body((f"huge-{i}", HUGE)))["topics"]
                assert t["error_code"] == ErrorCode.POLICY_VIOLATION, t
                assert "max.partitions.per.request" in t["error_message"]
                grown = client.call(ApiKey.CREATE_PARTITIONS, 3, request_body(
                    ApiKey.CREATE_PARTITIONS, 3, timeout_ms=10_000, topics=[
                        {"name": "small", "count": HUGE, "assignments": None}]))
                [r] = grown["results"]
                assert r["error_code"] == ErrorCode.POLICY_VIOLATION, r
            listed = client.call(ApiKey.METADATA, 1, {"topics": None})["topics"]
            assert [(t["name"], len(t["partitions"])) for t in listed] == [("small", 1)]
        bystander.assert_served_after(mark)
        # Memory, not time: nothing of the 2**31 - 1 partitions was built.
        assert target.proc.memory_info().rss < target.rss + 64 * MiB


def test_empty_fetch_is_answered_and_parked_long_polls_end_a_prompt_clean_stop():
    with serve(EPHEMERAL) as broker:
        port = broker.wait_started()["PLAINTEXT"]
        with RawClient(port, timeout=HANG_GUARD) as admin:
            create_topic(admin, "t")
            # Names no partition: nothing could ever complete it, so Kafka answers
            # at once.  The 20 s guard is well below the 120 s wait it asks for.
            admin.sock.settimeout(20.0)
            empty = admin.call(ApiKey.FETCH, 12, fetch_body([], max_wait_ms=120_000))
            assert empty["error_code"] == ErrorCode.NONE and empty["responses"] == []
        long_polls = [RawClient(port, timeout=HANG_GUARD) for _ in range(3)]
        for client in long_polls:   # parked for 120 s in the fetch purgatory
            client.send(ApiKey.FETCH, 12, fetch_body([("t", 0, 0)], max_wait_ms=120_000))
        # A JoinGroup parked in a rebalance: "b" waits (up to its 30 s rebalance
        # timeout) for "a" to rejoin, which "a" never does.
        a = RawClient(port, timeout=HANG_GUARD)
        assert a.call(ApiKey.JOIN_GROUP, 0, join_body())["error_code"] == ErrorCode.NONE
        b = RawClient(port, timeout=HANG_GUARD)
        b.send(ApiKey.JOIN_GROUP, 0, join_body())
        # A round trip through every Processor (connections are assigned round
        # robin) after the sends: each Processor has read and queued them by then.
        for _ in range(2 * 3):
            served(port)
        broker.send_signal(signal.SIGTERM)
        # shutdown.timeout.ms is 30 s: a stop that waited for the parked requests'
        # deadlines would exit 4 after 30 s (or trip this 25 s guard).
        assert broker.wait_exit(timeout=25.0) == EXIT_OK, broker.stderr
        broker.wait_for(CLEAN_STOP)
        for client in long_polls:   # each was answered before its connection closed
            _, body = client.receive(ApiKey.FETCH, 12)
            assert body["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
            client.close()
        _, joined = b.receive(ApiKey.JOIN_GROUP, 0)
        assert joined["error_code"] == ErrorCode.NOT_COORDINATOR
        a.close()
        b.close()
        assert "Traceback" not in broker.stderr


def test_newline_topic_names_and_dot_underscore_collisions_are_refused():
    metadata = 9   # allow_auto_topic_creation from v4
    with attacked() as target, Bystander(target.port) as bystander:
        mark = bystander.answered
        with RawClient(target.port, timeout=HANG_GUARD) as client:
            for name in ("evil\n", "evil\n2026-01-01 ERROR forged", "x" * 250, ".."):
                [t] = client.call(ApiKey.CREATE_TOPICS, 5, create_topics_body((name, 1)))["topics"]
                assert t["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION, t
                [m] = client.call(ApiKey.METADATA, metadata, request_body(
                    ApiKey.METADATA, metadata, topics=[{"name": name}],
                    allow_auto_topic_creation=True))["topics"]
                assert m["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION, m
            create_topic(client, "dot.name")
            [t] = client.call(ApiKey.CREATE_TOPICS, 5,
                              create_topics_body(("dot_name", 1)))["topics"]
            assert (t["error_code"], t["error_message"]) == (
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                "Topic 'dot_name' collides with existing topic: dot.name")
            [m] = client.call(ApiKey.METADATA, metadata, request_body(
                ApiKey.METADATA, metadata, topics=[{"name": "dot_name"}],
                allow_auto_topic_creation=True))["topics"]
            assert m["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
            listed = client.call(ApiKey.METADATA, 1, {"topics": None})["topics"]
            assert [t["name"] for t in listed] == ["dot.name"]
        bystander.assert_served_after(mark)


def test_newline_client_id_is_logged_escaped_on_one_line():
    forged = "evil\n2026-01-01 00:00:00,000 ERROR kafka_net.daemon: forged line"
    with attacked() as target:
        with RawClient(target.port, timeout=HANG_GUARD) as client:
            # An auto-create logs the client id that asked for it.
            client.send_raw(encode_request(ApiKey.METADATA, 9, 7, request_body(
                ApiKey.METADATA, 9, topics=[{"name": "auto-topic"}],
                allow_auto_topic_creation=True), client_id=forged))
            client.receive(ApiKey.METADATA, 9)
        line = target.broker.wait_for(r"Created topic auto-topic .*").group(0)
        assert "from evil\\n2026-01-01 00:00:00,000 ERROR kafka_net.daemon: forged line" in line
        lines = target.broker.stderr.splitlines()
        assert sum("forged line" in x for x in lines) == 1
        assert not any(x.startswith("2026-01-01 00:00:00,000 ERROR") for x in lines)


def reset_connection(port: int) -> None:
    """Connect, then close with SO_LINGER 0: the kernel sends a RST at once."""
    sock = socket.create_connection((LOOPBACK, port), timeout=HANG_GUARD)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def test_connect_and_reset_loop_keeps_the_log_small():
    with attacked() as target, Bystander(target.port) as bystander:
        mark = bystander.answered
        for _ in range(1000):
            reset_connection(target.port)
        bystander.assert_served_after(mark)
        assert "ERROR" not in target.new_log()


# -- attacks whose defence is on other branches ------------------------------------------


def gzip_bomb(compressed_bytes: int) -> bytes:
    """A valid gzip record batch of about ``compressed_bytes`` holding one record of
    zeros that inflates about a thousandfold."""
    return build_batch([(None, bytes(compressed_bytes * 1030))],
                       compression=Compression.GZIP, gzip_level=9)


def produce_bomb(port: int, bomb: bytes) -> int:
    with RawClient(port, timeout=HANG_GUARD) as client:
        body = client.call(ApiKey.PRODUCE, 9, request_body(
            ApiKey.PRODUCE, 9, acks=1, timeout_ms=10_000, topic_data=[
                {"name": "bombs", "partition_data": [{"index": 0, "records": bomb}]}]))
    return body["responses"][0]["partition_responses"][0]["error_code"]


# needs branch `records`: message.max.uncompressed.bytes answers CORRUPT_MESSAGE.
def test_gzip_bomb_produce_gets_corrupt_message():
    bomb = gzip_bomb(92 * 1024)
    assert len(bomb) < 120 * 1024
    with attacked() as target, Bystander(target.port) as bystander:
        with RawClient(target.port, timeout=HANG_GUARD) as client:
            create_topic(client, "bombs")
        mark = bystander.answered
        assert produce_bomb(target.port, bomb) == ErrorCode.CORRUPT_MESSAGE
        bystander.assert_served_after(mark)


# needs branch `records`: message.max.uncompressed.bytes answers CORRUPT_MESSAGE.
def test_concurrent_gzip_bombs_get_corrupt_message():
    bomb = gzip_bomb(30 * 1024)
    with attacked() as target, Bystander(target.port) as bystander:
        with RawClient(target.port, timeout=HANG_GUARD) as client:
            create_topic(client, "bombs")
        mark = bystander.answered
        with ThreadPoolExecutor(8) as bombers:
            codes = list(bombers.map(lambda _: produce_bomb(target.port, bomb), range(8),
                                     timeout=HANG_GUARD))
        assert codes == [ErrorCode.CORRUPT_MESSAGE] * 8
        bystander.assert_served_after(mark)


FLOOD_CONNECTIONS = 24
FLOOD_FRAME = 6 * MiB


def flood_large_frames(target: Target) -> tuple[list[socket.socket], int]:
    """Each connection declares a 6 MiB frame and sends all of it but the last byte,
    so the broker holds (or refuses to read) the rest.  Returns the sockets and
    the broker's RSS once every sender has sent what the broker would take."""
    socks = [socket.create_connection((LOOPBACK, target.port), timeout=HANG_GUARD)
             for _ in range(FLOOD_CONNECTIONS)]
    payload = struct.pack(">i", FLOOD_FRAME) + bytes(FLOOD_FRAME - 1)

    def send(sock: socket.socket) -> None:
        sock.settimeout(5.0)   # a broker that stops reading is the point, not a failure
        with contextlib.suppress(OSError):
            sock.sendall(payload)

    with ThreadPoolExecutor(len(socks)) as senders:
        list(senders.map(send, socks, timeout=HANG_GUARD))
    return socks, target.proc.memory_info().rss


def test_flood_of_large_frames_with_the_default_unbounded_pool():
    # The defence proper (queued.max.request.bytes) is on branch `mempool`; on its
    # default (-1, unbounded) the broker must still stay up and serve others.
    with attacked() as target, Bystander(target.port) as bystander:
        mark = bystander.answered
        socks, _ = flood_large_frames(target)
        served(target.port)              # while the frames are held
        bystander.assert_served_after(mark)
        for s in socks:
            s.close()


# needs branch `mempool`: queued.max.request.bytes bounds what the Processors buffer.
def test_flood_of_large_frames_with_queued_max_request_bytes_keeps_rss_bounded():
    # Kafka wants queued.max.request.bytes >= socket.request.max.bytes; both are
    # lowered so that the 6 MiB frames fit and 16 of them overrun the pool.
    pool = 16 * MiB
    with attacked(f"socket.request.max.bytes={8 * MiB}", f"queued.max.request.bytes={pool}") \
            as target, Bystander(target.port) as bystander:
        socks, rss = flood_large_frames(target)
        # 144 MiB sent; the pool lets the broker take about 16 MiB of it.
        assert rss - target.rss < 3 * pool, f"RSS grew {(rss - target.rss) / MiB:.0f} MiB"
        # While the half-sent frames hold the pool, Kafka's Processors read nothing
        # (the bystander waits too); closing them gives the memory back.
        mark = bystander.answered
        for s in socks:
            s.close()
        bystander.assert_served_after(mark)


# needs branch `quotas`: max.connections.per.ip closes connections past the limit.
def test_many_connections_from_one_ip_are_capped():
    with attacked("max.connections.per.ip=50") as target, Bystander(target.port) as bystander:
        mark = bystander.answered
        socks = [socket.create_connection((LOOPBACK, target.port), timeout=HANG_GUARD)
                 for _ in range(200)]
        try:
            # The bystander holds one of the 50; at most 49 of these stay open.
            assert closed_by_server(socks, wanted=200 - 49) >= 200 - 49
            assert tcp_connections(target.proc) <= target.connections + 50
            bystander.assert_served_after(mark)
        finally:
            for s in socks:
                s.close()


def closed_by_server(socks: list[socket.socket], wanted: int, timeout: float = 10.0) -> int:
    """How many of ``socks`` the server closes (EOF or reset), waiting until
    ``wanted`` are or ``timeout`` passes."""
    closed = 0
    with selectors.DefaultSelector() as sel:
        for s in socks:
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while closed < wanted and (left := deadline - time.monotonic()) > 0:
            for key, _ in sel.select(left):
                try:
                    data = key.fileobj.recv(1)
                except ConnectionResetError:
                    data = b""
                if not data:
                    closed += 1
                    sel.unregister(key.fileobj)
    return closed
