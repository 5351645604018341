"""Long polling that frees the handler threads, many producers on one partition,
and acks=0 on the wire.

Issue 3's "Done when":

* A consumer waiting in a long poll receives a message produced after it
  started waiting, well before max_wait_ms, while the handler threads stay
  free.  The broker runs with ``num.io.threads=1``: if the parked Fetch held
  that one thread, no other request could be answered until it expired.
  Another client IS answered meanwhile (ApiVersions, Metadata, then the
  Produce that completes the Fetch).  "Well before max_wait_ms" is shown
  without timing anything: max_wait_ms is 60 s and the answer is awaited for
  at most 30 s, so only the append can have completed the Fetch.
* Many producers on many connections to one partition: every acknowledged
  offset is distinct, the offsets are dense, and every acknowledged message
  is fetched back at its offset.
* acks=0 (which the client tests can only check by reading back): the broker
  sends no Produce response at all, and the message lands.

Raw requests are built with the project's codec (``encode_request`` through
:class:`tests.support.RawClient`), which keeps the Fetch's max_wait_ms and
min_bytes under the test's control.
"""

from __future__ import annotations

import select
import threading

import pytest

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kafka_net.metrics import server_snapshot
from kafka_net.protocol.records import build_batch, decode_records, iter_batches
from tests.support import (
    API_VERSIONS_V3_BODY, LOOPBACK, RawClient, fetch_body, make_config, produce_body,
    request_body, running_server, wait_until)

pytestmark = pytest.mark.interop

PRODUCE, FETCH, METADATA, API_VERSIONS, CREATE_TOPICS = 0, 1, 3, 18, 19
PRODUCE_V, FETCH_V, METADATA_V, CREATE_TOPICS_V = 9, 12, 12, 7   # flexible versions
LONG_POLL_MAX_WAIT_MS = 60_000   # what the waiting Fetch asks for
LONG_POLL_AWAIT_S = 30           # how long the test waits for its answer (< max wait)
TIMEOUT_S = 20
ANY_SIZE = 2**31 - 1             # a Fetch's max_bytes: no limit


# -- raw requests ---------------------------------------------------------------------

def create_topic(client: RawClient, name: str, partitions: int = 1) -> None:
    response = client.call(CREATE_TOPICS, CREATE_TOPICS_V, request_body(
        CREATE_TOPICS, timeout_ms=10_000, topics=[{
            "name": name, "num_partitions": partitions, "replication_factor": 1,
            "assignments": [], "configs": []}]))
    assert [(t["name"], t["error_code"]) for t in response["topics"]] == [(name, 0)], response


def produced(response: dict) -> dict:
    """The single partition answer of a one-partition Produce response."""
    [topic] = response["responses"]
    [partition] = topic["partition_responses"]
    return partition


def fetched(response: dict) -> dict:
    [topic] = response["responses"]
    [partition] = topic["partitions"]
    return partition


def records_of(partition_answer: dict) -> list:
    return [record for batch in iter_batches(partition_answer["records"])
            for record in decode_records(batch)]


def fetch_everything(port: int, topic: str, partition: int, end: int) -> dict[int, bytes]:
    """offset -> value for [0, end), read with as many Fetches as it takes."""
    out: dict[int, bytes] = {}
    with RawClient(port) as client:
        offset = 0
        for _ in range(end + 1):   # each round makes progress: bounded
            if offset >= end:
                break
            answer = fetched(client.call(FETCH, FETCH_V, fetch_body(
                [(topic, partition, offset)], 0, max_bytes=ANY_SIZE)))
            assert answer["error_code"] == 0, answer
            for record in records_of(answer):
                if record.offset >= offset:
                    out[record.offset] = record.value
            offset = max(out) + 1
    return out


def requests_read(server) -> int:
    """Requests the Processors have read so far (Kafka's socket-server-metrics)."""
    return sum(v for name, v in server_snapshot(server).items()
               if name.startswith("kafka.server:type=socket-server-metrics,")
               and name.endswith(",name=response-total"))


def readable(sock) -> bool:
    return bool(select.select([sock], [], [], 0)[0])


def run_threads(target, count: int) -> None:
    """Run ``target(i)`` in ``count`` threads; re-raise the first failure."""
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            target(i)
        except BaseException as exc:   # reported in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(i,), name=f"producer-{i}")
               for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not [t.name for t in threads if t.is_alive()], "producer threads still running"
    if errors:
        raise errors[0]


