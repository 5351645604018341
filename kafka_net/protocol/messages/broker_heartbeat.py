"""BrokerHeartbeat (API key 63): versions 0-1, flexible in every version.

Wire schema of ``BrokerHeartbeatRequest.json`` / ``BrokerHeartbeatResponse.json``.

A KRaft broker's lease keep-alive to the controller (KIP-631).  Decode-only
here.

Version notes:

* v1: tagged offline_log_dirs (KIP-858).
"""

from kafka_net.protocol.schema import BOOL, INT16, INT32, INT64, UUID, Array, Field, Schema

REQUEST = Schema(
    "BrokerHeartbeatRequest", valid="0-1", flexible="0+",
    fields=[
        Field("broker_id", INT32),
        Field("broker_epoch", INT64, default=-1),
        Field("current_metadata_offset", INT64),
        Field("want_fence", BOOL),
        Field("want_shut_down", BOOL),
        Field("offline_log_dirs", Array(UUID), versions="1+", tag=0),
    ])

RESPONSE = Schema(
    "BrokerHeartbeatResponse", valid="0-1", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("is_caught_up", BOOL),
        Field("is_fenced", BOOL, default=True),
        Field("should_shut_down", BOOL),
    ])

