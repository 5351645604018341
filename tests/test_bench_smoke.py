"""The benchmark tools behave: tiny bounded loads, checked for answers, never for time."""

from __future__ import annotations

import os
import socket
import struct
import threading
from collections import defaultdict

import pytest

from bench.loadgen import LoadSpec, produce_batch, run_load
from bench.reference_server import ReferenceServer
from bench.run_all import (
    api_versions_answer, begin_marker, create_topic, end_marker, read_capture, update_results)
from bench.spark_bench import generate
from kafka_net.capture.format import REQUEST, decode_segment
from kafka_net.capture.pairing import Frame, pair_connection
from kafka_net.protocol.records import build_batch, decode_records
from tests.support import RawClient, running_server

PRODUCE, FETCH, API_VERSIONS = 0, 1, 18
TOPIC = "smoke"


def produce_body(value: bytes, partition: int = 0) -> dict:
    return {"transactional_id": None, "acks": 1, "timeout_ms": 10000,
            "topic_data": [{"name": TOPIC, "partition_data": [
                {"index": partition, "records": build_batch([(None, value)])}]}]}


def fetch_body(offset: int, max_wait_ms: int, min_bytes: int = 1) -> dict:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes,
            "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": TOPIC, "partitions": [{
                "partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def fetched_values(answer: dict) -> list[bytes]:
    partition = answer["responses"][0]["partitions"][0]
    assert partition["error_code"] == 0
    data = memoryview(partition["records"] or b"")
    values, pos = [], 0
    while pos + 12 <= len(data):
        size = 12 + struct.unpack_from(">i", data, pos + 8)[0]
        values += [r.value for r in decode_records(data[pos:pos + size])]
        pos += size
    return values


@pytest.fixture
def reference():
    server = ReferenceServer()
    thread = threading.Thread(target=server.serve, name="reference-server", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop()
        thread.join(10)
        assert not thread.is_alive()


@pytest.mark.parametrize("workers", [0, 1])
@pytest.mark.parametrize("api", ["apiversions", "metadata", "produce"])
def test_loadgen_against_reference_gets_every_answer(reference, workers, api):
    create_topic(reference.port, "bench-produce", 2)
    result = run_load(LoadSpec(port=reference.port, connections=2, depth=3, requests=20,
                               api=api, workers=workers, timeout=60, partitions=2))
    assert result.mismatches == 0
    assert result.errors == 0
    assert result.unanswered == 0 and result.disconnects == 0
    assert result.sent == result.received == result.requests == 40
    assert result.sampled >= 2          # each connection's first answer decoded in full
    assert result.ok


def test_loadgen_against_kafka_net_gets_every_answer():
    with running_server() as server:
        result = run_load(LoadSpec(port=server.bound_port(), connections=2, depth=2,
                                   requests=20, workers=0, timeout=60))
    assert result.ok and result.received == 40 and result.mismatches == 0


def test_reference_answers_like_kafka_net(reference):
    with running_server() as server:
        assert api_versions_answer(reference.port) == api_versions_answer(server.bound_port())


def test_reference_answers_pipelined_requests_in_order(reference):
    with RawClient(reference.port) as client:
        frames = b"".join(client.request_frame(18, 0, {}, correlation_id=cid)[1]
                          for cid in range(50, 60))
        client.send_raw(frames)
        assert [client.receive(18, 0)[0] for _ in range(10)] == list(range(50, 60))


def test_reference_closes_on_bad_frame_and_keeps_serving_others(reference):
    with RawClient(reference.port) as good:
        with socket.create_connection(("127.0.0.1", reference.port), timeout=10) as bad:
            bad.sendall(struct.pack(">i", -1))
            assert bad.recv(16) == b""          # closed by the server
        answer = good.call(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert answer["error_code"] == 0


def test_update_results_replaces_only_its_own_section(tmp_path):
    path = tmp_path / "RESULTS.md"
    update_results(path, "a", "## A\nfirst\n")
    update_results(path, "b", "## B\nkept\n")
    update_results(path, "a", "## A\nsecond\n")
    text = path.read_text()
    assert "second" in text and "first" not in text and "kept" in text
    assert text.count(begin_marker("a")) == 1 and text.count(end_marker("a")) == 1
    assert text.index(begin_marker("a")) < text.index(begin_marker("b"))


def test_loadgen_produce_lands_on_the_partitions_of_its_connections(reference):
    create_topic(reference.port, "bench-produce", 2)
    result = run_load(LoadSpec(port=reference.port, connections=3, depth=2, requests=5,
                               api="produce", workers=0, timeout=60, partitions=2))
    assert result.ok and result.received == 15
    logs = [reference.replica_manager.partition("bench-produce", i).log for i in (0, 1)]
    # connections 0 and 2 write partition 0, connection 1 partition 1; one record each
    assert [log.log_end_offset for log in logs] == [10, 5]
    assert len(produce_batch()) > 100


def test_reference_serves_produce_then_fetch(reference):
    create_topic(reference.port, TOPIC, 1)
    with RawClient(reference.port) as client:
        answer = client.call(PRODUCE, 9, produce_body(b"first"))
        partition = answer["responses"][0]["partition_responses"][0]
        assert partition["error_code"] == 0 and partition["base_offset"] == 0
        client.call(PRODUCE, 9, produce_body(b"second"))
        assert fetched_values(client.call(FETCH, 12, fetch_body(0, 0))) == [b"first", b"second"]


def test_reference_long_poll_fetch_is_answered_by_a_produce_meanwhile(reference):
    create_topic(reference.port, TOPIC, 1)
    with RawClient(reference.port, timeout=30) as waiter, RawClient(reference.port) as other:
        # Parked: nothing at offset 0 yet, and it may wait far longer than this test.
        fetch_cid = waiter.send(FETCH, 12, fetch_body(0, max_wait_ms=60000))
        # Pipelined behind the parked Fetch on the same connection: answered after it.
        api_cid = waiter.send(API_VERSIONS, 3, {"client_software_name": "t",
                                                "client_software_version": "1"})
        # The single thread is not held by the parked request: another client is served.
        assert other.call(API_VERSIONS, 3, {"client_software_name": "t",
                                            "client_software_version": "1"})["error_code"] == 0
        assert other.call(PRODUCE, 9, produce_body(b"wake up"))["responses"][0][
            "partition_responses"][0]["error_code"] == 0
        cid, answer = waiter.receive(FETCH, 12)
        assert cid == fetch_cid and fetched_values(answer) == [b"wake up"]
        assert waiter.receive(API_VERSIONS, 3)[0] == api_cid


def test_reference_long_poll_fetch_expires_by_the_purgatory_timer(reference):
    create_topic(reference.port, TOPIC, 1)
    with RawClient(reference.port, timeout=30) as client:
        answer = client.call(FETCH, 12, fetch_body(0, max_wait_ms=50))
        assert fetched_values(answer) == []


def test_reference_drops_a_parked_fetch_of_a_client_that_left(reference):
    create_topic(reference.port, TOPIC, 1)
    with RawClient(reference.port) as leaving:
        leaving.send(FETCH, 12, fetch_body(0, max_wait_ms=100))
    with RawClient(reference.port) as client:   # the server goes on serving
        client.call(PRODUCE, 9, produce_body(b"x"))
        assert fetched_values(client.call(FETCH, 12, fetch_body(0, 0))) == [b"x"]


def test_confluent_kafka_produces_to_and_consumes_from_the_reference(reference):
    pytest.importorskip("confluent_kafka")
    from bench.clients import consume, produce
    create_topic(reference.port, TOPIC, 2)
    bootstrap = f"127.0.0.1:{reference.port}"
    produced = produce(bootstrap, TOPIC, 500, 100, timeout=60)
    assert produced["ok"] and produced["delivered"] == 500, produced
    consumed = consume(bootstrap, TOPIC, 500, 100, timeout=60)
    assert consumed["ok"] and consumed["received"] == 500, consumed


def test_capture_generator_writes_readable_pairs(tmp_path):
    written = generate(str(tmp_path), frames=400, connections=7, processors=2,
                       segment_bytes=16 * 1024)
    assert written["frames"] == 400 and written["pairs"] == 200 and written["files"] > 2
    assert sum(written["per_api"].values()) == 200
    assert read_capture(tmp_path) == {**read_capture(tmp_path), "requests": 200,
                                      "responses": 200, "problems": []}
    by_connection: dict[str, list] = defaultdict(list)
    for path in sorted(tmp_path.iterdir()):       # names sort in write order per processor
        result = decode_segment(path.read_bytes())
        assert result.problems == [] and result.segment is not None
        for rec in result.records:
            by_connection[rec.connection_id].append(rec)
    assert len(by_connection) == 7
    for records in by_connection.values():
        frames = [Frame(i, r.direction, r.timestamp_ns, r.frame, r.frame_size)
                  for i, r in enumerate(records)]
        report = pair_connection(frames)
        assert report.violations == [] and report.in_flight_at_end == 0
        assert len(report.pairs) == sum(1 for r in records if r.direction == REQUEST)
        assert all(p.error_codes == () for p in report.pairs)
    assert all(os.path.getsize(p) <= 16 * 1024 for p in written["paths"])
