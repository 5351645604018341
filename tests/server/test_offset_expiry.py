"""offsets.retention.minutes: committed offsets nobody will use again are removed
(tombstones in __consumer_offsets), then empty groups with none left (Kafka's
cleanupGroupMetadata, KIP-211).  Time is passed to the check, never waited for."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.coordinator_records import GroupMetadataRecord, OffsetCommitRecord
from tests.server.conftest import Broker
from tests.server.handlers.conftest import join_stable, leave, subscription
from tests.server.test_coordinator_restart import SharedLogs, fetch_offsets
from tests.server.test_internal_topics import commit, group_records

RETENTION = 7 * 24 * 3_600_000   # the default offsets.retention.minutes, in ms
T0 = 1_000_000_000_000


@pytest.fixture
def broker():
    b = Broker().start()
    b.create_topic("t", 2)
    b.create_topic("u", 1)
    try:
        yield b
    finally:
        b.stop()


def commit_at(b, when: int, group: str, offsets: dict, generation=-1, member="") -> None:
    b.group_coordinator.offsets.clock_ms = lambda: when
    assert set(commit(b, group, offsets, generation, member).values()) == {0}


def groups(b) -> list[str]:
    return sorted(g["group_id"] for g in b.call(ApiKey.LIST_GROUPS, 4)["groups"])


def test_a_simple_consumers_offsets_expire_one_by_one(broker):
    commit_at(broker, T0, "simple", {("t", 0): 1})
    commit_at(broker, T0 + 1000, "simple", {("t", 1): 2})
    cleanup = broker.group_coordinator.cleanup_group_metadata
    assert cleanup(T0 + RETENTION - 1) == 0
    assert cleanup(T0 + RETENTION) == 1
    assert fetch_offsets(broker, "simple") == {("t", 1): (2, "m2")}
    assert group_records(broker, "simple")[-1] == OffsetCommitRecord("simple", "t", 0, None)
    assert cleanup(T0 + 1000 + RETENTION) == 1
    # No offsets and no members: the group is gone, with a tombstone.
    assert groups(broker) == []
    assert group_records(broker, "simple")[-1] == GroupMetadataRecord("simple", None)


def test_an_empty_groups_offsets_expire_from_when_it_emptied(broker):
    member, generation = join_stable(broker, "g", subscription("t"))
    commit_at(broker, T0, "g", {("t", 0): 5}, generation, member)
    leave(broker, "g", member)
    group = broker.group_coordinator.group("g")
    emptied = group.current_state_timestamp
    assert group.state == "Empty" and emptied is not None
    cleanup = broker.group_coordinator.cleanup_group_metadata
    # The commit is long expired, but the group emptied only now.
    assert cleanup(max(T0 + RETENTION, emptied + RETENTION - 1)) == 0
    assert cleanup(emptied + RETENTION) == 1
    assert groups(broker) == []


def test_a_stable_group_keeps_the_offsets_of_topics_it_consumes(broker):
    member, generation = join_stable(broker, "g", subscription("t"))
    commit_at(broker, T0, "g", {("t", 0): 5, ("u", 0): 6}, generation, member)
    assert broker.group_coordinator.cleanup_group_metadata(T0 + RETENTION) == 1
    assert fetch_offsets(broker, "g") == {("t", 0): (5, "m5")}
    assert groups(broker) == ["g"]


def test_commit_times_come_back_after_a_restart():
    logs = SharedLogs()
    b = Broker(log_factory=logs).start()
    b.create_topic("t", 2)
    commit_at(b, T0, "simple", {("t", 0): 1})
    b.stop()
    b = Broker(log_factory=logs).start()
    b.create_topic("t", 2)
    b.call(ApiKey.FIND_COORDINATOR, 4, key_type=0, coordinator_keys=["simple"])
    assert fetch_offsets(b, "simple") == {("t", 0): (1, "m1")}
    assert b.group_coordinator.cleanup_group_metadata(T0 + RETENTION - 1) == 0
    assert b.group_coordinator.cleanup_group_metadata(T0 + RETENTION) == 1
    b.stop()
