"""ShareAcknowledge (API key 79): versions 0-2, flexible (KIP-932 share groups).

Wire schema of ``ShareAcknowledgeRequest.json`` /
``ShareAcknowledgeResponse.json`` (franz-go's definitions at adb3a18, Kafka
4.2): acknowledgements of delivered records without fetching more, in the
member's share session (``share_session_epoch`` > 0, or -1 to close it).
Types: 0 gap, 1 accept, 2 release, 3 reject, 4 renew (v2).

Version notes:

* v0 was Kafka 4.0's early access, removed from the broker in 4.1 (the codec
  reads it; the broker serves v1-v2); v1 is the first stable, same layout.
* v2 (Kafka 4.2, KIP-1222): ``is_renew_ack``; the response's
  ``acquisition_lock_timeout_ms``.
"""

from kafka_net.protocol.messages.share_fetch import _ACK_BATCH, _LEADER, _NODE_ENDPOINTS
from kafka_net.protocol.schema import (
    BOOL, INT16, INT32, STRING, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "ShareAcknowledgeRequest", valid="0-2", flexible="0+",
    fields=[
        Field("group_id", STRING, nullable="0+", default=None),
        Field("member_id", STRING, nullable="0+", default=None),
        Field("share_session_epoch", INT32),
        Field("is_renew_ack", BOOL, versions="2+"),
        Field("topics", Array(Struct(
            Field("topic_id", UUID),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("acknowledgement_batches", Array(_ACK_BATCH)),
            ))),
        ))),
    ])

RESPONSE = Schema(
    "ShareAcknowledgeResponse", valid="0-2", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("acquisition_lock_timeout_ms", INT32, versions="2+"),
        Field("responses", Array(Struct(
            Field("topic_id", UUID),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+", default=None),
                Field("current_leader", _LEADER),
            ))),
        ))),
        Field("node_endpoints", _NODE_ENDPOINTS),
    ])
