"""The metadata log across a restart: a second BrokerCore over the same stored
log (the in-memory store: a simulated restart that replays every record, as a
restart over the durable store does) finds what the first acknowledged.

Every change goes through the real request path (``Broker.call``); the state
compared is what clients can observe: topics and their ids, partition counts,
configs, SCRAM credentials, client quotas, producer ids.
"""

from __future__ import annotations

import dataclasses
import logging
import threading

import pytest

from kafka_net.config import ServerConfig
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.security import scram
from kafka_net.server.metadata_log import MetadataLog
from kafka_net.server.storage import InMemoryLog
from tests.server.conftest import Broker, batch, produce
from tests.server.handlers.test_alter_user_scram_credentials import SHA512, alter, upsert

TOPIC, BROKER = 2, 4


class Store:
    """One stored metadata log, shared by the brokers a test starts in turn."""

    def __init__(self, **config) -> None:
        self.log = InMemoryLog()
        self.config = dataclasses.replace(ServerConfig(log_store="memory"), **config)

    def broker(self) -> Broker:
        return Broker(self.config, metadata_log_factory=lambda config: self.log).start()


def restart(store: Store, broker: Broker) -> Broker:
    broker.stop()
    broker.shutdown()
    return store.broker()


def state(b: Broker) -> dict:
    """Everything the metadata log is responsible for, as the broker holds it."""
    topics = b.metadata_cache.topics()
    cache = b.credential_cache
    return {
        "topics": [(t.name, t.topic_id, t.num_partitions) for t in topics],
        "total_partitions": b.metadata_cache.total_partitions(),
        "logs": {(t.name, i): b.replica_manager.partition(t.name, i) is not None
                 for t in topics for i in range(t.num_partitions + 1)},
        "configs": {t.name: b.apis.config_repository.topic_overrides(t.name) for t in topics},
        "broker_configs": b.apis.config_repository.broker_configs(""),
        "scram": {(u, m): cache.get(u, m) for u in cache.users() for m in scram.MECHANISMS},
        "quotas": sorted(map(repr, b.quotas.client_quotas.describe([], False))),
    }


def create(b: Broker, name: str, partitions: int = 1, configs=(), version: int = 7) -> dict:
    body = b.call(ApiKey.CREATE_TOPICS, version, topics=[{
        "name": name, "num_partitions": partitions, "replication_factor": 1,
        "assignments": [], "configs": [{"name": k, "value": v} for k, v in configs]}],
        timeout_ms=1000, validate_only=False)
    return body["topics"][0]


def delete(b: Broker, name: str) -> int:
    body = b.call(ApiKey.DELETE_TOPICS, 6, topics=[{"name": name, "topic_id": ZERO_UUID}],
                  timeout_ms=1000)
    return body["responses"][0]["error_code"]


def grow(b: Broker, name: str, count: int) -> int:
    body = b.call(ApiKey.CREATE_PARTITIONS, 3, topics=[
        {"name": name, "count": count, "assignments": None}], timeout_ms=1000,
        validate_only=False)
    return body["results"][0]["error_code"]


