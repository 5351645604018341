"""InitializeShareGroupState (API key 83): version 0, flexible (KIP-932).

The share coordinator's RPC; see :mod:`kafka_net.protocol.messages.share_group_state`
for what kafka-net does with it (wire facts: franz-go's definitions at adb3a18).
"""

from kafka_net.protocol.messages.share_group_state import _request, _response
from kafka_net.protocol.schema import INT32, INT64, Field

REQUEST = _request("InitializeShareGroupStateRequest", "0", [
    Field("state_epoch", INT32), Field("start_offset", INT64)])
RESPONSE = _response("InitializeShareGroupStateResponse", "0", [])
