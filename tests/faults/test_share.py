"""Errors on chosen partitions of ShareFetch and ShareAcknowledge (KIP-932),
through the API layer with a protocol-level share consumer."""

from __future__ import annotations

from kafka_net.protocol.error_codes import ErrorCode
from tests.server.share.support import ACCEPT, ShareMember, offsets, partition_answer
from tests.server.share.test_share_apis import make

NOT_LEADER = ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_share_fetch_and_acknowledge_answer_the_error_on_the_selected_partition():
    broker = make()          # t: 2 partitions, 3 records in t-0
    try:
        member = ShareMember(broker, "sg", "m1")
        member.join()
        faults = broker.apis.faults
        with faults.add(api="ShareFetch", topic="t", partitions=[1], error=NOT_LEADER,
                        once=True) as fault:
            answer = member.fetch(partitions=(("t", 0), ("t", 1)))
            assert fault.hits == 1
        assert partition_answer(answer, 1)["error_code"] == NOT_LEADER
        assert partition_answer(answer, 0)["error_code"] == 0
        assert offsets(answer) == [0, 1, 2]
        acks = {("t", 0): [(0, 2, [ACCEPT])]}
        with faults.add(api="ShareAcknowledge", topic="t", partitions=[0], error=NOT_LEADER,
                        once=True):
            refused = member.acknowledge(acks)
        assert partition_answer(refused)["error_code"] == NOT_LEADER
        start = broker.share_coordinator.start_offsets("sg")[(member.topic_id(), 0)]
        assert start[0] == 0                      # before the work: nothing acknowledged
        assert partition_answer(member.acknowledge(acks))["error_code"] == 0
        assert broker.share_coordinator.start_offsets("sg")[(member.topic_id(), 0)][0] == 3
    finally:
        broker.stop()