def incremental(b: Broker, topic: str, *ops) -> int:
    body = b.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, resources=[{
        "resource_type": TOPIC, "resource_name": topic,
        "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]}],
        validate_only=False)
    return body["responses"][0]["error_code"]


def set_quota(b: Broker, entity: list, key: str, value: float | None) -> int:
    body = b.call(ApiKey.ALTER_CLIENT_QUOTAS, 1, entries=[{
        "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
        "ops": [{"key": key, "value": value or 0.0, "remove": value is None}]}],
        validate_only=False)
    return body["entries"][0]["error_code"]


def producer_id(b: Broker) -> int:
    body = b.call(ApiKey.INIT_PRODUCER_ID, 4, transactional_id=None,
                  transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
    assert body["error_code"] == ErrorCode.NONE
    return body["producer_id"]


@pytest.fixture
def store():
    return Store()


def test_topics_come_back_with_their_ids_and_partition_counts(store):
    b = store.broker()
    created = {name: create(b, name, n) for name, n in (("a", 1), ("b", 3), ("c.d", 2))}
    assert grow(b, "b", 5) == ErrorCode.NONE
    before = state(b)
    b = restart(store, b)
    assert state(b) == before
    assert {t.name: (t.topic_id, t.num_partitions) for t in b.metadata_cache.topics()} == {
        "a": (created["a"]["topic_id"], 1), "b": (created["b"]["topic_id"], 5),
        "c.d": (created["c.d"]["topic_id"], 2)}
    # Every partition has its log again: a Produce to the grown partition works.
    assert b.replica_manager.partition("b", 4) is not None
    # The collision check and the partition count are replayed too.
    assert create(b, "c_d")["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert b.metadata_cache.total_partitions() == 8


def test_deleted_topics_stay_deleted_and_a_recreated_name_keeps_its_new_id(store):
    b = store.broker()
    old = create(b, "t", 2, [("retention.ms", "1000")])["topic_id"]
    create(b, "u")
    assert delete(b, "t") == ErrorCode.NONE
    assert delete(b, "u") == ErrorCode.NONE
    new = create(b, "t", 1)["topic_id"]
    b = restart(store, b)
    assert [(t.name, t.topic_id, t.num_partitions) for t in b.metadata_cache.topics()] == [
        ("t", new, 1)]
    assert new != old
    assert b.metadata_cache.topic_by_id(old) is None
    assert b.replica_manager.partition("t", 1) is None   # the old topic's second partition
    assert b.apis.config_repository.topic_overrides("t") == {}   # its configs went with it
    assert b.metadata_cache.topic("u") is None


def test_topic_configs_come_back(store):
    b = store.broker()
    create(b, "t", 1, [("cleanup.policy", "compact"), ("retention.ms", "60000")])
    create(b, "u", 1, [("max.message.bytes", "2000")])
    assert incremental(b, "t", ("retention.ms", 1, None), ("cleanup.policy", 2, "delete"),
                       ("segment.bytes", 0, "1048576")) == ErrorCode.NONE
    body = b.call(ApiKey.ALTER_CONFIGS, 2, resources=[{
        "resource_type": TOPIC, "resource_name": "u",
        "configs": [{"name": "message.timestamp.type", "value": "LogAppendTime"}]}],
        validate_only=False)
    assert body["responses"][0]["error_code"] == ErrorCode.NONE
    before = state(b)
    b = restart(store, b)
    assert state(b) == before
    repository = b.apis.config_repository
    assert repository.topic_overrides("t") == {"cleanup.policy": ["compact", "delete"],
                                               "segment.bytes": 1048576}
    assert repository.topic_overrides("u") == {"message.timestamp.type": "LogAppendTime"}
    assert repository.log_config("u").log_append_time
    # The configs act after the restart: u's LogAppendTime stamps an append.
    assert produce(b, topic="u", records=batch(max_timestamp=5))["responses"][0][
        "partition_responses"][0]["log_append_time_ms"] > 5


def test_broker_dynamic_configs_come_back(store):
    b = store.broker()
    b.controller.alter_broker_configs("", {"log.retention.ms": "3600000"})
    b.controller.alter_broker_configs("1", {"log.cleaner.threads": "2",
                                            "num.io.threads": "16"})
    b.controller.alter_broker_configs("1", {"num.io.threads": None})
    b = restart(store, b)
    repository = b.apis.config_repository
    assert repository.broker_configs("") == {"log.retention.ms": "3600000"}
    assert repository.broker_configs("1") == {"log.cleaner.threads": "2"}


def test_scram_credentials_come_back_and_deleted_ones_stay_deleted(store):
    b = store.broker()
    assert alter(b, upsertions=[upsert("alice", SHA512, 8192, b"alice-secret"),
                                upsert("bob")]) == {"alice": (0, None), "bob": (0, None)}
    assert alter(b, deletions=[{"name": "bob", "mechanism": 1}]) == {"bob": (0, None)}
    alice = b.credential_cache.get("alice", "SCRAM-SHA-512")
    b = restart(store, b)
    assert b.credential_cache.get("alice", "SCRAM-SHA-512") == alice
    assert b.credential_cache.get("bob", "SCRAM-SHA-256") is None
    expected = scram.ScramFormatter(scram.SCRAM_SHA_512).generate_credential(
        "alice-secret", 8192, b"salt")
    assert alice == expected


def test_client_quotas_come_back_and_are_enforced(store):
    b = store.broker()
    create(b, "t")
    assert set_quota(b, [("user", "alice")], "producer_byte_rate", 10.0) == 0
    assert set_quota(b, [("client-id", None)], "consumer_byte_rate", 2048.0) == 0
    assert set_quota(b, [("ip", "127.0.0.1")], "connection_creation_rate", 5.0) == 0
    assert set_quota(b, [("client-id", None)], "consumer_byte_rate", None) == 0
    before = state(b)
    b = restart(store, b)
    assert state(b) == before
    assert b.quotas.enabled
    entries = b.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, components=[], strict=False)["entries"]
    assert sorted((e["entity"][0]["entity_type"], e["entity"][0]["entity_name"],
                   e["values"][0]["key"], e["values"][0]["value"]) for e in entries) == [
        ("ip", "127.0.0.1", "connection_creation_rate", 5.0),
        ("user", "alice", "producer_byte_rate", 10.0)]


def test_ip_quotas_replayed_reach_the_connection_quotas(store):
    b = store.broker()
    assert set_quota(b, [("ip", "127.0.0.1")], "connection_creation_rate", 5.0) == 0
    b = restart(store, b)

    class IpRates:
        def __init__(self):
            self.rates = {}

        def update_ip_connection_rate_quota(self, ip, rate):
            self.rates[ip] = rate

    seam = IpRates()
    b.quotas.client_quotas.set_ip_quotas(seam)
    assert seam.rates == {"127.0.0.1": 5.0}


def test_producer_ids_are_never_handed_out_twice_across_restarts(store):
    b = store.broker()
    seen = [producer_id(b) for _ in range(3)]
    for _ in range(3):
        b = restart(store, b)
        seen += [producer_id(b) for _ in range(2)]
    assert len(set(seen)) == len(seen)
    assert seen == sorted(seen)
    # One ProducerIdsRecord per block, not per id: four blocks for four lives.
    blocks = [f for kind, f in b.metadata_log.records() if kind == "ProducerIdsRecord"]
    assert [f["nextProducerId"] for f in blocks] == [2000, 3000, 4000, 5000]


def test_a_block_is_written_again_when_one_runs_out(store):
    b = store.broker()
    ids = [b.transaction_coordinator.generate_producer_id() for _ in range(1001)]
    assert ids == list(range(1000, 2001))
    b = restart(store, b)
    assert b.transaction_coordinator.generate_producer_id() == 3000


def test_auto_created_topics_are_written_like_created_ones(store):
    b = store.broker()
    body = b.call(ApiKey.METADATA, 12, topics=[{"name": "auto", "topic_id": ZERO_UUID}],
                  allow_auto_topic_creation=True)
    topic_id = body["topics"][0]["topic_id"]
    before = state(b)
    b = restart(store, b)
    assert state(b) == before
    assert b.metadata_cache.topic("auto").topic_id == topic_id


def test_validate_only_and_refused_changes_write_nothing(store):
    b = store.broker()
    create(b, "t")
    end = store.log.log_end_offset
    body = b.call(ApiKey.CREATE_TOPICS, 7, topics=[{
        "name": "v", "num_partitions": 1, "replication_factor": 1, "assignments": [],
        "configs": []}], timeout_ms=1000, validate_only=True)
    assert body["topics"][0]["error_code"] == ErrorCode.NONE
    assert create(b, "t")["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS
    assert grow(b, "t", 1) == ErrorCode.INVALID_PARTITIONS
    assert incremental(b, "t", ("retention.ms", 0, "x")) == ErrorCode.INVALID_CONFIG
    assert incremental(b, "t", ("retention.ms", 1, None)) == ErrorCode.NONE   # nothing to do
    assert store.log.log_end_offset == end


class FailingStore(InMemoryLog):
    """A store whose disk is gone: every append fails."""

    def append(self, *args, **kwargs):
        raise OSError("No space left on device")


def test_nothing_is_acknowledged_or_changed_when_the_record_cannot_be_written():
    b = Broker(metadata_log_factory=lambda config: FailingStore()).start()
    assert create(b, "t")["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR
    assert b.metadata_cache.topic("t") is None
    assert b.replica_manager.partition("t", 0) is None
    assert alter(b, upsertions=[upsert("alice")]) == {
        "alice": (ErrorCode.UNKNOWN_SERVER_ERROR, None)}
    assert b.credential_cache.get("alice", "SCRAM-SHA-256") is None


def test_concurrent_creates_and_deletes_leave_memory_equal_to_the_log(store):
    b = store.broker()
    names = [f"t{i}" for i in range(6)]
    errors = []

    def churn(seed: int) -> None:
        try:
            for round_ in range(15):
                name = names[(seed + round_) % len(names)]
                if (seed + round_) % 3:
                    create(b, name, 1 + seed % 3)
                else:
                    delete(b, name)
                grow(b, names[round_ % len(names)], 4)
        except Exception as exc:   # noqa: BLE001 -- reported below
            errors.append(exc)

    threads = [threading.Thread(target=churn, args=(seed,)) for seed in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    before = state(b)
    assert before["total_partitions"] == sum(n for _, _, n in before["topics"])
    b = restart(store, b)
    assert state(b) == before


def test_a_record_nobody_registered_is_skipped_and_the_rest_replayed(store, caplog):
    b = store.broker()
    create(b, "t")
    MetadataLog(store.log).append("FeatureLevelRecord",
                                  {"name": "metadata.version", "featureLevel": 20})
    create(b, "u")
    b = restart(store, b)
    assert [t.name for t in b.metadata_cache.topics()] == ["t", "u"]
    assert "Skipping metadata record of unknown type FeatureLevelRecord" in caplog.text


# -- snapshots ---------------------------------------------------------------------------


def busy_life(b: Broker) -> None:
    """Many changes of every kind, some undoing others."""
    for i in range(8):
        create(b, f"t{i}", 1 + i % 3, [("retention.ms", str(60000 + i))])
        incremental(b, f"t{i}", ("cleanup.policy", 0, "compact"))
        set_quota(b, [("user", f"u{i}")], "producer_byte_rate", 1000.0 + i)
        producer_id(b)
    for i in range(0, 8, 2):
        delete(b, f"t{i}")
        set_quota(b, [("user", f"u{i}")], "producer_byte_rate", None)
    grow(b, "t1", 6)
    alter(b, upsertions=[upsert("alice"), upsert("carol", SHA512)])
    alter(b, deletions=[{"name": "carol", "mechanism": SHA512}])
    b.controller.alter_broker_configs("", {"log.retention.ms": "1000"})


def test_a_snapshot_keeps_the_state_and_drops_the_records_before_it(store_small):
    b = store_small.broker()
    busy_life(b)
    assert store_small.log.log_start_offset > 0   # snapshotted at least once
    pids = [producer_id(b) for _ in range(2)]
    before = state(b)
    b = restart(store_small, b)
    assert state(b) == before
    assert producer_id(b) > max(pids)
    # What is left is a snapshot and the changes after it: no deleted topic's records.
    names = {f["name"] for kind, f in b.metadata_log.records() if kind == "TopicRecord"}
    assert names <= {"t1", "t3", "t5", "t7"}


def test_a_snapshot_cut_short_by_a_crash_replays_to_the_same_state(store):
    b = store.broker()
    busy_life(b)
    before = state(b)
    records = b.controller.snapshot_records()
    # The crash: part of the snapshot written, the log start not yet moved.
    MetadataLog(store.log).append_all(records[: len(records) // 2])
    b = restart(store, b)
    assert state(b) == before


def test_static_scram_users_are_not_snapshotted_but_their_deletion_is():
    store = Store(scram_credentials=("SCRAM-SHA-256=[name=static,password=s]",
                                     "SCRAM-SHA-256=[name=kept,password=k]"))
    b = store.broker()
    assert alter(b, deletions=[{"name": "static", "mechanism": 1}]) == {"static": (0, None)}
    assert b.metadata_log.snapshot() is not None
    upserted = [f["name"] for kind, f in b.metadata_log.records()
                if kind == "UserScramCredentialRecord"]
    assert upserted == []
    kept = b.credential_cache.get("kept", "SCRAM-SHA-256")
    b = restart(store, b)
    assert b.credential_cache.get("static", "SCRAM-SHA-256") is None
    # kept comes from the config file again (salted anew: a fresh salt).
    assert b.credential_cache.get("kept", "SCRAM-SHA-256") is not None
    assert b.credential_cache.get("kept", "SCRAM-SHA-256").iterations == kept.iterations


def test_no_snapshot_while_a_record_type_has_no_snapshot_source(store, caplog):
    b = store.broker()
    create(b, "t")
    b.metadata_log.register("AccessControlEntryRecord", lambda fields: None)
    start = store.log.log_start_offset
    with caplog.at_level(logging.WARNING):
        assert b.metadata_log.snapshot() is None
    assert store.log.log_start_offset == start
    assert "no snapshot source for record type(s) AccessControlEntryRecord" in caplog.text


@pytest.fixture
def store_small():
    return Store(metadata_log_max_record_bytes_between_snapshots=4096)


def test_quota_changes_and_snapshots_on_other_threads_do_not_deadlock(store_small):
    # A snapshot (under the metadata lock) reads the quotas; an AlterClientQuotas
    # must therefore take the metadata lock before the quotas' own lock.
    b = store_small.broker()
    assert b.quotas.client_quotas.change_lock is b.metadata_log.lock
    errors = []

    def run(work) -> None:
        try:
            for i in range(40):
                work(i)
        except Exception as exc:   # noqa: BLE001 -- reported below
            errors.append(exc)

    workers = [
        threading.Thread(target=run, args=(
            lambda i: set_quota(b, [("user", f"q{i % 5}")], "producer_byte_rate", 100.0 + i),)),
        threading.Thread(target=run, args=(lambda i: create(b, f"c{i}"),)),
        threading.Thread(target=run, args=(lambda i: delete(b, f"c{i}"),)),
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert not any(w.is_alive() for w in workers), "a metadata change is stuck"
    assert not errors
    assert store_small.log.log_start_offset > 0
    before = state(b)
    b = restart(store_small, b)
    assert state(b) == before
