"""ReadShareGroupStateSummary (API key 87): versions 0-1, flexible (KIP-932).

v1 (Kafka 4.2, KIP-1226): ``delivery_complete_count``.

The share coordinator's RPC; see :mod:`kafka_net.protocol.messages.share_group_state`
for what kafka-net does with it (wire facts: franz-go's definitions at adb3a18).
"""

from kafka_net.protocol.messages.share_group_state import _request, _response
from kafka_net.protocol.schema import INT32, INT64, Field

REQUEST = _request("ReadShareGroupStateSummaryRequest", "0-1", [
    Field("leader_epoch", INT32)])
RESPONSE = _response("ReadShareGroupStateSummaryResponse", "0-1", [
    Field("state_epoch", INT32), Field("leader_epoch", INT32), Field("start_offset", INT64),
    Field("delivery_complete_count", INT32, versions="1+", default=-1)])
