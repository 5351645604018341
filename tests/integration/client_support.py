"""Helpers the real-client broker tests share (not a test module).

Each client's test module (kafka-python, confluent-kafka, aiokafka, kcat)
drives its own client; what it checks on the broker side, and the messages
it sends, are the same everywhere and live here.
"""

from __future__ import annotations

import threading
import time

from kafka_net.protocol.records import Compression, iter_batches, read_header
from tests.support import LOOPBACK, make_config

# The compression.type names every client spells the same, and what the broker stores.
CODECS = {"gzip": Compression.GZIP, "lz4": Compression.LZ4,
          "zstd": Compression.ZSTD, "snappy": Compression.SNAPPY}


def fast_group_config(**overrides):
    # group.initial.rebalance.delay.ms is 3000 by default, as in Kafka; 0 keeps
    # the first join of each group immediate.
    return make_config(group_initial_rebalance_delay_ms=0, **overrides)


def poll_until(poll_once, consumers, done, timeout: float = 20.0) -> dict:
    """Poll each consumer in turn until ``done(received)``, or ``timeout`` (a bound
    on a hung client, never asserted on); ``received`` maps each consumer to the
    messages it returned, in order.  ``poll_once(consumer)`` is one short poll
    of that client, its new messages as a list.

    Alternating short polls lets several members of one group rebalance from
    a single thread: a member's JoinGroup stays parked on the broker while
    the other member polls and rejoins.
    """
    received = {c: [] for c in consumers}
    deadline = time.monotonic() + timeout
    while not done(received) and time.monotonic() < deadline:
        for c in consumers:
            received[c].extend(poll_once(c))
    return received


def poll_in_threads(poll_once, consumers, done, timeout: float = 20.0) -> dict:
    """As :func:`poll_until`, each consumer polled again at once in a thread of its
    own, as applications run them.

    For kafka-python 3.0.12, whose network I/O runs on a thread of its own: a
    JoinGroup that finishes there while the application is between two polls is
    thrown away by the next poll, which sends another JoinGroup, and the group
    rebalances again.  Two members taking turns in one thread leave each other
    100 ms gaps; on a loaded machine that went on round after round (twenty
    generations in 20 s, every join answered without error).  A member polled
    again at once leaves almost no gap.
    """
    received = {c: [] for c in consumers}
    stop = threading.Event()
    errors: list[BaseException] = []

    def run(consumer) -> None:
        try:
            while not stop.is_set():
                received[consumer].extend(poll_once(consumer))
        except BaseException as exc:   # reported by the calling thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(c,), daemon=True) for c in consumers]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    try:
        while not errors and not done(received) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)
    if errors:
        raise errors[0]
    return received


def read_all(poll_once, consumer, n: int) -> list:
    """``n`` messages from one consumer (asserted: exactly ``n`` within the bound)."""
    got = poll_until(poll_once, [consumer], lambda r: len(r[consumer]) >= n)[consumer]
    assert len(got) == n, f"read {len(got)} of {n} records"
    return got


def kafka_python_member(*topics: str, **config):
    """A kafka-python group member subscribed to ``topics``, with their partitions
    already in its metadata (asserted).

    kafka-python 3.0.12 can lose its own assignment when its first
    assignment was made before the topic's metadata arrived: the metadata
    then triggers a second join, and if ``poll``'s timer runs out while that
    join is in flight, the next ``poll`` finds nothing to rejoin for and
    never applies the finished join (``join_group_async`` only loops while
    ``need_rejoin()``), so the member sits with no partitions for good.
    Kafka's default group.initial.rebalance.delay.ms (3 s) hides this; the
    tests use 0, and a loaded machine makes the short polls run out.
    Reading each topic's partitions first (a blocking Metadata round trip,
    bounded by request_timeout_ms) puts them in the member's metadata
    snapshot before its first join, so one join assigns them.
    """
    from kafka import KafkaConsumer   # kafka-python: a test extra, imported where used
    consumer = KafkaConsumer(*topics, **config)
    for topic in topics:
        assert consumer.partitions_for_topic(topic), topic
    return consumer


def bootstrap(server) -> str:
    return f"{LOOPBACK}:{server.bound_port()}"


def messages(tag: str, client: bytes, n: int) -> list[tuple[bytes, bytes, list]]:
    """(key, value, headers) triples; values repeat text so that compression bites."""
    return [(f"{tag}-key-{i}".encode(),
             (f"{tag} value {i} " * 8).encode(),
             [("seq", str(i).encode()), ("client", client)])
            for i in range(n)]


def recent_timestamps(n: int = 10) -> list[int]:
    """Record timestamps 10 ms apart ending a minute ago: inside any retention a
    test sets in hours or more, and distinct enough to look one record up."""
    start = int(time.time() * 1000) - 60_000
    return [start + 10 * i for i in range(n)]


def stored_batches(server, topic: str, partition: int = 0) -> list:
    """The headers of the record batches the broker stored, read from its log."""
    error, result = server.replica_manager.read(topic, partition, 0, 2**31 - 1, True)
    assert error == 0, error
    return [read_header(batch) for batch in iter_batches(result.records)]


def partitions_of(consumer) -> set[int]:
    """Partitions assigned to a consumer; every client's TopicPartition has ``partition``."""
    return {tp.partition for tp in consumer.assignment()}


def is_split(first, second) -> bool:
    """Each member owns some of the four partitions, and no partition twice."""
    a, b = partitions_of(first), partitions_of(second)
    return bool(a and b and not (a & b) and a | b == {0, 1, 2, 3})
