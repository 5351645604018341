"""A failing disk is offline, not a bug (issue 30): a write that fails -- here
the file size limit (RLIMIT_FSIZE: EFBIG, which meets the same code as ENOSPC
on a full disk, without needing a small filesystem) or the open-file limit
(RLIMIT_NOFILE: EMFILE) -- takes the log dir offline as Kafka's
LogDirFailureChannel does: the producer gets KAFKA_STORAGE_ERROR, the error is
logged once (no traceback per request), the broker with one log dir stops
(exit 5), and after a restart every acknowledged record is there."""

from __future__ import annotations

import resource

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kafka_net.daemon import EXIT_LOG_DIRS_FAILED  # noqa: E402
from tests.integration.test_cli import Broker, assert_no_traceback  # noqa: E402
from tests.storage.bad_day_support import SEGMENT_BYTES, running  # noqa: E402

TIMEOUT = 60.0
FILE_LIMIT = 512 * 1024   # bytes: any file the broker writes stops growing here


class LimitedBroker(Broker):
    """``kafka-net serve`` under resource limits (set in the child before exec)."""

    def __init__(self, *args: str, limits: dict[int, int]) -> None:
        import subprocess

        original = subprocess.Popen

        def popen(*a, **kw):
            def limit():
                for kind, value in limits.items():
                    resource.setrlimit(kind, (value, value))
            return original(*a, preexec_fn=limit, **kw)

        subprocess.Popen = popen
        try:
            super().__init__(*args)
        finally:
            subprocess.Popen = original


def limited(log_dir: str, limits: dict[int, int]) -> LimitedBroker:
    return LimitedBroker("--override", "listeners=PLAINTEXT://127.0.0.1:0",
                         "--override", f"log.dirs={log_dir}",
                         "--override", "auto.create.topics.enable=false",
                         "--override", f"log.segment.bytes={SEGMENT_BYTES}",
                         limits=limits)


def produce_until_refused(port: int, topic: str) -> tuple[int, set[int]]:
    """Produce 1 KiB values until the broker refuses: (acknowledged count, the
    error codes seen)."""
    acked, errors = [0], set()

    def report(err, msg):
        if err is None:
            acked[0] += 1
        else:
            errors.add(err.code())

    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "acks": "all",
                         "linger.ms": 2, "retries": 0, "message.timeout.ms": 20000,
                         "enable.idempotence": False, "batch.size": 16384})
    for i in range(4000):   # 4 MiB: past FILE_LIMIT
        producer.produce(topic, b"x" * 1024, key=str(i).encode(), on_delivery=report)
        producer.poll(0)
        if errors:
            break
    producer.flush(TIMEOUT)
    return acked[0], errors


def count_records(port: int, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "count",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    count = 0
    try:
        for _ in range(120):
            for message in consumer.consume(1000, timeout=1.0):
                if message.error() is not None:
                    assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                    return count
                count += 1
        raise AssertionError(f"no end of partition after {count} records")
    finally:
        consumer.close()


def test_a_write_failing_takes_the_log_dir_offline_and_loses_nothing(tmp_path):
    log_dir = str(tmp_path / "logs")
    broker = limited(log_dir, {resource.RLIMIT_FSIZE: FILE_LIMIT})
    try:
        port = broker.wait_started()["PLAINTEXT"]
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        admin.create_topics([NewTopic("full", 1, 1)])["full"].result(timeout=TIMEOUT)
        acked, errors = produce_until_refused(port, "full")
        assert KafkaError.KAFKA_STORAGE_ERROR in errors, errors
        assert broker.wait_exit() == EXIT_LOG_DIRS_FAILED
        stderr = broker.stderr
        assert_no_traceback(stderr)
        assert stderr.count("The log dir is now offline") == 1, stderr
        assert "Error while appending to full-0 in dir" in stderr
        assert "EFBIG (File too large)" in stderr
        assert "Stopping: every log dir has failed" in stderr
    finally:
        broker.kill()
    # The disk "fixed" (no limit): every acknowledged record is back, in a
    # broker that takes records again.
    with running(log_dir) as (restarted, port):
        assert count_records(port, "full") >= acked > 0
        more, errors = produce_until_refused_or(port, "full", 10)
        assert (more, errors) == (10, set())


def produce_until_refused_or(port: int, topic: str, count: int) -> tuple[int, set[int]]:
    acked, errors = [0], set()

    def report(err, msg):
        if err is None:
            acked[0] += 1
        else:
            errors.add(err.code())

    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "acks": "all"})
    for i in range(count):
        producer.produce(topic, b"y", on_delivery=report)
    producer.flush(TIMEOUT)
    return acked[0], errors


def test_create_topics_is_never_ok_for_a_partition_whose_log_could_not_be_created(tmp_path):
    log_dir = str(tmp_path / "logs")
    broker = limited(log_dir, {resource.RLIMIT_NOFILE: 256})
    try:
        port = broker.wait_started()["PLAINTEXT"]
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        future = admin.create_topics([NewTopic("wide", 400, 1)],
                                     operation_timeout=30)["wide"]
        with pytest.raises(confluent_kafka.KafkaException) as refused:
            future.result(timeout=TIMEOUT)
        assert refused.value.args[0].code() == KafkaError.KAFKA_STORAGE_ERROR, refused.value
        assert broker.wait_exit() == EXIT_LOG_DIRS_FAILED
        assert_no_traceback(broker.stderr)
        assert "EMFILE (Too many open files)" in broker.stderr
        assert broker.stderr.count("The log dir is now offline") == 1, broker.stderr
    finally:
        broker.kill()
