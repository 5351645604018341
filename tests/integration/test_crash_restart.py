"""``kafka-net serve`` killed with SIGKILL mid-burst and restarted on the same log.dirs.

A confluent-kafka producer (acks=all, idempotent) writes RECORDS records over
three partitions; the broker is killed while the producer is still sending
and restarted on the same port and log.dirs.  Every acknowledged record must
be there exactly once and in order, and the producer must carry on (its
retries deduplicated by the producer state rebuilt from the log) without a
fatal error.  A second test cuts the last segment in the middle of a batch
while the broker is down: recovery truncates to the last whole batch and
says so in the log, and a new producer carries on.

Everything else a client could observe comes back too (issue 19): the topic
from the metadata log, with its partitions and its config; a SCRAM user; a
consumer group's committed offsets and its state, from __consumer_offsets.
"""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka import ConsumerGroupTopicPartitions  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ScramCredentialInfo,
    ScramMechanism, UserScramCredentialUpsertion)

from kafka_net.protocol.records import read_header, split_batches  # noqa: E402
from tests.integration.test_cli import serve  # noqa: E402

RECORDS = 100_000
PARTITIONS = 3
TOPIC = "crash"
KILL_AFTER = RECORDS // 3        # acknowledged records before the SIGKILL
TIMEOUT = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(port: int, log_dirs) -> object:
    return serve(f"listeners=PLAINTEXT://127.0.0.1:{port}", f"log.dirs={log_dirs}",
                 "auto.create.topics.enable=false", "num.io.threads=4",
                 "log.segment.bytes=1048576")


def create_topic(port: int) -> None:
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    futures = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)], operation_timeout=30)
    futures[TOPIC].result(timeout=30)


def assert_topic_is_back(port: int) -> None:
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    topic = admin.list_topics(TOPIC, timeout=30).topics[TOPIC]
    assert topic.error is None and len(topic.partitions) == PARTITIONS


GROUP = "crash-group"
COMMITTED = {0: 7, 1: 11, 2: 13}   # partition -> the offset the group commits
RETENTION_MS = "123456789"


def set_up_state(port: int) -> None:
    """What must come back besides the records: a topic config, a SCRAM user, and
    a consumer group's committed offsets (Kafka's __consumer_offsets)."""
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    resource = ConfigResource(ConfigResource.Type.TOPIC, TOPIC, incremental_configs=[
        ConfigEntry("retention.ms", RETENTION_MS,
                    incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)
    upsert = UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"carol-secret")
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=30)
    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": GROUP,
                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in COMMITTED.items()],
                        asynchronous=False)
    finally:
        consumer.close()


def assert_state_is_back(port: int) -> None:
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    [configs] = admin.describe_configs(
        [ConfigResource(ConfigResource.Type.TOPIC, TOPIC)]).values()
    assert configs.result(timeout=30)["retention.ms"].value == RETENTION_MS
    [users] = admin.describe_user_scram_credentials(["carol"]).values()
    [info] = users.result(timeout=30).scram_credential_infos
    assert (info.mechanism, info.iterations) == (ScramMechanism.SCRAM_SHA_256, 4096)
    [offsets] = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(GROUP)]).values()
    committed = {tp.partition: tp.offset for tp in offsets.result(timeout=30).topic_partitions
                 if tp.topic == TOPIC}
    assert committed == COMMITTED
    [group] = admin.describe_consumer_groups([GROUP]).values()
    assert group.result(timeout=30).group_id == GROUP   # the group itself is known


class Burst(threading.Thread):
    """Produces RECORDS values ``partition:i`` (i growing per partition), keeping
    what was acknowledged and any error."""

    def __init__(self, port: int) -> None:
        super().__init__(name="burst", daemon=True)
        self.producer = Producer({
            "bootstrap.servers": f"127.0.0.1:{port}", "enable.idempotence": True,
            "acks": "all", "linger.ms": 5, "message.timeout.ms": int(TIMEOUT * 1000),
            "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
            "retry.backoff.ms": 50, "topic.metadata.refresh.interval.ms": 1000,
            "error_cb": self._on_error})
        self.acked: list[list[int]] = [[] for _ in range(PARTITIONS)]
        self.failed: list[str] = []
        self.fatal: list[str] = []
        self.lock = threading.Lock()

    def _on_error(self, err) -> None:
        if err.fatal():
            self.fatal.append(str(err))

    def _on_delivery(self, err, msg) -> None:
        with self.lock:
            if err is not None:
                self.failed.append(str(err))
            else:
                self.acked[msg.partition()].append(int(msg.value().split(b":")[1]))

    def acked_count(self) -> int:
        with self.lock:
            return sum(len(a) for a in self.acked)

    def run(self) -> None:
        for i in range(RECORDS):
            partition = i % PARTITIONS
            while True:
                try:
                    self.producer.produce(TOPIC, b"%d:%d" % (partition, i), partition=partition,
                                          on_delivery=self._on_delivery)
                    break
                except BufferError:
                    self.producer.poll(0.05)
            self.producer.poll(0)
        self.producer.flush(TIMEOUT)


