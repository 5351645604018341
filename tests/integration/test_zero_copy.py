"""Zero-copy Fetch through a real broker: records served from a file with sendfile.

One broker for the module, with a PLAINTEXT and an SSL listener; its topics'
logs are :class:`tests.region_log.RegionLog` (reads answered with file
regions, as the durable log answers), except the ``mm-`` topics, which keep
the in-memory log (the copy path) for comparison.  ``os.sendfile`` is counted
in-process around each fetch.

* PLAINTEXT: the records go out with sendfile, a partial send (the broker's
  socket.send.buffer.bytes is Kafka's 100 KiB, the response is megabytes) is
  resumed on later writable events, and the frame is byte for byte the one
  the in-memory log gives for the same batches.
* SSL: no sendfile (the TLS engine must see the bytes); the same frame.
* 20 slow readers of 4 MiB responses: bounded broker memory (tracemalloc),
  and the copy path, measured the same way, is not (so the bound means
  something).
* A capture records exactly the bytes sent.
* confluent-kafka and kafka-python consume region-served records over
  PLAINTEXT and SSL.

The last tests do the same on a broker with the durable log (``log.store=disk``):
the regions are slices of real segment files (``FileRecords.slice``).
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import tracemalloc

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaPythonPartition

from kafka_net.capture.format import RESPONSE
from kafka_net.capture.reader import read_capture_file
from kafka_net.config import ServerConfig
from kafka_net.log_safety import TRACE
from kafka_net.protocol import decode_response, encode_request
from kafka_net.protocol.records import build_batch, decode_records, with_base_offset_and_epoch
from tests.region_log import region_server
from tests.support import (LOOPBACK, RawClient, fetch_body, produce_body, recv_exactly,
                           running_server, wait_until)
from tests.tls_support import pki  # noqa: F401 (pki: fixture)

FETCH_V = 12        # topic names, not ids: the frames of two topics compare by name
BATCH_BYTES = 256 * 1024
SLOW_READERS = 20
MEMORY_BOUND = 50 * 1024 * 1024


def read_every_answer_then_close(clients, data: list[bytes]) -> None:
    """Each slow reader finally reads its answer: the batches as stored (base offsets
    set, four records a batch), byte for byte; every client closed."""
    try:
        expected = b"".join(stored_as(b, 4 * i) for i, b in enumerate(data))
        for client in clients:
            size = int.from_bytes(recv_exactly(client.sock, 4), "big")
            assert records_of(recv_exactly(client.sock, size)) == expected
    finally:
        for client in clients:
            client.close()


def stored_as(batch: bytes, base_offset: int) -> bytes:
    """A produced batch as the log keeps it: its base offset set and stamped with
    the partition's leader epoch (0: the topic was created by this broker)."""
    return with_base_offset_and_epoch(batch, base_offset, 0)


@pytest.fixture(scope="module")
def broker(pki, tmp_path_factory):
    capture_dir = tmp_path_factory.mktemp("capture")
    cfg = ServerConfig.from_properties({
        "listeners": f"PLAINTEXT://{LOOPBACK}:0,SSL://{LOOPBACK}:0",
        **pki.broker_props(), "num.network.threads": "1", "num.io.threads": "4",
        "shutdown.timeout.ms": "5000", "capture.dir": str(capture_dir),
        # A small SO_SNDBUF (Kafka's default is 100 KiB): every megabyte answer is
        # many partial sends.
        "socket.send.buffer.bytes": "32768",
        # The RegionLogs below replace the partition logs; the rest (the metadata
        # log) stays in memory, not in the default log dir.
        "log.store": "memory",
        "capture.max.frame.bytes": str(16 << 20)})
    with region_server(cfg, str(tmp_path_factory.mktemp("logs")),
                       in_memory=("mm-frames", "mm-slow")) as (server, logs):
        server.capture_dir = str(capture_dir)
        yield server, logs