# -- acks=0 ---------------------------------------------------------------------------

def test_acks_0_produce_is_not_answered_but_lands():
    """The clients' acks=0 tests can only read the messages back; on the wire,
    the next answer on the connection is the next request's."""
    with running_server(make_config()) as server:
        with RawClient(server.bound_port()) as client:
            create_topic(client, "acks-0")
            batch = build_batch([(b"k", b"fire and forget")])
            produce_id = client.send(PRODUCE, PRODUCE_V, produce_body("acks-0", 0, batch, acks=0))
            versions_id = client.send(API_VERSIONS, 3, API_VERSIONS_V3_BODY)
            got_id, _ = client.receive(API_VERSIONS, 3)
            assert got_id == versions_id != produce_id
            answer = fetched(client.call(FETCH, FETCH_V, fetch_body(
                [("acks-0", 0, 0)], 0, max_bytes=ANY_SIZE)))
        assert [(r.offset, r.value) for r in records_of(answer)] == [(0, b"fire and forget")]


# -- long polling ---------------------------------------------------------------------

def test_long_poll_fetch_is_completed_by_a_later_produce_and_frees_the_handler_thread():
    with running_server(make_config(num_io_threads=1)) as server:
        port = server.bound_port()
        purgatory = server.replica_manager.fetch_purgatory
        with RawClient(port, timeout=LONG_POLL_AWAIT_S) as waiter, RawClient(port) as other:
            create_topic(other, "long-poll")

            read_before = requests_read(server)
            correlation_id = waiter.send(FETCH, FETCH_V, fetch_body(
                [("long-poll", 0, 0)], max_wait_ms=LONG_POLL_MAX_WAIT_MS, min_bytes=1,
                max_bytes=ANY_SIZE))
            # Wait until the Fetch has been read and taken off the request
            # queue: it is with the one handler thread, or parked.
            assert wait_until(lambda: requests_read(server) == read_before + 1
                              and server.request_channel.request_queue_size() == 0, TIMEOUT_S)

            # The only handler thread is free: another client is answered (a
            # Fetch holding the thread would block these for 60 s, and
            # RawClient gives up after 10 s).
            assert other.call(API_VERSIONS, 3, API_VERSIONS_V3_BODY)["error_code"] == 0
            metadata = other.call(METADATA, METADATA_V, request_body(METADATA, topics=None))
            assert [t["name"] for t in metadata["topics"]] == ["long-poll"]
            assert not readable(waiter.sock), "the Fetch was answered before any data arrived"
            assert purgatory.watched() == 1, "the Fetch is not parked in the fetch purgatory"

            batch = build_batch([(b"key", b"produced while the fetch waits", [("h", b"v")])])
            answer = produced(other.call(PRODUCE, PRODUCE_V, produce_body("long-poll", 0, batch)))
            assert (answer["error_code"], answer["base_offset"]) == (0, 0)

            # The append completes the parked Fetch (its 60 s timer cannot
            # have: the socket waits at most 30 s).
            got_id, response = waiter.receive(FETCH, FETCH_V)
            assert got_id == correlation_id
            partition = fetched(response)
            assert partition["error_code"] == 0 and partition["high_watermark"] == 1
            assert [(r.offset, r.key, r.value, list(r.headers)) for r in records_of(partition)] \
                == [(0, b"key", b"produced while the fetch waits", [("h", b"v")])]
            assert purgatory.watched() == 0


def test_kafka_python_consumer_long_poll_receives_a_message_produced_while_it_waits():
    """The same with real clients: a kafka-python consumer waits in a 60 s long
    poll while a kafka-python producer (ApiVersions, Metadata, InitProducerId,
    Produce) is served by the broker's single handler thread."""
    with running_server(make_config(num_io_threads=1)) as server:
        topic = "kp-long-poll"
        purgatory = server.replica_manager.fetch_purgatory
        bootstrap = f"{LOOPBACK}:{server.bound_port()}"
        with RawClient(server.bound_port()) as admin:
            create_topic(admin, topic)
        acked: list[int] = []
        errors: list[BaseException] = []

        def produce_once_the_fetch_waits() -> None:
            try:
                assert wait_until(lambda: purgatory.watched() >= 1, TIMEOUT_S), \
                    "the consumer's Fetch was not parked"
                producer = KafkaProducer(bootstrap_servers=bootstrap)
                try:
                    acked.append(producer.send(topic, key=b"k", value=b"late")
                                 .get(TIMEOUT_S).offset)
                finally:
                    producer.close(timeout=5)
            except BaseException as exc:   # reported in the main thread
                errors.append(exc)

        consumer = KafkaConsumer(bootstrap_servers=bootstrap,
                                 fetch_max_wait_ms=LONG_POLL_MAX_WAIT_MS,
                                 request_timeout_ms=LONG_POLL_MAX_WAIT_MS + 10_000)
        producer_thread = threading.Thread(target=produce_once_the_fetch_waits)
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            producer_thread.start()
            records = []
            for _ in range(LONG_POLL_AWAIT_S):   # at most 30 polls of at most 1 s
                records.extend(r for batch in consumer.poll(timeout_ms=1000).values()
                               for r in batch)
                if records:
                    break
        finally:
            producer_thread.join(timeout=TIMEOUT_S)
            consumer.close()
        assert not errors, errors
        assert acked == [0]
        assert [(r.offset, r.key, r.value) for r in records] == [(0, b"k", b"late")]


