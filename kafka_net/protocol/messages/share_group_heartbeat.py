"""ShareGroupHeartbeat (API key 76): versions 0-1, flexible (KIP-932 share groups).

Wire schema of ``ShareGroupHeartbeatRequest.json`` /
``ShareGroupHeartbeatResponse.json`` (facts from franz-go's definitions at
adb3a18, Kafka 4.2).  The one membership request of a share group: a member
joins with ``member_epoch`` 0 and a member id it generated itself, heartbeats
with its epoch, leaves with -1.  ``rack_id`` and ``subscribed_topic_names``
are null when unchanged since the previous heartbeat.

Version notes:

* v0 was Kafka 4.0's early-access version, removed from the broker in 4.1;
  the codec reads it (a capture of a 4.0 cluster), the broker serves v1, the
  first stable one.  Same layout.
* v1: TOPIC_AUTHORIZATION_FAILED is among the answers.
"""

from kafka_net.protocol.schema import INT16, INT32, STRING, UUID, Array, Field, Schema, Struct

REQUEST = Schema(
    "ShareGroupHeartbeatRequest", valid="0-1", flexible="0+",
    fields=[
        Field("group_id", STRING),
        Field("member_id", STRING),
        Field("member_epoch", INT32),
        Field("rack_id", STRING, nullable="0+", default=None),
        Field("subscribed_topic_names", Array(STRING), nullable="0+", default=None),
    ])

RESPONSE = Schema(
    "ShareGroupHeartbeatResponse", valid="0-1", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("member_id", STRING, nullable="0+", default=None),
        Field("member_epoch", INT32),
        Field("heartbeat_interval_ms", INT32),
        Field("assignment", Struct(
            Field("topic_partitions", Array(Struct(
                Field("topic_id", UUID),
                Field("partitions", Array(INT32)),
            ))),
        ), nullable="0+", default=None),
    ])