def read_partitions(port: int) -> list[list[int]]:
    """Every value's sequence number, per partition, from the beginning to the end."""
    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "check",
                         "enable.auto.commit": False, "fetch.max.bytes": 8 << 20})
    try:
        ends = [consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)[1]
                for p in range(PARTITIONS)]
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        seen: list[list[int]] = [[] for _ in range(PARTITIONS)]
        deadline = time.monotonic() + TIMEOUT
        while sum(map(len, seen)) < sum(ends) and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=1.0):
                if msg.error() is None:
                    seen[msg.partition()].append(int(msg.value().split(b":")[1]))
                elif msg.error().code() != KafkaError._PARTITION_EOF:
                    raise AssertionError(msg.error())
        return seen
    finally:
        consumer.close()


def wait_until(condition, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_sigkill_mid_burst_keeps_every_acknowledged_record_once_and_in_order(tmp_path):
    port, log_dirs = free_port(), tmp_path / "logs"
    with start(port, log_dirs) as first:
        first.wait_started()
        create_topic(port)
        set_up_state(port)
        burst = Burst(port)
        burst.start()
        wait_until(lambda: burst.acked_count() >= KILL_AFTER)
        first.proc.kill()                                   # SIGKILL, mid-burst
        first.proc.wait(TIMEOUT)
        acked_before = [list(a) for a in burst.acked]
    assert burst.acked_count() < RECORDS, "the burst ended before the kill"
    with start(port, log_dirs) as second:
        second.wait_started()
        # the topic's partitions and __consumer_offsets' 50 (the group committed)
        second.wait_for(rf"Recovering {PARTITIONS + 50} logs from .* since no clean shutdown "
                        "file")
        assert_topic_is_back(port)   # from the metadata log, not created again
        assert_state_is_back(port)
        burst.join(TIMEOUT)
        assert not burst.is_alive()
        assert burst.fatal == [] and burst.failed == []
        seen = read_partitions(port)
    for partition in range(PARTITIONS):
        values = seen[partition]
        assert values == sorted(set(values)), "duplicates or reordering"
        assert set(acked_before[partition]) <= set(values), "an acknowledged record is lost"
        assert values == sorted(burst.acked[partition])
    assert sum(map(len, seen)) == RECORDS


def test_a_segment_cut_mid_batch_is_truncated_to_the_last_whole_batch(tmp_path):
    port, log_dirs = free_port(), tmp_path / "logs"
    with start(port, log_dirs) as first:
        first.wait_started()
        create_topic(port)
        burst = Burst(port)
        burst.run()                       # all acknowledged
        assert burst.fatal == [] and burst.failed == []
        first.proc.kill()
        first.proc.wait(TIMEOUT)
    folder = log_dirs / f"{TOPIC}-0"
    last = sorted(n for n in os.listdir(folder) if n.endswith(".log"))[-1]
    with open(folder / last, "r+b") as fh:
        data = fh.read()
        cut_batch = read_header(split_batches(data)[-1])
        fh.truncate(len(data) - 7)        # the last batch loses its tail
    with start(port, log_dirs) as second:
        second.wait_started()
        second.wait_for(rf"Found invalid messages in log segment .*{TOPIC}-0/{last}")
        assert_topic_is_back(port)
        seen = read_partitions(port)
        # a new producer carries on (its producer id is not one the logs hold)
        after = Producer({"bootstrap.servers": f"127.0.0.1:{port}",
                          "enable.idempotence": True, "acks": "all"})
        errors = []
        for i in range(100):
            after.produce(TOPIC, b"0:%d" % (RECORDS + i), partition=0,
                          on_delivery=lambda err, msg: errors.append(err) if err else None)
        after.flush(TIMEOUT)
        assert errors == []
    acked = sorted(burst.acked[0])
    assert seen[0] == acked[:len(seen[0])], "a prefix of what was acknowledged, in order"
    assert len(acked) - len(seen[0]) == cut_batch.records_count   # only the cut batch
    assert seen[1] == sorted(burst.acked[1]) and seen[2] == sorted(burst.acked[2])


def test_a_second_broker_on_the_same_log_dir_is_refused_with_exit_3(tmp_path):
    from tests.integration.test_cli import EXIT_STARTUP_FAILED, run_cli

    log_dirs = tmp_path / "logs"
    with start(free_port(), log_dirs) as first:
        first.wait_started()
        result = run_cli("serve", "--override", f"listeners=PLAINTEXT://127.0.0.1:{free_port()}",
                         "--override", f"log.dirs={log_dirs}")
    assert result.returncode == EXIT_STARTUP_FAILED
    assert (f"Startup failed: Failed to acquire lock on file .lock in {log_dirs}. A Kafka "
            "instance in another process or thread is using this directory.") in result.stderr
    assert "Traceback" not in result.stderr
