"""DeleteShareGroupState (API key 86): version 0, flexible (KIP-932).

The share coordinator's RPC; see :mod:`kafka_net.protocol.messages.share_group_state`
for what kafka-net does with it (wire facts: franz-go's definitions at adb3a18).
"""

from kafka_net.protocol.messages.share_group_state import _request, _response

REQUEST = _request("DeleteShareGroupStateRequest", "0", [])
RESPONSE = _response("DeleteShareGroupStateResponse", "0", [])