@pytest.fixture
def sendfile_calls(monkeypatch):
    """Every os.sendfile call of this process: (count asked, bytes sent)."""
    calls = []
    real = os.sendfile

    def counting(out_fd, in_fd, offset, count, *args, **kwargs):
        sent = real(out_fd, in_fd, offset, count, *args, **kwargs)
        calls.append((count, sent))
        return sent

    monkeypatch.setattr(os, "sendfile", counting)
    return calls


def batches(count: int, seed: int) -> list[bytes]:
    """Batches of about BATCH_BYTES of incompressible, distinct values."""
    rng = __import__("random").Random(seed)
    return [build_batch([(f"k{seed}-{i}-{j}".encode(), rng.randbytes(BATCH_BYTES // 4))
                         for j in range(4)]) for i in range(count)]


def produce(server, topic: str, data: list[bytes]) -> None:
    server.apis.create_topic(topic, 1)
    with RawClient(server.bound_port()) as client:
        for batch in data:
            body = client.call(0, 8, produce_body(topic, 0, batch))
            assert body["responses"][0]["partition_responses"][0]["error_code"] == 0


def fetch_frame(client: RawClient, topic: str, max_bytes: int = 64 << 20,
                chunk: int = 4096) -> bytes:
    """One Fetch response payload, read ``chunk`` bytes at a time (a slow reader)."""
    client.send(1, FETCH_V, fetch_body([(topic, 0, 0)], max_bytes=max_bytes,
                                      partition_max_bytes=max_bytes))
    size = int.from_bytes(recv_exactly(client.sock, 4), "big")
    out = bytearray()
    while len(out) < size:
        data = client.sock.recv(min(chunk, size - len(out)))
        assert data, "broker closed the connection mid-response"
        out += data
    return bytes(out)


def records_of(payload: bytes) -> bytes:
    _, body = decode_response(1, FETCH_V, payload)
    partition = body["responses"][0]["partitions"][0]
    assert partition["error_code"] == 0, partition
    return partition["records"]


def small_window_client(port: int) -> RawClient:
    """A client whose receive buffer is small, set before connecting (the TCP
    window is agreed in the handshake)."""
    client = RawClient.__new__(RawClient)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    sock.settimeout(30)
    sock.connect((LOOPBACK, port))
    client.sock, client._next_correlation_id = sock, 0
    return client


def tls_client(server, pki) -> RawClient:
    context = ssl.create_default_context(cafile=pki.ca)
    client = RawClient(server.bound_port("SSL"), timeout=30)
    client.sock = context.wrap_socket(client.sock, server_hostname=LOOPBACK)
    return client


# -- PLAINTEXT: sendfile, partial sends resumed, the same bytes ---------------------------


@pytest.fixture(scope="module")
def frames_topics(broker):
    server, _ = broker
    data = batches(8, seed=1)   # 2 MiB: ten times what the socket buffers hold
    produce(server, "zc-frames", data)
    produce(server, "mm-frames", data)
    with RawClient(server.bound_port()) as client:
        expected = fetch_frame(client, "mm-frames")
    assert len(expected) > 2 * 1024 * 1024
    # The two topic names have the same length: the frames differ only in them.
    return expected.replace(b"mm-frames", b"zc-frames"), b"".join(data)


def test_plaintext_fetch_is_sent_with_sendfile_and_resumed_after_partial_sends(
        broker, frames_topics, sendfile_calls):
    server, logs = broker
    expected, _ = frames_topics
    served_before = logs[("zc-frames", 0)].regions_served
    with small_window_client(server.bound_port()) as client:
        got = fetch_frame(client, "zc-frames")
    assert got == expected                               # byte for byte
    assert logs[("zc-frames", 0)].regions_served == served_before + 1
    assert sendfile_calls, "the records did not go out with sendfile"
    assert sum(sent for _, sent in sendfile_calls) == len(records_of(got))
    # The socket took part of a region and the rest went on a later writable event.
    assert any(sent < count for count, sent in sendfile_calls)
    assert len(sendfile_calls) > 1


def test_ssl_fetch_copies_through_the_tls_engine_and_never_uses_sendfile(
        broker, frames_topics, sendfile_calls, pki):
    server, _ = broker
    expected, _ = frames_topics
    with tls_client(server, pki) as client:
        got = fetch_frame(client, "zc-frames", chunk=65536)
    assert got == expected
    assert sendfile_calls == []


def test_the_capture_records_exactly_what_was_sent_from_the_file(broker, frames_topics):
    server, _ = broker
    expected, _ = frames_topics
    with RawClient(server.bound_port()) as client:
        got = fetch_frame(client, "zc-frames", chunk=65536)   # correlation id 0
        client.call(18, 0, {})   # a round trip more: the response's record is written
    assert got == expected
    captured = []
    for name in sorted(os.listdir(server.capture_dir)):
        with open(os.path.join(server.capture_dir, name), "rb") as fh:
            for conn in read_capture_file(fh.read(), name).connections:
                captured += [f for f in conn.frames
                             if f.direction == RESPONSE and f.frame == expected]
    assert captured, "no capture record holds the response as sent"
    assert all(f.frame_size == len(expected) and not f.truncated for f in captured)


def test_a_fetch_quota_counts_a_response_sent_from_files(broker):
    """consumer_byte_rate measures the response (Kafka's FetchResponse size):
    a ChunkedFrame's len() is the frame's.  At 30 kB/s, with the rate taken
    over at least ten 1 s windows (quota.window.num=11), the first 256 KiB
    answer (about 26 kB/s) is under the quota and sent from the file; the
    second would make it about 52 kB/s: no data, and a throttle."""
    server, _ = broker
    data = batches(2, seed=4)
    produce(server, "zc-quota", data)
    with RawClient(server.bound_port()) as admin:
        entries = admin.call(49, 1, {"validate_only": False, "entries": [{
            "entity": [{"entity_type": "client-id", "entity_name": "zc-quota"}],
            "ops": [{"key": "consumer_byte_rate", "value": 30_000.0, "remove": False}]}]})
        assert entries["entries"][0]["error_code"] == 0
    try:
        with RawClient(server.bound_port()) as client:
            body = fetch_body([("zc-quota", 0, 0)], max_bytes=8 << 20,
                              partition_max_bytes=8 << 20)
            client.send_raw(encode_request(1, FETCH_V, 1, body, client_id="zc-quota"))
            first = client.recv_frame()
            assert records_of(first) == stored_as(data[0], 0)
            assert decode_response(1, FETCH_V, first)[1]["throttle_time_ms"] == 0
            client.send_raw(encode_request(1, FETCH_V, 2, body, client_id="zc-quota"))
            _, second = decode_response(1, FETCH_V, client.recv_frame())
            assert second["throttle_time_ms"] > 0 and second["responses"] == []
    finally:
        with RawClient(server.bound_port()) as admin:
            admin.call(49, 1, {"validate_only": False, "entries": [{
                "entity": [{"entity_type": "client-id", "entity_name": "zc-quota"}],
                "ops": [{"key": "consumer_byte_rate", "value": 0.0, "remove": True}]}]})


def completed_fetches(caplog) -> list[dict]:
    prefix = "Completed request:"
    lines = [json.loads(r.getMessage()[len(prefix):]) for r in caplog.records
             if r.name == "kafka.request.logger" and r.getMessage().startswith(prefix)]
    return [line for line in lines if line["requestHeader"]["requestApiKey"] == 1]


def test_the_trace_request_log_shows_records_from_files_by_their_size(broker, caplog):
    server, _ = broker
    caplog.set_level(TRACE, logger="kafka.request.logger")
    data = batches(1, seed=5)
    produce(server, "zc-trace", data)
    with RawClient(server.bound_port()) as client:
        client.call(1, FETCH_V, fetch_body([("zc-trace", 0, 0)]))
    assert wait_until(lambda: completed_fetches(caplog))
    partition = completed_fetches(caplog)[-1]["response"]["responses"][0]["partitions"][0]
    assert partition["records"] == f"<{len(data[0])} bytes>"


# -- 20 slow readers: bounded memory ------------------------------------------------------


@pytest.mark.parametrize("topic", ["zc-slow", "mm-slow"])
def test_twenty_slow_readers_of_4_mib_responses(broker, topic):
    """Each reader asks for 4 MiB and reads nothing until all 20 responses are
    under way.  From files, the broker holds their header bytes only; the copy
    path (mm-) holds every response whole, which the same measure shows."""
    server, _ = broker
    data = batches(16, seed=2 if topic == "zc-slow" else 3)   # 4 MiB
    produce(server, topic, data)
    processors = server.socket_server.processors
    clients = [small_window_client(server.bound_port()) for _ in range(SLOW_READERS)]
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        for client in clients:
            client.send(1, FETCH_V, fetch_body([(topic, 0, 0)], max_bytes=8 << 20,
                                              partition_max_bytes=8 << 20))

        def stalled() -> int:
            return sum(1 for p in processors for c in list(p.selector.channels.values())
                       if c.has_send())

        assert wait_until(lambda: stalled() == SLOW_READERS, timeout=30), stalled()
        held = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    read_every_answer_then_close(clients, data)
    if topic == "zc-slow":
        assert held < MEMORY_BOUND, f"{held / 2**20:.1f} MiB held by 20 slow readers"
    else:
        # The copy path holds the responses: 20 x 4 MiB (less what the kernel took).
        assert held > MEMORY_BOUND, f"{held / 2**20:.1f} MiB held by 20 slow readers"


# -- a real client ------------------------------------------------------------------------


def assert_confluent_round_trip(server, pki, protocol: str, topic: str, seed: str,
                                sendfile_calls: list) -> None:
    """2 MB of keyed records produced with confluent-kafka, then consumed back whole
    over ``protocol`` (the sendfile calls of the produce forgotten)."""
    rng = __import__("random").Random(seed)
    sent = [(f"key-{i}".encode(), rng.randbytes(20_000)) for i in range(100)]   # 2 MB
    security = {"security.protocol": protocol}
    if protocol == "SSL":
        security["ssl.ca.location"] = pki.ca
    address = f"{LOOPBACK}:{server.bound_port(protocol)}"
    server.apis.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": address, **security, "linger.ms": 50})
    for key, value in sent:
        producer.produce(topic, key=key, value=value, partition=0)
    assert producer.flush(30) == 0
    del sendfile_calls[:]
    consumer = Consumer({"bootstrap.servers": address, **security, "group.id": topic,
                         "enable.auto.commit": False, "fetch.max.bytes": 4 << 20,
                         "max.partition.fetch.bytes": 4 << 20})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    try:
        for _ in range(600):   # a bound on a hung client, never asserted on
            msg = consumer.poll(0.1)
            if msg is not None:
                assert not msg.error(), msg.error()
                got.append((msg.key(), msg.value()))
            if len(got) >= len(sent):
                break
    finally:
        consumer.close()
    assert got == sent


@pytest.mark.interop
@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SSL"])
def test_confluent_kafka_consumes_records_served_from_a_file(broker, pki, protocol,
                                                             sendfile_calls):
    server, logs = broker
    topic = f"zc-confluent-{protocol.lower()}"
    assert_confluent_round_trip(server, pki, protocol, topic, protocol, sendfile_calls)
    assert logs[(topic, 0)].regions_served > 0
    if protocol == "PLAINTEXT":
        assert sum(sent_bytes for _, sent_bytes in sendfile_calls) >= 2_000_000
    else:
        assert sendfile_calls == []


@pytest.mark.interop
@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SSL"])
def test_kafka_python_consumes_records_served_from_a_file(broker, pki, protocol,
                                                          sendfile_calls):
    server, logs = broker
    topic = f"zc-kafka-python-{protocol.lower()}"
    data = batches(4, seed=6)   # 1 MiB, produced raw: the consumer reads them as stored
    produce(server, topic, data)
    expected = [(rec.key, rec.value) for batch in data for rec in decode_records(batch)]
    del sendfile_calls[:]
    args = {"bootstrap_servers": f"{LOOPBACK}:{server.bound_port(protocol)}",
            "security_protocol": protocol, "enable_auto_commit": False,
            "fetch_max_bytes": 4 << 20, "max_partition_fetch_bytes": 4 << 20}
    if protocol == "SSL":
        args["ssl_cafile"] = pki.ca
    consumer = KafkaConsumer(**args)
    consumer.assign([KafkaPythonPartition(topic, 0)])
    consumer.seek(KafkaPythonPartition(topic, 0), 0)
    got = []
    try:
        for _ in range(300):   # a bound on a hung client, never asserted on
            for records in consumer.poll(timeout_ms=100).values():
                got += [(r.key, r.value) for r in records]
            if len(got) >= len(expected):
                break
    finally:
        consumer.close()
    assert got == expected
    assert logs[(topic, 0)].regions_served > 0
    if protocol == "PLAINTEXT":
        assert sum(sent for _, sent in sendfile_calls) >= sum(len(b) for b in data)
    else:
        assert sendfile_calls == []


# -- the durable log (log.store=disk): the same path from real segment files ----------------


@pytest.fixture(scope="module")
def durable(pki, tmp_path_factory):
    cfg = ServerConfig.from_properties({
        "listeners": f"PLAINTEXT://{LOOPBACK}:0,SSL://{LOOPBACK}:0",
        **pki.broker_props(), "num.network.threads": "1", "num.io.threads": "4",
        "shutdown.timeout.ms": "5000", "socket.send.buffer.bytes": "32768",
        "log.store": "disk", "log.dirs": str(tmp_path_factory.mktemp("log-dirs"))})
    with running_server(cfg) as server:
        yield server


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SSL"])
def test_a_fetch_from_segment_files_is_sent_with_sendfile_on_plaintext_only(
        durable, pki, protocol, sendfile_calls):
    topic = f"durable-{protocol.lower()}"
    data = batches(8, seed=7)   # 2 MiB
    produce(durable, topic, data)
    del sendfile_calls[:]
    stored = b"".join(stored_as(b, 4 * i) for i, b in enumerate(data))
    client = (tls_client(durable, pki) if protocol == "SSL"
              else small_window_client(durable.bound_port()))
    with client:
        got = records_of(fetch_frame(client, topic))
    assert got == stored   # byte for byte what the segment holds
    if protocol == "PLAINTEXT":
        assert sum(sent for _, sent in sendfile_calls) == len(stored)
        assert any(sent < count for count, sent in sendfile_calls)   # resumed
    else:
        assert sendfile_calls == []


def test_twenty_slow_readers_of_a_durable_log_hold_bounded_memory(durable):
    data = batches(16, seed=8)   # 4 MiB
    produce(durable, "durable-slow", data)
    clients = [small_window_client(durable.bound_port()) for _ in range(SLOW_READERS)]
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        for client in clients:
            client.send(1, FETCH_V, fetch_body([("durable-slow", 0, 0)], max_bytes=8 << 20,
                                              partition_max_bytes=8 << 20))
        processors = durable.socket_server.processors
        assert wait_until(lambda: sum(1 for p in processors
                                      for c in list(p.selector.channels.values())
                                      if c.has_send()) == SLOW_READERS, timeout=30)
        held = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    read_every_answer_then_close(clients, data)
    assert held < MEMORY_BOUND, f"{held / 2**20:.1f} MiB held by 20 slow readers"


@pytest.mark.interop
@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SSL"])
def test_confluent_kafka_consumes_from_segment_files(durable, pki, protocol, sendfile_calls):
    topic = f"durable-confluent-{protocol.lower()}"
    assert_confluent_round_trip(durable, pki, protocol, topic, topic, sendfile_calls)
    if protocol == "PLAINTEXT":
        assert sum(sent_bytes for _, sent_bytes in sendfile_calls) >= 2_000_000
    else:
        assert sendfile_calls == []