# -- many producers, one partition ----------------------------------------------------

PRODUCERS = 8


def check_dense_and_fetched_back(port: int, topic: str, acked: list[tuple[int, list[bytes]]]):
    """``acked``: (base offset, values) per acknowledged batch."""
    by_offset: dict[int, bytes] = {}
    for base_offset, values in acked:
        for delta, value in enumerate(values):
            assert base_offset + delta not in by_offset, \
                f"offset {base_offset + delta} acknowledged twice"
            by_offset[base_offset + delta] = value
    assert sorted(by_offset) == list(range(len(by_offset))), "offsets are not dense"
    assert fetch_everything(port, topic, 0, len(by_offset)) == by_offset


def test_many_raw_producers_on_one_partition_get_distinct_dense_offsets():
    """8 connections, each sending 40 Produce requests of 1-3 records
    (acks 1 and -1 alternating) to partition 0, all at once."""
    requests_each = 40
    with running_server(make_config(num_network_threads=3, num_io_threads=4)) as server:
        port, topic = server.bound_port(), "concurrent-raw"
        with RawClient(port) as admin:
            create_topic(admin, topic)
        acked: list[list[tuple[int, list[bytes]]]] = [[] for _ in range(PRODUCERS)]
        start = threading.Barrier(PRODUCERS)

        def producer(i: int) -> None:
            with RawClient(port) as client:
                start.wait(TIMEOUT_S)
                for j in range(requests_each):
                    values = [f"p{i}-r{j}-m{k}".encode() for k in range(1 + j % 3)]
                    batch = build_batch([(None, v) for v in values])
                    answer = produced(client.call(PRODUCE, PRODUCE_V, produce_body(
                        topic, 0, batch, acks=-1 if j % 2 else 1)))
                    assert answer["error_code"] == 0, answer
                    acked[i].append((answer["base_offset"], values))

        run_threads(producer, PRODUCERS)

        assert sum(len(a) for a in acked) == PRODUCERS * requests_each
        check_dense_and_fetched_back(port, topic, [batch for a in acked for batch in a])


def test_many_kafka_python_producers_on_one_partition_get_distinct_dense_offsets():
    """8 default (idempotent) kafka-python producers, one per thread, each
    sending 50 messages to partition 0 at once."""
    messages_each = 50
    with running_server(make_config(num_network_threads=3, num_io_threads=4)) as server:
        port, topic = server.bound_port(), "concurrent-kafka-python"
        with RawClient(port) as admin:
            create_topic(admin, topic)
        acked: list[list[tuple[int, list[bytes]]]] = [[] for _ in range(PRODUCERS)]
        start = threading.Barrier(PRODUCERS)

        def producer(i: int) -> None:
            client = KafkaProducer(bootstrap_servers=f"{LOOPBACK}:{port}")
            try:
                start.wait(TIMEOUT_S)
                values = [f"producer {i} message {j}".encode() for j in range(messages_each)]
                futures = [client.send(topic, value=v, partition=0) for v in values]
                client.flush(timeout=TIMEOUT_S)
                acked[i] = [(f.get(timeout=TIMEOUT_S).offset, [v])
                            for f, v in zip(futures, values)]
            finally:
                client.close(timeout=5)

        run_threads(producer, PRODUCERS)

        assert sum(len(a) for a in acked) == PRODUCERS * messages_each
        check_dense_and_fetched_back(port, topic, [m for a in acked for m in a])
