"""Damage is loud (issue 30): a damaged batch header in an old segment, a
segment file gone, garbled checkpoints and meta.properties, a damaged metadata
log -- each met by a real ``kafka-net serve`` and a real client, each with the
answer Kafka gives (or, where Kafka is silent, a refusal that says what is
wrong)."""

from __future__ import annotations

import os
import re
import shutil

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kafka_net.daemon import EXIT_STARTUP_FAILED  # noqa: E402
from tests.integration.test_cli import assert_no_traceback, run_cli  # noqa: E402
from tests.storage.bad_day_support import (  # noqa: E402
    TOPIC, batch_positions, flip, running, segment_files, serve_on, stop_cleanly)

RECORDS = 40_000
VALUE = b"v" * 100   # ~24 records per 4 KiB batch: about 5 segments of 1 MiB
TIMEOUT = 60.0


def fill(port: int, records: int = RECORDS) -> None:
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=TIMEOUT)
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "linger.ms": 5,
                         "batch.size": 4096, "acks": "all"})
    for i in range(records):
        producer.produce(TOPIC, VALUE, key=str(i).encode())
        if i % 5000 == 0:
            producer.poll(0)
    assert producer.flush(TIMEOUT) == 0


def consume_from(port: int, offset: int, until_offset: int,
                 *gaps: tuple[int, int]) -> tuple[int, KafkaError | None]:
    """Read from ``offset``: (the next offset reached, the first error met); only
    the offsets in ``gaps`` (first, last) may be missing."""
    jumps = dict(gaps)
    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "reader",
                         "enable.auto.commit": False, "fetch.error.backoff.ms": 100})
    consumer.assign([TopicPartition(TOPIC, 0, offset)])
    position = offset
    try:
        for _ in range(200):
            for message in consumer.consume(1000, timeout=1.0):
                if message.error() is not None:
                    return position, message.error()
                if position in jumps:
                    position = jumps[position] + 1
                assert message.offset() == position, "a record skipped"
                position += 1
            if position >= until_offset:
                return position, None
        return position, None
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def filled_once(tmp_path_factory):
    """A log dir holding RECORDS records in about 3 segments, the broker stopped
    cleanly (filled once; each test damages its own copy)."""
    log_dir = str(tmp_path_factory.mktemp("filled") / "logs")
    with running(log_dir) as (broker, port):
        fill(port)
        stop_cleanly(broker)
    assert len(segment_files(log_dir)) >= 5
    return log_dir


@pytest.fixture
def filled(filled_once, tmp_path):
    copy = str(tmp_path / "logs")
    shutil.copytree(filled_once, copy)
    return copy


