"""A stream processor's table restored from its compacted changelog (faust/Kafka Streams style).

A word-count table keeps its state in memory and writes every change to a
``cleanup.policy=compact`` changelog topic (two partitions, small segments):
the new count for a word, or a tombstone when the word is deleted.  The
application then "restarts": a new instance restores the table by reading
each partition from the beginning to its high watermark, as faust's and
Kafka Streams' restore consumers do, applying values and tombstones.  The
restored table is the table that was written, and, compacted by the
broker's LogCleaner, the restore reads fewer records than were written.

The first test restarts the application only (the broker, on the
in-memory store, keeps running); the second restarts the broker too, on
the durable log (``log.store=disk``): the compacted changelog, cleaned on
disk, is what the restarted broker serves.  The topic comes back from the
metadata log with its configs; the application asks to create it again at
startup, as faust and Kafka Streams do, and takes TOPIC_ALREADY_EXISTS as
they do.

Rules kept: loopback only, every wait bounded, no assertion on elapsed time,
every client closed before its server stops.
"""

from __future__ import annotations

import os
import random
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.client_support import bootstrap
from tests.support import make_config, running_server, server_fixture

pytestmark = pytest.mark.interop

TIMEOUT_S = 20
QUIET_S = 0.5
TOPIC = "wordcount-counts-changelog"
PARTITIONS = 2

server = server_fixture(lambda: make_config(log_cleaner_backoff_ms=20), scope="module")


class WordCountTable:
    """The application's table: a dict, each change sent to the changelog."""

    def __init__(self, server) -> None:
        self.table: dict[bytes, int] = {}
        self.producer = Producer({"bootstrap.servers": bootstrap(server),
                                  "enable.idempotence": True, "linger.ms": 5})
        self.written = 0

    def count(self, word: bytes) -> None:
        self.table[word] = self.table.get(word, 0) + 1
        self._send(word, str(self.table[word]).encode())

    def delete(self, word: bytes) -> None:
        del self.table[word]
        self._send(word, None)

    def _send(self, key: bytes, value: bytes | None) -> None:
        self.producer.produce(TOPIC, key=key, value=value)
        self.written += 1

    def flush(self) -> None:
        assert self.producer.flush(TIMEOUT_S) == 0


def restore(server) -> tuple[dict[bytes, int], int]:
    """A restarted instance's table, and how many changelog records it read."""
    consumer = Consumer({"bootstrap.servers": bootstrap(server), "group.id": "restore",
                         "enable.auto.commit": False})
    table: dict[bytes, int] = {}
    read = 0
    try:
        for partition in range(PARTITIONS):
            _, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, partition),
                                                     timeout=TIMEOUT_S)
            consumer.assign([TopicPartition(TOPIC, partition, 0)])
            position, deadline = 0, time.monotonic() + TIMEOUT_S
            while position < high and time.monotonic() < deadline:
                msg = consumer.poll(0.2)
                if msg is None or msg.error():
                    continue
                read += 1
                position = msg.offset() + 1
                if msg.value() is None:
                    table.pop(msg.key(), None)
                else:
                    table[msg.key()] = int(msg.value())
            assert position >= high, f"partition {partition}: restored to {position} of {high}"
    finally:
        consumer.close()
    return table, read


def create_changelog(server) -> bool:
    """Create the changelog topic; False if it exists already (after a restart)."""
    admin = AdminClient({"bootstrap.servers": bootstrap(server)})
    future = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1, config={
        "cleanup.policy": "compact", "internal.segment.bytes": "1024",
        "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "0"})])[TOPIC]
    try:
        future.result(TIMEOUT_S)
        return True
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
        return False


def run_application(server) -> WordCountTable:
    """Count 800 words (some deleted again) and wait until the cleaner has been at
    both partitions of the changelog and has caught up."""
    create_changelog(server)
    app = WordCountTable(server)
    rng = random.Random(19)
    for n in range(1, 801):
        word = b"word-%d" % rng.randrange(40)
        if word in app.table and rng.random() < 0.1:
            app.delete(word)
        else:
            app.count(word)
        if n % 40 == 0:
            app.flush()
    app.flush()
    # Until the cleaner has cleaned both partitions and then found nothing more to
    # clean for QUIET_S (its backoff is 20 ms).  Two cleanings alone were not
    # enough: one that began before the last writes counts, and leaves them dirty
    # (a slow machine's restore then read 416 of the 800 records).
    cleaner = server.core.log_cleaner
    deadline = time.monotonic() + TIMEOUT_S
    seen, quiet_since = cleaner.cleanings, time.monotonic()
    while time.monotonic() < deadline:
        if cleaner.cleanings != seen:
            seen, quiet_since = cleaner.cleanings, time.monotonic()
        elif seen >= PARTITIONS and time.monotonic() - quiet_since >= QUIET_S:
            break
        time.sleep(0.02)
    assert cleaner.cleanings >= PARTITIONS
    return app


def test_a_table_restores_from_its_compacted_changelog(server):
    app = run_application(server)
    restored, read = restore(server)
    assert restored == app.table
    assert read < app.written // 2   # compaction cut what a restore reads (99 of 800 here)


def test_a_table_restores_from_its_compacted_changelog_after_a_broker_restart(tmp_path):
    def durable():
        return make_config(log_store="disk", log_dirs=(str(tmp_path),),
                           log_cleaner_backoff_ms=20)
    with running_server(durable()) as first:
        app = run_application(first)
        app.producer.flush(TIMEOUT_S)
    assert os.path.exists(tmp_path / "cleaner-offset-checkpoint")
    with running_server(durable()) as second:
        assert not create_changelog(second)   # the application's startup: it came back
        assert second.replica_manager.config_repository.log_config(TOPIC).compact
        restored, read = restore(second)
    assert restored == app.table
    assert read < app.written // 2
