"""ReadShareGroupState (API key 84): version 0, flexible (KIP-932).

The share coordinator's RPC; see :mod:`kafka_net.protocol.messages.share_group_state`
for what kafka-net does with it (wire facts: franz-go's definitions at adb3a18).
"""

from kafka_net.protocol.messages.share_group_state import _STATE_BATCHES, _request, _response
from kafka_net.protocol.schema import INT32, INT64, Field

REQUEST = _request("ReadShareGroupStateRequest", "0", [Field("leader_epoch", INT32)])
RESPONSE = _response("ReadShareGroupStateResponse", "0", [
    Field("state_epoch", INT32), Field("start_offset", INT64),
    Field("state_batches", _STATE_BATCHES)])