def test_damaged_header_in_an_old_segment_is_corrupt_message(filled):
    first = segment_files(filled)[0]
    batches = batch_positions(first)
    position, damaged_base, _ = batches[len(batches) // 2]
    flip(first, position)
    with running(filled) as (broker, port):
        reached, error = consume_from(port, 0, RECORDS)
        assert reached == damaged_base, "records before the damage are all served"
        # CORRUPT_MESSAGE (2), which librdkafka names INVALID_MSG
        assert error is not None and error.code() == KafkaError.INVALID_MSG, error
        broker.wait_for(rf"ERROR Error processing fetch at offset {damaged_base} on partition "
                        rf"{TOPIC}-0: Corrupt batch header at position {position} ")
        # The consumer retried: still one line per interval.
        assert len(re.findall("Corrupt batch header", broker.stderr)) == 1


def test_damaged_first_header_of_a_segment_is_corrupt_message(filled):
    second = segment_files(filled)[1]
    base = batch_positions(second)[0][1]
    flip(second, 0, 12)
    with running(filled) as (broker, port):
        reached, error = consume_from(port, base - 10, RECORDS)
        assert reached == base
        # CORRUPT_MESSAGE (2), which librdkafka names INVALID_MSG
        assert error is not None and error.code() == KafkaError.INVALID_MSG, error
        broker.wait_for("Corrupt batch header at position 0 ")


def test_missing_segments_are_named_at_startup(filled):
    """Two segments gone in one start: one's ``.log`` alone (its index files are
    left), and one with every file."""
    segments = segment_files(filled)
    bases = [batch_positions(path)[0][1] for path in segments[:5]]
    os.unlink(segments[1])
    folder = os.path.dirname(segments[3])
    prefix = os.path.basename(segments[3])[:-len(".log")]
    for name in os.listdir(folder):
        if name.startswith(prefix):   # .log, .index, .timeindex, .snapshot: all of it
            os.unlink(os.path.join(folder, name))
    with running(filled) as (broker, port):
        broker.wait_for(rf"ERROR .*The log file of segment {bases[1]} is missing .*: offsets "
                        rf"{bases[1]} to {bases[2] - 1} of {TOPIC}-0 are lost")
        broker.wait_for(rf"ERROR .*No segment holds offsets {bases[3]} to {bases[4] - 1} of "
                        rf"{TOPIC}-0: the segment files that held them are missing, and their "
                        rf"records are lost. A Fetch there is answered from offset {bases[4]}")
        # Kafka's answer for a gap: the next batch there is; nothing else is missing.
        reached, error = consume_from(port, bases[1] - 5, bases[4] + 10,
                                      (bases[1], bases[2] - 1), (bases[3], bases[4] - 1))
        assert reached >= bases[4] + 10 and error is None


def test_garbled_checkpoints_warn_and_start(filled):
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint"):
        with open(os.path.join(filled, name), "wb") as fh:
            fh.write(b"0\n1\n\xff\xfe garbage\n")
    with running(filled) as (broker, port):
        for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint"):
            broker.wait_for(rf"WARNING Error occurred while reading {name} file of directory ")
        reached, error = consume_from(port, 0, 50)
        assert reached >= 50 and error is None
        assert "No segment holds" not in broker.stderr


def test_garbage_meta_properties_is_refused(filled):
    with open(os.path.join(filled, "meta.properties"), "w") as fh:
        fh.write("this is not\na properties file\n")
    broker = serve_on(filled)
    try:
        assert broker.wait_exit() == EXIT_STARTUP_FAILED
        assert "meta.properties: version is None, not 0 or 1" in broker.stderr
        assert_no_traceback(broker.stderr)
    finally:
        broker.kill()


def test_dump_log_prints_the_damage(filled):
    first = segment_files(filled)[0]
    batches = batch_positions(first)
    position, _, _ = batches[len(batches) // 2]
    resume = batches[len(batches) // 2 + 1][0]
    flip(first, position)
    result = run_cli("dump-log", first)
    assert result.returncode == 0, result.stderr
    assert_no_traceback(result.stdout + result.stderr)
    assert (f"Found a corrupt batch header at position {position} of {first}: "
            in result.stdout), result.stdout[-2000:]
    assert f"resuming at position {resume}" in result.stdout
    # every intact batch is listed, the damaged one alone is not
    listed = re.findall(r"position: (\d+) ", result.stdout)
    assert [int(p) for p in listed] == [p for p, _, _ in batches if p != position]


def test_damaged_metadata_log_refuses_to_start_unless_told_to_truncate(tmp_path):
    log_dir = str(tmp_path / "logs")
    with running(log_dir) as (broker, port):
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        for name in ("first", "second", "third"):
            admin.create_topics([NewTopic(name, 2, 1)])[name].result(timeout=TIMEOUT)
        stop_cleanly(broker)
    segment = os.path.join(log_dir, "__cluster_metadata-0", "00000000000000000000.log")
    batches = batch_positions(segment)
    # one byte inside the second topic's batch (the CRC no longer matches)
    second = next(p for p, _, size in batches
                  if b"second" in open(segment, "rb").read()[p:p + size])
    flip(segment, second + 70, 1)
    refused = serve_on(log_dir)
    try:
        assert refused.wait_exit() == EXIT_STARTUP_FAILED
        assert_no_traceback(refused.stderr)
        assert re.search(r"The metadata log is damaged in .* at position \d+: Record is corrupt "
                         r"\(stored crc = \d+, computed crc = \d+\).*Truncating it there would "
                         r"lose \d+ record\(s\): .*2 PartitionRecord.*TopicRecord.*Not starting",
                         refused.stderr), refused.stderr
    finally:
        refused.kill()
    with running(log_dir, "metadata.log.truncate.on.corruption=true") as (broker, port):
        broker.wait_for(r"WARNING .*Found invalid messages in log segment .*__cluster_metadata-0")
        topics = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"}).list_topics(
            timeout=TIMEOUT).topics
        assert "first" in topics and "second" not in topics and "third" not in topics
