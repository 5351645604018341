"""A broker restarted over the same partition logs gets its share-partition
state back from __share_group_state (the share coordinator's load): the start
offset, acknowledged and archived records, delivery counts, records in flight
made available again; with ShareUpdate records replayed over the last
ShareSnapshot.  (The restart on a real durable log,
with confluent-kafka's ShareConsumer, is in
tests/integration/test_share_groups_confluent.py.)"""

from __future__ import annotations

import dataclasses

from kafka_net.config import ServerConfig
from kafka_net.protocol.records import decode_records
from kafka_net.protocol.share_records import decode_share_state_record
from kafka_net.server.internal_topics import SHARE_GROUP_STATE_TOPIC_NAME
from kafka_net.server.storage import InMemoryLog
from tests.server.conftest import Broker, batch, produce
from tests.server.share.support import ACCEPT, REJECT, RELEASE, ShareMember, acquired, offsets
from tests.server.test_coordinator_restart import SharedLogs


def start(logs, metadata_log, **config) -> Broker:
    b = Broker(dataclasses.replace(ServerConfig(log_store="memory"), **config),
               log_factory=logs, metadata_log_factory=lambda c: metadata_log).start()
    b.create_topic("t", 1)   # a no-op when the metadata log brought it back
    b.internal_topics.load_existing()
    b.apis.group_configs.set_group_key("sg", "share.auto.offset.reset", "earliest")
    return b


def test_share_state_comes_back_after_a_restart():
    logs, metadata_log = SharedLogs(), InMemoryLog()
    # Two updates per snapshot: the state read back is snapshot + updates.
    config = dict(share_coordinator_snapshot_update_records_per_snapshot=2,
                  group_share_delivery_count_limit=2)
    first = start(logs, metadata_log, **config)
    produce(first, records=batch([b"v%d" % i for i in range(8)]))
    m = ShareMember(first, "sg", "m1")
    m.join()
    assert offsets(m.fetch()) == list(range(8))
    m.acknowledge({("t", 0): [(0, 1, [ACCEPT])]})
    m.acknowledge({("t", 0): [(2, 2, [REJECT])]})
    m.acknowledge({("t", 0): [(4, 4, [ACCEPT])]})
    m.acknowledge({("t", 0): [(5, 5, [RELEASE])]})
    assert acquired(m.fetch()) == {(m.topic_id(), 0): [(5, 5, 2)]}   # its last delivery
    # 3, 5, 6, 7 are held when the broker stops.
    first.stop()
    second = start(logs, metadata_log, **config)
    # The coordinator is built on first use: here by __share_group_state's loader,
    # before any share request (BrokerCore.share_coordinator).
    assert second.group_coordinator.share is not None
    again = ShareMember(second, "sg", "m2")
    again.join()
    # 0-2 done, 4 done, 5 was delivered twice (the limit): archived; the rest again.
    assert acquired(again.fetch()) == {(again.topic_id(), 0): [(3, 3, 2), (6, 7, 2)]}
    assert second.share_coordinator.start_offsets("sg")[(again.topic_id(), 0)] == (3, 0)
    # The records themselves: pruned to the latest snapshot (issue 30), then the
    # updates after it.
    kinds = []
    for index in range(second.internal_topics.partition_count(SHARE_GROUP_STATE_TOPIC_NAME)):
        for _, b in second.replica_manager.read_batches(SHARE_GROUP_STATE_TOPIC_NAME, index):
            kinds += [decode_share_state_record(r.key, r.value).kind for r in decode_records(b)]
    assert kinds[0] == 0 and kinds.count(0) == 1 and set(kinds[1:]) <= {1}, kinds
    second.stop()
